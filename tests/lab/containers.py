"""Real containers in a lab node: Debian's podman (with crun) in the node's own namespaces, images imported from a root
filesystem staged here (no registry, no network), each with the libnccl stubs, files and environment its spec names.

The recipe is /work/shared/design/real-containers.md's: in the node's mount namespace a tmpfs on /sys/fs/cgroup
(crun then takes the legacy layout, and `cgroups = "disabled"` makes none), /dev/shm (podman's lock file), /run (crun's
state root /run/crun) and /var/tmp; podman's configuration at its default path /etc/containers (a staged copy of the
host's, with the node's storage.conf and containers.conf), and /var/lib/containers staged empty (podman's blob-info
cache), both shown through tests.lab.nodefiles. Every container runs `sleep infinity` with `--network none`.

A libnccl stub is a small ELF shared object linked here with cc, with its own SONAME, ELF build ID
(-Wl,--build-id=0x...) and "NCCL version" string; a pip-wheel stub lies under site-packages/nvidia/nccl/lib beside a
nvidia_nccl_cu13-<version>.dist-info folder, as the wheel installs it.

Teardown (`stop`): `podman rm -af -t 0` and `podman rmi -af` inside the node before the lab ends its processes: a
container's own processes are in their own network namespace, out of the lab's reach; the conmons left in the node's
namespace are ended by the lab's teardown by PID.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tests.lab.errors import LabError
from tests.lab.nodefiles import NodeFile

if TYPE_CHECKING:
    from tests.lab.lab import Lab

# What the image's shell needs to run linkcheck's probe (nccl_probe.sh), from the host's own binaries.
IMAGE_TOOLS = ("dash", "cat", "env", "ls", "sleep", "grep", "sed", "sort", "od", "readelf", "find", "stat", "tr",
               "readlink", "head", "wc")
TRIPLET_LIB = "/usr/lib/x86_64-linux-gnu"


@dataclass(frozen=True)
class StubLib:
    """A libnccl stub: where it lies in the image, its ELF build ID (hex), the version its string says, and for a pip
    wheel's copy the wheel's dist-info folder beside nvidia/ (its name carries the version)."""

    path: str
    build_id: str
    version: str
    soname: str = "libnccl.so.2"
    wheel: bool = False


@dataclass(frozen=True)
class ContainerSpec:
    """One container of a lab node."""

    name: str
    libs: tuple[StubLib, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)  # path in the image -> text (a stale /etc/nccl.conf)
    image_env: Mapping[str, str] = field(default_factory=dict)  # the image's ENV
    run_env: Mapping[str, str] = field(default_factory=dict)  # podman run -e
    running: bool = True


def skip_reason() -> str | None:
    """Why this machine cannot run lab containers (or None)."""
    for tool in ("podman", "crun", "cc", "readelf", "ldconfig"):
        if shutil.which(tool) is None and shutil.which(tool, path="/sbin:/usr/sbin") is None:
            return f"{tool} is not installed (the lab's containers need podman, crun, cc and binutils)"
    return None


def stage_node(node_dir: Path, stage: Path) -> tuple[list[NodeFile], list[str]]:
    """The files and boot.sh mounts that give a node its own podman: /etc/containers and /var/lib/containers shown
    from the node's folder, and the tmpfs mounts of the recipe."""
    etc = stage / "etc-containers"
    if etc.exists():
        shutil.rmtree(etc)
    shutil.copytree("/etc/containers", etc, symlinks=True)
    driver = "vfs" if _fs_type(node_dir) == "overlay" else "overlay"  # no overlay on overlayfs
    store = node_dir / "podman"
    (store / "storage").mkdir(parents=True, exist_ok=True)
    (store / "tmp").mkdir(parents=True, exist_ok=True)
    (etc / "storage.conf").write_text(
        f'[storage]\ndriver = "{driver}"\ngraphroot = "{store}/storage"\nrunroot = "/run/lc-podman/storage"\n',
        encoding="utf-8")
    (etc / "containers.conf").write_text(
        "[containers]\ncgroups = \"disabled\"\n"
        "default_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\nnetns = \"none\"\n"
        "[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nruntime = \"crun\"\n"
        f"tmp_dir = \"/run/lc-podman/libpod\"\nimage_copy_tmp_dir = \"{store}/tmp\"\n", encoding="utf-8")
    varlib = stage / "var-lib-containers"
    varlib.mkdir(parents=True, exist_ok=True)
    mounts = ["mount -t tmpfs -o mode=755 lc-cgroup /sys/fs/cgroup", "mount -t tmpfs -o mode=1777 lc-shm /dev/shm",
              "mount -t tmpfs -o mode=755 lc-run /run", "mount -t tmpfs -o mode=1777 lc-vartmp /var/tmp"]
    return [NodeFile("/etc/containers", etc), NodeFile("/var/lib/containers", varlib)], mounts


def _fs_type(path: Path) -> str:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def _copy(root: Path, source: str) -> None:
    real = Path(os.path.realpath(source))
    dest = root / str(real).lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.exists():
        shutil.copy2(real, dest)


def _copy_tool(root: Path, tool: str) -> None:
    """A host binary into the image, with the libraries ldd names, under its own name too."""
    path = shutil.which(tool)
    if path is None:
        raise LabError(f"the image needs {tool}, which this machine lacks")
    _copy(root, path)
    name = Path(os.path.realpath(path)).name
    if name != tool and not (root / "usr/bin" / tool).exists():
        (root / "usr/bin" / tool).symlink_to(name)
    deps = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout.split()
    for dep in (d for d in deps if d.startswith("/")):
        _copy(root, dep)


def base_root(root: Path) -> None:
    """An image root from the host's binaries and their libraries (dash as /bin/sh, ldconfig, readelf)."""
    for folder in ("usr/bin", "usr/sbin", TRIPLET_LIB.lstrip("/"), "usr/lib64", "etc/ld.so.conf.d", "tmp", "proc",
                   "sys", "dev", "root"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for link in ("bin", "sbin", "lib", "lib64"):
        if not (root / link).exists():
            (root / link).symlink_to(f"usr/{link}")
    for tool in IMAGE_TOOLS:
        _copy_tool(root, tool)
    if not (root / "usr/bin/sh").exists():
        (root / "usr/bin/sh").symlink_to("dash")
    ldconfig = shutil.which("ldconfig", path="/sbin:/usr/sbin")
    if ldconfig is None:
        raise LabError("ldconfig is missing")
    shutil.copy2(os.path.realpath(ldconfig), root / "usr/sbin/ldconfig")
    loader = root / "usr/lib64/ld-linux-x86-64.so.2"
    if not loader.exists():
        loader.symlink_to("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n", encoding="ascii")
    (root / "etc/ld.so.conf.d/x86_64-linux-gnu.conf").write_text(f"{TRIPLET_LIB}\n", encoding="ascii")


def link_stub(path: Path, lib: StubLib) -> None:
    """Link one libnccl stub with cc: its SONAME, build ID and version string."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_name(path.name + ".c")
    src.write_text(f'const char lc_nccl_version[] = "NCCL version {lib.version}+cuda13.0";\n'
                   "int ncclGetVersion(int *v) { *v = 0; return 0; }\n", encoding="ascii")
    out = subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{lib.soname}", f"-Wl,--build-id=0x{lib.build_id}",
                          "-o", str(path), str(src)], capture_output=True, text=True, check=False)
    src.unlink()
    if out.returncode != 0:
        raise LabError(f"cc could not link the libnccl stub {path}: {out.stderr.strip()[:300]}")


def image_root(base: Path, root: Path, spec: ContainerSpec) -> None:
    """The container's root: the base, its stubs (and the soname links and cache ldconfig makes), its files."""
    subprocess.run(["cp", "-a", f"{base}/.", str(root)], check=True)
    for lib in spec.libs:
        dest = root / lib.path.lstrip("/")
        link_stub(dest, lib)
        if lib.wheel:
            nvidia = next(p for p in dest.parents if p.name == "nvidia")
            (nvidia.parent / f"nvidia_nccl_cu13-{lib.version}.dist-info").mkdir(parents=True, exist_ok=True)
    for path, text in spec.files.items():
        dest = root / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    ldconfig = shutil.which("ldconfig", path="/sbin:/usr/sbin") or "ldconfig"
    subprocess.run([ldconfig, "-r", str(root)], check=True, capture_output=True)


def start(lab: Lab, node: str, specs: Sequence[ContainerSpec], workdir: Path) -> None:
    """Import each container's image into the node's store and run it (stopped again when its spec says so)."""
    base = workdir / "image-base"
    if not base.exists():
        base_root(base)
    for spec in specs:
        root = workdir / f"image-{node}-{spec.name}"
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        image_root(base, root, spec)
        image = f"localhost/lc-{spec.name}:1"
        changes = " ".join(f"--change {shlex.quote(f'ENV {k}={v}')}" for k, v in spec.image_env.items())
        _ok(lab.exec(node, ["sh", "-c", f"tar -C {shlex.quote(str(root))} -c . | podman import -q {changes} - "
                                        f"{shlex.quote(image)}"], timeout=60), f"podman import on {node}")
        env = [w for k, v in spec.run_env.items() for w in ("-e", f"{k}={v}")]
        _ok(lab.exec(node, ["podman", "run", "-d", "--name", spec.name, "--network", "none", *env, image,
                            "sleep", "infinity"], timeout=60), f"podman run on {node}")
        if not spec.running:
            _ok(lab.exec(node, ["podman", "stop", "-t", "0", spec.name], timeout=60), f"podman stop on {node}")
        shutil.rmtree(root)


def stop(lab: Lab, node: str) -> None:
    """Remove the node's containers and images (inside the node: its own store), before the lab ends its processes."""
    lab.exec(node, ["podman", "rm", "-af", "-t", "0"], timeout=60)
    lab.exec(node, ["podman", "rmi", "-af"], timeout=60)


def _ok(result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode != 0:
        raise LabError(f"{what} failed ({result.returncode}): {(result.stderr or result.stdout).strip()[:400]}")


# The pair the container tests and fixtures/containers-lab use: the `healthy` scenario's two nodes, each running a
# "vllm" container and a stopped "old" one. a's container loads DGX OS-style system NCCL 2.30.4 (on the known-bad
# list); b's loads a pip wheel's NCCL 2.30.4 of another build (the system library is in its cache too, but torch's
# RUNPATH takes the wheel) and carries a stale /etc/nccl.conf naming an HCA the node does not have. a's nvidia-smi is
# a stand-in reporting a GPU busy at idle power (a rank waiting in a collective); b's an idle one.
SYSTEM_NCCL = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.30.4"
WHEEL_NCCL = "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"
SYSTEM_BUILD_ID = "5e1f2d3c4b5a69788796a5b4c3d2e1f0a1b2c3d4"
WHEEL_BUILD_ID = "a7f420a1" + "9c" * 16
STALE_NCCL_CONF = "NCCL_IB_HCA=mlx5_0\nNCCL_IB_GID_INDEX=7\n"


def gpu_standin(utilization: int, power_w: float) -> str:
    """A stand-in nvidia-smi for the lab (the lab has no GPU): the query's CSV as the real one prints it."""
    return f"printf 'utilization.gpu [%%], power.draw [W]\\n{utilization} %%, {power_w:.2f} W\\n'"


def serving_containers(node: str) -> tuple[ContainerSpec, ...]:
    system = StubLib(SYSTEM_NCCL, SYSTEM_BUILD_ID, "2.30.4")
    if node == "a":
        vllm = ContainerSpec("vllm", libs=(system,), run_env={"NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1"})
    else:
        vllm = ContainerSpec("vllm", libs=(system, StubLib(WHEEL_NCCL, WHEEL_BUILD_ID, "2.30.4", wheel=True)),
                             files={"/etc/nccl.conf": STALE_NCCL_CONF})
    return vllm, ContainerSpec("old", running=False)
