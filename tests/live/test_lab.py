"""The two-node lab: real sshd per namespace, GB10 interface names, lab-only addresses, clean teardown."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.lab import Lab, LabError, LabNodeSpec, LinkSpec, map_cidr, map_model, map_text, pytest_plugin
from tests.lab.addresses import LAB_NET
from tests.lab.pytest_plugin import LabFactory, lab_skip_reason
from tests.lab.scenario import plain_pair
from tests.lab.spec import validate_specs

pytestmark = pytest.mark.lab  # builds the two-node lab

REPO = Path(__file__).resolve().parents[2]
lab_factory = pytest_plugin.lab_factory  # the fixture, for the tests below
needs_lab = pytest.mark.skipif(lab_skip_reason() is not None, reason=str(lab_skip_reason()))


def _ip_names() -> tuple[set[str], set[str]]:
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True, check=True).stdout)
    return {line.split()[0] for line in netns.splitlines() if line}, {link["ifname"] for link in links}


def _assert_gone(namespaces: list[str], host_links: list[str], pids: list[int]) -> None:
    existing_ns, existing_links = _ip_names()
    assert not set(namespaces) & existing_ns
    assert not set(host_links) & existing_links
    assert [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _proc_state(p)] == []


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


# -- address mapping and spec checks (no root needed) -------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "lab"),
    [
        ("192.168.100.10/24", "198.19.100.10/24"),
        ("192.168.101.11/24", "198.19.101.11/24"),
        ("10.20.0.21/24", "198.18.255.21/24"),  # x.x.0.y would land in the management /24
        ("10.100.216.2/8", "198.18.216.2/16"),
        ("169.254.3.4/16", "198.18.3.4/16"),
        ("198.19.5.6/24", "198.19.5.6/24"),
    ],
)
def test_map_cidr_moves_scenario_addresses_into_benchmark_range(scenario: str, lab: str) -> None:
    assert map_cidr(scenario) == lab
    assert ipaddress.IPv4Interface(lab).ip in LAB_NET


def test_map_text_rewrites_netplan_and_gids_but_not_versions() -> None:
    text = "addresses: [192.168.100.10/24]\nfw 28.45.4028 drv 5.15.0.1\n"
    gid = "0000:0000:0000:0000:0000:ffff:c0a8:640a"  # ::ffff:192.168.100.10
    assert map_text(text) == "addresses: [198.19.100.10/24]\nfw 28.45.4028 drv 5.15.0.1\n"
    assert map_text(gid) == "0000:0000:0000:0000:0000:ffff:c613:640a"  # ::ffff:198.19.100.10
    assert map_model({"ipv4": ["192.168.1.2/24"], "n": 3}) == {"ipv4": ["198.19.1.2/24"], "n": 3}


def test_specs_refuse_public_addresses_and_one_sided_peers() -> None:
    with pytest.raises(LabError, match="outside"):
        validate_specs([LabNodeSpec("a", links=(LinkSpec("enp1s0f1np1", addresses=("8.8.8.8/24",)),))])
    a = LabNodeSpec("a", links=(LinkSpec("enp1s0f1np1", peer=("b", "enp1s0f1np1")),))
    with pytest.raises(LabError, match="name a:enp1s0f1np1 back"):
        validate_specs([a, LabNodeSpec("b", links=(LinkSpec("enp1s0f1np1"),))])
    with pytest.raises(LabError, match="node name"):
        validate_specs([LabNodeSpec("Node-A")])


def test_skip_reason_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "root" in str(pytest_plugin.lab_skip_reason.__wrapped__())
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "nsenter" else f"/usr/bin/{name}")
    assert "nsenter" in str(pytest_plugin.lab_skip_reason.__wrapped__())


# -- the running lab ---------------------------------------------------------------------------------


def _paramiko_run(lab: Lab, node: str, command: str) -> str:
    """Run a command with paramiko, strict host keys, using only the lab's ssh_config and known_hosts."""
    import paramiko

    cfg = paramiko.SSHConfig.from_path(str(lab.ssh_config)).lookup(node)
    client = paramiko.SSHClient()
    client.load_host_keys(str(lab.known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(
            cfg["hostname"],
            port=int(cfg["port"]),
            username=cfg["user"],
            key_filename=cfg["identityfile"],
            look_for_keys=False,
            allow_agent=False,
            timeout=5,
        )
        _, out, _ = client.exec_command(command, timeout=10)
        return str(out.read().decode())
    finally:
        client.close()


def _pair(**a_options: object) -> list[LabNodeSpec]:
    a, b = plain_pair()
    extra = {"ibv_devinfo": 'echo "hca_id:\trocep1s0f1 ($LINKCHECK_LAB_NAME)"\n'}
    return [replace(a, extra_tools=extra, **a_options), b]  # type: ignore[arg-type]


@needs_lab
def test_two_nodes_answer_real_ssh_with_gb10_names_and_lab_addresses(lab_factory: LabFactory) -> None:
    lab = lab_factory(_pair())
    ssh = lab.ssh("a", "hostname")
    assert (ssh.returncode, ssh.stdout.strip()) == (0, "spark-a"), ssh.stderr
    assert lab.ssh("b", "hostname").stdout.strip() == "spark-b"
    assert _paramiko_run(lab, "b", "hostname") == "spark-b\n"  # same files work for paramiko

    links = json.loads(lab.exec("a", ["ip", "-j", "addr"]).stdout)
    by_name = {link["ifname"]: link for link in links}
    assert {"enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1"} <= set(by_name)
    infos = by_name["enp1s0f1np1"]["addr_info"]
    v4 = {f"{i['local']}/{i['prefixlen']}" for i in infos if i["family"] == "inet"}
    assert v4 == {"198.19.100.10/24"}
    assert by_name["enp1s0f1np1"]["mtu"] == 9000
    assert by_name["enp1s0f1np1"]["address"] == "4c:bb:47:00:00:2d"
    assert "NO-CARRIER" in by_name["enp1s0f0np0"]["flags"]  # the empty cage has no peer
    for link in links:
        for info in link.get("addr_info", []):
            if info["family"] == "inet" and link["ifname"] != "lo":
                assert ipaddress.IPv4Address(info["local"]) in LAB_NET


@needs_lab
def test_node_a_reaches_node_b_over_the_data_veth_only(lab_factory: LabFactory) -> None:
    lab = lab_factory(_pair())
    target = "198.19.101.11"  # b's enP2p1s0f1np1; only lab addresses are ever probed
    assert ipaddress.IPv4Address(target) in LAB_NET
    if shutil.which("ping"):
        ping = lab.exec("a", ["ping", "-c", "1", "-W", "1", target])
        assert ping.returncode == 0, ping.stdout + ping.stderr
    serve = f"import socket;s=socket.create_server(('{target}',7777));print('up',flush=True);"
    serve += "c,_=s.accept();c.sendall(b'lab-b')"
    server = lab.spawn("b", [sys.executable, "-c", serve])
    assert server.stdout is not None and server.stdout.readline().strip() == "up"
    connect = f"import socket;print(socket.create_connection(('{target}',7777),timeout=3).recv(16).decode())"
    client = lab.exec("a", [sys.executable, "-c", connect])
    assert client.stdout.strip() == "lab-b", client.stderr
    route = lab.exec("a", ["ip", "-j", "route", "get", target]).stdout
    assert json.loads(route)[0]["dev"] == "enP2p1s0f1np1"


@needs_lab
def test_ssh_session_sees_materialised_sysfs_and_emulator_path(lab_factory: LabFactory) -> None:
    lab = lab_factory(_pair())
    mac = lab.ssh("a", "cat /sys/class/net/enP2p1s0f1np1/address")
    assert mac.stdout.strip() == "4c:bb:47:00:00:31", mac.stderr
    path = lab.ssh("a", 'echo "$PATH"; command -v ibv_devinfo; ibv_devinfo').stdout.splitlines()
    bin_dir = str(lab.node("a").bin_dir)
    assert path[0].split(":")[0] == bin_dir
    assert path[1] == f"{bin_dir}/ibv_devinfo"
    assert path[2] == "hca_id:\trocep1s0f1 (a)"
    # the host's own /sys/class is untouched
    assert not Path("/sys/class/net/enP2p1s0f1np1").exists()


@needs_lab
def test_missing_tool_and_refusing_sudo(lab_factory: LabFactory) -> None:
    a, b = _pair(missing_tools=frozenset({"ethtool", "ibstat"}))
    lab = lab_factory([a, replace(b, sudo_refuses=True)])
    # ethtool is installed on most hosts: the whiteout must hide the real binary too
    out = lab.ssh("a", "command -v ethtool; echo rc=$?; ethtool -i lo; echo run=$?; sudo -n ethtool -m x; echo sudo=$?")
    assert out.stdout.split() == ["rc=1", "run=127", "sudo=1"], out.stderr
    assert "ethtool: command not found" in out.stderr and "sudo: ethtool: command not found" in out.stderr
    assert lab.ssh("a", "sudo -n echo ok").stdout.strip() == "ok"
    refused = lab.ssh("b", "sudo -n ethtool -m enp1s0f1np1")
    assert (refused.returncode, refused.stderr) == (1, "sudo: a password is required\n")


@needs_lab
def test_fault_hooks_stop_sshd_unreachable_and_changed_host_key(lab_factory: LabFactory) -> None:
    lab = lab_factory(_pair())
    lab.stop_sshd("a")
    refused = lab.ssh("a", "true")
    assert refused.returncode == 255 and "refused" in refused.stderr.lower()
    lab.start_sshd("a")
    assert lab.ssh("a", "true").returncode == 0

    lab.freeze_sshd("a")
    no_banner = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config), "-o", "ConnectTimeout=1", "a", "true"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert no_banner.returncode == 255 and "banner exchange" in no_banner.stderr, no_banner.stderr
    lab.freeze_sshd("a", frozen=False)

    lab.set_reachable("b", False)
    timed_out = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config), "-o", "ConnectTimeout=1", "b", "true"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert timed_out.returncode == 255
    lab.set_reachable("b", True)
    assert lab.ssh("b", "true").returncode == 0

    lab.replace_host_key("a")
    changed = lab.ssh("a", "true")
    assert changed.returncode == 255 and "Host key verification failed" in changed.stderr


@needs_lab
def test_teardown_leaves_no_namespace_veth_or_process(tmp_path: Path) -> None:
    with Lab(_pair(), tmp_path / "lab") as lab:
        sleeper = lab.spawn("a", ["sleep", "300"])
        namespaces, host_links = lab.namespaces(), lab.host_links()
        # nsenter joins the node's namespaces a moment after it starts (then execs the sleeper under its own PID):
        # until then the node does not list it, so it is waited for, not raced.
        deadline = time.monotonic() + 10
        while sleeper.pid not in lab.pids("a") and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = lab.pids("a") + lab.pids("b")
        assert sleeper.pid in pids and len(pids) >= 5  # holders, sshds, the sleeper
        assert set(namespaces) <= _ip_names()[0]
    _assert_gone(namespaces, host_links, pids)
    assert not (tmp_path / "lab").exists()
    lab.down()  # idempotent


@needs_lab
def test_failing_body_and_ctrl_c_still_tear_down(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="test body failed"), Lab(_pair(), tmp_path / "lab") as lab:
        namespaces, host_links, pids = lab.namespaces(), lab.host_links(), lab.pids("a") + lab.pids("b")
        raise RuntimeError("test body failed")
    _assert_gone(namespaces, host_links, pids)

    script = textwrap.dedent(
        f"""
        import json, os, signal, sys, time
        from pathlib import Path
        from tests.lab import Lab
        from tests.lab.scenario import plain_pair
        # A pytest-xdist worker ignores SIGINT and its children inherit that: Ctrl-C is Python's own here.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        lab = Lab(plain_pair(), Path({str(tmp_path / "lab2")!r}))
        try:
            with lab:
                record = [lab.namespaces(), lab.host_links(), lab.pids("a") + lab.pids("b")]
                print(json.dumps(record), flush=True)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(30)
        except KeyboardInterrupt:
            sys.exit(42)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert proc.returncode == 42, proc.stderr
    namespaces, host_links, pids = json.loads(proc.stdout.splitlines()[0])
    _assert_gone(namespaces, host_links, pids)


@needs_lab
def test_lab_factory_tears_down_after_a_failing_test(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(
            f"""
        import json
        from tests.lab.pytest_plugin import lab_factory  # noqa: F401
        from tests.lab.scenario import plain_pair

        def test_fails(lab_factory):
            lab = lab_factory(plain_pair())
            json.dump([lab.namespaces(), lab.host_links(), lab.pids("a") + lab.pids("b")],
                      open({str(record)!r}, "w"))
            assert False, "inner test fails on purpose"
        """
        )
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    _assert_gone(*json.loads(record.read_text()))


@needs_lab
def test_cli_brings_a_lab_up_and_down_by_hand(tmp_path: Path) -> None:
    workdir = tmp_path / "handlab"
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tests.lab.cli", *args, "--workdir", str(workdir)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env=env,
            check=False,
        )

    up = cli("up", "plain")
    try:
        assert up.returncode == 0, up.stderr
        ssh = subprocess.run(
            ["ssh", "-F", str(workdir / "ssh_config"), "b", "hostname"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert ssh.stdout.strip() == "spark-b", ssh.stderr
        state = json.loads((workdir / "lab-state.json").read_text())
        assert "running" in cli("status").stdout
    finally:
        down = cli("down")
    assert down.returncode == 0, down.stderr
    _assert_gone(state["netns"], state["host_links"], [p["pid"] for p in state["processes"]])
    assert not workdir.exists()


@needs_lab
def test_node_model_gives_gb10_sysfs_netplan_and_rj45_nic(lab_factory: LabFactory) -> None:
    pytest.importorskip("tests.emulators.scenarios")
    lab = lab_factory("healthy")
    script = (
        "hostname; ls /sys/class/infiniband | tr '\\n' ' '; echo;"
        " cat /sys/class/net/enp1s0f1np1/device/vendor;"
        " cat /sys/class/infiniband/rocep1s0f1/ports/1/gids/3; cat /etc/netplan/*.yaml | grep -c 198.19.10;"
        " ip -j route show default; test -d /sys/devices/system/cpu && echo cpu-ok"
    )
    out = lab.ssh("a", script)
    lines = out.stdout.splitlines()
    assert lines[0] == "dgx-spark-1", out.stderr
    assert lines[1].split() == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    assert lines[2] == "0x15b3"  # through the device symlink into the staged /sys/devices
    assert lines[3] == "0000:0000:0000:0000:0000:ffff:c613:640a"  # ::ffff:198.19.100.10, mapped like the address
    assert lines[4] == "2"  # both twins' addresses in the netplan file, mapped
    assert json.loads(lines[5]) == [{"dst": "default", "gateway": "198.18.255.1", "dev": "enP7s7", "flags": []}]
    assert lines[6] == "cpu-ok"  # real /sys/devices entries the model does not stage stay visible
    model = json.loads(Path(str(lab.node("b").model_json)).read_text())
    model_mac = next(f["mac"] for f in model["functions"] if f["netdev"] == "enP2p1s0f1np1")
    links = {link["ifname"]: link for link in json.loads(lab.exec("b", ["ip", "-j", "link"]).stdout)}
    sysfs_mac = lab.exec("b", ["cat", "/sys/class/net/enP2p1s0f1np1/address"]).stdout.strip()
    assert links["enP2p1s0f1np1"]["address"] == sysfs_mac == model_mac
    assert "NO-CARRIER" in links["enp1s0f0np0"]["flags"] and "NO-CARRIER" not in links["enP7s7"]["flags"]


@needs_lab
def test_failed_bring_up_removes_what_it_made(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    a, b = plain_pair()
    lab = Lab([a, replace(b, model=broken)], tmp_path / "lab")
    with pytest.raises(LabError, match="cannot read node model"):
        lab.up()
    existing_ns, existing_links = _ip_names()
    assert not [ns for ns in existing_ns if ns.startswith(lab.lab_id + "-")]
    assert not [link for link in existing_links if link.startswith("lch" + lab._host_tag)]
    assert not (tmp_path / "lab").exists()


@needs_lab
def test_scenario_by_name_carries_models_missing_tools_and_sudo(lab_factory: LabFactory) -> None:
    pytest.importorskip("tests.emulators.scenarios")
    lab = lab_factory("degraded-collection")
    a = lab.ssh("a", "hostname; ls /sys/class/infiniband | wc -l; ip -br addr show enp1s0f1np1")
    assert a.stdout.split()[:2] == ["dgx-spark-1", "4"], a.stderr
    assert "198.19.100.10/24" in a.stdout  # 192.168.100.10/24 of the scenario, mapped
    tools = lab.ssh("a", "ibv_devinfo -l; show_gids | grep -c 198.19.100.10; sudo -n ethtool -m enp1s0f1np1")
    assert tools.stdout.startswith("4 HCAs found:\n"), tools.stderr
    assert "\n2\n" in tools.stdout  # v1 and v2 GID of the mapped address, as show_gids prints them
    assert "Identifier" in tools.stdout
    b = lab.ssh("b", "command -v rdma ibv_devinfo show_gids; echo rc=$?; sudo -n lspci")
    assert b.stdout.strip() == "rc=1"  # rdma is hidden even where iproute2 installs it
    assert "sudo: a password is required" in b.stderr


@needs_lab
def test_lab_logs_in_where_root_is_locked(tmp_path: Path) -> None:
    """Ubuntu and some CI images lock root ("!"); sshd with UsePAM no then refuses even key logins."""
    fake = tmp_path / "shadow"
    fake.write_text("root:!:19000:0:99999:7:::\n", encoding="utf-8")
    fake.chmod(0o600)
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tests.lab import Lab
        from tests.lab.scenario import plain_pair
        with Lab(plain_pair(), Path({str(tmp_path / "lab")!r})) as lab:
            print(lab.ssh("a", "hostname").stdout.strip())
        """
    )
    # The locked /etc/shadow exists only in a private mount namespace around this one lab.
    inner = f'mount --bind {fake} /etc/shadow && exec {sys.executable} -c "$0"'
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner, script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "spark-a"), proc.stderr


# -- the node model's NCCL settings and neighbour entries --------------------------------------------


def _host_snapshot(paths: list[str]) -> dict[str, str | None]:
    return {p: Path(p).read_text(encoding="utf-8") if Path(p).is_file() else None for p in paths}


def _nccl_lab(lab_factory: LabFactory, tmp_path: Path) -> tuple[Lab, dict[str, dict[str, Any]]]:
    """gid-stale's models, node b also with ~/.nccl.conf and NCCL_* (an empty value and one with a blank)."""
    from tests.emulators.scenarios import SCENARIOS
    from tests.lab.scenario import specs_from_models

    scenario = SCENARIOS["gid-stale"]
    env_b = {**scenario.node_b.nccl_env, "NCCL_IB_GID_INDEX": "", "NCCL_TOPO_DUMP_FILE": "/tmp/topo dump.xml"}
    b = replace(scenario.node_b, nccl_conf_user="# user\nNCCL_IB_HCA=roceP2p1s0f1\n", nccl_env=env_b)
    paths = {"a": tmp_path / "a.json", "b": tmp_path / "b.json"}
    for name, node in (("a", scenario.node_a), ("b", b)):
        paths[name].write_text(node.to_json(), encoding="utf-8")
    lab = lab_factory(specs_from_models(paths))
    return lab, {n: json.loads(Path(str(lab.node(n).model_json)).read_text()) for n in ("a", "b")}


@needs_lab
def test_model_nccl_conf_is_etc_nccl_conf_in_the_node_only(lab_factory: LabFactory, tmp_path: Path) -> None:
    pytest.importorskip("tests.emulators.scenarios")
    host = _host_snapshot(["/etc/nccl.conf"])
    lab, models = _nccl_lab(lab_factory, tmp_path)
    for node in ("a", "b"):
        out = lab.ssh(node, "cat /etc/nccl.conf; ls /etc/netplan; test -s /etc/passwd && echo etc-ok")
        assert out.returncode == 0, out.stderr
        text = str(models[node]["nccl_conf"])
        assert text == "NCCL_IB_GID_INDEX=3\n"
        assert out.stdout == text + "40-cx7.yaml\netc-ok\n"  # netplan and the rest of /etc still there
    assert _host_snapshot(["/etc/nccl.conf"]) == host
    healthy = lab_factory("healthy")  # nccl_conf None: no /etc/nccl.conf in the node, whatever the host has
    gone = healthy.ssh("a", "cat /etc/nccl.conf")
    assert gone.returncode == 1 and "No such file or directory" in gone.stderr


@needs_lab
def test_model_user_nccl_conf_is_roots_in_the_node_only(lab_factory: LabFactory, tmp_path: Path) -> None:
    pytest.importorskip("tests.emulators.scenarios")
    home = os.path.expanduser("~root")
    host = _host_snapshot([f"{home}/.nccl.conf"])
    lab, models = _nccl_lab(lab_factory, tmp_path)
    b = lab.ssh("b", 'cat "$HOME/.nccl.conf"; cat ~/.ssh/config | head -1; ls -d "$HOME"')
    assert b.returncode == 0, b.stderr
    lines = b.stdout.splitlines(keepends=True)
    assert "".join(lines[:2]) == models["b"]["nccl_conf_user"] == "# user\nNCCL_IB_HCA=roceP2p1s0f1\n"
    assert lines[2].startswith("# linkcheck lab")  # the node's ~/.ssh sits on top of the home overlay
    assert lines[3] == home + "\n"
    a = lab.ssh("a", 'cat "$HOME/.nccl.conf"')  # node a's model has none
    assert a.returncode == 1 and "No such file or directory" in a.stderr
    assert _host_snapshot([f"{home}/.nccl.conf"]) == host


@needs_lab
def test_model_nccl_env_is_in_ssh_sessions_and_exec(lab_factory: LabFactory, tmp_path: Path) -> None:
    pytest.importorskip("tests.emulators.scenarios")
    lab, models = _nccl_lab(lab_factory, tmp_path)
    for node in ("a", "b"):
        expected = sorted(f"{k}={v}" for k, v in models[node]["nccl_env"].items())
        assert expected and all(line.startswith("NCCL_") for line in expected)
        ssh = lab.ssh(node, "env | grep ^NCCL_")
        assert sorted(ssh.stdout.splitlines()) == expected, ssh.stderr
        ex = lab.exec(node, ["sh", "-c", "env | grep ^NCCL_"])
        assert sorted(ex.stdout.splitlines()) == expected
    b = sorted(lab.ssh("b", "env | grep ^NCCL_").stdout.splitlines())
    assert "NCCL_IB_GID_INDEX=" in b and "NCCL_TOPO_DUMP_FILE=/tmp/topo dump.xml" in b
    assert "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1" in b


@needs_lab
def test_model_neighbours_are_permanent_and_a_wrong_twin_mac_still_delivers(lab_factory: LabFactory) -> None:
    pytest.importorskip("tests.emulators.scenarios")
    from tests.emulators.scenarios import SCENARIOS

    lab = lab_factory("single-pcie-path")
    scenario = SCENARIOS["single-pcie-path"]
    for name, model in (("a", scenario.node_a), ("b", scenario.node_b)):
        out = lab.ssh(name, "ip -j neigh")
        assert out.returncode == 0, out.stderr
        got = {(e["dst"], e["dev"], e.get("lladdr"), tuple(e["state"])) for e in json.loads(out.stdout)}
        want = {(map_text(n.dst), n.dev, n.lladdr, ("PERMANENT",)) for n in model.neighbours}
        assert want and want <= got
        assert not {(d, dev) for d, dev, _, _ in got if d.startswith("198.19.")} - {(d, v) for d, v, _, _ in want}
    wrong = next(n for n in scenario.node_b.neighbours if n.dst == "192.168.101.10")
    assert wrong.lladdr == scenario.node_a.function("enp1s0f1np1").mac  # the other twin's MAC
    # As on the GB10, where both twins share the cable, frames with that MAC reach a's enp1s0f1np1.
    before = _redirected_packets(lab, "b", "enP2p1s0f1np1")
    reach = lab.ssh("b", "ssh 198.19.101.10 hostname")
    assert (reach.returncode, reach.stdout) == (0, "dgx-spark-1\n"), reach.stderr
    assert _redirected_packets(lab, "b", "enP2p1s0f1np1") > before
    healthy = lab_factory("healthy")  # right MACs: no redirect anywhere
    assert healthy.exec("b", ["tc", "filter", "show", "dev", "enP2p1s0f1np1", "egress"]).stdout.strip() == ""


def _redirected_packets(lab: Lab, node: str, dev: str) -> int:
    out = lab.exec(node, ["tc", "-s", "-j", "filter", "show", "dev", dev, "egress"])
    assert out.returncode == 0, out.stderr
    return sum(a["stats"]["packets"] for f in json.loads(out.stdout) for a in f.get("options", {}).get("actions", []))


@needs_lab
def test_node_files_bind_overlay_whiteout_and_keep_submounts(tmp_path: Path) -> None:
    """mount_lines in a private mount namespace: bind where the path exists, else an overlay of its directory."""
    host = tmp_path / "host"
    (host / "etc").mkdir(parents=True)
    (host / "etc" / "kept").write_text("host kept\n")
    (host / "etc" / "hidden").write_text("host hidden\n")
    (host / "etc" / "submount").write_text("underlying\n")
    (host / "etc" / "plan").mkdir()
    (host / "etc" / "plan" / "host.yaml").write_text("host\n")
    (host / "bound").mkdir()
    (host / "bound" / "file").write_text("host file\n")
    (tmp_path / "mounted").write_text("mounted on top\n")
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "new").write_text("staged new\n")
    (staged / "file").write_text("staged file\n")
    (staged / "plan").mkdir()
    (staged / "plan" / "node.yaml").write_text("node\n")
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tests.lab.nodefiles import NodeFile, mount_lines
        files = [NodeFile({str(host / "etc" / "new")!r}, Path({str(staged / "new")!r})),
                 NodeFile({str(host / "etc" / "hidden")!r}, None),
                 NodeFile({str(host / "etc" / "never")!r}, None),
                 NodeFile({str(host / "etc" / "plan")!r}, Path({str(staged / "plan")!r})),
                 NodeFile({str(host / "bound" / "file")!r}, Path({str(staged / "file")!r}))]
        print("\\n".join(["set -eu", *mount_lines(files, Path({str(tmp_path / "node")!r}))]))
        """
    )
    etc = host / "etc"
    inner = (
        f"mount --bind {tmp_path / 'mounted'} {etc / 'submount'} && {sys.executable} -c \"$0\" > {tmp_path / 'boot.sh'}"
        f" && sh {tmp_path / 'boot.sh'} && cat {etc}/new {etc}/kept {etc}/submount {host}/bound/file"
        f" && ls {etc} {etc}/plan | tr '\\n' ' '"
    )
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner, script],
        capture_output=True, text=True, timeout=30, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    boot = (tmp_path / "boot.sh").read_text()
    assert "mount --bind" in boot and "mount -t overlay" in boot and "mount --move" in boot
    # plan: the host's directory replaced (bound on top of the overlay), not merged with the staged one
    listing = f"{etc}: kept new plan submount  {etc}/plan: node.yaml "
    assert proc.stdout == "staged new\nhost kept\nmounted on top\nstaged file\n" + listing
    # Outside that namespace the "host" is untouched.
    assert sorted(p.name for p in etc.iterdir()) == ["hidden", "kept", "plan", "submount"]
    assert [p.name for p in (etc / "plan").iterdir()] == ["host.yaml"]
    assert (etc / "submount").read_text() == "underlying\n" and (host / "bound" / "file").read_text() == "host file\n"


def test_nccl_env_quoting_in_sshd_config_and_refused_values(tmp_path: Path) -> None:
    from tests.lab import nccl, sshd

    cfg = sshd.sshd_config(listen="198.18.0.1", port=22, host_key=tmp_path / "k", pid_file=tmp_path / "p",
                           authorized_keys=tmp_path / "ak", session_path="/bin",
                           session_env={"NCCL_A": "x y", "NCCL_B": ""})
    set_env = [line for line in cfg.splitlines() if line.startswith("SetEnv")]
    assert set_env == ['SetEnv PATH=/bin LINKCHECK_LAB=1 "NCCL_A=x y" "NCCL_B="']  # sshd reads only one SetEnv
    model = tmp_path / "m.json"
    for bad in ({"NCCL_A": 'say "hi"'}, {"NCCL_A": "a\nb"}, {"PATH": "/evil"}):
        model.write_text(json.dumps({"nccl_env": bad}))
        with pytest.raises(LabError, match="cannot be set in an SSH session"):
            nccl.session_env(model)
    model.write_text(json.dumps({"nccl_env": {"NCCL_IB_HCA": "mlx5_0"}}))
    assert nccl.session_env(model) == {"NCCL_IB_HCA": "mlx5_0"} and nccl.session_env(None) == {}


@needs_lab
@pytest.mark.parametrize("scenario", ["healthy", "degraded-collection"])
def test_pre_rendered_answers_match_the_emulator(lab_factory: LabFactory, scenario: str) -> None:
    """A wrapper answering from its files says exactly what the emulator says for the same call."""
    pytest.importorskip("tests.emulators.scenarios")
    from tests.emulators.node import Node
    from tests.lab.answers import static_calls

    lab = lab_factory(scenario)
    for name in ("a", "b"):
        node = lab.node(name)
        calls = static_calls(Node.load(str(node.model_json)))
        wrappers = [t for t in calls if (node.bin_dir / t).exists()]
        assert "ibv_devinfo" in wrappers or scenario == "degraded-collection"
        answered = 0
        for tool in wrappers:
            assert "answers/" in (node.bin_dir / tool).read_text(encoding="utf-8")
            for args in calls[tool]:
                fast = lab.exec(name, [str(node.bin_dir / tool), *args])
                slow = lab.exec(name, [sys.executable, "-m", "tests.emulators.cli", tool, *args],
                                env={"LINKCHECK_LAB_NODE": str(node.model_json), "LINKCHECK_LAB_NAME": name,
                                                      "PYTHONPATH": str(REPO)})
                assert (fast.stdout, fast.stderr, fast.returncode) == (slow.stdout, slow.stderr, slow.returncode), \
                    (name, tool, args)
                answered += 1
        assert answered >= (19 if scenario == "healthy" else 1)


@needs_lab
def test_lab_answers_the_identity_specs(lab_factory: LabFactory) -> None:
    """The node's DMI, root-only serial, PSID, perftest version and NCCL listing, read by the specs' own commands."""
    pytest.importorskip("tests.emulators.scenarios")
    from linkcheck.collect.specs import SPECS_BY_ID
    from linkcheck.facts.sysfs_views import ib_devices
    from linkcheck.parsers.identity import parse_dmi_serial, parse_nccl_install
    from linkcheck.parsers.networkmanager import parse_nm_connections
    from linkcheck.parsers.perftest import parse_perftest_version
    from linkcheck.parsers.sysfs import parse_sysfs_dump
    from tests.emulators.node import Node

    lab = lab_factory("healthy")
    model = Node.load(str(lab.node("b").model_json))

    def run(spec: str) -> subprocess.CompletedProcess[str]:
        return lab.ssh("b", SPECS_BY_ID[spec].command)

    dmi = parse_sysfs_dump(run("sysfs_dmi").stdout)
    assert dmi.value("/sys/class/dmi/id/product_name") == model.dmi["product_name"]
    assert dmi.value("/sys/class/dmi/id/bios_version") == model.dmi["bios_version"]
    assert dmi.value("/proc/sys/kernel/random/boot_id")  # the lab host's: both lab nodes share one kernel
    assert parse_dmi_serial(run("dmi_serial").stdout).serial == model.product_serial
    ib = ib_devices(parse_sysfs_dump(run("sysfs_infiniband").stdout))
    assert {d.get("board_id") for d in ib.values()} == {"NVD0000000087"}
    version = run("perftest_version")
    assert version.returncode == 1 and parse_perftest_version(version.stdout).version == model.version("perftest")
    found = parse_nccl_install(run("nccl_install").stdout)
    assert any(p.endswith("/all_gather_perf") for p in found.tests_binaries)  # the emulator on the node's PATH
    keyfiles = run("nm_connections")  # the host's NetworkManager files, if it has any: the lab stages none
    assert keyfiles.returncode == 0 and isinstance(parse_nm_connections(keyfiles.stdout).profiles, tuple)
