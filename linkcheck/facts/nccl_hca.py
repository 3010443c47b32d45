"""NCCL settings as NCCL reads them: which RDMA devices NCCL_IB_HCA selects (prefix match, '=' exact, '^'
exclude), the addressed twins NCCL uses, the integer an NCCL parameter's text gives, the RoCE GID index NCCL uses,
how a setting is removed where it is set, whether an NCCL version predates a feature, and what NCCL_ALGO,
NCCL_SOCKET_IFNAME and the runtime-connect settings leave NCCL (a cluster's rules judge those per node)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from linkcheck.facts.model import Function, NodeFacts


def select_hcas(value: str | None, devices: list[str]) -> list[str]:
    """The devices NCCL would pick from `devices` given NCCL_IB_HCA (None or empty = all).

    >>> select_hcas("rocep1s0f1,roceP2p1s0f1", ["rocep1s0f1", "roceP2p1s0f1", "rocep1s0f0"])
    ['rocep1s0f1', 'roceP2p1s0f1']
    >>> select_hcas("^=rocep1s0f0", ["rocep1s0f0", "rocep1s0f1"])
    ['rocep1s0f1']
    >>> select_hcas("roce", ["rocep1s0f0", "mlx5_0"])
    ['rocep1s0f0']
    """
    if value is None or not value.strip():
        return list(devices)
    spec = value.strip()
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    spec = spec.lstrip("=")
    names = [item.split(":", 1)[0].strip() for item in spec.split(",") if item.strip()]

    def matches(dev: str) -> bool:
        return any(dev == n if exact else dev.startswith(n) for n in names)

    return [d for d in devices if matches(d) != exclude]


def nccl_functions(node: NodeFacts) -> list[Function]:
    """The addressed twins whose RDMA device NCCL_IB_HCA lets NCCL use."""
    used = [f for f in node.used_functions if f.rdma_dev]
    chosen = set(select_hcas(node.nccl.get("NCCL_IB_HCA"), [f.rdma_dev or "" for f in used]))
    return [f for f in used if f.rdma_dev in chosen]


def unset_command(name: str, source: str, otherwise: str = "") -> str:
    """How to remove the NCCL setting `name` where it is set (`source`: environment, ~/.nccl.conf, /etc/nccl.conf);
    for a source of another name, `otherwise` (default `remove NAME`) from that source, quoted: it is the node's
    text."""
    known = {
        "/etc/nccl.conf": f"sudo sed -i '/^{name}=/d' /etc/nccl.conf",
        "~/.nccl.conf": f"sed -i '/^{name}=/d' ~/.nccl.conf",
        "environment": f"unset {name}  # and remove it from the job's environment (shell profile, compose file, "
                       "mpirun -x)",
    }
    return known.get(source) or f"{otherwise or f'remove {name}'} from {shlex.quote(source)}"


GID_PIN = "NCCL_IB_GID_INDEX"
# NVIDIA/nccl: NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", 0) in v2.20.5-1 src/transport/net_ib.cc:80, -1 from v2.21.5-1
# (same line), and ncclIbGetGidIndex returns an index >= 0 as it is, otherwise scans the table for the RoCE v2
# entry of the address family (master src/transport/net_ib/connect.cc:317-332).
GID_AUTO_SINCE = (2, 21)
_INT64 = 1 << 63
_STRTOLL_RE = re.compile(r"^[ \t\n\v\f\r]*([+-]?)(0[xX](?=[0-9a-fA-F])[0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def nccl_int(text: str | None) -> int | None:
    """The integer NCCL reads from a parameter's text, None where it keeps the parameter's default.

    ncclLoadParam (NVIDIA/nccl src/misc/param.cc:89-102 on master, 66-77 in v2.20.5-1) parses only
    `if (str && strlen(str) > 0)`, with `strtoll(str, nullptr, 0)`: leading blanks skipped, 0x hex, a leading 0
    octal, the longest valid prefix, 0 where no digit starts it (glibc sets no errno then), the default on ERANGE.

    >>> [nccl_int(v) for v in (None, "", "3", " 3", "0x3", "010", "3abc", "abc", "-1", "99999999999999999999")]
    [None, None, 3, 3, 3, 8, 3, 0, -1, None]
    >>> nccl_int("9" * 5000), nccl_int("0" * 5000 + "7"), nccl_int("\u0663")
    (None, 7, 0)
    """
    if text is None or text == "":
        return None
    match = _STRTOLL_RE.match(text)
    if match is None:
        return 0
    digits = match.group(2)
    base = 16 if digits[:2] in ("0x", "0X") else 8 if digits.startswith("0") and len(digits) > 1 else 10
    if len((digits[2:] if base == 16 else digits).lstrip("0")) > 22:
        return None  # past int64 in any base (ERANGE: the default), and never a huge int() of node text
    value = int(digits, base) * (-1 if match.group(1) == "-" else 1)
    return value if -_INT64 <= value < _INT64 else None


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """"2.28.9" -> (2, 28, 9); None when there is no dotted number to read.

    >>> version_tuple("2.28.9"), version_tuple("2.20.5-1"), version_tuple(None)
    ((2, 28, 9), (2, 20, 5), None)
    """
    match = re.match(r"^\s*([0-9]{1,9})\.([0-9]{1,9})(?:\.([0-9]{1,9}))?", version or "")
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


class GidInEffect(msgspec.Struct, frozen=True):
    """The RoCE GID index NCCL uses on a node: a fixed index (a pin, or NCCL < 2.21's default 0), or None where NCCL
    picks each HCA's RoCE v2 entry itself; where that comes from, and what an unset variable would mean there."""

    index: int | None
    source: str
    pinned: bool  # a set, non-empty NCCL_IB_GID_INDEX decides it (not a default)
    auto_when_unset: bool  # NCCL 2.21 or later (or an unknown version, assumed so): unset means auto-selection
    version_known: bool


def gid_index_in_effect(node: NodeFacts) -> GidInEffect:
    """Which GID index NCCL uses on `node`. An unknown NCCL version counts as 2.21 or later: a GB10 runs CUDA 13 and
    NVIDIA's DGX Spark playbooks build NCCL v2.28.9-1 (spark-link s.2.4), so that is the assumption."""
    version = node.identity.nccl_version
    parsed = version_tuple(version)
    auto = parsed is None or parsed >= GID_AUTO_SINCE
    value = nccl_int(node.nccl.get(GID_PIN))
    source = node.nccl_sources.get(GID_PIN, "not set")
    if value is None and not auto:
        return GidInEffect(0, f"NCCL {version}'s default: before 2.21 an unset or empty {GID_PIN} means index 0",
                           False, auto, True)
    if value is None or (value < 0 and auto):
        return GidInEffect(None, source, False, auto, parsed is not None)
    return GidInEffect(value, source, True, auto, parsed is not None)


# NCCL_IB_SUBNET_AWARE_ROUTING, which a ring needs (each cable is its own /24: NCCL must pick, per peer, the
# device on the subnet that peer shares), exists from this NCCL on; 2.30.4-1 lacks it.
SUBNET_ROUTING_NCCL = (2, 30, 7)
# The X.Y.Z that starts a version: a library's file name gives it bare, a package or a log may add `-1`, `+cuda13`.
_VERSION = re.compile(r"\s*([0-9]{1,9}(?:\.[0-9]{1,9})+)(?![0-9])")  # ASCII parts int() reads, as version_tuple


def nccl_before(version: str | None, first: tuple[int, ...]) -> bool | None:
    """Whether an NCCL version (`2.30.4`, `2.30.4-1`) is older than `first`; None when it is unknown or does not
    start with X.Y (text a node gave is data: never guessed at).

    >>> nccl_before("2.30.4", (2, 30, 7)), nccl_before("2.30.7-1", (2, 30, 7)), nccl_before("n/a", (2, 30, 7))
    (True, False, None)
    """
    m = _VERSION.match(version) if version is not None else None
    if m is None:
        return None
    return tuple(int(p) for p in m.group(1).split(".")) < first


def nccl_algo_ring_only(value: str | None) -> bool:
    """Whether NCCL_ALGO leaves NCCL only its Ring algorithm: `Ring` (any case), or `^` excluding Tree and PAT
    at least. Unset, another list, or the per-collective form (`allreduce:ring;...`, where the collectives it
    does not name keep every algorithm) is not."""
    if value is None or ":" in value or ";" in value:
        return False
    spec = value.strip().lower()
    names = {n.strip() for n in spec.lstrip("^").split(",") if n.strip()}
    if spec.startswith("^"):
        return {"tree", "pat"} <= names and "ring" not in names
    return names == {"ring"}


def sockets_on_fabric(node: NodeFacts) -> bool | None:
    """Whether NCCL's sockets (bootstrap, and the socket transport) use the node's CX-7 addresses: True when its
    NCCL_SOCKET_IFNAME selects an addressed CX-7 netdev, False when it selects none, None when it is not set.

    NVIDIA/nccl 5067397 `src/misc/socket.cc` 196-220 (ncclFindInterfaces): a NCCL_SOCKET_IFNAME longer than one
    character is matched by ncclOsFindInterfaces with matchIfList's syntax (prefix, `=` exact, `^` exclude), the same
    as NCCL_IB_HCA's; unset, NCCL takes `ib*` interfaces, else the first other than docker, lo and virbr in
    getifaddrs order, which the inspection cannot tell. NVIDIA's launcher sets NCCL_SOCKET_IFNAME=enP7s7, the
    management port (`spark_cluster_setup.py` 256)."""
    value = node.nccl.get("NCCL_SOCKET_IFNAME")
    if value is None or len(value.strip()) <= 1:
        return None
    addressed = [f.netdev for f in node.functions if f.ipv4]
    selected = bool(select_hcas(value, addressed))
    # An exclusion (`^docker,lo`) that leaves CX-7 netdevs in leaves the choice to getifaddrs' order: unknown.
    return None if selected and value.strip().startswith("^") else selected


def runtime_connect_off(settings: Mapping[str, str]) -> str | None:
    """The setting that turns NCCL's runtime connect off (`NCCL_RUNTIME_CONNECT=0`, `NCCL_CUMEM_ENABLE=0`), or None.

    NVIDIA/nccl 5067397 src/init.cc 1552: `comm->runtimeConn = comm->cuMemSupport && ncclParamRuntimeConnect()`;
    without it Ring, Tree and PAT are connected at init (1553-1570). src/misc/cudawrap.cc 47-51: NCCL_CUMEM_ENABLE
    >= 0 decides cuMem outright. NCCL reads an integer only when set and non-empty, as strtoll does (`nccl_int`):
    `0x0`, `00` and a value no digit starts are 0 too.

    >>> [runtime_connect_off({"NCCL_RUNTIME_CONNECT": v}) for v in ("0", " 0x0", "1", "", "off")]
    ['NCCL_RUNTIME_CONNECT=0', 'NCCL_RUNTIME_CONNECT=0x0', None, None, 'NCCL_RUNTIME_CONNECT=off']
    """
    for name in ("NCCL_RUNTIME_CONNECT", "NCCL_CUMEM_ENABLE"):
        value = settings.get(name)
        if nccl_int(value) == 0:
            return f"{name}={(value or '').strip()}"
    return None
