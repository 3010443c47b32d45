"""linkcheck's traffic tests end to end against the two-node lab: real sshd, paramiko, mpirun, processes.

Scenarios: each throughput scenario's lab runs the node models of its offline fixture, and the live run
must name it (the same throughput findings as the fixture, plus what only the live concurrent rounds
show). The four runs go at once, each in its own lab, started before the fault tests and checked after
them: all of it mostly waits on -D seconds and on perftest's handshake, so it overlaps well.

Faults, one healthy lab, one linkcheck run each, broken while a round runs: every fault gives one
clear line on stderr, the documented exit code (3 inconclusive, 130 interrupted), the bundle of what
was measured so far, and no process or run folder of ours left on any node. A node's /tmp is this
machine's /tmp, so the run folders checked (and removed if left) are only those this run named.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.facts.bench_facts import JOB_KIND, JOB_KINDS
from tests.lab import Lab, LabNodeSpec
from tests.lab.mgmt import batch_lock
from tests.lab.pytest_plugin import lab_skip_reason
from tests.lab.scenario import specs_for_scenario

pytestmark = [pytest.mark.lab,  # builds the two-node lab
              # One worker makes the labs and runs its tests share (`--dist loadgroup`); the same one as
              # test_accept_lab's, whose batch holds the batch lock as this module's does: neither waits on the other.
              pytest.mark.xdist_group("lab-batches")]

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (openmpi-bin)")

REPO = Path(__file__).resolve().parents[2]
RUN_PREFIX = "/tmp/linkcheck-bench."
INCONCLUSIVE, INTERRUPTED = 3, 130
BENCH_RULES = {"LINK_HOTPLUG_DEGRADED", "LINK_BELOW_NOMINAL", "NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW",
               "SINGLE_PCIE_PATH"}
HUGE = str(1 << 40)  # ask for far more than memory allows: the MemAvailable cap decides -e
SCENARIO_ARGS = {
    "healthy": ("check", "--bench", "--duration", "1", "--nccl-max-bytes", HUGE),
    "hotplug-degraded": ("bench", "rdma", "--duration", "1"),
    # 2 s: the lab calls a run concurrent when the other client ran for more than half of it.
    "single-pcie-path": ("bench", "rdma", "--duration", "2"),
    "nccl-socket-fallback": ("bench", "nccl", "--nccl-max-bytes", HUGE),
}
# The emulated all_gather_perf -h prints only the first usage line; real nccl-tests >= 2.17.3 lists -J
# there, which is how linkcheck decides to ask for the JSON report.
USAGE_WITH_J = ('if [ "$1" = -h ]; then printf \'USAGE: all_gather_perf \\n\\t[-t,--nthreads <num threads>] \\n'
                '\\t[-J,--output_file <file>] \\n\'; exit 0; fi\n'
                f'exec {sys.executable} -m tests.emulators.cli all_gather_perf "$@"\n')


# -- one linkcheck run and what it left ------------------------------------------------------------------------


@dataclass
class BenchRun:
    cli: CliRun
    saved: Path
    strays: dict[str, list[str]]
    left: list[str] = field(default_factory=list)  # run folders of this run still on the nodes

    @property
    def manifest(self) -> dict[str, Any]:
        assert self.cli.saved_to() == self.saved, self.cli.describe()
        data = json.loads((self.saved / "manifest.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data

    def captures(self, kind: str) -> list[dict[str, Any]]:
        return [c for c in self.manifest["captures"] if c["meta"].get("kind") == kind]

    def text(self, capture: dict[str, Any], stream: str = "stdout") -> str:
        """A capture's stdout or stderr: the manifest names the file in the bundle (none when empty)."""
        rel = capture.get(stream)
        return (self.saved / rel).read_text(encoding="utf-8", errors="replace") if rel else ""


def _run_folders() -> set[str]:
    """Every bench run's folder on this machine (/tmp/linkcheck-bench.<run id: 12 hex digits>-<node>), whichever
    test's run made it; other things in /tmp with the same start are not runs."""
    return {p for p in glob.glob(f"{RUN_PREFIX}*") if re.fullmatch(r"[0-9a-f]{12}-.+", p[len(RUN_PREFIX):])}


def _left_since(before: set[str], wait_s: float = 180) -> set[str]:
    """Run folders made since `before` that are still there after up to wait_s. A node's /tmp is this machine's, so a
    run beside this one (the other test worker's, anyone's) shows its folders while it runs and removes them when it
    ends; a folder that a run leaked stays."""
    deadline = time.monotonic() + wait_s
    while (new := _run_folders() - before) and time.monotonic() < deadline:
        time.sleep(1)
    return new


def _run_ids(saved: Path) -> set[str]:
    if not (saved / "manifest.json").is_file():
        return set()
    manifest = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    return {c["meta"]["run_id"] for c in manifest["captures"] if c["meta"].get("run_id")}


def _finish(lab: Lab, live: Live, cli: CliRun, saved: Path, before: dict[str, list[int]]) -> BenchRun:
    """Strays and leftover run folders of one finished run; its folders (named by its run id, never
    anyone else's) are removed once recorded."""
    strays = live.strays(lab, before)
    left = sorted(p for rid in _run_ids(saved) for p in glob.glob(f"{RUN_PREFIX}{rid}-*"))
    for path in left:
        shutil.rmtree(path, ignore_errors=True)
    return BenchRun(cli, saved, strays, left)


def _config(lab: Lab, live: Live, work: Path) -> Path:
    return live.lab_config(lab, work / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})


def _start(live: Live, args: tuple[str, ...]) -> tuple[subprocess.Popen[str], float]:
    """linkcheck in the background, with Ctrl-C handled as in a terminal even if pytest inherited it ignored."""
    proc = subprocess.Popen(live.argv(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env=live.env(), stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return proc, time.monotonic()


def _healthy_specs(work: Path, **changes: Any) -> list[LabNodeSpec]:
    return [replace(s, **changes) for s in specs_for_scenario("healthy", work / "models")]


# -- the sweep that ends a run's processes (this machine, no lab) ----------------------------------------------


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent that does not reap it counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_sweep_ends_unfinished_process_groups_only(tmp_path: Path) -> None:
    from linkcheck.bench import remote
    from linkcheck.transport.local import LocalTransport

    node = LocalTransport("a")
    run = tmp_path / "run"
    run.mkdir()
    running = remote.start(node, ["sleep", "60"], run_dir=str(run), deadline_s=60, label="sleep")
    finished = remote.start(node, ["true"], run_dir=str(run), deadline_s=60, label="true")
    assert remote.wait_exit(node, finished, 10)
    # A finished process's PID may be reused by anyone: write a live stranger's PID where `true`'s was.
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        Path(finished.directory, "pgid").write_text(f"{stranger.pid}\n")
        assert _alive(running.pgid)
        node.run(remote.sweep_script(str(run)), timeout_s=30)
        deadline = time.monotonic() + 5
        while _alive(running.pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(running.pgid), "the running process group was not ended"
        assert _alive(stranger.pid), "a finished process's PID was signalled"
        assert not run.exists()
    finally:
        stranger.kill()  # our own child, by its handle
        stranger.wait()


# -- faults, one healthy lab ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fault_lab(module_lab_factory: Callable[..., Lab]) -> Iterator[Lab]:
    lab = module_lab_factory("healthy")
    yield lab
    lab.down()


class FaultRun:
    """linkcheck `bench rdma` on the fault lab, with the means to break something once a round runs."""

    def __init__(self, lab: Lab, live: Live, work: Path, port_base: int, duration_s: int = 1) -> None:
        self.lab, self.live, self.saved = lab, live, work / "saved"
        self.args = ("bench", "rdma", "--duration", str(duration_s), "--port-base", str(port_base),
                     "-c", str(_config(lab, live, work)), "--save", str(self.saved), "-f", "json")
        self.before = live.node_pids(lab)
        self.flows = lab.shared_dir / "perftest-flows"
        self.flows_before = set(os.listdir(self.flows)) if self.flows.is_dir() else set()
        self.started = _start(live, self.args)

    def wait_traffic(self, timeout_s: float = 90) -> None:
        """Until a client of this run moves data (its flow record appears)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and self.started[0].poll() is None:
            if self.flows.is_dir() and set(os.listdir(self.flows)) - self.flows_before:
                return
            time.sleep(0.05)
        pytest.fail("no ib_write_bw client started")

    def finish(self) -> BenchRun:
        cli = self.live.wait(self.started, self.args)
        return _finish(self.lab, self.live, cli, self.saved, self.before)


def _fault_line(run: BenchRun, code: int, pattern: str) -> str:
    """The documented exit code, one line on stderr matching `pattern`, nothing left behind."""
    assert run.cli.returncode == code, run.cli.describe()
    assert "Traceback" not in run.cli.stderr and "internal error" not in run.cli.stderr, run.cli.describe()
    lines = run.cli.error_lines()
    assert len(lines) == 1 and lines[0].startswith("linkcheck: "), run.cli.describe()
    assert re.search(pattern, lines[0]), run.cli.describe()
    assert run.strays == {}, f"processes of ours left on the nodes: {run.strays}"
    assert run.left == [], f"run folders left on the nodes: {run.left}"
    assert run.manifest["collection_errors"]["bench"] in lines[0]
    return lines[0]


def _round_captures(run: BenchRun, round_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind-or-role, node) -> capture of one round: the snapshots and each ib_write_bw process."""
    out = {}
    for cap in run.manifest["captures"]:
        meta = cap["meta"]
        if meta.get("round") == round_id and meta.get("format", "text") == "text":
            out[(meta.get("role") or meta.get("phase", ""), cap["node"])] = cap
    return out


def _with_fault(lab: Lab, live: Live, work: Path, port_base: int, node: str, fault: str) -> BenchRun:
    """One `bench rdma` run while every ib_write_bw started on `node` has `fault`."""
    lab.set_fault(node, "ib_write_bw", fault)
    try:
        return FaultRun(lab, live, work, port_base).finish()
    finally:
        lab.set_fault(node, "ib_write_bw", None)


BUSY_LOOP = "while :; do :; done"


def _busy(lab: Lab, node: str) -> int:
    """How many of the test's busy loops (`sh -c BUSY_LOOP`, not the `timeout` that started each) run in the node."""
    count = 0
    for pid in lab.pids(node):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile
            continue
        count += argv[:3] == [b"sh", b"-c", BUSY_LOOP.encode()]
    return count


def _wait_busy(lab: Lab, wanted: dict[str, int], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while any(_busy(lab, node) < n for node, n in wanted.items()):
        if time.monotonic() > deadline:
            pytest.fail(f"the busy loops did not start within {timeout_s:g} s")
        time.sleep(0.05)


def test_busy_nodes_keep_the_session(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    """Nodes whose CPUs are saturated (a GPU job's host threads, here four busy loops per node on this machine's few
    cores, each bounded in time and ended by PID): the run completes on the sessions it opened, and no sshd ended a
    connection over a protocol error (the race of a channel EOF after the channel's close: tests/transport)."""
    hogs = [fault_lab.spawn(node, ["timeout", "120", "sh", "-c", BUSY_LOOP])
            for node in ("a", "b") for _ in range(4)]
    try:
        # `timeout` forks its busy loop: every loop must run before the run's baseline of each node's processes is
        # taken, or a loop forked late is counted as the run's stray.
        _wait_busy(fault_lab, {"a": 4, "b": 4})
        run = FaultRun(fault_lab, live, tmp_path, 31700, duration_s=2).finish()
    finally:
        for hog in hogs:
            hog.terminate()  # `timeout` passes the TERM on to its busy loop
            hog.wait()
    assert run.cli.returncode == 0, run.cli.describe()
    assert run.cli.error_lines() == [], run.cli.describe()
    assert run.strays == {} and run.left == []
    assert len([c for c in run.manifest["captures"] if c["meta"].get("role") == "client"]) >= 3
    for node in ("a", "b"):
        log = (fault_lab.node(node).node_dir / "ssh" / "sshd.log").read_text(errors="replace")
        assert "nonexistent channel" not in log, log[-2000:]


def test_server_never_ready(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    run = _with_fault(fault_lab, live, tmp_path, 31000, "b", "never-ready")
    _fault_line(run, INCONCLUSIVE, r"node b: ib_write_bw server on b:\S+ did not listen on port 31000 within 10 s")
    caps = _round_captures(run, "alone-a2b-c1-0")
    assert set(caps) == {("before", "a"), ("before", "b"), ("server", "b")}, sorted(caps)
    assert "did not listen" in caps[("server", "b")]["skipped"]
    assert run.cli.report["bench"]["rdma"] == []


def test_server_dies_mid_run(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    run = _with_fault(fault_lab, live, tmp_path, 31100, "b", "crash-mid-run")
    _fault_line(run, INCONCLUSIVE, r"node b: ib_write_bw server on b:\S+ failed in round alone-a2b-c1-0: exited 1: "
                                   r"Completion with error at server")
    caps = _round_captures(run, "alone-a2b-c1-0")
    assert set(caps) == {(p, n) for p in ("before", "after", "client", "server") for n in "ab"} - {
        ("client", "b"), ("server", "a")}
    assert caps[("server", "b")]["exit_status"] == caps[("client", "a")]["exit_status"] == 1
    assert [r["gbps"] for r in run.cli.report["bench"]["rdma"]] == [None]
    assert {f[1] for f in _bench_findings(run.cli, ("pass", "warn", "fail", "skip")) if f[0] == "LINK_BELOW_NOMINAL"
            and f[2] == run.cli.report["bench"]["rdma"][0]["path_key"]} == {"skip"}


def test_client_fails(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    run = _with_fault(fault_lab, live, tmp_path, 31200, "a", "client-fail")
    _fault_line(run, INCONCLUSIVE, r"node a: ib_write_bw client on a:\S+ failed in round alone-a2b-c1-0: exited 1: "
                                   r"Completion with error at client")
    caps = _round_captures(run, "alone-a2b-c1-0")
    assert caps[("client", "a")]["exit_status"] == 1 and caps[("server", "b")]["exit_status"] == 1
    assert ("after", "b") in caps


def test_link_flap_makes_that_round_inconclusive(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    fault_lab.set_fault("a", "ib_write_bw", "flap")
    try:
        fault = FaultRun(fault_lab, live, tmp_path, 31300)
        fault.wait_traffic()  # round 0's client read the fault when it started; later rounds run clean
    finally:
        fault_lab.set_fault("a", "ib_write_bw", None)
    run = fault.finish()
    line = _fault_line(run, INCONCLUSIVE, r"flapped.* during round alone-a2b-c1-0 \(.*carrier_changes \d+ -> \d+")
    assert "alone-a2b-c1-1" not in line
    report = run.cli.report
    assert report["bench"]["flapped"] == ["alone-a2b-c1-0"]
    flapped = [r for r in report["bench"]["rdma"] if r["gbps"] is None]
    assert len(flapped) == 1 and "flapped" in flapped[0]["problem"]
    assert flapped[0]["direction"] == "a->b" and flapped[0]["mode"] == "alone"
    assert len([r for r in report["bench"]["rdma"] if r["gbps"]]) == 7  # every other round measured
    for rule in ("LINK_HOTPLUG_DEGRADED", "LINK_BELOW_NOMINAL"):
        statuses = {f["status"] for f in report["findings"] if f["id"] == rule}
        assert statuses == {"skip"}, (rule, statuses)
    assert report["verdict"] == "inconclusive"


def test_ssh_dropped_mid_run(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    fault = FaultRun(fault_lab, live, tmp_path, 31400, duration_s=2)  # long enough to break it mid-round
    try:
        fault.wait_traffic()
        fault_lab.stop_sshd("b")
        assert fault_lab.kill_ssh_sessions("b"), "no SSH session of linkcheck on node b"
        run = fault.finish()
    finally:
        fault_lab.start_sshd("b")
    # b's server was ended on the node by linkcheck's watchdog when sshd dropped the session.
    _fault_line(run, INCONCLUSIVE, r"node b: SSH connection lost while .*; node b: cannot reach it to end "
                                   r"ib_write_bw server on b:\S+ \(pid \d+\)")
    caps = _round_captures(run, "alone-a2b-c1-0")
    assert {("before", "a"), ("before", "b"), ("client", "a"), ("server", "b")} <= set(caps)
    assert caps[("server", "b")]["skipped"].startswith("ended by linkcheck")


def test_ctrl_c_during_a_round(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    fault = FaultRun(fault_lab, live, tmp_path, 31500, duration_s=2)
    fault.wait_traffic()
    time.sleep(0.3)
    fault.started[0].send_signal(signal.SIGINT)
    asked = time.monotonic()
    run = fault.finish()
    assert time.monotonic() - asked < 15, "Ctrl-C did not stop linkcheck promptly"
    _fault_line(run, INTERRUPTED, r"interrupted \(Ctrl-C\); every process it started was ended")
    caps = _round_captures(run, "alone-a2b-c1-0")
    for key in (("client", "a"), ("server", "b")):
        assert caps[key]["skipped"] == "ended by linkcheck: Ctrl-C", caps[key]
    assert "RDMA_Write BW Test" in run.text(caps[("client", "a")])  # what it printed before it was ended


def test_port_already_in_use(fault_lab: Lab, live: Live, tmp_path: Path) -> None:
    listener = ("import socket, time\ns = socket.socket()\ns.bind(('0.0.0.0', 31600))\ns.listen()\n"
                "print('listening', flush=True)\ntime.sleep(120)\n")
    holder = fault_lab.spawn("b", [sys.executable, "-c", listener])
    folders = _run_folders()  # a node's /tmp is this machine's
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "listening"
        run = FaultRun(fault_lab, live, tmp_path, 31600).finish()
    finally:
        holder.kill()  # our own process, by its handle
        holder.wait()
    comm = re.escape(Path(sys.executable).name[:15])  # ss names the process by its comm
    _fault_line(run, INCONCLUSIVE, rf"node b: TCP port 31600 is already in use by {comm} \(pid {holder.pid}\)")
    kinds = {c["meta"].get("kind") for c in run.manifest["captures"]}
    assert kinds & {"rdma", "snapshot", *JOB_KINDS} == set(), "something was started"
    # refused before the run's folders were made: nothing to sweep (the run reused the inspection's -V)
    assert not _left_since(folders), "a run folder was created"


# -- the scenarios, all at once ----------------------------------------------------------------------------------


class ScenarioRuns:
    """The four scenario runs, started together (each in its own lab) and collected once."""

    def __init__(self, make_lab: Callable[..., Lab], live: Live, tmp: pytest.TempPathFactory) -> None:
        self.live = live
        self.labs: dict[str, Lab] = {}
        self.meta: dict[str, tuple[tuple[str, ...], Path, dict[str, list[int]]]] = {}
        self.started: dict[str, tuple[subprocess.Popen[str], float]] = {}
        self.runs: dict[str, BenchRun] | None = None
        for name in SCENARIO_ARGS:
            work = tmp.mktemp(name)
            specs: Any = name
            if name == "healthy":
                specs = _healthy_specs(work, extra_tools={"all_gather_perf": USAGE_WITH_J})
            lab = self.labs[name] = make_lab(specs)
            args = (*SCENARIO_ARGS[name], "-c", str(_config(lab, live, work)), "--save", str(work / "saved"),
                    "-f", "json")
            self.meta[name] = (args, work / "saved", live.node_pids(lab))
        for name, (args, _, _) in self.meta.items():
            self.started[name] = live.start(*args)

    def results(self) -> dict[str, BenchRun]:
        if self.runs is None:
            self.runs = {}
            for name, (args, saved, before) in self.meta.items():
                cli = self.live.wait(self.started.pop(name), args, timeout=300)
                self.runs[name] = _finish(self.labs[name], self.live, cli, saved, before)
                self.labs[name].down()
        return self.runs

    def close(self) -> None:
        for proc, _ in self.started.values():  # runs never collected (the session stopped early)
            proc.kill()  # our own children, by their handles
            proc.communicate()
        for lab in self.labs.values():
            lab.down()


@pytest.fixture(scope="module")
def scenario_handle(module_lab_factory: Callable[..., Lab], live: Live,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScenarioRuns]:
    with batch_lock():  # four labs at once: never beside another module's batch (tests/lab/mgmt.py)
        runs = ScenarioRuns(module_lab_factory, live, tmp_path_factory)
        yield runs
        runs.close()


@pytest.fixture(scope="module", autouse=True)
def _scenarios_in_background(request: pytest.FixtureRequest) -> None:
    """Start the scenario runs before the fault tests (which come first), so both mostly wait at once."""
    # The session also holds doctest items, which have neither `module` nor `fixturenames`.
    wanted = [i for i in request.session.items
              if getattr(i, "module", None) is request.module and "scenario_runs" in getattr(i, "fixturenames", ())]
    if wanted and lab_skip_reason() is None and shutil.which("mpirun"):
        request.getfixturevalue("scenario_handle")


@pytest.fixture(scope="module")
def scenario_runs(scenario_handle: ScenarioRuns) -> dict[str, BenchRun]:
    return scenario_handle.results()


def _fixture(live: Live, name: str) -> CliRun:
    return live.run("diagnose", str(REPO / "fixtures" / name), "-f", "json")


def _bench_findings(run: CliRun, statuses: tuple[str, ...] = ("warn", "fail")) -> set[tuple[str, str, str]]:
    return {f for f in run.findings(statuses) if f[0] in BENCH_RULES}


def _same_alone_rates(live_report: dict[str, Any], fixture_report: dict[str, Any]) -> None:
    """The lab runs the fixture's node models: each path alone, each direction, gives the fixture's number."""
    want = {(r["direction"], r["path_key"]): r["gbps"] for r in fixture_report["bench"]["rdma"] if r["mode"] == "alone"}
    got = {(r["direction"], r["path_key"]): r["gbps"] for r in live_report["bench"]["rdma"] if r["mode"] == "alone"}
    assert set(got) == set(want)
    for key, gbps in want.items():
        assert got[key] == pytest.approx(gbps, abs=0.5), key


@needs_mpirun
def test_healthy_pair_passes_both_traffic_tests(scenario_runs: dict[str, BenchRun], live: Live) -> None:
    run = scenario_runs["healthy"]
    assert run.cli.returncode == 0, run.cli.describe()
    assert run.cli.findings(("warn", "fail", "skip")) == set(), run.cli.describe()
    report = run.cli.report
    assert len(report["bench"]["rdma"]) == 8  # 2 paths alone + both at once, both directions
    assert all(r["gbps"] and r["gbps"] > 90 for r in report["bench"]["rdma"]), report["bench"]["rdma"]
    _same_alone_rates(report, _fixture(live, "healthy").report)


@needs_mpirun
@pytest.mark.parametrize("name", ["hotplug-degraded", "single-pcie-path", "nccl-socket-fallback"])
def test_degraded_scenario_is_named(scenario_runs: dict[str, BenchRun], live: Live, name: str) -> None:
    run, fixture = scenario_runs[name], _fixture(live, name)
    assert run.cli.returncode == 2 and run.cli.report["verdict"] == "fail", run.cli.describe()
    got, want = _bench_findings(run.cli), _bench_findings(fixture)
    assert want and want <= got, f"fixture only: {sorted(want - got)}"
    fails = {(rule, subject) for rule, status, subject in got if status == "fail"}
    if name == "hotplug-degraded":
        paths = {r["path_key"] for r in run.cli.report["bench"]["rdma"]}
        assert fails == {("LINK_HOTPLUG_DEGRADED", p) for p in paths} and len(paths) == 2
        _same_alone_rates(run.cli.report, fixture.report)
    elif name == "single-pcie-path":
        # Only the live run has concurrent rounds: both paths at once total one x4 link, in each direction.
        assert {("SINGLE_PCIE_PATH", "rdma a->b concurrent"), ("SINGLE_PCIE_PATH", "rdma b->a concurrent")} <= fails
        assert {rule for rule, _ in fails} == {"SINGLE_PCIE_PATH"}
        _same_alone_rates(run.cli.report, fixture.report)
    else:
        assert fails == {("NCCL_SOCKET_FALLBACK", "nccl"), ("NCCL_BUSBW_LOW", "nccl")}
        nccl = run.cli.report["bench"]["nccl"]
        assert nccl["uses_socket"] and nccl["busbw_gbs"] == pytest.approx(fixture.report["bench"]["nccl"]["busbw_gbs"],
                                                                           abs=0.1)


@needs_mpirun
@pytest.mark.parametrize("name", list(SCENARIO_ARGS))
def test_scenario_run_ends_cleanly(scenario_runs: dict[str, BenchRun], name: str) -> None:
    run = scenario_runs[name]
    assert "Traceback" not in run.cli.stderr and run.cli.error_lines() == [], run.cli.describe()
    assert run.manifest["collection_errors"] == {}
    assert run.strays == {}, f"processes of ours left on the nodes: {run.strays}"
    assert run.left == [], f"run folders left on the nodes: {run.left}"


def _mem_cap_bytes(run: BenchRun) -> int:
    """A tenth of the smaller MemAvailable the bundle recorded (buffers of ~2.5 x the size in a quarter)."""
    avail = []
    for cap in run.manifest["captures"]:
        if cap["spec"] == "meminfo":
            found = re.search(r"^MemAvailable:\s+(\d+) kB", run.text(cap), re.MULTILINE)
            assert found, "no MemAvailable in the bundle"
            avail.append(int(found.group(1)) * 1024)
    assert len(avail) == 2
    return min(avail) // 10


@needs_mpirun
def test_nccl_runs_over_ib_on_both_hcas_sized_to_free_memory(scenario_runs: dict[str, BenchRun]) -> None:
    run = scenario_runs["healthy"]
    nccl = run.cli.report["bench"]["nccl"]
    hcas = {r["device"] for r in run.cli.report["bench"]["rdma"]}
    assert nccl["network"] == "IB" and not nccl["uses_socket"]
    assert set(nccl["ib_devices"]) == hcas and len(hcas) == 2 and sorted(nccl["channel_net_devs"]) == [0, 1]
    [cap] = [c for c in run.captures(JOB_KIND) if c["meta"].get("format") == "text"]
    stdout = run.text(cap)
    assert re.search(r"#\s+Rank\s+1 .* on dgx-spark-2 ", stdout), "rank 1 did not run on node b"
    assert "--mca oob_tcp_if_include" in cap["command"]
    size = int(re.search(r" -e (\d+) ", cap["command"]).group(1))  # type: ignore[union-attr]
    cap_bytes = _mem_cap_bytes(run)
    assert size <= cap_bytes < 2 * size, (size, cap_bytes)  # the largest power of two that fits
    assert size & (size - 1) == 0 and int(cap["meta"]["max_bytes"]) == size


@needs_mpirun
def test_nccl_json_report_is_kept_without_the_environment(scenario_runs: dict[str, BenchRun]) -> None:
    run = scenario_runs["healthy"]
    [cap] = [c for c in run.captures(JOB_KIND) if c["meta"].get("format") == "json"]
    data = json.loads(run.text(cap))
    assert data["results"] and not isinstance(data["env"], dict), data["env"]
