"""Traffic emulators in the lab: ib_write_bw over a real TCP handshake, mpirun + all_gather_perf.

Processes are started the way linkcheck starts them (detached, through the node's sshd, in a temp
folder), but wrapped in `sh -c '...; echo $? > rc'` so the tests can read exit statuses.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.nccl_log import parse_nccl_log
from linkcheck.parsers.nccl_tests import parse_nccl_tests
from linkcheck.parsers.perftest import parse_perftest
from tests.emulators.scenarios import SCENARIOS
from tests.lab import Lab
from tests.lab.pytest_plugin import lab_skip_reason
from tests.lab.scenario import specs_for_scenario

pytestmark = [pytest.mark.lab,  # builds the two-node lab
              pytest.mark.xdist_group("lab-traffic")]  # one worker makes the labs its tests share (`--dist loadgroup`)

REPO = Path(__file__).resolve().parents[2]
needs_lab = pytest.mark.skipif(lab_skip_reason() is not None, reason=str(lab_skip_reason()))
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (openmpi-bin)")
P1, P2 = "rocep1s0f1", "roceP2p1s0f1"  # cage p1's twins on every GB10
B_P1, B_P2 = "198.19.100.11", "198.19.101.11"  # node b's twins, mapped into the lab range
FLAGS = "-d {dev} -i 1 -x 3 -p {port} -F --report_gbits -s 1048576 -D {d} -q 1"
# Folders of their own: a bench run's are /tmp/linkcheck-bench.<run id>-<node>, which test_bench_lab watches.
START = ("d=$(mktemp -d /tmp/lc-lab-traffic.XXXXXX) && cd \"$d\" && "
         "{{ setsid sh -c {cmd} >out 2>err </dev/null & echo \"$! $d\"; }}")


@dataclass(frozen=True)
class Proc:
    node: str
    pgid: int
    dir: str


@dataclass(frozen=True)
class Done:
    rc: int | None
    out: str
    err: str


class Bench:
    """Start emulated tools on lab nodes as linkcheck does, wait for them, read what they left."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.port = 21000 + os.getpid() % 1000 * 10
        self.dirs: list[str] = []

    def next_port(self) -> int:
        self.port += 1
        return self.port

    def start(self, node: str, tool_args: str, deadline: int = 20) -> Proc:
        # --foreground: timeout would otherwise setpgid() itself, and the tool would leave our group.
        cmd = shlex.quote(f"timeout --foreground -k 5 {deadline} {tool_args}; echo $? > rc")
        r = self.lab.ssh(node, START.format(cmd=cmd))
        assert r.returncode == 0, r.stderr
        pgid, d = r.stdout.split()
        self.dirs.append(d)
        return Proc(node, int(pgid), d)

    def cleanup(self) -> None:
        """The runs' temp folders: the nodes' /tmp is this machine's, do not litter it."""
        for d in self.dirs:
            if d.startswith("/tmp/lc-lab-traffic."):
                shutil.rmtree(d, ignore_errors=True)

    def sh(self, node: str, command: str) -> subprocess.CompletedProcess[str]:
        return self.lab.exec(node, ["bash", "-c", command])  # dash's kill knows no "--"

    def listening(self, node: str, port: int) -> str:
        return self.sh(node, f'ss -ltnpH "sport = :{port}"').stdout.strip()

    def wait_listen(self, node: str, port: int, timeout: float = 10.0, owner: str | None = None) -> str:
        """The listener's `ss` line once there is one; with `owner`, once it also names that process (`ss -p` can
        list a socket before it reads the process's fds: on a loaded machine the first line may lack `users:`)."""
        end = time.monotonic() + timeout
        line = ""
        while time.monotonic() < end:
            line = self.listening(node, port)
            if line and (owner is None or f'(("{owner}",pid=' in line):
                return line
            time.sleep(0.05)
        raise AssertionError(f"nothing listens on {node}:{port}" + (f" as {owner}: {line!r}" if owner else ""))

    def alive(self, p: Proc) -> bool:
        """The shell that leads the group writes rc last, so it is alive until everything is done.

        Nodes share the host's PID namespace: /proc here answers as `kill -0 PID` would on the node,
        without a process per poll. (Not `kill -0 -- -PGID`: right after `&` the child may not have
        called setsid() yet, and the group does not exist for a moment.)
        """
        try:
            stat = Path(f"/proc/{p.pgid}/stat").read_text()
        except OSError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] != "Z"

    def wait(self, p: Proc, timeout: float = 15.0) -> Done:
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.alive(p):
            time.sleep(0.1)
        assert not self.alive(p), f"{p} still running"
        return self.read(p)

    def read(self, p: Proc) -> Done:
        """The node's /tmp is the host's (only /sys, /etc/netplan and ~/.ssh differ), so read it here."""
        d = Path(p.dir)
        rc = (d / "rc").read_text().strip() if (d / "rc").exists() else ""
        out, err = (d / "out").read_text(errors="replace"), (d / "err").read_text()
        return Done(int(rc) if rc else None, out, err[:-1] if err.endswith("\n") else err)

    def kill(self, p: Proc, sig: str = "TERM") -> None:
        self.sh(p.node, f"kill -{sig} -- -{p.pgid}")

    def counter(self, node: str, dev: str, name: str) -> int:
        return int(self.sh(node, f"cat /sys/class/infiniband/{dev}/ports/1/counters/{name}").stdout)

    def pair(self, dev: str, ip: str, d: int = 1, extra: str = "", server_dev: str | None = None) -> tuple[Proc, Proc]:
        """Server on b, wait until it listens, client on a: as linkcheck orders them."""
        port = self.next_port()
        server = self.start("b", "ib_write_bw " + FLAGS.format(dev=server_dev or dev, port=port, d=d) + extra)
        self.wait_listen("b", port)
        client = self.start("a", "ib_write_bw " + FLAGS.format(dev=dev, port=port, d=d) + extra + " " + ip)
        return server, client


def _lab(name: str, tmp: Path) -> Iterator[Lab]:
    if lab_skip_reason():
        pytest.skip(str(lab_skip_reason()))
    lab = Lab(specs_for_scenario(name, tmp / "models"), tmp / "lab")
    lab.up()
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _lab("healthy", tmp_path_factory.mktemp("healthy"))


@pytest.fixture
def bench(healthy: Lab) -> Iterator[Bench]:
    """The healthy pair, no fault armed, and nothing of ours left running in either node afterwards."""
    baseline = {n: set(healthy.pids(n)) for n in ("a", "b")}
    bench = Bench(healthy)
    yield bench
    bench.cleanup()
    for node in ("a", "b"):
        for tool in ("ib_write_bw", "all_gather_perf"):
            healthy.set_fault(node, tool, None)
    end = time.monotonic() + 10
    while time.monotonic() < end and any(set(healthy.pids(n)) - baseline[n] for n in baseline):
        time.sleep(0.1)
    left = {n: set(healthy.pids(n)) - baseline[n] for n in baseline}
    assert left == {"a": set(), "b": set()}, [Path(f"/proc/{p}/cmdline").read_bytes() for n in left for p in left[n]]


def _row_gbps(text: str) -> float | None:
    return parse_perftest(text, report_gbits=True).bw_avg_gbps


# ib_write_bw --------------------------------------------------------------------------------------

@needs_lab
def test_server_and_client_handshake_across_namespaces(bench: Bench) -> None:
    lab = bench.lab
    assert lab.ssh("a", "ib_write_bw -V").stdout == "Version: 6.22\n"
    xmit, rcv = bench.counter("a", P1, "port_xmit_data"), bench.counter("b", P1, "port_rcv_data")
    port = bench.next_port()
    json_flags = " --out_json --out_json_file=res.json"
    server = bench.start("b", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=2) + json_flags)
    listen = bench.wait_listen("b", port, owner="ib_write_bw")
    assert f"0.0.0.0:{port}" in listen
    client = bench.start("a", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=2) + json_flags + " " + B_P1)
    c, s = bench.wait(client), bench.wait(server)
    assert (c.rc, s.rc, c.err, s.err) == (0, 0, "", "")
    assert s.out.startswith(" WARNING: BW peak won't be measured in this run.\n\n*****")
    assert "TX depth        : 128" in c.out and "TX depth" not in s.out
    rows = [parse_perftest(t, report_gbits=True) for t in (c.out, s.out)]
    assert [r.bw_avg_gbps for r in rows] == [109.29, 109.29]  # the server prints the client's row
    assert rows[0].unit == "Gb/sec" and rows[0].gid_index == 3 and rows[0].mtu_bytes == 4096
    assert rows[0].remote_gids == rows[1].local_gids == ("::ffff:198.19.100.11",)
    assert rows[0].rows[0].iterations == int(109.29e9 / 8 * 2 / 1048576)  # -D 2: margin 0
    for side in (client, server):
        doc = bench.sh(side.node, f"cat {side.dir}/res.json").stdout
        assert '"BW_average": 109.29' in doc
    moved = 109.29e9 / 8 * 2 / 4  # PMA units of 4 bytes
    assert bench.counter("a", P1, "port_xmit_data") - xmit == pytest.approx(moved, rel=0.1)
    assert bench.counter("b", P1, "port_rcv_data") - rcv == pytest.approx(moved, rel=0.1)
    assert bench.listening("b", port) == ""  # the listener closed after accept()


@needs_lab
def test_client_before_server_is_refused_and_wrong_gid_prints_no_row(bench: Bench) -> None:
    port = bench.next_port()
    early = bench.wait(bench.start("a", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1) + " " + B_P1))
    assert early.rc == 1
    assert early.err == (f"Couldn't connect to {B_P1}:{port}\nUnable to open file descriptor for socket connection\n"
                         " Unable to init the socket connection")
    # -x 2 is the IPv4 RoCE v1 slot: perftest >= 6.20 prints the header and no row, exit 0
    port = bench.next_port()
    server = bench.start("b", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1))
    bench.wait_listen("b", port)
    client = bench.start("a", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1).replace("-x 3", "-x 2") + " "
                         + B_P1)
    c, s = bench.wait(client), bench.wait(server)
    assert (c.rc, s.rc) == (0, 0) and "#bytes" in c.out and parse_perftest(c.out).rows == ()


@needs_lab
def test_concurrent_flows_get_the_concurrent_rate(bench: Bench) -> None:
    sent = {dev: bench.counter("a", dev, "port_xmit_data") for dev in (P1, P2)}
    p1, p2 = bench.next_port(), bench.next_port()
    # The flows count as concurrent when they overlap for more than half a run: -D 4 leaves the two clients, started
    # one SSH call apart, 2 s to overlap on a loaded machine (-D 2 left 1 s, and a busy run missed it).
    d = 4
    servers = [bench.start("b", "ib_write_bw " + FLAGS.format(dev=dev, port=p, d=d)) for dev, p in ((P1, p1), (P2, p2))]
    bench.wait_listen("b", p1), bench.wait_listen("b", p2)
    clients = [bench.start("a", "ib_write_bw " + FLAGS.format(dev=dev, port=p, d=d) + " " + ip)
               for dev, p, ip in ((P1, p1, B_P1), (P2, p2, B_P2))]
    outs = [bench.wait(p) for p in clients + servers]
    assert [d.rc for d in outs] == [0, 0, 0, 0], [d.err for d in outs]
    assert [_row_gbps(d.out) for d in outs] == [98.03, 98.04, 98.03, 98.04]
    for dev, gbps in ((P1, 98.03), (P2, 98.04)):  # both twins carried their share
        assert bench.counter("a", dev, "port_xmit_data") - sent[dev] == pytest.approx(gbps * 1e9 / 8 * d / 4, rel=0.1)


@needs_lab
def test_server_faults_never_ready_crash_and_port_in_use(bench: Bench) -> None:
    lab = bench.lab
    lab.set_fault("b", "ib_write_bw", "never-ready")
    port = bench.next_port()
    server = bench.start("b", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1))
    time.sleep(1.0)
    assert bench.alive(server) and bench.listening("b", port) == ""
    bench.kill(server)
    assert bench.wait(server, 5).rc is None  # killed with its shell: no status written

    lab.set_fault("b", "ib_write_bw", "crash-mid-run")
    server, client = bench.pair(P1, B_P1, d=2)
    s, c = bench.wait(server), bench.wait(client)
    assert s.rc == 1 and s.err.endswith(" Failed to complete run_iter_bw function successfully")
    assert c.rc == 1 and c.err.startswith(" Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81")
    assert parse_perftest(c.out).rows == ()
    lab.set_fault("b", "ib_write_bw", None)

    port = bench.next_port()
    holder = lab.spawn("b", [sys.executable, "-c", f"import socket,time;s=socket.create_server(('0.0.0.0',{port}));"
                             "print('up',flush=True);time.sleep(60)"])
    assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
    busy = bench.wait(bench.start("b", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1)))
    assert busy.rc == 1 and busy.err.startswith(f"Couldn't listen to port {port}\n")
    assert "Waiting for client to connect" in busy.out
    holder.kill()
    holder.wait()


@needs_lab
def test_client_fail_hang_garbage_and_sigterm(bench: Bench) -> None:
    lab = bench.lab
    lab.set_fault("a", "ib_write_bw", "client-fail")
    server, client = bench.pair(P1, B_P1, d=2)
    c, s = bench.wait(client), bench.wait(server)
    assert c.rc == 1 and " Completion with error at client" in c.err and "scnt=128, ccnt=0" in c.err
    assert s.rc == 1 and s.err.endswith(" Failed to exchange data between server and clients")

    lab.set_fault("a", "ib_write_bw", "hang")
    port = bench.next_port()
    # Both deadlines run from each side's own start, so the server's ends first and its client, hung, only by its
    # own. They must outlast the handshake (two SSH calls, two starts, perftest's 1 s settle): 3 s did not on a
    # loaded machine, and a server that timed out before the handshake left its client to end on its own with 1.
    server = bench.start("b", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1), deadline=6)
    bench.wait_listen("b", port)
    client = bench.start("a", "ib_write_bw " + FLAGS.format(dev=P1, port=port, d=1) + " " + B_P1, deadline=6)
    c, s = bench.wait(client, 15), bench.wait(server, 15)
    assert (c.rc, s.rc) == (124, 124), (c, s)  # only timeout ended them

    lab.set_fault("a", "ib_write_bw", "garbage")
    server, client = bench.pair(P1, B_P1)
    c, s = bench.wait(client), bench.wait(server)
    assert (c.rc, s.rc) == (0, 0) and _row_gbps(s.out) == 109.29
    with pytest.raises(ParseError):
        parse_perftest(c.out)
    lab.set_fault("a", "ib_write_bw", None)

    server, client = bench.pair(P1, B_P1, d=3)
    time.sleep(1.5)  # mid-run: what linkcheck does on Ctrl-C is kill -TERM -- -PGID on both nodes
    bench.kill(client)
    bench.kill(server)
    c, s = bench.wait(client, 5), bench.wait(server, 5)
    assert c.rc is None  # the TERM ended it: no exit status was written
    # The two kills are two SSH calls apart: the server may see its client die first and end on its own with 1,
    # as perftest does when the exchange breaks, before its own TERM arrives. Either way nothing is left running.
    assert s.rc is None or (s.rc == 1 and "Failed to exchange data" in s.err), s


@needs_lab
def test_flap_moves_carrier_changes_link_downed_and_port_state(bench: Bench) -> None:
    netdev = "enp1s0f1np1"
    before = {n: (bench.sh(n, f"cat /sys/class/net/{netdev}/carrier_changes").stdout,
                  bench.counter(n, P1, "link_downed")) for n in ("a", "b")}
    bench.lab.set_fault("a", "ib_write_bw", "flap")
    server, client = bench.pair(P1, B_P1, d=2)
    states = set()
    while bench.alive(client):
        states.add(bench.sh("a", f"cat /sys/class/infiniband/{P1}/ports/1/state").stdout.strip())
        time.sleep(0.02)
    c, s = bench.wait(client), bench.wait(server)
    assert (c.rc, s.rc) == (0, 0)
    assert {"1: DOWN", "4: ACTIVE"} <= states
    for n in ("a", "b"):  # a cable flap is seen at both ends
        changes, downed = before[n]
        assert int(bench.sh(n, f"cat /sys/class/net/{netdev}/carrier_changes").stdout) == int(changes) + 2
        assert bench.counter(n, P1, "link_downed") == downed + 1
    gbps = _row_gbps(c.out)
    assert gbps is not None and gbps < 109.29  # the link was down for part of the run


@pytest.mark.parametrize("scenario", ["hotplug-degraded", "single-pcie-path"])
@needs_lab
def test_degraded_scenarios_give_their_rates(scenario: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for lab in _lab(scenario, tmp_path):
        bench = Bench(lab)
        request.addfinalizer(bench.cleanup)
        p1, p2 = bench.next_port(), bench.next_port()
        flags = FLAGS if scenario == "hotplug-degraded" else FLAGS.replace(" --report_gbits", "")
        # -D 4: the two clients must overlap for half a run to be concurrent (as in the test above)
        servers = [bench.start("b", "ib_write_bw " + flags.format(dev=dev, port=p, d=4))
                   for dev, p in ((P1, p1), (P2, p2))]
        bench.wait_listen("b", p1), bench.wait_listen("b", p2)
        clients = [bench.start("a", "ib_write_bw " + flags.format(dev=dev, port=p, d=4) + " " + ip)
                   for dev, p, ip in ((P1, p1, B_P1), (P2, p2, B_P2))]
        outs = [bench.wait(p) for p in clients + servers]
        assert [d.rc for d in outs] == [0, 0, 0, 0], [d.err for d in outs]
        expected = {"hotplug-degraded": [13.33, 13.23], "single-pcie-path": [48.1, 47.2]}[scenario]
        got = [parse_perftest(d.out).bw_avg_gbps for d in outs[:2]]
        assert got == pytest.approx(expected, abs=0.05)  # 6.06 prints MB/sec: converted back by the parser
        if scenario == "single-pcie-path":
            assert "BW average[MB/sec]" in outs[0].out
            early = bench.wait(bench.start("a", "ib_write_bw " + flags.format(dev=P1, port=bench.next_port(), d=1)
                                           + " " + B_P1))
            assert early.err.endswith("Unable to open file descriptor for socket connection Unable to init the "
                                      "socket connection")


# mpirun + all_gather_perf ------------------------------------------------------------------------

# Without oob_tcp_if_include Open MPI's wire-up also tries the management and RJ45 addresses, which
# do not route between lab nodes (as on sites where the RJ45 LANs differ): ~3 s more per run.
MPIRUN = ("mpirun --allow-run-as-root -np 2 -H 198.19.100.10:1,198.19.100.11:1 --map-by ppr:1:node "
          "--mca oob_tcp_if_include 198.19.100.0/24 --mca btl_tcp_if_include 198.19.100.0/24 "
          "-x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET -x NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 "
          "all_gather_perf -b 1M -e 16G -f 2 -g 1 -J ag.json")


@needs_lab
@needs_mpirun
def test_mpirun_all_gather_across_the_nodes(bench: Bench) -> None:
    run = bench.wait(bench.start("a", MPIRUN, deadline=60), 60)
    assert run.rc == 0, run.out + run.err
    result = parse_nccl_tests(run.out)
    assert result.completed and result.ranks == 2 and result.hosts == ("dgx-spark-1", "dgx-spark-2")
    assert result.max_busbw_gbs == pytest.approx(23.74, abs=0.1)  # the healthy scenario's peak busbw
    log = parse_nccl_log(run.out)
    assert log.network == "IB" and log.ib_devices == (P1, P2) and set(log.hosts) == {"dgx-spark-1", "dgx-spark-2"}
    assert {q.ipv4 for q in log.qp_gids} == {"198.19.100.10", "198.19.101.10", "198.19.100.11", "198.19.101.11"}
    job = bench.sh("a", f"ls {bench.lab.shared_dir}/nccl").stdout
    assert job.strip() == ""  # the rendezvous was consumed

    bench.lab.set_fault("b", "all_gather_perf", "crash-mid-run")
    failed = bench.wait(bench.start("a", MPIRUN, deadline=60), 60)
    assert failed.rc == 3 and "remote process exited or there was a network error" in failed.out
    assert not parse_nccl_tests(failed.out).completed
    assert any("Connection closed by remote peer" in w for w in parse_nccl_log(failed.out).warnings)


def test_scenarios_carry_lab_rates() -> None:
    healthy = SCENARIOS["healthy"]
    assert healthy.node_a.perftest_rate(P1, False) == 109.29 and healthy.node_a.perftest_rate(P2, True) == 98.04
    assert SCENARIOS["nccl-socket-fallback"].node_a.nccl_transport == "Socket"


def test_client_before_server_offline_on_localhost(tmp_path: Path) -> None:
    """The live emulator also runs in the host namespace (no lab, no root): a refused connect."""
    node = tmp_path / "node.json"
    node.write_text(SCENARIOS["single-pcie-path"].node_a.to_json(), encoding="utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "LINKCHECK_LAB_NODE": str(node), "PYTHONPATH": str(REPO),
           "LINKCHECK_LAB_SHARED": str(tmp_path / "shared")}
    r = subprocess.run([sys.executable, "-m", "tests.emulators.cli", "ib_write_bw", "-d", P1, "-x", "3", "-p",
                        str(port), "-D", "1", "127.0.0.1"], capture_output=True, text=True, env=env, timeout=30,
                       check=False)
    assert (r.returncode, r.stdout) == (1, " WARNING: BW peak won't be measured in this run.\n")
    assert r.stderr == (f"Couldn't connect to 127.0.0.1:{port}\nUnable to open file descriptor for socket "
                        "connection Unable to init the socket connection\n")


def test_nccl_ib_hca_selection_and_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.emulators import live_nccl

    node = SCENARIOS["healthy"].node_a
    for spec, want in (("rocep1s0f1,roceP2p1s0f1", [P1, P2]), ("roceP2", [P2]), ("^rocep1", [P2]),
                       ("=rocep1s0f", []), ("mlx5_0", [])):
        monkeypatch.setenv("NCCL_IB_HCA", spec)
        me = live_nccl._me(node, None)
        assert me["hcas"] == want, spec
        assert me["transport"] == ("IB" if want else "Socket")
    monkeypatch.setenv("NCCL_IB_HCA", P1)
    monkeypatch.setenv("NCCL_IB_DISABLE", "1")
    assert live_nccl._me(node, None)["transport"] == "Socket"
    monkeypatch.delenv("NCCL_IB_DISABLE")
    assert live_nccl._me(SCENARIOS["nccl-socket-fallback"].node_a, None)["transport"] == "Socket"
    assert live_nccl._candidates(["198.19.101.10/24", "198.19.100.10/24"], ["198.19.100.11/24"]) == [
        "198.19.100.10", "198.19.101.10"]
