"""--anonymize: the leak classes found with hand-made inputs, one test each, and `linkcheck anonymize`."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from pathlib import Path

import pytest

from linkcheck.bundle.anonymize import Anonymizer, anonymize_bundle
from linkcheck.bundle.anonymize_saved import anonymize_any_saved
from linkcheck.bundle.format import Bundle, load_bundle
from linkcheck.errors import BundleError
from linkcheck.model import Capture
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "fixtures" / "healthy"


def _bundle(stdout: str, *, host_a: str = "spark-a.lab.example.com", host_b: str = "spark-b",
            command: str = "dmesg", meta: dict[str, str] | None = None) -> Bundle:
    caps = [Capture("a", "hostname", "hostname", host_a + "\n"), Capture("b", "hostname", "hostname", host_b + "\n"),
            Capture("a", "dmesg", command, stdout, meta=meta or {})]
    return Bundle(captures=caps, nodes={"a": {"target": f"nvidia@{host_a}", "hostname": host_a},
                                        "b": {"target": host_b, "hostname": host_b}})


def _out(bundle: Bundle) -> str:
    return anonymize_bundle(bundle).captures[2].stdout


def test_fqdn_and_its_domain() -> None:
    out = _out(_bundle("up spark-a.lab.example.com; peer spark-b.lab.example.com; search lab.example.com\n"
                       "SPARK-A.LAB.EXAMPLE.COM other.lab.example.com\n"))
    assert "lab.example" not in out.lower() and "spark" not in out.lower()
    fake_domain = re.search(r"search (\S+)", out).group(1)  # type: ignore[union-attr]
    assert fake_domain != "lab.example.com" and f"other.{fake_domain}" in out
    assert out.startswith("up node-a; peer node-b; search ")  # the short name learns the domain of the other


def test_hostname_in_any_case() -> None:
    out = _out(_bundle("SPARK-A Spark-A spark-a SPARK-B spark-b\n"))
    assert out == "NODE-A node-a node-a NODE-B node-b\n"


def test_two_character_hostname_whole_words_only() -> None:
    text = ("vm:1234:1234 [0] NCCL INFO x\nping vm ok, VM down\nkvm vmstat vm.swappiness /proc/sys/vm/x vm-1 nvme\n")
    bundle = _bundle(text, host_b="vm")
    anon = anonymize_bundle(bundle)
    out = anon.captures[2].stdout.splitlines()
    assert out[0] == "node-b:1234:1234 [0] NCCL INFO x"
    assert out[1] == "ping node-b ok, NODE-B down"
    assert out[2] == "kvm vmstat vm.swappiness /proc/sys/vm/x vm-1 nvme"  # never inside other words or keys
    assert anon.captures[1].stdout == "node-b\n" and anon.nodes["b"] == {"target": "node-b", "hostname": "node-b"}


def test_hostname_that_is_a_tool_word_only_where_it_is_a_hostname() -> None:
    text = "up:77:77 [0] NCCL INFO x\nlink is up\n#  Rank  1 Group  0 Pid 9 on up device  0 [0x01] GB10\n"
    anon = anonymize_bundle(_bundle(text, host_b="up", command="mpirun -H spark-a:1,up:1 ./all_gather_perf"))
    assert anon.captures[2].stdout == ("node-b:77:77 [0] NCCL INFO x\nlink is up\n"
                                       "#  Rank  1 Group  0 Pid 9 on node-b device  0 [0x01] GB10\n")
    assert anon.captures[2].command == "mpirun -H node-a:1,node-b:1 ./all_gather_perf"
    assert anon.captures[1].stdout == "node-b\n"


def test_nccl_prefix_right_after_another_ranks_cut_line() -> None:
    """mpirun merges every rank's output: a rank's line may stop mid-way and the next rank's prefix follow it on the
    same line, after digits (its pid:tid), where no other hostname rule looks."""
    out = _out(_bundle("spark-a:30435:3047spark-b:30433:30433 [0] NCCL INFO Bootstrap\n"))
    assert out == "node-a:30435:3047node-b:30433:30433 [0] NCCL INFO Bootstrap\n"
    # A hostname the tools print as a word is replaced there too, as at a line's start.
    out = _out(_bundle("up:1:2 [0] NCCL INFO x\n3up:4:5 [0] NCCL INFO y\nlink 3up:4\n", host_b="up"))
    assert out == "node-b:1:2 [0] NCCL INFO x\n3node-b:4:5 [0] NCCL INFO y\nlink 3up:4\n"
    # ... or after whatever text the cut line had printed, a letter too
    out = _out(_bundle("1[0] -> 2[0] [send] vspark-b:6504:6504 [0] NCCL INFO Bootstrap\n"))
    assert out == "1[0] -> 2[0] [send] vnode-b:6504:6504 [0] NCCL INFO Bootstrap\n"


def test_hostnames_in_paths_manifest_command_and_meta() -> None:
    bundle = _bundle("log at /var/log/nccl-spark-a.log and /home/nvidia/spark-b/run_1/\n",
                     command="cat /tmp/spark-a/out.txt", meta={"peer": "spark-b.lab.example.com", "host": "Spark-A"})
    anon = anonymize_bundle(bundle)
    cap = anon.captures[2]
    assert cap.stdout == "log at /var/log/nccl-node-a.log and /home/user1/node-b/run_1/\n"
    assert cap.command == "cat /tmp/node-a/out.txt" and cap.meta == {"peer": "node-b", "host": "node-a"}
    assert anon.nodes["a"] == {"target": "user1@node-a", "hostname": "node-a"}


@pytest.mark.parametrize(("text", "shape"), [
    ("ip-10-20-30-40.ec2.internal", r"ip-(\d+)-(\d+)-(\d+)-(\d+)\.ec2\.internal"),
    ("host_10.20.30.40", r"host_(\d+)\.(\d+)\.(\d+)\.(\d+)"),
    ("peer=10.20.30.40,", r"peer=(\d+)\.(\d+)\.(\d+)\.(\d+),"),
])
def test_ipv4_inside_other_tokens(text: str, shape: str) -> None:
    anon = Anonymizer()
    fake = anon.text("10.20.30.40")
    out = anon.text(text)
    m = re.fullmatch(shape, out)
    assert m and ".".join(m.groups()) == fake != "10.20.30.40"


def test_ipv4_range_keeps_both_ends_in_one_fake_subnet() -> None:
    anon = Anonymizer()
    low, high = anon.text("range 10.0.0.1-10.0.0.9").split()[1].split("-")
    assert low != "10.0.0.1" and ipaddress.ip_network(f"{low}/24", strict=False) == \
        ipaddress.ip_network(f"{high}/24", strict=False)
    assert anon.text("10.0.0.9") == high
    for kept in ("OFED 24.10-1.1.4.0", "v1.2.3.4", "version 1.2.3.4"):
        assert anon.text(kept) == kept


def test_fake_addresses_never_equal_a_real_one() -> None:
    """A real 10.0.x.y must not stay in the output as the fake of another address."""
    text = "inet 192.168.100.10/24\ninet 10.0.100.10/24\n"
    out = _out(_bundle(text))
    assert "192.168.100.10" not in out and "10.0.100.10" not in out
    assert len(set(re.findall(r"inet (\S+)", out))) == 2


@pytest.mark.parametrize("form", ["3c:6d:66:cc:b3:b7", "3C:6D:66:CC:B3:B7", "3c-6d-66-cc-b3-b7", "3C-6D-66-CC-B3-B7",
                                  "3c6d.66cc.b3b7", "enx3c6d66ccb3b7"])
def test_mac_forms_map_to_the_same_fake(form: str) -> None:
    anon = Anonymizer()
    fake = anon.text("link/ether 3c:6d:66:cc:b3:b7").split()[1]
    out = anon.text(form)
    assert re.sub("[^0-9a-f]", "", out.lower().removeprefix("enx")) == fake.replace(":", "")
    assert "3c6d66ccb3b7" not in re.sub("[^0-9a-f]", "", out.lower())


def test_mac_twins_keep_their_offset_and_neighbour_equality() -> None:
    anon = Anonymizer()
    twins = [anon.text(f"3c:6d:66:cc:b3:b{i}") for i in (4, 5, 6, 7)]
    other = anon.text("4c:bb:47:00:10:b4")
    values = [int(t.replace(":", ""), 16) for t in twins]
    assert [v - values[0] for v in values] == [0, 1, 2, 3]
    assert int(other.replace(":", ""), 16) >> 8 != values[0] >> 8
    assert anon.text("lladdr 3C:6D:66:CC:B3:B5") == f"lladdr {twins[1].upper()}"


@pytest.mark.parametrize("text", ["Node GUID: 0x3c6d660300ccb3b6", "node_guid 0x3c6d660300ccb3b6",
                                  "GUID 0x3C6D660300CCB3B6", "node_guid:\t3c6d:6603:00cc:b3b6",
                                  '"node_guid": "3c6d660300ccb3b6"'])
def test_guid_forms(text: str) -> None:
    anon = Anonymizer()
    out = anon.text(text)
    digits = re.sub("[^0-9a-f]", "", out.lower().replace("0x", ""))
    assert "3c6d660300ccb3b6" not in digits
    assert anon.text("3c6d:6603:00cc:b3b6").replace(":", "") in digits  # the same fake in every form


def test_ipv4_mapped_gids_follow_the_ipv4() -> None:
    anon = Anonymizer()
    fake = ipaddress.IPv4Address(anon.text("192.168.100.10"))
    gid = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + fake.packed)
    assert anon.text("0000:0000:0000:0000:0000:ffff:c0a8:640a") == gid.exploded
    assert anon.text("::ffff:192.168.100.10") == f"::ffff:{fake}"
    assert anon.text("::ffff:c0a8:640a") == gid.compressed
    dec = anon.text("00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:10")
    assert [int(x) for x in dec.split(":")[12:]] == list(fake.packed)


@pytest.mark.parametrize("text", ["GID 3 (0/A64A8C0FFFF0000)", "iid A64A8C0FFFF0000", "A64A8C0FFFF0000",
                                  "a64a8c0ffff0000"])
def test_nccl_little_endian_gid(text: str) -> None:
    anon = Anonymizer()
    fake = ipaddress.IPv4Address(anon.text("192.168.100.10"))
    out = anon.text(text)
    found = re.search(r"([0-9A-Fa-f]+ffff0000)", out, re.I)
    assert found and "a64a8c0" not in out.lower()
    assert int(found.group(1), 16).to_bytes(8, "little")[4:] == fake.packed


@pytest.mark.parametrize("text", ["fe80::3e6d:66ff:fecc:b3b7", "fe80:0000:0000:0000:3e6d:66ff:fecc:b3b7",
                                  "FE80::3E6D:66FF:FECC:B3B7/64"])
def test_link_local_gids_follow_the_mac(text: str) -> None:
    anon = Anonymizer()
    mac = bytes.fromhex(anon.text("3c:6d:66:cc:b3:b7").replace(":", ""))
    out = anon.text(text).split("/")[0]
    eui = ipaddress.IPv6Address(out).packed[8:]
    assert eui == bytes([mac[0] ^ 2, mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]])
    assert "fecc:b3b7" not in out.lower()


@pytest.mark.parametrize("text", ["\tVendor SN                                 : APF25090012345\n",
                                  "/sys/class/dmi/id/product_serial\tAPF25090012345\n",
                                  "/sys/class/dmi/id/board_serial\tAPF25090012345\n",
                                  "\tSerial Number: APF25090012345\n", '{"serial_number": "APF25090012345"}',
                                  "\t[SN] Serial number: APF25090012345\n"])
def test_serial_labels(text: str) -> None:
    anon = Anonymizer()
    out = anon.text(text)
    assert "APF25090012345" not in out and "SN00000001" in out
    assert anon.text("seen apf25090012345 again") == "seen SN00000001 again"  # learned: any case, anywhere


def _files(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_anonymize_saved_writes_a_valid_bundle(tmp_path: Path) -> None:
    manifest = anonymize_any_saved(HEALTHY, tmp_path / "out")
    data = json.loads(manifest.read_text())
    for rel, digest in data["files"].items():
        assert hashlib.sha256((tmp_path / "out" / rel).read_bytes()).hexdigest() == digest
    assert load_bundle(tmp_path / "out").problems == []
    text = "\n".join(_files(tmp_path / "out").values()).lower()
    assert "dgx-spark" not in text and "192.168.100.10" not in text and "apf25090012345" not in text


def test_anonymize_saved_refuses_changed_bundles_and_full_folders(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(HEALTHY, copy)
    (copy / "a" / "hostname.stdout").write_text("changed\n")
    with pytest.raises(BundleError, match="sha256"):
        anonymize_any_saved(copy, tmp_path / "out")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(BundleError, match="not an empty folder"):
        anonymize_any_saved(HEALTHY, tmp_path / "full")
    assert not (tmp_path / "out").exists()


def _cli(*args: str) -> CliResult:
    return run_cli(*args, timeout=60)


def test_cli_anonymize(tmp_path: Path) -> None:
    ok = _cli("anonymize", str(HEALTHY), str(tmp_path / "out"))
    assert ok.returncode == 0, ok.stderr
    assert str(tmp_path / "out") in ok.stderr and (tmp_path / "out" / "manifest.json").is_file()
    again = _cli("anonymize", str(HEALTHY), str(tmp_path / "out"))
    assert again.returncode == 4 and "Traceback" not in again.stderr and len(again.stderr.splitlines()) == 1
    missing = _cli("anonymize", str(tmp_path / "nope"), str(tmp_path / "out2"))
    assert missing.returncode == 4 and "nope" in missing.stderr and not (tmp_path / "out2").exists()
    diagnosed = _cli("diagnose", str(tmp_path / "out"), "--format", "json")
    # the fixture's host names (dgx-spark-1, -2) are gone; a rule's reference may name NVIDIA/dgx-spark-playbooks
    assert diagnosed.returncode == 0 and "node-a" in diagnosed.stdout
    assert not re.search(r"dgx-spark-[0-9]", diagnosed.stdout)


def test_check_anonymize_reports_real_names_and_saves_fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check --save DIR --anonymize`: the report on screen is of the real bundle, the saved one is anonymised."""
    from linkcheck.app.live import TrafficRequest, check_cluster
    from linkcheck.config import SshOptions
    from linkcheck.outcome import Outcome, judged_view
    from tests.app.stand_in import PAIR, answer_with, inspection

    real = inspection(HEALTHY)
    answer_with(monkeypatch, real)
    check, _, _ = check_cluster(PAIR, SshOptions(), [], TrafficRequest(), save=tmp_path / "saved", anonymize=True)
    judged = judged_view(check)
    assert isinstance(judged, Outcome) and judged.bundle.captures == real  # the real one
    assert judged.bundle.path == tmp_path / "saved"
    assert judged.link.a.hostname == "dgx-spark-1"
    saved = load_bundle(tmp_path / "saved")
    assert saved.problems == [], saved.problems  # the nodes renamed as a cluster's are, their hostnames faked
    assert {name: node["hostname"] for name, node in saved.nodes.items()} == {"n1": "node-n1", "n2": "node-n2"}
    text = "\n".join(_files(tmp_path / "saved").values()).lower()
    assert "dgx-spark" not in text and "192.168.100.10" not in text


# --- hostnames with `_`, Wi-Fi SSIDs and DNS search domains: none of them anywhere in the anonymised bundle -------

NETPLAN_WIFI = """network:
  version: 2
  ethernets:
    enp1s0f1np1:
      addresses: [192.168.100.10/24]
      nameservers:
        search: [corp.acme-labs.net, "berlin.acme-labs.net", zeta]
        addresses: [10.9.8.7]
    eno1:
      nameservers:
        search:
          - rnd.acme-labs.net
          - 'office-west'
  wifis:
    wlp2s0:
      access-points:
        "Acme Guest 5G":
          password: "(not collected)"
        AcmeCorp-Secure:
          auth: {key-management: eap}
        'up':
          password: "(not collected)"
      dhcp4: true
    wlp3s0:
      access-points: {"Cafe Zurich": {password: "(not collected)"}, HomeNet_42: {}}
"""
NM_WIFI = """==> /etc/NetworkManager/system-connections/Moonbase Alpha.nmconnection <==
[connection]
id=Moonbase Alpha
uuid=0a1b2c3d-0000-4000-8000-000000000001
type=wifi
[wifi]
ssid=Moonbase Alpha
mode=infrastructure
==> /etc/NetworkManager/system-connections/cx7.nmconnection <==
[connection]
id=cx7
type=ethernet
interface-name=enp1s0f1np1
"""
RESOLV = "nameserver 10.9.8.7\nsearch cluster.acme-labs.net lab-omega\ndomain tor.acme-labs.net\noptions ndots:2\n"
SECRETS = ("Acme Guest 5G", "AcmeCorp-Secure", "Cafe Zurich", "HomeNet_42", "Moonbase Alpha", "acme-labs",
           "office-west", "lab-omega", "zeta", "spark_a", "spark_b_02")


def _wifi_bundle() -> Bundle:
    caps = [Capture("a", "hostname", "hostname", "spark_a\n"), Capture("b", "hostname", "hostname", "spark_b_02\n"),
            Capture("a", "netplan_files", "cat /etc/netplan/*.yaml", NETPLAN_WIFI),
            Capture("a", "nm_connections", "tail -v ...", NM_WIFI),
            Capture("b", "resolv_conf", "cat /etc/resolv.conf", RESOLV),
            Capture("a", "dmesg", "dmesg", "spark_a: link up; peer spark_b_02 on Cafe Zurich; lab-omega zeta "
                    "HomeNet_42 moonbase alpha\nSPARK_A ping spark_b_02.cluster.acme-labs.net\n")]
    return Bundle(captures=caps, nodes={"a": {"target": "nvidia@spark_a", "hostname": "spark_a"},
                                        "b": {"target": "spark_b_02", "hostname": "spark_b_02"}})


def _all_text(bundle: Bundle) -> str:
    return "\n".join([json.dumps(bundle.nodes), *(f"{c.command}\n{c.stdout}\n{c.stderr}" for c in bundle.captures)])


def test_ssids_search_domains_and_underscore_hostnames_never_leak() -> None:
    anon = anonymize_bundle(_wifi_bundle())
    text = _all_text(anon)
    for secret in SECRETS:
        assert secret.lower() not in text.lower(), (secret, text)
    netplan = anon.captures[2].stdout
    assert "'up':" in netplan or "wifi-" in netplan  # a tool word as SSID: replaced in its context only
    assert "'up':" not in netplan
    assert netplan.count("wifi-") >= 5 and "node-a" in anon.captures[0].stdout
    assert "ndots:2" in anon.captures[4].stdout and "nameserver 10." in anon.captures[4].stdout


def test_config_names_keep_their_shape() -> None:
    import yaml

    anon = anonymize_bundle(_wifi_bundle())
    doc = yaml.safe_load(anon.captures[2].stdout)
    search = doc["network"]["ethernets"]["enp1s0f1np1"]["nameservers"]["search"]
    assert len(search) == 3 and all(s.endswith(".invalid") for s in search)
    points = doc["network"]["wifis"]["wlp2s0"]["access-points"]
    assert len(points) == 3 and all(k.startswith("wifi-") for k in points)
    flow = doc["network"]["wifis"]["wlp3s0"]["access-points"]
    assert len(flow) == 2 and all(k.startswith("wifi-") for k in flow)
    nm = anon.captures[3].stdout
    assert "id=cx7" in nm and "interface-name=enp1s0f1np1" in nm and ".nmconnection <==" in nm
    # one fake per original, everywhere
    assert re.search(r"id=(wifi-\d+)", nm).group(1) in re.search(r"ssid=(wifi-\d+)", nm).group(0)  # type: ignore[union-attr]


def test_the_healthy_fixture_is_unchanged_by_the_new_kinds(tmp_path: Path) -> None:
    before = anonymize_bundle(load_bundle(HEALTHY))
    assert not [c for c in before.captures if "wifi-" in c.stdout]


def test_cli_anonymize_of_a_bundle_with_wifi_leaves_no_original(tmp_path: Path) -> None:
    from linkcheck.bundle.format import write_bundle

    source = tmp_path / "src"
    write_bundle(_wifi_bundle(), source)
    out = tmp_path / "out"
    proc = _cli("anonymize", str(source), str(out))
    assert proc.returncode == 0, proc.stderr
    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file()).decode("utf-8", "replace").lower()
    for secret in SECRETS:
        assert secret.lower() not in blob, secret
    assert _cli("verify", str(out)).returncode == 0
