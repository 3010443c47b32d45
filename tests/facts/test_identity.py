"""Node identity, tool versions and NetworkManager profiles: parsers on each real format, facts, rules, reports,
the anonymiser and the acceptance record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from msgspec.structs import replace

from linkcheck.accept.evidence import check_evidence
from linkcheck.accept.judge import judge_check_run
from linkcheck.accept.profile import BUILTIN_DIR, load_profile_file
from linkcheck.app.offline import cluster_bundle, configured_rules, diagnose_bundle, diagnose_captures
from linkcheck.bundle.anonymize import anonymize_bundle
from linkcheck.bundle.format import Bundle, load_bundle
from linkcheck.errors import ParseError
from linkcheck.facts.build import build_node_facts
from linkcheck.model import Capture, Severity, Status
from linkcheck.parsers import get_parser
from linkcheck.parsers.identity import nccl_version_code, parse_dmi_serial, parse_nccl_install
from linkcheck.parsers.networkmanager import parse_nm_connections
from linkcheck.parsers.perftest import parse_perftest_version
from linkcheck.report.json_report import report_document
from tests.emulators.scenarios import SCENARIOS, scenario_captures

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).resolve().parents[1] / "samples"
FIXTURES = ROOT / "fixtures"


# -- parsers -------------------------------------------------------------------------------------------------------

def test_perftest_version_of_debian_perftest_as_captured() -> None:
    # Debian's perftest 4.5+0.17 (AC_INIT 6.06) prints this and exits 1, as every release since 4.x does.
    version = parse_perftest_version((SAMPLES / "perftest" / "version_6.06_debian_captured.txt").read_text())
    assert (version.version, version.json_valid, version.header_unit) == ("6.06", False, "MB/sec")


@pytest.mark.parametrize(("text", "serial"), [
    ("/sys/class/dmi/id/product_serial:1581925012345\n", "1581925012345"),  # grep -H . (the spec)
    ("1581925012345\n", "1581925012345"),  # a bare `cat`
    ("/sys/class/dmi/id/product_serial:Default string\n", None),  # AMI's unset string
    ("/sys/class/dmi/id/product_serial:To Be Filled By O.E.M.\n", None),
])
def test_dmi_serial_forms(text: str, serial: str | None) -> None:
    assert parse_dmi_serial(text).serial == serial


def test_dmi_serial_refuses_what_is_not_one_value() -> None:
    with pytest.raises(ParseError):
        parse_dmi_serial("a\nb\n")
    with pytest.raises(ParseError):
        parse_dmi_serial("")


def test_nccl_install_takes_the_highest_full_version() -> None:
    found = parse_nccl_install((SAMPLES / "nccl" / "nccl_install_deb_and_source_emulated.txt").read_text())
    assert found.nccl_version == "2.29.2"
    assert found.tests_binaries == ("/home/nvidia/nccl-tests/build/all_gather_perf",)
    assert len(found.libraries) == 5
    nothing = parse_nccl_install("")  # no NCCL on the node (captured on a machine without it): not an error
    assert (nothing.libraries, nothing.nccl_version, nothing.tests_binaries) == ((), None, ())
    # pip's nvidia-nccl wheels ship libnccl.so.2 only: the library is recorded, its version is not known
    assert parse_nccl_install("lib /usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2\n").nccl_version is None
    with pytest.raises(ParseError):
        parse_nccl_install("garbage\n")


def test_nccl_version_codes_as_nccl_tests_prints_them() -> None:
    assert nccl_version_code(22809) == "2.28.9"
    assert nccl_version_code(22905) == "2.29.5"
    assert nccl_version_code(2804) == "2.8.4"  # NCCL_VERSION_CODE before 2.9 was MAJOR*1000+MINOR*100+PATCH
    assert nccl_version_code(None) is None


def test_nm_keyfiles_under_etc_and_run() -> None:
    profiles = parse_nm_connections((SAMPLES / "system" / "nm_keyfiles_etc_run_emulated.txt").read_text()).profiles
    by_id = {p.id: p for p in profiles}
    assert set(by_id) == {"Wired connection 1", "cx7-p1-2", "netplan-enp1s0f1np1"}
    runtime = by_id["cx7-p1-2"]
    assert runtime.runtime_only and not runtime.netplan_generated
    assert (runtime.interface_name, runtime.mac_address, runtime.mtu) == ("enP2p1s0f1np1", "3c:6d:66:cc:b3:b9", 9000)
    assert (runtime.ipv4_method, runtime.ipv4_addresses) == ("manual", ("192.168.101.10/24",))
    generated = by_id["netplan-enp1s0f1np1"]
    assert generated.netplan_generated and not generated.runtime_only  # netplan rewrites it at every boot
    assert not by_id["Wired connection 1"].runtime_only


def test_nm_keyfile_older_forms_and_odd_input() -> None:
    old = ("==> /run/NetworkManager/system-connections/fabric <==\n[connection]\nid=fabric\ntype=802-3-ethernet\n"
           "\n[802-3-ethernet]\nmac-address=3c:6d:66:cc:b3:b6;\n\n[ipv4]\nmethod=manual\n"
           "addresses1=192.168.100.10;24;192.168.100.1;\n"  # IP;PREFIX;GATEWAY: a /24
           "\n==> /run/NetworkManager/system-connections/sub <==\n")
    (profile,) = parse_nm_connections(old).profiles  # the directory's empty header is no profile
    assert profile.mac_address == "3c:6d:66:cc:b3:b6" and profile.ipv4_addresses == ("192.168.100.10/24",)
    assert parse_nm_connections("").profiles == ()
    with pytest.raises(ParseError):
        parse_nm_connections("[connection]\nid=x\n")  # no file header: not what the spec prints
    with pytest.raises(ParseError):
        parse_nm_connections("==> /etc/x <==\nkey-before-section=1\n")


def test_parse_kinds_are_registered() -> None:
    assert get_parser("dmi_serial") is parse_dmi_serial
    assert get_parser("nccl_install") is parse_nccl_install
    assert get_parser("nm_connections") is parse_nm_connections


# -- facts ---------------------------------------------------------------------------------------------------------

def _node_a(name: str = "healthy") -> list[Capture]:
    return [c for c in scenario_captures(SCENARIOS[name]) if c.node == "a"]


def _with(caps: list[Capture], spec: str, **changes: object) -> list[Capture]:
    return [replace(c, **changes) if c.spec == spec else c for c in caps]  # type: ignore[arg-type]


def test_identity_from_the_inspection() -> None:
    ident = build_node_facts("a", _node_a()).identity
    assert (ident.vendor, ident.product, ident.board_name) == ("NVIDIA", "NVIDIA_DGX_Spark", "P4242")
    assert (ident.bios_version, ident.bios_date) == ("5.36_0ACUM018", "08/06/2025")
    assert ident.serial and ident.boot_id
    assert (ident.perftest_version, ident.nccl_version) == ("6.22", "2.28.9")  # -V exits 1: still read
    assert ident.nccl_library == "/usr/lib/aarch64-linux-gnu/libnccl.so.2.28.9"


def test_identity_on_a_machine_without_dmi_and_without_sudo() -> None:
    no_dmi = (SAMPLES / "system" / "sysfs_dmi_no_dmi_container_captured.txt").read_text()
    caps = _with(_node_a(), "sysfs_dmi", stdout=no_dmi)
    caps = _with(caps, "dmi_serial", stdout="", stderr="sudo: a password is required\n", exit_status=1,
                 skipped="sudo refused (needs passwordless sudo for: grep -H . /sys/class/dmi/id/product_serial)")
    facts = build_node_facts("a", caps)
    assert facts.identity.vendor is None and facts.identity.serial is None
    assert facts.identity.boot_id == "e4474e7d-c033-4f20-b496-9356fc398ba5"
    assert not facts.unavailable  # identity is evidence: a serial that cannot be read makes nothing skip


def test_psid_and_firmware_from_sysfs_when_ethtool_i_is_missing() -> None:
    caps = [c for c in _node_a() if c.spec != "ethtool_i"]
    facts = build_node_facts("a", caps)
    assert {(f.psid, f.firmware) for f in facts.functions} == {("NVD0000000087", "28.45.4028")}


def test_runtime_profile_facts_and_what_makes_them_persistent() -> None:
    facts = build_node_facts("a", _node_a("nm-profile-runtime-only"))
    (prof,) = facts.nm_runtime
    assert (prof.netdev, prof.profile_id, prof.persistent) == ("enP2p1s0f1np1", "cx7-p1-2", False)
    # the same profile while an /etc keyfile also configures the twin: the address survives a reboot
    caps = _node_a("nm-profile-runtime-only")
    extra = ("\n==> /etc/NetworkManager/system-connections/fabric.nmconnection <==\n[connection]\nid=fabric\n"
             "type=ethernet\ninterface-name=enP2p1s0f1np1\n\n[ipv4]\nmethod=manual\naddress1=192.168.101.10/24\n")
    nm = next(c for c in caps if c.spec == "nm_connections")
    (prof,) = build_node_facts("a", _with(caps, "nm_connections", stdout=nm.stdout + extra)).nm_runtime
    assert prof.persistent


# -- rules and reports ---------------------------------------------------------------------------------------------

def _findings(path: Path, rule: str) -> list[tuple[str, str]]:
    return [(f.status.value, f.subject) for f in diagnose_bundle(path).diagnosis.findings if f.rule_id == rule]


def test_nm_profile_runtime_only_fires_on_its_fixture_and_passes_on_healthy() -> None:
    assert ("warn", "a:enP2p1s0f1np1") in _findings(FIXTURES / "nm-profile-runtime-only", "NM_PROFILE_RUNTIME_ONLY")
    assert {s for s, _ in _findings(FIXTURES / "nm-profile-runtime-only", "NM_PROFILE_RUNTIME_ONLY")} == {"warn",
                                                                                                      "pass"}
    assert _findings(FIXTURES / "healthy", "NM_PROFILE_RUNTIME_ONLY") == [("pass", "node a"), ("pass", "node b")]


def test_nodes_differ_names_versions_and_never_serials() -> None:
    outcome = diagnose_bundle(FIXTURES / "nodes-differ")
    (finding,) = [f for f in outcome.diagnosis.findings if f.rule_id == "NODES_DIFFER"]
    assert finding.status is Status.WARN
    for text in ("BIOS: a 5.36_0ACUM018, b 5.36_0ACUM021", "perftest: a 6.22, b 6.29", "NCCL: a 2.28.9, b 2.29.2"):
        assert text in finding.message
    assert "serial" not in finding.message and "boot" not in finding.message
    healthy = diagnose_bundle(FIXTURES / "healthy")
    assert healthy.link.a.identity.serial != healthy.link.b.identity.serial  # they differ, and pass
    assert [f.status for f in healthy.diagnosis.findings if f.rule_id == "NODES_DIFFER"] == [Status.PASS]


def test_bios_of_two_oems_is_only_a_note() -> None:
    bundle = load_bundle(FIXTURES / "healthy")
    caps = [replace(c, stdout=c.stdout.replace("NVIDIA_DGX_Spark", "Dell Pro Max with GB10 FCM1253")
                                .replace("5.36_0ACUM018", "1.1.1"))
            if c.node == "b" and c.spec == "sysfs_dmi" else c for c in bundle.captures]
    outcome = diagnose_captures(Bundle(captures=caps, nodes=bundle.nodes), [])
    from linkcheck.diagnose.checks.nodes import nodes_differ

    (obs,) = nodes_differ(outcome.link, {})
    assert obs.fired and obs.severity is Severity.INFO  # a note, not a warning
    assert "BIOS" in obs.value_map()["table"]


def test_json_report_and_console_show_the_identity() -> None:
    outcome = diagnose_bundle(FIXTURES / "healthy")
    doc = report_document(outcome)
    ident = doc["nodes"]["a"]["identity"]
    assert ident["product"] == "NVIDIA_DGX_Spark" and ident["perftest_version"] == "6.22"
    assert doc["nodes"]["b"]["kernel_release"] == "6.17.0-1008-nvidia"
    from rich.console import Console

    from linkcheck.report.console import node_table

    console = Console(width=200, record=True)
    console.print(node_table((outcome.link.a, outcome.link.b)))
    text = console.export_text()
    assert "BIOS 5.36_0ACUM018" in text and "PSID NVD0000000087" in text and "NCCL 2.28.9" in text


# -- anonymiser and acceptance record ------------------------------------------------------------------------------

def test_anonymiser_replaces_serial_boot_id_and_profile_uuids() -> None:
    bundle = load_bundle(FIXTURES / "nm-profile-runtime-only")
    before = diagnose_captures(bundle, [])
    secrets = {before.link.a.identity.serial, before.link.b.identity.serial, before.link.a.identity.boot_id,
               before.link.b.identity.boot_id, "7f3c2a5e-1b6d-4e8f-9a0b-2c4d6e8f0a1b"}
    anon = anonymize_bundle(bundle)
    blob = "\n".join(c.stdout + c.stderr + c.command for c in anon.captures)
    assert not [s for s in secrets if s and s in blob]
    after = diagnose_captures(anon, [])
    assert after.link.a.identity.serial and after.link.a.identity.serial != after.link.b.identity.serial
    assert after.link.a.identity.bios_version == "5.36_0ACUM018"  # versions and PSIDs stay
    assert [p.netdev for p in after.link.a.nm_runtime] == ["enP2p1s0f1np1"]


def test_acceptance_record_carries_identity_tools_cable_and_commands() -> None:
    """The record `accept` writes of a pair (the cluster of its one cable), from the pair's saved bundle."""
    check = cluster_bundle(FIXTURES / "healthy", configured_rules([], None, kind="all"))
    profile = load_profile_file(BUILTIN_DIR / "dgx-spark-pair.yaml")
    doc = json.loads(json.dumps({**judge_check_run(check, profile, 1).to_dict(), "evidence": check_evidence(check)}))
    ev = doc["evidence"]
    assert ev["nodes"]["a"]["serial"] and ev["nodes"]["a"]["serial"] != ev["nodes"]["b"]["serial"]
    assert {f["psid"] for n in "ab" for f in ev["nodes"][n]["cx7"]} == {"NVD0000000087"}
    assert ev["nodes"]["b"]["perftest_version"] == "6.22" and ev["nodes"]["b"]["nccl_version"] == "2.28.9"
    assert ev["traffic_versions"]["nccl_tests"] == "2.17.6" and ev["traffic_versions"]["nccl_log"] == "2.28.9"
    serials = {end["node"]: end["serial"] for end in ev["cable"]}
    assert serials["a"] == serials["b"] and all(end["part_number"] for end in ev["cable"])
    commands = [r["command"] for r in ev["runs"]]
    assert any(c.startswith("ib_write_bw -d ") for c in commands) and any("all_gather_perf" in c for c in commands)
    assert doc["profile"]["sha256"] == profile.sha256


def test_nm_keyfile_secrets_never_leave_the_node(tmp_path: Path) -> None:
    # The spec's own pipeline (tail | grep), run on keyfiles in a temporary tree instead of the node's folders.
    import subprocess

    from linkcheck.collect.specs import NM_KEYFILES
    from linkcheck.parsers.networkmanager import parse_nm_connections

    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir()
    run.mkdir()
    (etc / "home.nmconnection").write_text(
        "[connection]\nid=home\nuuid=0b5b0c1e-0000-4000-8000-000000000001\ntype=wifi\n\n[wifi]\nssid=home\n\n"
        "[wifi-security]\nkey-mgmt=wpa-psk\npsk=correct-horse-battery\n\n[ipv4]\nmethod=auto\n")
    (run / "cx7.nmconnection").write_text(
        "[connection]\nid=cx7\ntype=ethernet\ninterface-name=enp1s0f1np1\n\n[802-1x]\neap=peap;\n"
        "password=s3cret-eap\n\n[ipv4]\nmethod=manual\naddress1=192.168.100.10/24,192.168.100.1\n")
    command = (NM_KEYFILES.replace("sudo -n ", "")
               .replace("/etc/NetworkManager/system-connections", str(etc))
               .replace("/run/NetworkManager/system-connections", str(run)))
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=10, check=True).stdout
    assert "correct-horse" not in out and "s3cret" not in out and "ssid" not in out
    cx7 = next(p for p in parse_nm_connections(out).profiles if p.id == "cx7")
    assert cx7.interface_name == "enp1s0f1np1" and cx7.ipv4_addresses == ("192.168.100.10/24",)
    assert cx7.path == f"{run}/cx7.nmconnection"


def test_netplan_secrets_never_leave_the_node(tmp_path: Path) -> None:
    # The spec's own command (tail, then sed), run on files in a temporary folder instead of /etc/netplan.
    import subprocess

    from linkcheck.collect.specs import SPECS_BY_ID
    from linkcheck.parsers.netplan import parse_netplan

    def run(folder: Path) -> subprocess.CompletedProcess[str]:
        command = SPECS_BY_ID["netplan_files"].command.replace("sudo -n ", "").replace("/etc/netplan", str(folder))
        return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=10)

    (tmp_path / "40-cx7.yaml").write_text(
        "network:\n  version: 2\n  ethernets:\n    enp1s0f1np1:\n      addresses: [192.168.100.10/24]\n"
        "      mtu: 9000\n")
    (tmp_path / "90-NM-1234.yaml").write_text(
        "network:\n  version: 2\n  wifis:\n    NM-1234:\n      renderer: NetworkManager\n      access-points:\n"
        '        "home":\n          auth:\n            key-management: "psk"\n            password: "correct-horse"\n'
        "  tunnels:\n    wg0:\n      mode: wireguard\n      keys:\n        private: cHJpdmF0ZQ==\n"
        '    wg1: {mode: wireguard, keys: {private: "d2cx,AQ=="}}\n'
        '    NM-5678: {auth: {key-management: psk, password: s3cret-flow}, renderer: NetworkManager}\n'
        # quoted values that hold the other quote, a comma or an escaped quote; quoted keys
        "    wg2: {mode: wireguard, keys: {private: 'Zqa1,BQ=='}, port: 51820}\n"
        '    wg3: {keys: {private: "Zqb2\\",CQ=="}, mtu: 1420}\n'
        "    wg4: {keys: {psk: 'Zqc3''Zqd4,DQ=='}, peers: []}\n"
        '    wg5: {"psk": "Zqe5"}\n'
        # values over several lines: a block scalar, a list, a quoted value in a flow mapping split over lines
        "    wg6:\n      keys:\n        private: |\n          Zqf6Yw==\n\n          Zqg7ZA==\n        public: kept-1\n"
        "    wg7:\n      password:\n      - Zqh8\n      - Zqi9\n      mode: kept-2\n"
        '    wg8: {auth: {key-management: psk,\n           password: "Zqj0"}, renderer: kept-3}\n'
        "    wg9:\n      'private-key': Zqk1\n        Zql2\n      mode: kept-4\n")
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "correct-horse" not in proc.stdout and "cHJpdmF0ZQ" not in proc.stdout
    assert "d2cx" not in proc.stdout and "AQ==" not in proc.stdout and "s3cret-flow" not in proc.stdout
    for secret in ("Zqa1", "BQ==", "Zqb2", "CQ==", "Zqc3", "Zqd4", "DQ==", "Zqe5", "Zqf6Yw", "Zqg7ZA", "Zqh8", "Zqi9",
                   "Zqj0", "Zqk1", "Zql2"):
        assert secret not in proc.stdout, secret
    assert '{auth: {key-management: psk, password: "(not collected)"}, renderer: NetworkManager}' in proc.stdout
    assert 'password: "(not collected)"' in proc.stdout and 'key-management: "psk"' in proc.stdout
    # what is not a secret stays, and so does the structure around each value
    assert "wg2: {mode: wireguard, keys: {private: \"(not collected)\"}, port: 51820}" in proc.stdout
    assert "wg3: {keys: {private: \"(not collected)\"}, mtu: 1420}" in proc.stdout
    assert "wg4: {keys: {psk: \"(not collected)\"}, peers: []}" in proc.stdout
    assert 'password: "(not collected)"}, renderer: kept-3}' in proc.stdout
    for kept in ("public: kept-1", "mode: kept-2", "mode: kept-4"):
        assert kept in proc.stdout, kept
    assert yaml.safe_load(proc.stdout.split("<==\n", 2)[2])["network"]["tunnels"]["wg7"] == {
        "password": "(not collected)", "mode": "kept-2"}
    config = parse_netplan(proc.stdout)
    assert [(e.netdef_id, e.addresses, e.mtu) for e in config.ethernets] == [
        ("enp1s0f1np1", ("192.168.100.10/24",), 9000)]
    empty = tmp_path / "none"
    empty.mkdir()
    missing = run(empty)  # no file: tail's own error and status, as without the filter
    assert missing.returncode == 1 and "cannot open" in missing.stderr and missing.stdout == ""


# netplan's own example files (tests/samples/system/real/PROVENANCE.md): each secret key, where it sits.
NETPLAN_EXAMPLE_SECRETS = {
    "wireguard": {("tunnels", "wg0", "key"), ("tunnels", "wg1", "key"),
                  ("tunnels", "wg0", "peers", 0, "keys", "shared"), ("tunnels", "wg1", "peers", 0, "keys", "shared")},
    "wireless": {("wifis", "wlp2s0b1", "access-points", "network_ssid_name", "password")},
    "wpa_enterprise": {("wifis", "wl0", "access-points", "workplace", "auth", "password"),
                       ("wifis", "wl0", "access-points", "university", "auth", "client-key-password")},
    "modem": {("modems", "cdc-wdm1", "password"), ("modems", "cdc-wdm1", "pin")},
    "dhcp_wired8021x": {("ethernets", "enp3s0", "auth", "password")},
}


def _leaves(value: object, path: tuple[object, ...] = ()) -> dict[tuple[object, ...], object]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, (*path, key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(item, (*path, i)).items()}
    return {path: value}


@pytest.mark.parametrize("example", sorted(NETPLAN_EXAMPLE_SECRETS))
def test_netplan_s_own_examples_leave_the_node_without_their_secrets(tmp_path: Path, example: str) -> None:
    """The spec's command on netplan's documented layouts: every secret value replaced, every other value as it was
    (a WireGuard private key sits under `key:`, a preshared key under `keys: shared:`, a SIM PIN under `pin:`)."""
    import subprocess

    from linkcheck.collect.specs import SPECS_BY_ID

    text = (ROOT / "tests" / "samples" / "system" / "real" / f"netplan_example_{example}.yaml.txt").read_text()
    (tmp_path / "60-example.yaml").write_text(text)
    command = SPECS_BY_ID["netplan_files"].command.replace("sudo -n ", "").replace("/etc/netplan", str(tmp_path))
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    before = _leaves(yaml.safe_load(text)["network"])
    after = _leaves(yaml.safe_load(proc.stdout)["network"])
    secrets = NETPLAN_EXAMPLE_SECRETS[example]
    assert secrets <= before.keys()
    assert after == {path: "(not collected)" if path in secrets else value for path, value in before.items()}
    for path in secrets:
        assert str(before[path]) not in proc.stdout


def test_nm_keyfiles_from_networkmanager_s_own_tests_parse_through_the_spec(tmp_path: Path) -> None:
    # Real keyfiles (tests/samples/system/real/PROVENANCE.md) through the spec's own tail | grep pipeline.
    import subprocess

    from linkcheck.collect.specs import NM_KEYFILES
    from linkcheck.parsers.networkmanager import parse_nm_connections

    real = Path(__file__).resolve().parents[1] / "samples" / "system" / "real"
    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir()
    run.mkdir()
    for name in ("wired", "wireless"):
        (etc / f"{name}.nmconnection").write_text((real / f"nm_keyfile_test_{name}_connection.txt").read_text())
    command = (NM_KEYFILES.replace("sudo -n ", "").replace("/etc/NetworkManager/system-connections", str(etc))
               .replace("/run/NetworkManager/system-connections", str(run)))
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=10, check=True).stdout
    assert "ssid" not in out and "routes" not in out and "dns" not in out
    profiles = {p.id: p for p in parse_nm_connections(out).profiles}
    wired, wireless = profiles["Test Wired Connection"], profiles["Test Wireless Connection"]
    assert (wired.type, wired.mac_address, wired.mtu, wired.ipv4_method) == (
        "802-3-ethernet", "00:11:22:33:44:55", 1400, "manual")
    # The old `addressesN=IP;PREFIX;GW;` form and the new `addressN=CIDR,GW` one; no IPv6 address among them.
    assert {"192.168.0.5/24", "1.2.3.4/16", "2.3.4.5/24", "3.4.5.6/16"} <= set(wired.ipv4_addresses)
    assert not any(":" in a for a in wired.ipv4_addresses)
    assert (wireless.type, wireless.ipv4_method, wireless.ipv4_addresses) == ("802-11-wireless", "auto", ())
    assert not wired.runtime_only and not wireless.runtime_only
