"""The lab's "real renderer" tier: a node's `netplan try` and `netplan apply` run for real, in a systemd-nspawn
container booted inside the node's network namespace, with systemd as PID 1 and a real renderer (systemd-networkd
or NetworkManager) applying to the node's own veths. After /work/shared/design/real-daemons.md s.2.3-2.5, where
each step below was proven on this machine:

- the root is Debian 12's (netplan.io 0.106, systemd 252, NetworkManager 1.42), built once by
  scripts/lab-nspawn-root.sh into a cache directory and shared read-only by every container (`--volatile=overlay`
  keeps each container's writes in a tmpfs);
- nspawn is started as `nsenter --net=/run/netns/<node> systemd-nspawn ...` (not `--network-namespace-path`, whose
  sysfs would list the host's devices, nor `ip netns exec`, whose sysfs hides the cgroup tree), with
  `--register=no --keep-unit` (no host bus or machined needed) and CAP_NET_ADMIN, which acts in the node's netns;
- the node's /etc/netplan (its staged directory) is bound at the container's /etc/netplan, so linkcheck's files,
  written over SSH in the node, are the ones the real netplan reads;
- netplan's systemd generator is masked in the container, so the boot applies nothing: the node's ports keep the
  state the lab (or a scenario's fault) gave them until `netplan try`/`apply` runs, as on a node whose netplan
  files were changed but not applied;
- netplan apply runs `udevadm trigger`, whose write to each net device's `uevent` fails on the container's read-only
  /sys: a regular file is bound over each one, in the container only (no uevent is made);
- every interface of the node gets its MAC set to what it is (`ip link set address`), so none is "random": netplan
  apply's `udevadm test` would otherwise give such a port a new MAC (99-default.link, MACAddressPolicy=persistent)
  and the SSH link would stop answering (s.3.3);
- with the NetworkManager renderer, systemd-networkd is left disabled, not masked (a masked networkd makes
  netplan apply crash and leave NetworkManager stopped, s.3.4), and the container's NetworkManager manages only the
  node's data ports.

The node's `netplan` wrapper sends `try` and `apply` into the container (tests/lab/nspawn_exec.py, which passes
linkcheck's signals on); sshd, the staged /sys and the emulated tools stay in the lab's own namespaces.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.lab import netns
from tests.lab.errors import LabError

ROOT = Path(os.environ.get("LINKCHECK_LAB_NSPAWN_ROOT") or "/var/cache/linkcheck-lab/nspawn-root")
MARKER = ".linkcheck-lab-root"  # written by scripts/lab-nspawn-root.sh once the root is complete
RENDERERS = ("networkd", "NetworkManager")
LEADER = "leader"  # the container's PID 1 as the host sees it, read by tests/lab/nspawn_exec.py (same name there)
CLEAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def skip_reason() -> str | None:
    """Why this machine cannot run the real renderer tier, or None."""
    if shutil.which("systemd-nspawn") is None:
        return "the real renderer tier needs systemd-nspawn (install systemd-container)"
    if not (ROOT / MARKER).is_file() or not (ROOT / "usr" / "sbin" / "netplan").exists():
        return f"the real renderer tier needs its container root at {ROOT} (scripts/lab-nspawn-root.sh builds it)"
    if not Path("/sys/fs/cgroup").is_dir():
        return "the real renderer tier needs /sys/fs/cgroup for systemd-nspawn"
    return None


def nm_conf(ports: list[str]) -> str:
    """The container NetworkManager's drop-in: no automatic profile, only the node's data ports managed."""
    allowed = "".join(f",except:interface-name:{p}" for p in ports)
    return f"[main]\nno-auto-default=*\n\n[keyfile]\nunmanaged-devices=*{allowed}\n"


class Container:
    """One node's container: booted by `boot`, ended by `stop` (and, as a recorded process, by the teardown)."""

    def __init__(self, node_name: str, netns_name: str, machine: str, directory: Path, netplan_dir: Path,
                 renderer: str, ports: list[str]) -> None:
        if renderer not in RENDERERS:
            raise LabError(f"node {node_name}: renderer must be one of {RENDERERS}, not {renderer!r}")
        self.node_name = node_name
        self.netns = netns_name
        self.machine = machine
        self.dir = directory
        self.netplan_dir = netplan_dir
        self.renderer = renderer
        self.ports = ports
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        """nsenter into the node's netns, then systemd-nspawn booting the shared root."""
        self.dir.mkdir(parents=True, exist_ok=True)
        masked = self.dir / "masked"
        masked.write_text("", encoding="utf-8")  # an empty file in /etc masks a generator of the same name
        conf = self.dir / "90-lab.conf"
        conf.write_text(nm_conf(self.ports), encoding="utf-8")
        units = (["systemd.mask=NetworkManager.service", "systemd.wants=systemd-networkd.service"]
                 if self.renderer == "networkd" else [])
        return ["nsenter", f"--net=/run/netns/{self.netns}", "--", "systemd-nspawn", "-q", "-D", str(ROOT),
                "--volatile=overlay", "--register=no", "--keep-unit", "-M", self.machine,
                "--capability=CAP_NET_ADMIN", f"--bind={self.netplan_dir}:/etc/netplan",
                f"--bind-ro={masked}:/etc/systemd/system-generators/netplan",
                f"--bind-ro={conf}:/etc/NetworkManager/conf.d/90-lab.conf", "-b", *units]

    def boot(self) -> subprocess.Popen[bytes]:
        """Set every MAC of the node, boot the container, wait for `running`, then the uevent sinks."""
        for name in _links(self.netns):
            mac = _mac(self.netns, name)
            if mac:
                netns.run([netns.IP, "-n", self.netns, "link", "set", "dev", name, "address", mac])
        argv = self.argv()
        with (self.dir / "console.log").open("ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
        return self.proc

    def wait_running(self, deadline_s: float) -> int:
        """The container's PID 1 once its system is running (written to LEADER for the netplan wrapper)."""
        assert self.proc is not None
        end = time.monotonic() + deadline_s
        leader, said = 0, ""
        while time.monotonic() < end and self.proc.poll() is None:
            leader = _leader(self.proc.pid)
            if leader:
                said = _in(leader, ["systemctl", "is-system-running"]).stdout.strip() or said
                if said in ("running", "degraded"):
                    break
            time.sleep(0.1)
        else:
            tail = (self.dir / "console.log").read_text(errors="replace")[-800:]
            raise LabError(f"node {self.node_name}: the {self.renderer} container did not boot in {deadline_s:.0f} s "
                           f"(systemctl is-system-running: {said or 'no answer'}); console: {tail}")
        sinks = ('for d in /sys/class/net/*; do f=$(readlink -f "$d")/uevent; t=/run/uevent-sink.${d##*/}; '
                 'cat "$f" > "$t" && mount --bind "$t" "$f"; done')
        done = _in(leader, ["sh", "-c", sinks])
        if done.returncode != 0:
            raise LabError(f"node {self.node_name}: uevent sinks in the container: {done.stderr.strip()}")
        (self.dir / LEADER).write_text(str(leader), encoding="ascii")
        return leader

    def stop(self, timeout_s: float = 8.0) -> None:
        """SIGTERM to nspawn: the container shuts down in order (1-2 s); SIGKILL if it does not."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _links(netns_name: str) -> list[str]:
    out = subprocess.run([netns.IP, "-n", netns_name, "-o", "link", "show"], capture_output=True, text=True,
                         check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [n for n in names if n and n != "lo"]


def _mac(netns_name: str, name: str) -> str:
    out = subprocess.run([netns.IP, "-n", netns_name, "-o", "link", "show", "dev", name], capture_output=True,
                         text=True, check=False).stdout.split()
    return out[out.index("link/ether") + 1] if "link/ether" in out else ""


def _leader(nspawn_pid: int) -> int:
    """The container's PID 1 as the host sees it, or 0 while there is none yet: nspawn's child once it is in a PID
    namespace of its own (nspawn first forks an outer child, still in the host's, which forks PID 1 and exits)."""
    try:
        children = Path(f"/proc/{nspawn_pid}/task/{nspawn_pid}/children").read_text().split()
        ours = os.readlink("/proc/self/ns/pid")
        return next((int(c) for c in children if os.readlink(f"/proc/{c}/ns/pid") != ours), 0)
    except (OSError, ValueError):
        return 0


def _in(leader: int, argv: list[str], timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nsenter", "-t", str(leader), "-a", "--", *argv], capture_output=True, text=True,
                          timeout=timeout, env={"PATH": CLEAN_PATH, "LANG": "C.UTF-8"}, check=False)
