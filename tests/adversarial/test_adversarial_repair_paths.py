"""The files a repair may write are confined: a netplan file of /etc/netplan, a NetworkManager keyfile of
/etc/NetworkManager/system-connections, /etc/nccl.conf and the user's ~/.nccl.conf, each named as written (no `..`,
no `.`, no doubled `/`, no second level, no control character). A path a node's listing offers outside them is not
planned; a plan holding one is refused by `fix --apply` before any node is touched. A cluster record too large to
read is one line naming the file once, without sending the user to `verify` (which finds the bundle intact)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.acceptance import add_files
from linkcheck.errors import ExitCode
from linkcheck.repair.apply import ApplyOptions, ApplyRefused, preflight
from linkcheck.repair.commit import CommitError, read_file, restore
from linkcheck.repair.journal import SavedFile
from linkcheck.repair.model import FileChange, FileEdit, RepairPlan, Step
from linkcheck.repair.paths import plan_path_problem, repair_file_problem
from linkcheck.repair.runtime import RuntimeOp
from linkcheck.repair.saved import plan_for
from linkcheck.transport.base import RemoteResult
from tests.adversarial.adversarial_helpers import ROOT, one_line_error, rewrite_capture
from tests.cluster.test_cluster_bundle import _saved
from tests.conftest import InProcessCli

ESCAPES = [
    "/etc/netplan/../../etc/cron.d/x.yaml", "/etc/netplan/./x.yaml", "/etc/netplan//x.yaml", "/etc/netplan/x.yml",
    "/etc/netplan/sub/x.yaml", "/etc/netplan/", "/etc/netplan/..", "etc/netplan/x.yaml", "/etc/netplan/x\n.yaml",
    "/etc/netplan/x.yaml\x00", "/etc/NetworkManager/system-connections/..", "/etc/NetworkManager/system-connections/.",
    "/etc/NetworkManager/system-connections/", "/etc/NetworkManager/system-connections/a/b",
    "/run/NetworkManager/system-connections/x", "/etc/cron.d/x", "/etc/shadow", "~/.bashrc", "~/../x/.nccl.conf",
    "/root/.nccl.conf", "/etc/nccl.conf/..", "/etc/NetworkManager/system-connections/x\x1b]2;t\x07",
]
GOOD = ["/etc/netplan/40-cx7.yaml", "/etc/netplan/*.yaml", "/etc/NetworkManager/system-connections/cx7 a.nmconnection",
        "/etc/nccl.conf", "~/.nccl.conf"]


@pytest.mark.parametrize("path", ESCAPES)
def test_a_path_outside_the_repair_files_is_refused(path: str) -> None:
    why = repair_file_problem(path)
    assert why is not None and "not a file a repair may write" in why and "\n" not in why and "\x1b" not in why


@pytest.mark.parametrize("path", GOOD)
def test_the_repair_files_pass(path: str) -> None:
    assert repair_file_problem(path) is None


@pytest.mark.parametrize(("path", "manager"), [("/etc/nccl.conf", "netplan"), ("/etc/netplan/x.yaml", "nccl"),
                                               ("/etc/netplan/x.yaml", "NetworkManager")])
def test_a_file_written_for_another_manager_is_refused(path: str, manager: str) -> None:
    assert "is read by" in (repair_file_problem(path, manager) or "")


@pytest.mark.parametrize(("path", "source"), [
    ("/etc/NetworkManager/system-connections/..", "/run/NetworkManager/system-connections/.."),
    ("/etc/NetworkManager/system-connections/x", "/run/NetworkManager/system-connections/y"),
    ("/etc/NetworkManager/system-connections/x", "/etc/shadow"),
    ("/etc/NetworkManager/system-connections/x", "/run/NetworkManager/system-connections/../../../etc/shadow"),
])
def test_a_keyfile_copy_from_elsewhere_or_under_another_name_is_refused(path: str, source: str) -> None:
    change = FileChange(path, "NetworkManager", "", "600", FileEdit("copy_from", old=source))
    assert plan_path_problem(change) is not None


def test_the_keyfile_copy_a_repair_makes_passes() -> None:
    change = FileChange("/etc/NetworkManager/system-connections/p.nmconnection", "NetworkManager", "", "600",
                        FileEdit("copy_from", old="/run/NetworkManager/system-connections/p.nmconnection"))
    assert plan_path_problem(change) is None


@pytest.mark.parametrize("header", ["/etc/netplan/../../etc/cron.d/x.yaml", "/etc/cron.d/x.yaml",
                                    "/etc/netplan/sub/../x.yaml"])
def test_a_netplan_file_a_node_names_outside_its_folder_is_not_planned(tmp_path: Path, header: str) -> None:
    bundle = tmp_path / "mtu"
    shutil.copytree(ROOT / "fixtures" / "mtu-mismatch", bundle)
    text = (bundle / "b" / "netplan_files.stdout").read_bytes()
    rewrite_capture(bundle, "b", "netplan_files", f"==> {header} <==\n".encode() + text)
    plan = plan_for(diagnose_bundle(bundle))
    written = [s.persistent.path for s in plan.steps if s.persistent is not None]
    assert header not in written and written == []
    assert any("not a file a repair may write" in n.reason for n in plan.not_planned), plan.not_planned
    assert [s.runtime for s in plan.steps] == [("sudo ip link set dev enP2p1s0f1np1 mtu 9000",)]


class _Node:
    local = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.commands: list[str] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        self.commands.append(command)
        return RemoteResult("", "", 0, 0)

    def change(self, op: RuntimeOp) -> None:
        raise AssertionError(op)


@pytest.mark.parametrize(("node", "path", "manager"), [
    ("a", "/etc/netplan/../../etc/cron.d/x.yaml", "netplan"), ("b", "/etc/sudoers.d/x", "nccl"),
    ("a", "/etc/NetworkManager/system-connections/..", "NetworkManager"), ("c", "/etc/nccl.conf", "nccl"),
])
def test_fix_apply_refuses_a_plan_writing_outside_before_touching_a_node(node: str, path: str, manager: str) -> None:
    change = FileChange(path, manager, "", "600", FileEdit("conf_drop_key", key="X"))
    plan = RepairPlan(steps=(Step(node, "X:y", (), change, (), ("file:" + path,)),))
    nodes = {"a": _Node("a"), "b": _Node("b")}
    with pytest.raises(ApplyRefused) as caught:
        preflight(plan, nodes, ApplyOptions(), lambda _line: None)  # type: ignore[arg-type]
    assert caught.value.exit_code == ExitCode.BAD_INPUT and "not applied" in str(caught.value)
    assert nodes["a"].commands == [] and nodes["b"].commands == []


def test_a_cluster_record_too_large_names_the_file_once(tmp_path: Path, cli: InProcessCli) -> None:
    folder, _ = _saved(tmp_path)
    doc = json.loads((folder / "cluster.json").read_text(encoding="utf-8"))
    doc["traffic_error"] = "x" * (2 << 20)
    add_files(folder, {"cluster.json": json.dumps(doc)})
    assert cli("verify", str(folder)).returncode == 0
    line = one_line_error(cli("diagnose", str(folder)), 4, "cluster.json", "larger than")
    assert line.count("cluster.json") == 1 and "verify" not in line


class _LocalShell:
    """A node whose commands run here through the real shell, `sudo -n` left out (the test runs as its own user)."""

    local = False
    name = "a"

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        done = subprocess.run(["sh", "-c", command.replace("sudo -n ", "", 1)], capture_output=True, text=True,
                              input=stdin, timeout=20)
        return RemoteResult(done.stdout, done.stderr, done.returncode, 0)


@pytest.mark.parametrize("kind", ["link", "dangling", "fifo", "folder"])
def test_a_file_to_repair_that_is_not_a_plain_file_is_never_read_through(tmp_path: Path, kind: str) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root:x:0:0\n")
    path = tmp_path / "nccl.conf"
    if kind == "link":
        path.symlink_to(secret)
    elif kind == "dangling":
        path.symlink_to(tmp_path / "none")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(CommitError, match="a repair changes plain files only"):
        read_file(_LocalShell(), str(path))  # type: ignore[arg-type]
    regular = tmp_path / "plain.conf"
    regular.write_text("NCCL_IB_HCA=x\n")
    assert read_file(_LocalShell(), str(regular))[4] == b"NCCL_IB_HCA=x\n"  # type: ignore[arg-type]


def test_a_restore_replaces_a_link_planted_at_the_path_and_never_writes_through_it(tmp_path: Path) -> None:
    journal = tmp_path / "run"
    (journal / "files").mkdir(parents=True)
    (journal / "files" / "0").write_text("NCCL_IB_GID_INDEX=3\n")
    victim = tmp_path / "sudoers"
    victim.write_text("precious\n")
    path = tmp_path / "home" / ".nccl.conf"
    path.parent.mkdir()
    path.symlink_to(victim)
    saved = SavedFile(str(path), True, "644", os.getuid(), os.getgid(), "a" * 64, "files/0")
    assert restore(_LocalShell(), str(journal), [saved]) == []  # type: ignore[arg-type]
    assert victim.read_text() == "precious\n"
    assert not path.is_symlink() and path.read_text() == "NCCL_IB_GID_INDEX=3\n"
