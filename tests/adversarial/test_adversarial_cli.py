"""Bad options, bad output targets, bad configs, unreachable nodes and Ctrl-C: one line, a documented code.

Live faults only use 198.18.0.0/15 (reserved for benchmarking, unreachable here) with short timeouts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.adversarial_helpers import HEALTHY, ROOT, one_line_error, run

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

UNREACHABLE = ("--node", "a=u@198.18.251.1", "--node", "b=u@198.18.251.2")


def _config(tmp_path: Path, body: str, name: str = "linkcheck.yaml") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def _quick(tmp_path: Path) -> Path:
    return _config(tmp_path, "version: 1\nnodes: {a: u@198.18.251.1, b: u@198.18.251.2}\n"
                   "ssh: {connect_timeout_s: 2, inspection_timeout_s: 4}\n", "quick.yaml")


@pytest.mark.parametrize("args", [
    ("bench", "rdma", "--duration", "-5"), ("bench", "rdma", "--duration", "0"),
    ("bench", "rdma", "--duration", "99999"), ("bench", "rdma", "--duration", "abc"),
    ("bench", "rdma", "--qps", "0"), ("bench", "rdma", "--qps", "-1"), ("bench", "rdma", "--qps", "100000"),
    ("bench", "rdma", "--port-base", "70000"), ("bench", "rdma", "--port-base", "0"),
    ("bench", "rdma", "--port-base", "-1"), ("bench", "rdma", "--size", "0"), ("bench", "rdma", "--size", "-4"),
    ("bench", "nccl", "--nccl-max-bytes", "0"), ("check", "--bench", "--duration", "-5"),
    ("check", "--bench", "--qps", "0"), ("check", "--format", "xml"), ("diagnose",), ("parse", "ibstat"),
    ("check", "--no-such-option"), ("nonsense-command",),
])
def test_bad_option_values_refused_before_connecting(cli: InProcessCli, tmp_path: Path, args: tuple[str, ...]) -> None:
    line = one_line_error(cli(*args, *UNREACHABLE, cwd=tmp_path, timeout=20), 4)
    assert line.startswith("linkcheck: ")
    assert not list(tmp_path.iterdir())  # nothing written, no bundle folder


@pytest.mark.parametrize("node", [
    "a=::::::", "a=", "c=host", "a=host:99999", "a=host:0", "a=user@@host", "a=[::1", "a=-oProxyCommand=x",
    "a=host name", "a=u@", "=host", "a",
])
def test_bad_node_option(cli: InProcessCli, tmp_path: Path, node: str) -> None:
    one_line_error(cli("check", "--node", node, "--node", "b=u@198.18.251.2", cwd=tmp_path, timeout=20), 4,
                   "--node")


def test_save_onto_file_non_empty_folder(cli: InProcessCli, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    for target, reason in (("file", "names a file"), ("full", "not empty"), ("file/sub", "is a file")):
        for command in (("check",), ("collect",), ("bench", "rdma")):
            start = time.monotonic()
            one_line_error(cli(*command, "--save", str(tmp_path / target), *UNREACHABLE, cwd=tmp_path,
                               timeout=20), 4, reason)
            assert time.monotonic() - start < 15


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_save_into_unwritable_folder(cli: InProcessCli, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    one_line_error(cli("collect", "--save", str(locked / "b"), *UNREACHABLE, timeout=20), 4, "not writable")


@pytest.mark.parametrize(("output", "reason"), [("missing/dir/x.yaml", "does not exist"), (".", "already exists")])
def test_init_output_checked_before_connecting(cli: InProcessCli, tmp_path: Path, output: str, reason: str) -> None:
    one_line_error(cli("init", *UNREACHABLE, "-o", output, cwd=tmp_path, timeout=20), 4, reason)


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_report_to_dev_full(fmt: str) -> None:
    # A process: its stdout (file descriptor 1) is /dev/full itself.
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", "diagnose", str(HEALTHY), "-f", fmt],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
    proc.stdout = ""
    one_line_error(proc, 74, "No space left")  # type: ignore[arg-type]


@pytest.mark.parametrize("args", [("diagnose", str(HEALTHY)), ("diagnose", str(HEALTHY), "-f", "json"),
                                  ("playbooks", "list"), ("parse", "uptime", "-")])
def test_report_to_closed_stdout(args: tuple[str, ...]) -> None:
    # A process: it starts with file descriptor 1 closed.
    proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], stdin=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=30, close_fds=True,
                          preexec_fn=lambda: os.close(1))
    proc.stdout = ""
    one_line_error(proc, 74, "standard output is closed")  # type: ignore[arg-type]


@pytest.mark.parametrize(("body", "reason"), [
    ("version: 2\nnodes: {a: x, b: y}\n", "version 2"),
    ("version: true\nnodes: {a: x, b: y}\n", "version True"),
    ("version: 0\nnodes: {a: x, b: y}\n", "version 0"),
    ("version: '1'\nnodes: {a: x, b: y}\n", "version '1'"),
    ("version: 1\nnodes: &n {a: x, b: y}\nlink: *n\n", "aliases"),
    ("version: 1\nnodes: {a: x, b: y}\n# " + "x" * (1 << 20) + "\n", "larger than"),
    ("version: 1\nnodes: " + "[" * 100 + "]" * 100 + "\n", "nested deeper"),
    ("version: 1\nnodes: {a: '::::::', b: y}\n", "not an IPv6"),
    ("version: 1\nnodes: {a: x, b: y}\nssh: {connect_timeout_s: abc}\n", "positive number"),
    ("version: 1\nnodes: {a: x, b: y}\nssh: {connect_timeout_s: -1}\n", "positive number"),
    ("version: 1\nnodes: {a: x, b: y}\ncolour: red\n", "unknown key"),
])
def test_bad_config_refused(cli: InProcessCli, tmp_path: Path, body: str, reason: str) -> None:
    config = _config(tmp_path, body)
    one_line_error(cli("check", "-c", str(config), cwd=tmp_path, timeout=20), 4, "linkcheck.yaml", reason)


@pytest.mark.parametrize(("override", "reason"), [
    ("{NCCL_BUSBW_LOW: {min_busbw_gbs: fast}}", "must be a number"),
    ("{NCCL_BUSBW_LOW: {min_busbw_gbs: [1]}}", "must be a number"),
    ("{NCCL_BUSBW_LOW: {min_busbw_gbs: true}}", "must be a number"),
    ("{NCCL_BUSBW_LOW: {no_such: 1}}", "has no threshold"),
    ("{NO_SUCH_RULE: {x: 1}}", "unknown rule"),
])
def test_bad_threshold_override(cli: InProcessCli, tmp_path: Path, override: str, reason: str) -> None:
    config = _config(tmp_path, "version: 1\nnodes: {a: u@198.18.251.1, b: u@198.18.251.2}\n"
                     f"ssh: {{connect_timeout_s: 2, inspection_timeout_s: 4}}\nthresholds: {override}\n")
    one_line_error(cli("check", "-c", str(config), cwd=tmp_path, timeout=30), 4, "linkcheck.yaml", reason)


@pytest.mark.parametrize("command", [("collect",), ("check",), ("diagnose", str(HEALTHY)), ("init", "-o", "o.yaml")])
@pytest.mark.parametrize(("override", "reason", "line"), [
    ("  NO_SUCH_RULE: {x: 1}\n", "unknown rule NO_SUCH_RULE", 5),
    ("  NCCL_BUSBW_LOW: {min_busbw_gbs: 20}\n  GID_INDEX_STAL: {x: 1}\n", "unknown rule GID_INDEX_STAL", 6),
    ("  NCCL_BUSBW_LOW:\n    min_busbw_gbs: 20\n    typo_gbs: 1\n", "has no threshold 'typo_gbs'", 7),
])
def test_unknown_threshold_refused_with_line_by_every_command(tmp_path: Path, command: tuple[str, ...],
                                                               override: str, reason: str, line: int) -> None:
    """Not only the commands that diagnose: `collect` and `init` refuse the file before contacting a node."""
    config = _config(tmp_path, "version: 1\nnodes: {a: u@198.18.251.1, b: u@198.18.251.2}\n"
                     "ssh: {connect_timeout_s: 2, inspection_timeout_s: 4}\nthresholds:\n" + override)
    one_line_error(run(*command, "-c", str(config), cwd=tmp_path, timeout=30), 4, f"linkcheck.yaml:{line}", reason)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linkcheck.yaml"]


@pytest.mark.parametrize("key", ["inspection_timeout_s", "command_timeout_s", "connect_timeout_s"])
@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-5", "0", "1e300", "100000", "'10'", "[1]"])
def test_timeout_not_finite_positive_bounded(tmp_path: Path, key: str, value: str) -> None:
    config = _config(tmp_path, "version: 1\nnodes: {a: u@198.18.251.1, b: u@198.18.251.2}\n"
                     f"ssh: {{{key}: {value}}}\n")
    for command in (("collect",), ("diagnose", str(HEALTHY))):
        one_line_error(run(*command, "-c", str(config), cwd=tmp_path, timeout=30), 4, "linkcheck.yaml:3", key)


@pytest.mark.parametrize("save", ["/proc/linkcheck-x", "/proc/self/linkcheck/x", "/sys/linkcheck-x"])
def test_save_that_cannot_be_created_is_bad_input_before_connecting(tmp_path: Path, save: str) -> None:
    for command in ("collect", "check"):
        one_line_error(run(command, *UNREACHABLE, "--save", save, cwd=tmp_path, timeout=30), 4, save, "--save")
    assert not os.path.lexists(save)


def test_save_probe_leaves_no_folder_behind(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "bundle"
    proc = run("collect", "-c", str(_quick(tmp_path)), "--save", str(target), cwd=tmp_path, timeout=40)
    assert proc.returncode == 3, proc.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("command", [("check",), ("collect",), ("init", "-o", "out.yaml")])
def test_unreachable_nodes_one_line_each_and_no_folder(cli: InProcessCli, tmp_path: Path,
                                                       command: tuple[str, ...]) -> None:
    proc = cli(*command, "-c", str(_quick(tmp_path)), cwd=tmp_path, timeout=40)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("linkcheck: node a:") and lines[1].startswith("linkcheck: node b:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quick.yaml"]
    assert proc.stdout == ""


def _interrupt_after(delay_s: float, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A process: Ctrl-C is a signal, and it may land in the interpreter's start, which only a process has."""
    proc = subprocess.Popen([sys.executable, "-m", "linkcheck.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd)
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=40)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("delay_s", [0.1, 0.15, 0.2, 0.25, 0.3])
def test_ctrl_c_while_starting(tmp_path: Path, delay_s: float) -> None:
    proc = _interrupt_after(delay_s, "diagnose", str(HEALTHY), cwd=tmp_path)
    if proc.returncode in (0, 1):  # finished before the signal came: nothing to judge
        pytest.skip("the run ended before Ctrl-C")
    if proc.returncode == -signal.SIGINT:  # known residual, about 1 run in 30: see the README's exit codes
        pytest.skip("Ctrl-C landed in the interpreter's own start or teardown, outside linkcheck code")
    one_line_error(proc, 130, "interrupted")


def _children(pid: int) -> list[str]:
    """The process's children, started from any of its threads (/proc/PID/task/TID/children is per thread)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue
    return found


def test_ctrl_c_during_local_inspection_saves_partial_bundle(tmp_path: Path) -> None:
    # A real process: Ctrl-C is a signal. It is sent once linkcheck has started the inspection's first command (its
    # first child), not after a fixed delay: on a loaded machine a delay lands in the interpreter's own start.
    save = tmp_path / "partial"
    proc = subprocess.Popen([sys.executable, "-m", "linkcheck.cli", "collect", "--node", "a=localhost", "--node",
                             "b=localhost", "--save", str(save)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the inspection ended before Ctrl-C reached it")
    assert "Traceback" not in err
    assert proc.returncode == 130 and "interrupted" in err and "during the inspection" in err, err
    assert json.loads((save / "manifest.json").read_text())["collection_errors"]["interrupted"]


def test_readme_documents_new_exit_codes() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "| 74 |" in readme and "| 130 |" in readme
