"""--anonymize as a property: whatever names, addresses and serials a bundle holds, none is left in what is
written, in any of its forms and letter cases, and the written bundle diagnoses like the original.

Each example starts from fixtures/healthy, renames both hosts everywhere (manifest, `hostname`, NCCL and
nccl-tests lines, mpirun commands) to generated names (2-character, mixed-case, FQDNs), replaces the cable
serial, and adds a capture-side text with IPv4 addresses inside tokens and ranges, their GID forms, MACs in
every notation, GUIDs and DMI serials. The originals are looked for here with this file's own rendering of
each form, never with the module's patterns.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from linkcheck.app.offline import diagnose_captures
from linkcheck.bundle.anonymize import TOOL_WORDS, anonymize_bundle
from linkcheck.bundle.format import Bundle, load_bundle, write_bundle
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.model import Capture

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ("dgx-spark-1", "dgx-spark-2")  # the fixture's own hostnames, renamed in every example
SERIAL = "APF25090012345"  # the fixture's cable serial
FAKE_WORDS = re.compile(r"node|site|user|invalid|sn\d")  # what the fakes are made of: not a useful original
# The fixed words of the probe lines (`lcprobe-<label> ...`): a generated name equal to one would be "found" there.
PROBE_WORDS = frozenset({"lcprobe", "host", "fqdn", "search", "ip0", "ip1", "ip2", "tok", "range", "gidhex",
                         "gidmapped", "giddec", "ncclle", "mac", "macforms", "ll", "guid", "dmi", "sn", "path",
                         "ip", "example", "peer", "gid", "bare", "node", "serial", "number", "vendor", "var",
                         "log", "nccl", "home", "nvidia", "run", "enx", "ffff"})


@functools.cache
def _base() -> Bundle:
    return load_bundle(ROOT / "fixtures" / "healthy")


@functools.cache
def _base_words() -> frozenset[str]:
    """Every alphanumeric run of the fixture, and of the files an anonymised copy of it is written as (the
    manifest's keys, file names: `bundle`): a generated name must not already be in them."""
    text = "\n".join(c.stdout + c.stderr + c.command + " ".join(c.meta.values()) for c in _base().captures)
    with tempfile.TemporaryDirectory() as tmp:
        write_bundle(anonymize_bundle(_base()), Path(tmp) / "anon")
        text += "\n".join(p.read_text(encoding="utf-8") + "\n" + p.name
                          for p in sorted((Path(tmp) / "anon").rglob("*")) if p.is_file())
    return frozenset(re.findall(r"[a-z0-9]+", text.lower()))


@functools.cache
def _rules() -> list:  # type: ignore[type-arg]
    return load_playbooks()


def _case(name: str, variant: int) -> str:
    return (name, name.upper(), name.title(), name.lower())[variant % 4]


def _name_ok(name: str) -> bool:
    """Not a fake's part, not a word the tools print (replaced only where it stands as a hostname; tested in
    test_anonymize_leaks), not already in the fixture."""
    lower = name.lower()
    words = set(re.findall("[a-z0-9]+", lower))
    # A name longer than two letters is looked for as a substring of the written bundle (`_found`), so it must not
    # be part of a word the fixture already holds either (`share` in the netplan filter's `shared`).
    inside = len(lower) > 2 and any(w in base for w in words for base in _base_words())
    return not FAKE_WORDS.search(lower) and lower not in TOOL_WORDS and not words & _base_words() and \
        not words & PROBE_WORDS and not inside


LETTERS = "abcdefghijklmnopqrstuvwxyz"
two_char = st.text(LETTERS, min_size=2, max_size=2)
long_name = st.builds(lambda a, b: f"{a}-{b}", st.text(LETTERS, min_size=3, max_size=8),
                      st.text(LETTERS + "0123456789", min_size=1, max_size=3))
word_name = st.text(LETTERS, min_size=5, max_size=9)
hostname = st.one_of(two_char, long_name, word_name).filter(_name_ok)
domain = st.builds(lambda a, b, tld: f"{a}.{b}.{tld}", st.text(LETTERS, min_size=3, max_size=6),
                   st.text(LETTERS, min_size=3, max_size=6), st.sampled_from(["com", "org", "net", "io"])
                   ).filter(_name_ok)
first_octet = st.sampled_from([11, 23, 44, 61, 88, 100, 126, 131, 172, 192, 203])
ipv4 = st.builds(lambda a, b, c, d: ipaddress.IPv4Address(bytes([a, b, c, d])), first_octet,
                 st.integers(0, 255), st.integers(0, 255), st.integers(1, 200))
mac = st.integers(0, (1 << 48) - 1).map(lambda v: v & ~(1 << 40) & ~0xFF | 0x10)  # unicast, room for twins
guid = st.integers(1 << 60, (1 << 64) - 2).filter(lambda v: (v >> 24) & 0xFFFF != 0xFFFE)
serial = st.text("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=10, max_size=14).filter(
    lambda s: bool(re.search("[A-Z]", s) and re.search("[0-9]", s)) and _name_ok(s))


# --- the forms of one value, rendered here -------------------------------------------------------------------

def _mac_text(value: int, sep: str = ":") -> str:
    return sep.join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def _mac_dotted(value: int) -> str:
    raw = f"{value:012x}"
    return ".".join(raw[i:i + 4] for i in range(0, 12, 4))


def _eui64(value: int) -> bytes:
    b = value.to_bytes(6, "big")
    return bytes([b[0] ^ 2, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]])


def _link_local(value: int) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(b"\xfe\x80" + b"\0" * 6 + _eui64(value))


def _v4_gid(ip: ipaddress.IPv4Address) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed)


def _nccl_le(ip: ipaddress.IPv4Address) -> str:
    value = int.from_bytes(b"\0\0\xff\xff" + ip.packed, "little")
    return f"{value:X}"


def _dec_gid(gid: ipaddress.IPv6Address) -> str:
    return ":".join(f"{b:02d}" for b in gid.packed)


def _guid_colon(value: int) -> str:
    raw = f"{value:016x}"
    return ":".join(raw[i:i + 4] for i in range(0, 16, 4))


@dataclasses.dataclass(frozen=True)
class Injected:
    hosts: tuple[str, str]
    domain: str
    ips: tuple[ipaddress.IPv4Address, ipaddress.IPv4Address, ipaddress.IPv4Address]  # 0, 1: one /24; 2: another
    mac: int
    guid: int
    serial: str
    dmi_serial: str
    cases: tuple[int, ...]


def _probe_text(inj: Injected) -> str:
    """The text added to node a's dmesg: every form, each after a `lcprobe-<n>` label to find its fake."""
    a, b = inj.hosts
    ip0, ip1, ip2 = inj.ips
    c = inj.cases
    gid0 = _v4_gid(ip0)
    lines = [
        f"lcprobe-host {_case(a, c[0])} {_case(b, c[1])}",
        f"lcprobe-fqdn {_case(a, c[2])}.{inj.domain} {_case(b, c[3])}.{inj.domain.upper()}",
        f"lcprobe-search {inj.domain}",
        f"lcprobe-ip0 {ip0}",
        f"lcprobe-ip1 {ip1}",
        f"lcprobe-ip2 {ip2}",
        f"lcprobe-tok ip-{str(ip0).replace('.', '-')}.example host_{ip1} peer={ip2},",
        f"lcprobe-range {ip0}-{ip1}",
        f"lcprobe-gidhex {gid0.exploded}",
        f"lcprobe-gidmapped ::ffff:{ip0}",
        f"lcprobe-giddec {_dec_gid(gid0)}",
        f"lcprobe-ncclle GID 3 (0/{_nccl_le(ip0)}) bare {_nccl_le(ip1)}",
        f"lcprobe-mac {_mac_text(inj.mac)} {_mac_text(inj.mac + 1)}",
        f"lcprobe-macforms {_mac_text(inj.mac).upper()} {_mac_text(inj.mac, '-')} {_mac_text(inj.mac, '-').upper()} "
        f"{_mac_dotted(inj.mac)} enx{inj.mac:012x}",
        f"lcprobe-ll {_link_local(inj.mac)} {_link_local(inj.mac).exploded}",
        f"lcprobe-guid Node GUID: 0x{inj.guid:016x} node_guid {_guid_colon(inj.guid)}",
        f"lcprobe-dmi Serial Number: {inj.dmi_serial}",
        f"lcprobe-sn Vendor SN : {inj.serial}",
    ]
    if len(a) > 2:  # inside paths (a 2-character name is replaced as a standalone word only)
        lines.append(f"lcprobe-path /var/log/nccl-{_case(a, c[4])}.log /home/nvidia/{a}/run_1/")
    return "\n".join(f"[    9.{i:06d}] {line}" for i, line in enumerate(lines)) + "\n"


def _inject(base: Bundle, inj: Injected) -> Bundle:
    def rename(text: str) -> str:
        for old, new in zip(HOSTS, inj.hosts, strict=True):
            text = text.replace(old, new)
        return text.replace(SERIAL, inj.serial)

    captures = []
    for cap in base.captures:
        cap = replace(cap, command=rename(cap.command), stdout=rename(cap.stdout),
                                  stderr=rename(cap.stderr), meta={k: rename(v) for k, v in cap.meta.items()})
        if cap.node == "a" and cap.spec == "dmesg":
            cap = replace(cap, stdout=cap.stdout + _probe_text(inj))
        captures.append(cap)
    a, b = inj.hosts
    nodes = {"a": {"target": f"nvidia@{_case(a, inj.cases[5])}.{inj.domain}", "hostname": a},
             "b": {"target": f"nvidia@{b}:22", "hostname": b}}
    return Bundle(captures=captures, nodes=nodes, created=base.created, tool_version=base.tool_version)


def _forms(inj: Injected) -> dict[str, list[str]]:
    """Every original value in each form it could leak in, lower case."""
    ips = inj.ips
    macs = (inj.mac, inj.mac + 1)
    return {
        "hostname": [h.lower() for h in inj.hosts],
        "domain": [inj.domain],
        "ipv4": [str(ip) for ip in ips],
        "ipv4 dashed": [str(ips[0]).replace(".", "-")],
        "ipv4 in GID hex": [_v4_gid(ips[0]).exploded[-14:]],  # ffff:c0a8:640a
        "ipv4 in decimal GID": [_dec_gid(_v4_gid(ips[0]))[-15:].lstrip(":")],
        "ipv4 in NCCL GID": [_nccl_le(ip).lower() for ip in ips[:2]],
        "mac": [_mac_text(m) for m in macs] + [_mac_text(inj.mac, "-"), _mac_dotted(inj.mac), f"{inj.mac:012x}"],
        "mac eui-64": [str(_link_local(inj.mac)), _link_local(inj.mac).exploded[5:]],
        "guid": [f"{inj.guid:016x}", _guid_colon(inj.guid)],
        "serial": [inj.serial.lower(), inj.dmi_serial.lower()],
    }


def _found(value: str, kind: str, text: str) -> bool:
    if kind == "hostname" and len(value) <= 2:  # a standalone word (it is a substring of many words); no host name
        # holds `_`, so `nm` in the spec name nm_connections is not one
        return re.search(rf"(?<![a-z0-9_]){re.escape(value)}(?![a-z0-9_])", text) is not None
    if kind.startswith(("ipv4", "ipv4 dashed")) and kind in ("ipv4", "ipv4 dashed"):
        return re.search(rf"(?<![0-9]){re.escape(value)}(?![0-9])", text) is not None
    if kind.startswith(("mac", "guid", "ipv4 in")):
        return re.search(rf"(?<![0-9a-f]){re.escape(value)}(?![0-9a-f])", text) is not None
    return value in text


def _probe(text: str, label: str) -> list[str]:
    found = re.search(rf"lcprobe-{label} (.*)", text)
    assert found, f"lcprobe-{label} line missing"
    return found.group(1).split()


def _outcome(bundle: Bundle) -> list[tuple[str, str, str]]:
    def structure(subject: str) -> str:  # addresses in a subject become placeholders; names of nodes stay
        subject = re.sub(r"\d{1,3}(?:\.\d{1,3}){3}", "<ip>", subject)
        return re.sub(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}", "<mac>", subject)

    findings = diagnose_captures(bundle, _rules()).diagnosis.findings
    return sorted((f.rule_id, f.status.value, structure(f.subject)) for f in findings)


injected = st.builds(
    Injected,
    hosts=st.tuples(hostname, hostname).filter(lambda h: h[0].lower() != h[1].lower()
                                               and h[0].lower() not in h[1].lower()
                                               and h[1].lower() not in h[0].lower()),
    domain=domain,
    ips=st.tuples(ipv4, st.integers(1, 250), ipv4).map(
        lambda t: (t[0], ipaddress.IPv4Address(int(t[0]) & ~0xFF | t[1]), t[2])).filter(
        lambda ips: len(set(ips)) == 3 and int(ips[0]) >> 8 != int(ips[2]) >> 8),
    mac=mac, guid=guid, serial=serial, dmi_serial=serial,
    cases=st.tuples(*[st.integers(0, 3)] * 6),
)


# No shrinking: on a whole bundle it runs for minutes; the failing example is printed as generated.
@settings(max_examples=30, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(injected)
def test_nothing_original_is_written_and_the_diagnosis_is_the_same(inj: Injected) -> None:
    assume(inj.serial != inj.dmi_serial)
    original = _inject(_base(), inj)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "anon"
        write_bundle(anonymize_bundle(original), out)
        written = "\n".join(p.read_text(encoding="utf-8") for p in sorted(out.rglob("*")) if p.is_file()).lower()
        loaded = load_bundle(out)
    assert loaded.problems == []  # the sha256 entries match the anonymised files

    for kind, values in _forms(inj).items():
        leaked = [v for v in values if _found(v, kind, written)]
        assert not leaked, f"{kind} left in the written bundle: {leaked}"

    # One value, one fake, in every form; subnets and MAC twins keep their shape.
    dmesg = next(c.stdout for c in loaded.captures if c.node == "a" and c.spec == "dmesg")
    fake = [ipaddress.IPv4Address(_probe(dmesg, f"ip{i}")[0]) for i in range(3)]
    assert len(set(fake)) == 3
    assert int(fake[0]) >> 8 == int(fake[1]) >> 8 and int(fake[0]) >> 8 != int(fake[2]) >> 8
    assert _probe(dmesg, "range") == [f"{fake[0]}-{fake[1]}"]
    assert ipaddress.IPv6Address(_probe(dmesg, "gidhex")[0]).ipv4_mapped == fake[0]
    assert _probe(dmesg, "gidmapped") == [f"::ffff:{fake[0]}"]
    assert bytes(int(x) for x in _probe(dmesg, "giddec")[0].split(":"))[12:] == fake[0].packed
    nccl = _probe(dmesg, "ncclle")
    assert nccl[2] == f"(0/{_nccl_le(fake[0])})" and nccl[4] == _nccl_le(fake[1])
    tokens = _probe(dmesg, "tok")
    assert tokens == [f"ip-{str(fake[0]).replace('.', '-')}.example", f"host_{fake[1]}", f"peer={fake[2]},"]
    twins = [int(m.replace(":", ""), 16) for m in _probe(dmesg, "mac")]
    assert twins[1] - twins[0] == 1
    forms = _probe(dmesg, "macforms")
    assert {re.sub("[^0-9a-f]", "", f.lower().removeprefix("enx")) for f in forms} == {f"{twins[0]:012x}"}
    for ll in _probe(dmesg, "ll"):
        assert ipaddress.IPv6Address(ll).packed[8:] == _eui64(twins[0])
    fake_a, fake_b = _probe(dmesg, "host")
    assert fake_a.lower() == loaded.nodes["a"]["hostname"] and fake_b.lower() == loaded.nodes["b"]["hostname"]
    assert fake_a.lower() != fake_b.lower()

    assert _outcome(loaded) == _outcome(original)


def test_the_probe_text_is_seen_by_the_leak_check() -> None:
    """Guard against a vacuous property: unanonymised, every injected form is found."""
    inj = Injected(hosts=("vm", "Gx-Lab7"), domain="corp.widget.io",
                   ips=(ipaddress.IPv4Address("23.45.67.89"), ipaddress.IPv4Address("23.45.67.90"),
                        ipaddress.IPv4Address("44.1.2.3")),
                   mac=0x3C6D66CCB310, guid=0x1122334455667788, serial="QX12345678", dmi_serial="ZZ98765432",
                   cases=(1, 2, 3, 0, 1, 2))
    original = _inject(_base(), inj)
    text = "\n".join([c.stdout + c.command for c in original.captures] + [str(original.nodes)]).lower()
    for kind, values in _forms(inj).items():
        assert all(_found(v, kind, text) for v in values), kind
    assert isinstance(original.captures[0], Capture)
