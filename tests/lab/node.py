"""One running lab node: the process that holds its namespaces, its sshd, and commands run inside it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.lab import netns, nm_daemon, sshd
from tests.lab.errors import LabError
from tests.lab.gid_watch import READY as GID_WATCH_READY
from tests.lab.rootfs import READY_LINE
from tests.lab.spec import LabNodeSpec
from tests.lab.state import LabState, ProcRecord, forget_popen

SSH_PORT = 22
REPO = Path(__file__).resolve().parents[2]


@dataclass
class LabNode:
    """Names, addresses and files of one node, plus the PIDs of its holder and sshd while running."""

    spec: LabNodeSpec
    netns: str
    node_dir: Path
    mgmt_if: str
    host_if: str
    mgmt_ip: str
    host_ip: str
    bin_dir: Path
    model_json: Path | None
    host_pub: str = ""
    model_env: dict[str, str] = field(default_factory=dict)  # the model's NCCL_*, in every session
    holder: ProcRecord | None = None
    sshd: ProcRecord | None = None
    gid_watch: ProcRecord | None = None
    nm_real: bool = False  # the real NetworkManager runs in this node (tests.lab.nm_daemon), not the stand-in
    nm_bus: ProcRecord | None = None
    nm_daemon: ProcRecord | None = None

    @property
    def name(self) -> str:
        """The node's name in the lab ("a", "b", ...), also its Host alias in the ssh_config."""
        return self.spec.name

    @property
    def session_path(self) -> str:
        """PATH of SSH sessions and `Lab.exec`: the node's emulator bin first."""
        return f"{self.bin_dir}:{sshd.SYSTEM_PATH}"

    @property
    def sshd_config_path(self) -> Path:
        """This node's sshd_config."""
        return self.node_dir / "ssh" / "sshd_config"

    def nsenter(self) -> list[str]:
        """argv prefix that enters this node's network, mount and UTS namespaces."""
        if self.holder is None or not netns.alive(self.holder.pid, self.holder.start):
            raise LabError(f"node {self.name} is not running")
        return ["nsenter", f"--target={self.holder.pid}", "--net", "--mount", "--uts", "--"]

    def session_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of commands run in the node, like an SSH session's (PATH first)."""
        env = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TERM", "HOME", "USER")}
        env.update({"PATH": self.session_path, "LINKCHECK_LAB": "1", "HOME": os.path.expanduser("~root")})
        env.update(self.model_env)
        env.update(extra or {})
        return env

    def start_holder(self, state: LabState, boot_script: Path, *, deadline_s: float) -> None:
        """Enter fresh mount + UTS namespaces inside the network namespace, mount the node's files."""
        log = (self.node_dir / "boot.log").open("ab")
        argv = [
            netns.IP,
            "netns",
            "exec",
            self.netns,
            "unshare",
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "/bin/sh",
            str(boot_script),
        ]
        with log:
            # ip netns exec and unshare exec (no fork), so this PID becomes the `sleep` holder.
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, start_new_session=True
            )
        self.holder = state.add_process(proc, f"holder {self.name}")
        assert proc.stdout is not None
        try:
            _await_line(proc, READY_LINE, deadline_s)
        except LabError as exc:
            boot_log = (self.node_dir / "boot.log").read_text(errors="replace").strip()[-2000:]
            raise LabError(f"node {self.name}: {exc}; boot.log: {boot_log}") from exc
        finally:
            proc.stdout.close()

    def start_sshd(self, state: LabState, *, deadline_s: float) -> None:
        """Start sshd inside the node (foreground, logging to a file) and wait for its banner."""
        binary = sshd.find_sshd()
        if binary is None:
            raise LabError("sshd not found (install openssh-server)")
        log = (self.node_dir / "ssh" / "sshd.log").open("ab")
        with log:
            proc = subprocess.Popen(
                [*self.nsenter(), binary, "-D", "-e", "-f", str(self.sshd_config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=self.session_env(),
            )
        # nsenter forks unless told not to; with --target and no --pid it execs, so the PID is sshd's.
        self.sshd = state.add_process(proc, f"sshd {self.name}")
        rec = self.sshd
        sshd.wait_for_port(
            self.mgmt_ip,
            SSH_PORT,
            deadline_s=deadline_s,
            still_running=lambda: proc.poll() is None and netns.alive(rec.pid, rec.start),
        )

    def start_gid_watch(self, state: LabState, *, deadline_s: float) -> None:
        """The kernel's GID management, as far as the lab needs it (tests/lab/gid_watch.py): the node's sysfs GID
        tables follow its IPv4 addresses from now on. Only a node with a model has GID tables."""
        if self.model_json is None:
            return
        functions = json.loads(self.model_json.read_text(encoding="utf-8")).get("functions", [])
        pairs = [f"{f['netdev']}={f['rdma_dev']}" for f in functions if f.get("netdev") and f.get("rdma_dev")]
        if not pairs:
            return
        log = (self.node_dir / "gid-watch.log").open("ab")
        with log:
            proc = subprocess.Popen(
                [*self.nsenter(), sys.executable, "-m", "tests.lab.gid_watch", *pairs],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                cwd=REPO,
                env=self.session_env({"PYTHONPATH": str(REPO)}),
            )
        self.gid_watch = state.add_process(proc, f"gid watch {self.name}")
        assert proc.stdout is not None
        try:
            # Subscribed before the lab is handed out: no address change can come before it listens.
            _await_line(proc, GID_WATCH_READY, deadline_s, "the GID watcher")
        except LabError as exc:
            log_text = (self.node_dir / "gid-watch.log").read_text(errors="replace").strip()[-2000:]
            raise LabError(f"node {self.name}: {exc}; gid-watch.log: {log_text}") from exc
        finally:
            proc.stdout.close()

    def start_networkmanager(self, state: LabState, *, deadline_s: float) -> None:
        """The node's own system bus, then the real NetworkManager (tests/lab/nm_daemon.py); wait for its start-up."""
        if not self.nm_real:
            return
        bus_argv, nm_argv = nm_daemon.start_argv(self.node_dir)
        log_dir = self.node_dir / "nm"
        for argv, role, log_name in ((bus_argv, "dbus-daemon", "dbus.log"), (nm_argv, "NetworkManager", "nm.log")):
            with (log_dir / log_name).open("ab") as log:
                proc = subprocess.Popen([*self.nsenter(), *argv], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        start_new_session=True, env=self.session_env())
            rec = state.add_process(proc, f"{role} {self.name}")  # nsenter execs: the PID is the daemon's
            if role == "dbus-daemon":
                self.nm_bus = rec
                nm_daemon.wait_for_bus(self.nsenter(), deadline_s)
            else:
                self.nm_daemon = rec
        nm_daemon.wait_for_startup(self.nsenter(), deadline_s, log_dir / "nm.log")
        # As at a node's boot: each model profile active on its port (tests/lab/nm_daemon.py says why).
        assert self.model_json is not None
        up = {link.ifname for link in self.spec.links if link.up}
        for profile, port in nm_daemon.profiles(self.model_json):
            if port in up:
                done = self.run(["nmcli", "-w", str(int(deadline_s)), "connection", "up", "id", profile],
                                timeout=deadline_s + 10, input_text=None, env=None)
                if done.returncode != 0:
                    raise LabError(f"node {self.name}: nmcli connection up {profile}: {done.stderr.strip()}")

    def stop_gid_watch(self, state: LabState) -> None:
        """Stop the GID watcher by its PID: from now on the node's GID tables stay as they are (a fault)."""
        if self.gid_watch is None:
            return
        netns.kill_pid(self.gid_watch.pid, self.gid_watch.start)
        forget_popen(state, self.gid_watch.pid)
        if self.gid_watch in state.processes:
            state.processes.remove(self.gid_watch)
        self.gid_watch = None
        state.save()

    def stop_sshd(self, state: LabState) -> None:
        """Stop this node's sshd by its PID (sessions already open keep running until teardown)."""
        if self.sshd is None:
            return
        netns.kill_pid(self.sshd.pid, self.sshd.start)
        forget_popen(state, self.sshd.pid)
        if self.sshd in state.processes:
            state.processes.remove(self.sshd)
        self.sshd = None
        state.save()

    def run(
        self, argv: Sequence[str], *, timeout: float, input_text: str | None, env: Mapping[str, str] | None
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside the node and wait for it (its children die with the lab at the latest)."""
        return subprocess.run(
            [*self.nsenter(), *argv],
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.session_env(env),
            check=False,
        )

    def spawn(self, state: LabState, argv: Sequence[str], env: Mapping[str, str] | None) -> subprocess.Popen[str]:
        """Start a background command inside the node; recorded by PID and ended at teardown."""
        proc = subprocess.Popen(
            [*self.nsenter(), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.session_env(env),
            start_new_session=True,
        )
        state.add_process(proc, f"spawned on {self.name}: {argv[0]}")
        return proc


def _await_line(proc: subprocess.Popen[bytes], wanted: str, deadline_s: float,
                what: str = "namespace holder") -> None:
    """Read the child's stdout until `wanted` appears, it exits, or the deadline passes."""
    assert proc.stdout is not None
    end = time.monotonic() + deadline_s
    buf = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            raise LabError(f"{what} exited with {proc.wait(timeout=5)} before it was ready")
        buf += chunk
        if wanted.encode() in buf:
            return
    raise LabError(f"{what} not ready after {deadline_s:.0f} s")
