"""Stage one node's files (sysfs trees, netplan, tool wrappers) and the script that mounts them.

Everything a node shows is prepared on disk under its directory, then `boot.sh` runs inside the node's
fresh mount and UTS namespaces (private propagation, so nothing leaks to the host) and mounts it:
tmpfs copies over /sys/class, /sys/bus/pci/devices and (staged entries only) /sys/devices; the netplan
directory over /etc/netplan and the model's other files at theirs (tests.lab.nodefiles); overlay whiteouts
that hide real binaries of `missing_tools`; empty files over the shell start-up files that would otherwise
put other directories before the emulator bin on PATH.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import pwd
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from tests.lab.addresses import map_model, map_text
from tests.lab.errors import LabError
from tests.lab.nodefiles import NodeFile, mount_lines
from tests.lab.spec import EMULATED_TOOLS, LabNodeSpec, LinkSpec
from tests.lab.sshd import SYSTEM_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "lc-lab-node-ready"
# Start-up files that may rewrite PATH for an SSH session (bash sources ~/.bashrc for ssh commands).
_RC_FILES = (
    "/etc/profile",
    "/etc/bash.bashrc",
    "~/.bashrc",
    "~/.profile",
    "~/.bash_profile",
    "~/.bash_login",
)
_SUDO_OK = """#!/bin/sh
# linkcheck lab sudo: the session is root already; accept sudo's usual flags and run the command.
while [ $# -gt 0 ]; do
  case "$1" in
    -n|-E|-H|-S|-k) shift ;;
    -u) shift 2 ;;
    --) shift; break ;;
    -*) echo "sudo: unsupported option in the lab: $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: sudo -h | -K | -k | -V" >&2; exit 1; }
command -v "$1" >/dev/null 2>&1 || { echo "sudo: $1: command not found" >&2; exit 1; }
exec "$@"
"""
# What sudo 1.9 prints for `sudo -n cmd` when a password would be needed.
_SUDO_REFUSES = """#!/bin/sh
echo "sudo: a password is required" >&2
exit 1
"""


# The node's netplan: `get` from the model (the emulator), `generate` the real one (Debian's, on the node's files:
# a repair's new files are checked by the netplan that would read them), `try` and `apply` the real netplan in the
# node's container where the node has a real renderer (tests/lab/nspawn.py), else the lab's stand-in
# (tests/lab/netplan_try_standin.py says how it behaves).
_NETPLAN_ROUTES = """case "${1:-}" in
  generate) exec /usr/sbin/netplan "$@" ;;
  try|apply)
    if [ -n "${LINKCHECK_LAB_NSPAWN:-}" ]; then
      exec %(python)s -m tests.lab.nspawn_exec "$LINKCHECK_LAB_NSPAWN" netplan "$@"
    fi
    exec %(python)s -m tests.lab.netplan_try_standin "$@" ;;
esac
"""


def _write_exec(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def write_model(spec: LabNodeSpec, node_dir: Path) -> Path | None:
    """Copy the node model with its addresses mapped into the lab range; returns the copy's path."""
    text = _mapped_model(spec)
    if text is None:
        return None
    out = node_dir / "node.json"
    out.write_text(text, encoding="utf-8")
    return out


def _mapped_model(spec: LabNodeSpec) -> str | None:
    if spec.model is None:
        return None
    try:
        data = json.loads(spec.model.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabError(f"node {spec.name}: cannot read node model {spec.model}: {exc}") from exc
    return json.dumps(map_model(data), indent=2, sort_keys=True) + "\n"


def render_ahead(spec: LabNodeSpec) -> None:
    """Render the node model's /sys tree now, if this process has not yet: it takes seconds on a loaded machine, and
    the lab calls this before it takes the machine's address lock, under which the node is then staged."""
    text = _mapped_model(spec)
    if text is not None:
        _materialised(text.encode("utf-8"))


def emulated_tools() -> tuple[str, ...]:
    """The hardware tools the emulator CLI implements (all of EMULATED_TOOLS if it cannot be imported).

    The CLI also emulates ip, sysctl, hostname and uname for offline use; in the lab those are real.
    """
    try:
        from tests.emulators.cli import TOOLS
    except ImportError:
        return EMULATED_TOOLS
    return tuple(t for t in EMULATED_TOOLS if t in TOOLS)


_FEC_SET = ('if [ "$#" = 2 ] && [ "$1" = --show-fec ] && [ -e "$LINKCHECK_LAB_STATE/fec/$2" ]; then '
            'exec %(python)s -m tests.emulators.cli ethtool "$@"; fi\n')


def write_bin(
    spec: LabNodeSpec, bin_dir: Path, model_json: Path | None, extra_env: Mapping[str, str] | None = None
) -> None:
    """One wrapper per emulated tool (running the emulator CLI on this node's model), sudo, extras.

    A node without a model gets no emulator wrappers: its tools are the host's real ones. `extra_env`
    is exported by every wrapper too (the traffic emulators' shared state and fault directories).
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    env = f"LINKCHECK_LAB_NODE={shlex.quote(str(model_json or ''))}; export LINKCHECK_LAB_NODE\n"
    env += f"LINKCHECK_LAB_NAME={shlex.quote(spec.name)}; export LINKCHECK_LAB_NAME\n"
    env += f"PYTHONPATH={shlex.quote(str(REPO_ROOT))}; export PYTHONPATH\n"
    for key, value in sorted((extra_env or {}).items()):
        env += f"{key}={shlex.quote(value)}; export {key}\n"
    for tool in emulated_tools() if model_json is not None else ():
        if tool in spec.missing_tools or tool in spec.extra_tools:
            continue
        assert model_json is not None
        answers = _static_answers(tool, model_json, bin_dir.parent / "answers")
        if tool == "netplan":
            answers = _NETPLAN_ROUTES % {"python": shlex.quote(sys.executable)} + answers
        if tool == "ethtool":
            # Once `ethtool --set-fec` configured an interface, its --show-fec is the emulator's, not the answer
            # rendered at staging.
            answers = _FEC_SET % {"python": shlex.quote(sys.executable)} + answers
        body = f'exec {shlex.quote(sys.executable)} -m tests.emulators.cli {shlex.quote(tool)} "$@"\n'
        _write_exec(bin_dir / tool, f"#!/bin/sh\n# linkcheck lab emulator of {tool}\n{env}{answers}{body}")
    if "sudo" not in spec.missing_tools and "sudo" not in spec.extra_tools:
        _write_exec(bin_dir / "sudo", _SUDO_REFUSES if spec.sudo_refuses else _SUDO_OK)
    for tool, script in spec.extra_tools.items():
        text = script if script.startswith("#!") else f"#!/bin/sh\n{env}{script}"
        _write_exec(bin_dir / tool, text if text.endswith("\n") else text + "\n")


def _static_answers(tool: str, model_json: Path, answers_dir: Path) -> str:
    """The wrapper lines answering the inspection's calls from pre-rendered files (tests/lab/answers.py)."""
    from tests.emulators.cli import TOOLS
    from tests.lab.answers import answer_block

    return answer_block(tool, model_json, answers_dir, TOOLS[tool]) if tool in TOOLS else ""


def stage_sysfs(spec: LabNodeSpec, stage: Path, model_json: Path | None) -> None:
    """The node's /sys trees: the emulators' materialisation of the model, else a minimal net/ tree."""
    if model_json is not None:
        _materialise(model_json, stage)
        return
    for link in spec.links:
        _stage_link(link, stage / "sys" / "class" / "net" / link.ifname)


def _materialise(model_json: Path, stage: Path) -> None:
    """`stage/sys` is a link to the model's materialised tree, rendered once per model in this process: the tree
    (~1,200 files a node) depends only on the mapped model, and writing it again for every lab was most of a lab's
    bring-up on a loaded 2-CPU machine. boot.sh only reads it (`cp -a` into the node's tmpfs)."""
    stage.mkdir(parents=True, exist_ok=True)
    os.symlink(_materialised(model_json.read_bytes()) / "sys", stage / "sys", target_is_directory=True)


# Per process (each test worker has its own); removed at the end of a test session (tests/conftest.py: xdist's
# workers leave by os._exit, past atexit) or when a process that is no test session exits.
_SYSFS_CACHE: dict[str, Path] = {}
_SYSFS_CACHE_ROOT: list[Path] = []


def drop_sysfs_cache() -> None:
    """Remove the rendered trees; a later lab renders them again."""
    for root in _SYSFS_CACHE_ROOT:
        shutil.rmtree(root, ignore_errors=True)
    _SYSFS_CACHE_ROOT.clear()
    _SYSFS_CACHE.clear()


def _materialised(model: bytes) -> Path:
    key = hashlib.sha256(model).hexdigest()
    if key in _SYSFS_CACHE:
        return _SYSFS_CACHE[key]
    try:
        from tests.emulators.node import Node, materialise_sysfs
    except ImportError as exc:
        raise LabError(f"a node model needs tests.emulators (Node, materialise_sysfs): {exc}") from exc
    if not _SYSFS_CACHE_ROOT:
        _SYSFS_CACHE_ROOT.append(Path(tempfile.mkdtemp(prefix="linkcheck-lab-sysfs-")))
        atexit.register(drop_sysfs_cache)
    tree = _SYSFS_CACHE_ROOT[0] / key
    shutil.rmtree(tree, ignore_errors=True)  # a rendering that failed half-way
    tree.mkdir()
    materialise_sysfs(Node.from_json(model.decode("utf-8")), tree)
    _SYSFS_CACHE[key] = tree
    return tree


def _stage_link(link: LinkSpec, netdir: Path) -> None:
    netdir.mkdir(parents=True, exist_ok=True)
    carrier = "1" if link.up and link.peer is not None else "0"
    values = {
        "address": link.mac or "00:00:00:00:00:00",
        "mtu": str(link.mtu),
        "carrier": carrier,
        "operstate": "up" if carrier == "1" else "down",
        "type": "1",
    }
    for name, value in values.items():
        (netdir / name).write_text(value + "\n", encoding="ascii")


def stage_netplan(spec: LabNodeSpec, stage: Path, model_json: Path | None) -> Path | None:
    """The node's /etc/netplan: the spec's directory, else the model's `netplan_files`; addresses mapped.

    Files are 0600, as netplan wants them.
    """
    files: dict[str, str] = {}
    if spec.netplan is not None:
        files = {p.name: map_text(p.read_text(encoding="utf-8")) for p in spec.netplan.iterdir() if p.is_file()}
    elif model_json is not None:
        model = json.loads(model_json.read_text(encoding="utf-8"))  # already mapped
        for item in model.get("netplan_files", []):
            path = PurePosixPath(str(item.get("path", "")))
            if path.parent == PurePosixPath("/etc/netplan") and path.name:
                files[path.name] = str(item.get("text", ""))
    if spec.netplan is None and not files:
        return None
    out = stage / "etc" / "netplan"
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(files.items()):
        (out / name).write_text(text, encoding="utf-8")
        (out / name).chmod(0o600)
    return out


def _whiteout_dirs(missing: frozenset[str]) -> dict[str, list[str]]:
    """Real directories on the session PATH that hold a tool that must be missing."""
    found: dict[str, list[str]] = {}
    for d in dict.fromkeys(os.path.realpath(p) for p in SYSTEM_PATH.split(":")):
        hidden = [t for t in sorted(missing) if os.path.lexists(os.path.join(d, t))]
        if hidden:
            found[d] = hidden
    return found


def _overlay_lines(node_dir: Path, missing: frozenset[str]) -> list[str]:
    lines = []
    for i, (directory, tools) in enumerate(_whiteout_dirs(missing).items()):
        upper, work = node_dir / "overlay" / str(i) / "upper", node_dir / "overlay" / str(i) / "work"
        upper.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        for tool in tools:
            # A 0/0 character device is overlayfs's whiteout: the lower file disappears.
            os.mknod(upper / tool, stat.S_IFCHR | 0o000, os.makedev(0, 0))
        opts = f"lowerdir={directory},upperdir={upper},workdir={work}"
        if any(c in opts for c in " \t\n") or any(c in str(p) for p in (upper, work) for c in ",:"):
            raise LabError(f"overlay paths must not contain ',', ':' or blanks: {node_dir}")
        lines.append(f"mount -t overlay lc-lab -o {shlex.quote(opts)} {shlex.quote(directory)}")
    return lines


def _sysfs_lines(stage: Path, node_dir: Path) -> list[str]:
    q = shlex.quote
    lines = []
    for rel in ("sys/class", "sys/bus/pci/devices"):
        if (stage / rel).is_dir():
            lines += [f"mount -t tmpfs -o mode=0755 lc-lab /{rel}", f"cp -a {q(str(stage / rel))}/. /{rel}/"]
    devices = stage / "sys" / "devices"
    if devices.is_dir():
        real = node_dir / "real-devices"
        real.mkdir(exist_ok=True)
        # Staged device directories replace real ones of the same name; the rest (cpu, virtual) stay.
        lines += [
            f"mount --bind /sys/devices {q(str(real))}",
            "mount -t tmpfs -o mode=0755 lc-lab /sys/devices",
            f"cp -a {q(str(devices))}/. /sys/devices/",
            f'for e in {q(str(real))}/*; do n="${{e##*/}}"; [ -d "$e" ] || continue;'
            ' [ -e "/sys/devices/$n" ] && continue;'
            ' mkdir "/sys/devices/$n"; mount --bind "$e" "/sys/devices/$n"; done',
            f"umount -l {q(str(real))}",
        ]
    return lines


def _rc_lines(node_dir: Path) -> list[str]:
    empty = node_dir / "empty-rc"
    empty.write_text("", encoding="ascii")
    home = pwd.getpwnam("root").pw_dir
    lines = []
    for rc in _RC_FILES:
        path = rc.replace("~", home, 1)
        if os.path.isfile(path):
            lines.append(f"mount --bind {shlex.quote(str(empty))} {shlex.quote(path)}")
    return lines


def _shadow_lines(node_dir: Path) -> list[str]:
    """With UsePAM no, sshd refuses every login of a locked account ("!" hash), keys included.

    Ubuntu and some CI images lock root. The node then sees a one-line /etc/shadow whose root entry
    is "*" (no password, not locked); no hash is copied, and the host's file is untouched.
    """
    try:
        lines = Path("/etc/shadow").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    root = next((line.split(":") for line in lines if line.startswith("root:")), None)
    if root is None or len(root) < 2 or not root[1].startswith("!"):
        return []
    shadow = node_dir / "shadow"
    shadow.touch(mode=0o600)
    shadow.write_text(":".join(["root", "*", *root[2:]]) + "\n", encoding="utf-8")
    return [f"mount --bind {shlex.quote(str(shadow))} /etc/shadow"]


def write_boot_script(
    spec: LabNodeSpec,
    node_dir: Path,
    stage: Path,
    netplan: Path | None,
    extra_mounts: Sequence[str] = (),
    files: Sequence[NodeFile] = (),
) -> Path:
    """The script a node's namespace holder runs: hostname, mounts, then a ready line and `sleep`.

    `netplan` is shown at /etc/netplan and `files` at their paths (tests.lab.nodefiles), before the
    start-up file, shadow and `extra_mounts` bind mounts, which then sit on top of any overlay.
    """
    shown = [*([NodeFile("/etc/netplan", netplan)] if netplan is not None else []), *files]
    lines = [
        "#!/bin/sh",
        f"# linkcheck lab node {spec.name}: runs inside its own network, mount and UTS namespaces",
        "set -eu",
        f"echo {shlex.quote(spec.host_name)} > /proc/sys/kernel/hostname",
        *_sysfs_lines(stage, node_dir),
        *mount_lines(shown, node_dir),
        *_overlay_lines(node_dir, spec.missing_tools),
        *_rc_lines(node_dir),
        *_shadow_lines(node_dir),
        *extra_mounts,
        "mkdir -p /run/sshd",
        f"echo {READY_LINE}",
        # The holder keeps the namespaces alive while sshd is stopped and restarted.
        "exec sleep infinity",
    ]
    path = node_dir / "boot.sh"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o755)
    return path
