"""A lab of two (up to eight) GB10-like nodes in network namespaces, reachable by real SSH.

`with Lab(specs, workdir) as lab:` brings every node up (namespaces, veths, mounts, sshd) and tears
everything down on exit, also on exceptions and Ctrl-C. Files for the SSH client: `lab.ssh_config`,
`lab.known_hosts`, `lab.client_key`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from tests.lab import containers, mgmt, nccl, netns, networkmanager, nm_daemon, nspawn, rootfs, sshd, traffic
from tests.lab.errors import LabError
from tests.lab.neighbours import install_neighbours
from tests.lab.node import SSH_PORT, LabNode
from tests.lab.nodefiles import NodeFile
from tests.lab.spec import LabNodeSpec, validate_specs
from tests.lab.state import LabState, teardown
from tests.lab.wiring import wire_data_links

_COUNTER = itertools.count()
_SAFE_PATH_RE = re.compile(r"^/[A-Za-z0-9_./+-]*$")


class Lab:
    """Bring-up, fault hooks and teardown of one lab instance (namespaces named lc-<pid>-<n>-<node>)."""

    def __init__(
        self,
        nodes: Sequence[LabNodeSpec],
        workdir: Path,
        *,
        ready_timeout_s: float = 15.0,
        keep_files: bool = False,
    ) -> None:
        validate_specs(nodes)
        self.specs = list(nodes)
        self.workdir = Path(workdir).resolve()
        if not _SAFE_PATH_RE.match(str(self.workdir)):
            # The path ends up in sshd_config, overlay mount options and shell scripts.
            raise LabError(f"work directory {self.workdir} must match {_SAFE_PATH_RE.pattern}")
        self.ready_timeout_s = ready_timeout_s
        serial = next(_COUNTER)
        self.lab_id = f"lc-{os.getpid()}-{serial}"
        # Host-side interface names must be unique among concurrent labs and fit in 15 characters: "lch",
        # 5 + 2 digits and a node name of at most 4 make 14. Two digits of the serial, so that up to 100 labs
        # of one process can be up at once (a lab's serial recurs only 100 labs later).
        self._host_tag = f"{os.getpid() % 100000:05d}{serial % 100:02d}"
        self.state = LabState(lab_id=self.lab_id, workdir=str(self.workdir), keep_files=keep_files)
        self.state.created_workdir = not self.workdir.exists()  # then teardown removes it too
        self.nodes: dict[str, LabNode] = {}
        self.ssh_config = self.workdir / "ssh_config"
        self.known_hosts = self.workdir / "known_hosts"
        self.client_key = self.workdir / "client_ed25519"
        self.shared_dir = self.workdir / "shared"  # state the traffic emulators share (all nodes)
        self.containers: dict[str, nspawn.Container] = {}  # the real renderer tier's, by node

    # -- context manager -------------------------------------------------------------------------
    def __enter__(self) -> Lab:
        self.up()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()

    # -- bring-up ----------------------------------------------------------------------------------
    def up(self) -> None:
        """Create every node; on any failure (or Ctrl-C) remove what was created, then re-raise."""
        if self.nodes or self.state.netns:
            raise LabError(f"lab {self.lab_id} is already up (or was not torn down); make a new Lab")
        try:
            self._up()
        except BaseException as exc:
            try:
                self.down()
            except LabError as td:
                raise td from exc
            raise

    def _up(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state.save()
        self._track(self.client_key, self.client_key.with_name(self.client_key.name + ".pub"))
        client_pub = sshd.keygen(self.client_key, f"linkcheck-lab-client@{self.lab_id}")
        authorized = self._track(self.workdir / "authorized_keys")
        authorized.write_text(client_pub + "\n", encoding="ascii")
        self._track(self.shared_dir).mkdir(exist_ok=True)
        for spec in self.specs:
            self.state.netns.append(f"{self.lab_id}-{spec.name}")
            self.state.save()
            netns.add_netns(f"{self.lab_id}-{spec.name}")
        for spec in self.specs:
            rootfs.render_ahead(spec)  # the slow part of staging, outside the lock that every lab on the machine takes
        with mgmt.allocation_lock():
            pairs = mgmt.free_pairs(len(self.specs))
            for spec, (host_ip, node_ip) in zip(self.specs, pairs, strict=True):
                self.nodes[spec.name] = self._prepare_node(spec, host_ip, node_ip, authorized)
        wire_data_links(self.lab_id, self.nodes, self.state)
        traffic.write_root_ssh(self.nodes, self.client_key)
        for node in self.nodes.values():
            node.start_holder(self.state, node.node_dir / "boot.sh", deadline_s=self.ready_timeout_s)
            node.start_sshd(self.state, deadline_s=self.ready_timeout_s)
            node.start_gid_watch(self.state, deadline_s=self.ready_timeout_s)
            node.start_networkmanager(self.state, deadline_s=self.ready_timeout_s)
        install_neighbours(self.nodes)  # after NetworkManager brought its profiles up: an activation flushes them
        self._write_client_files()
        self._save_nodes()
        self._boot_renderers()
        for node in self.nodes.values():
            if node.spec.containers:
                containers.start(self, node.name, node.spec.containers, node.node_dir)

    def _prepare_node(self, spec: LabNodeSpec, host_ip: str, node_ip: str, authorized: Path) -> LabNode:
        node_dir = self._track(self.workdir / "nodes" / spec.name)
        self._track(self.workdir / "nodes")
        (node_dir / "ssh").mkdir(parents=True, exist_ok=True)
        model_json = rootfs.write_model(spec, node_dir)
        node = LabNode(
            spec=spec,
            netns=f"{self.lab_id}-{spec.name}",
            node_dir=node_dir,
            mgmt_if=f"lcm-{spec.name}",
            host_if=f"lch{self._host_tag}{spec.name}",
            mgmt_ip=node_ip,
            host_ip=host_ip,
            bin_dir=node_dir / "bin",
            model_json=model_json,
            model_env=nccl.session_env(model_json),
        )
        self.state.host_links.append(node.host_if)
        self.state.save()
        mgmt.add_mgmt_link(node)
        env = traffic.emulator_env(self.shared_dir, self.fault_dir(spec.name), node_dir / "emulator-state")
        if spec.renderer is not None:  # netplan try/apply go to the node's container (tests/lab/nspawn.py)
            env = {**env, "LINKCHECK_LAB_NSPAWN": str(node_dir / "nspawn")}
        # A node whose model has NetworkManager keyfiles runs the real NetworkManager (tests.lab.nm_daemon), or the
        # stand-in's nmcli and busctl where a test asks for it or this machine has no NetworkManager.
        has_nm = networkmanager.stage_needed(model_json)
        node.nm_real = has_nm and spec.networkmanager == "real" and nm_daemon.skip_reason() is None
        standin = networkmanager.standin_tools(model_json) if has_nm and not node.nm_real else {}
        rootfs.write_bin(dataclasses.replace(spec, extra_tools={**standin, **spec.extra_tools}), node.bin_dir,
                         model_json, env)
        stage = node_dir / "stage"
        rootfs.stage_sysfs(spec, stage, model_json)
        netplan = rootfs.stage_netplan(spec, stage, model_json)
        if spec.renderer is not None:
            self._plan_renderer(node, netplan)
        files = [*nccl.stage_nccl_files(model_json, stage), *networkmanager.stage_nm_files(model_json, stage)]
        # Each node's own, empty /var/lib/linkcheck (where `fix --apply` keeps its journals): writes stay in the
        # node's folder, never on the host, and the two nodes never see each other's.
        state_dir = stage / "var-lib-linkcheck"
        state_dir.mkdir(parents=True, exist_ok=True)
        files = [*files, NodeFile("/var/lib/linkcheck", state_dir)]
        # And its own, empty /etc/sysctl.d, where a cluster's `fix --apply` writes its forwarding drop-in.
        sysctl_dir = stage / "etc-sysctl.d"
        sysctl_dir.mkdir(parents=True, exist_ok=True)
        files = [*files, NodeFile("/etc/sysctl.d", sysctl_dir)]
        mounts = traffic.root_ssh_mount_lines(node_dir)
        if node.nm_real:
            assert model_json is not None
            files = [*files, *nm_daemon.stage(model_json, stage, node_dir)]
            mounts = [*mounts, nm_daemon.READ_ONLY_SYS]
        if spec.containers:  # the node's own podman: its configuration and store, and the recipe's tmpfs mounts
            podman_files, podman_mounts = containers.stage_node(node_dir, stage)
            files, mounts = [*files, *podman_files], [*mounts, *podman_mounts]
        rootfs.write_boot_script(spec, node_dir, stage, netplan, mounts, files)
        key = node_dir / "ssh" / "ssh_host_ed25519_key"
        node.host_pub = sshd.keygen(key, f"root@{spec.host_name}")
        node.sshd_config_path.write_text(
            sshd.sshd_config(
                listen=node_ip,
                port=SSH_PORT,
                host_key=key,
                pid_file=node_dir / "ssh" / "sshd.pid",
                authorized_keys=authorized,
                session_path=node.session_path,
                extra_listen=[a.split("/")[0] for link in spec.links for a in link.lab_addresses()],
                session_env=node.model_env,
            ),
            encoding="utf-8",
        )
        return node

    def _plan_renderer(self, node: LabNode, netplan: Path | None) -> None:
        """The node's container of the real renderer tier, booted once the node runs (`_boot_renderers`)."""
        why = nspawn.skip_reason()
        if why is not None:
            raise LabError(f"node {node.name}: {why}")
        if netplan is None or not os.path.isdir("/etc/netplan"):
            # The container binds the very directory the node shows at /etc/netplan (a bind mount of it there).
            raise LabError(f"node {node.name}: the real renderer tier needs netplan files and the host's /etc/netplan")
        if node.nm_real:
            # The container runs a NetworkManager (or networkd) of its own on the same ports: one per node.
            raise LabError(f"node {node.name}: a model with NetworkManager keyfiles has no real renderer tier yet")
        assert node.spec.renderer is not None
        self.containers[node.name] = nspawn.Container(
            node.name, node.netns, f"lc{self._host_tag}{node.name}", node.node_dir / "nspawn", netplan,
            node.spec.renderer, [link.ifname for link in node.spec.links])

    def _boot_renderers(self) -> None:
        """Boot every node's container side by side (about 0.5 s each), then wait for each."""
        for name, container in self.containers.items():
            self.state.add_process(container.boot(), f"nspawn {name}")
        for container in self.containers.values():
            container.wait_running(max(self.ready_timeout_s, 90.0))  # a loaded 2-core CI machine

    def _write_client_files(self) -> None:
        self._track(self.known_hosts, self.ssh_config)
        hosts = {n.name: (n.mgmt_ip, SSH_PORT, n.host_pub) for n in self.nodes.values()}
        self.known_hosts.write_text(sshd.known_hosts_lines(hosts), encoding="ascii")
        self.ssh_config.write_text(
            sshd.ssh_config(
                {n.name: (n.mgmt_ip, SSH_PORT) for n in self.nodes.values()},
                identity=self.client_key,
                known_hosts=self.known_hosts,
            ),
            encoding="utf-8",
        )

    def _save_nodes(self) -> None:
        self.state.nodes = {
            n.name: {
                "netns": n.netns,
                "mgmt_ip": n.mgmt_ip,
                "host_if": n.host_if,
                "mgmt_if": n.mgmt_if,
                "holder_pid": n.holder.pid if n.holder else None,
                "sshd_pid": n.sshd.pid if n.sshd else None,
                "gid_watch_pid": n.gid_watch.pid if n.gid_watch else None,
                "networkmanager_pid": n.nm_daemon.pid if n.nm_daemon else None,
                "model": str(n.model_json) if n.model_json else None,
                "bin": str(n.bin_dir),
            }
            for n in self.nodes.values()
        }
        self.state.save()

    def _track(self, *paths: Path) -> Path:
        for p in paths:
            if str(p) not in self.state.files:
                self.state.files.append(str(p))
        return paths[0]

    # -- teardown ------------------------------------------------------------------------------------
    def down(self) -> None:
        """Stop every process by PID, delete namespaces, veths and files; safe to call twice."""
        with _sigint_deferred():
            # Each container shuts down in order on SIGTERM (1-2 s): all asked at once, then each awaited.
            for container in self.containers.values():
                if container.proc is not None and container.proc.poll() is None:
                    container.proc.send_signal(signal.SIGTERM)
            for container in self.containers.values():
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    container.stop()
            for node in self.nodes.values():
                if node.spec.containers and node.holder is not None:
                    # A container's processes sit in their own namespace, out of the teardown's reach; what fails
                    # here, the namespace teardown below still ends where it can.
                    with contextlib.suppress(OSError, subprocess.SubprocessError):
                        containers.stop(self, node.name)
            problems = teardown(self.state)
        for node in self.nodes.values():
            node.holder = node.sshd = node.gid_watch = node.nm_bus = node.nm_daemon = None
        if problems:
            raise LabError("lab teardown left: " + "; ".join(problems))

    # -- use and fault hooks -----------------------------------------------------------------------
    def node(self, name: str) -> LabNode:
        """The running node called `name`."""
        try:
            return self.nodes[name]
        except KeyError:
            raise LabError(f"no node {name!r} in this lab (nodes: {sorted(self.nodes)})") from None

    def ssh_argv(self, name: str, command: str) -> list[str]:
        """argv for the real OpenSSH client running `command` on a node through the lab's ssh_config."""
        self.node(name)
        return ["ssh", "-F", str(self.ssh_config), name, command]

    def ssh(self, name: str, command: str, *, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        """Run `command` on a node over real SSH and return its output."""
        return subprocess.run(
            self.ssh_argv(name, command),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    def exec(
        self,
        name: str,
        argv: Sequence[str],
        *,
        timeout: float = 20.0,
        input_text: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run argv inside a node's namespaces (without SSH), with the session PATH."""
        return self.node(name).run(argv, timeout=timeout, input_text=input_text, env=env)

    def spawn(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        """Start a background command in a node; it is killed by PID at teardown at the latest."""
        return self.node(name).spawn(self.state, argv, env)

    def pids(self, name: str) -> list[int]:
        """PIDs of every process in the node's network namespace (holder and sshd included)."""
        return netns.netns_pids(self.node(name).netns)

    def running(self, name: str, *names: str) -> list[str]:
        """`pid: command line` of each process in the node's network namespace that runs one of `names`: pgrep
        inside the node would see the whole machine, as a node shares the PID namespace with every other test."""
        out = []
        for pid in self.pids(name):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:  # it ended meanwhile
                continue
            line = " ".join(a.decode("utf-8", "replace") for a in argv if a)
            if any(n in line for n in names):
                out.append(f"{pid}: {line}")
        return out

    def stop_sshd(self, name: str) -> None:
        """Stop a node's sshd by PID: new connections are refused."""
        self.node(name).stop_sshd(self.state)
        self._save_nodes()

    def stop_gid_watch(self, name: str) -> None:
        """Stop a node's GID watcher by PID: its GID tables no longer follow its addresses (a fault: a new address
        gets no RoCE GID entries)."""
        self.node(name).stop_gid_watch(self.state)
        self._save_nodes()

    def kill_ssh_sessions(self, name: str) -> list[int]:
        """SIGKILL the node's sshd session processes (stop_sshd first, or new ones follow): every SSH
        connection to the node drops as if the network had gone. Returns the PIDs killed."""
        holder = self.node(name).holder
        killed = []
        for pid in self.pids(name):
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm in ("sshd", "sshd-session") and (holder is None or pid != holder.pid):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        return killed

    def start_sshd(self, name: str) -> None:
        """Start a node's sshd again (after stop_sshd or replace_host_key)."""
        node = self.node(name)
        if node.sshd is None:
            node.start_sshd(self.state, deadline_s=self.ready_timeout_s)
            self._save_nodes()

    def freeze_sshd(self, name: str, frozen: bool = True) -> None:
        """SIGSTOP (or SIGCONT) a node's sshd: TCP connects succeed, the SSH banner never comes."""
        rec = self.node(name).sshd
        if rec is None or not netns.alive(rec.pid, rec.start):
            raise LabError(f"node {name}: sshd is not running")
        os.kill(rec.pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def set_reachable(self, name: str, reachable: bool) -> None:
        """Take the node side of the management veth down (SSH connects then time out) or up again."""
        node = self.node(name)
        netns.run([netns.IP, "-n", node.netns, "link", "set", "dev", node.mgmt_if, "up" if reachable else "down"])

    def replace_host_key(self, name: str) -> str:
        """Give a node a new host key and restart its sshd; known_hosts keeps the old one (changed key)."""
        node = self.node(name)
        node.stop_sshd(self.state)
        node.host_pub = sshd.keygen(node.node_dir / "ssh" / "ssh_host_ed25519_key", f"root@{node.spec.host_name}")
        node.start_sshd(self.state, deadline_s=self.ready_timeout_s)
        self._save_nodes()
        return node.host_pub

    def fault_dir(self, name: str) -> Path:
        """Where a node's fault files live (the wrappers export it as LINKCHECK_LAB_FAULTS)."""
        return self.workdir / "nodes" / name / "faults"

    def set_fault(self, name: str, tool: str, fault: str | None) -> None:
        """Arm a fault for every later run of an emulated traffic tool on a node; None clears it.

        ib_write_bw: never-ready, crash-mid-run, client-fail, flap, hang, garbage; all_gather_perf:
        hang, crash-mid-run, wrong, garbage, and real-time (no fault: the sweep takes its real time at the
        model's bus bandwidth instead of at most 1 s) (tests/lab/README.md, "Traffic").
        """
        self.node(name)
        traffic.write_fault(self.fault_dir(name), tool, fault)

    def namespaces(self) -> list[str]:
        """Names of this lab's network namespaces (also the sink one, if data links needed it)."""
        return list(self.state.netns)

    def host_links(self) -> list[str]:
        """Names of this lab's interfaces in the root namespace."""
        return list(self.state.host_links)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C while tearing down (a second Ctrl-C must not leave namespaces behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
