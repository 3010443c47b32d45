"""Parse an NCCL_DEBUG=INFO log into the transport facts that prove how NCCL moved data (IB or Socket).

Other lines (nccl-tests rows, mpirun noise) are normal in such a log and are skipped. Handles the
timestamp prefix of WARN lines (>= 2.26), Open MPI --tag-output prefixes, every per-QP line format
(<= 2.20 "Dev", 2.21-2.28 "NCCL Dev ... IbDev" with or without query_ece, HEAD "qp_num") and both
env-echo forms ("set by environment to" and the newer "set to").
"""

from __future__ import annotations

import ipaddress
import re

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text

SPEC = "nccl_log"

_MPI_TAG = re.compile(r"^\[[0-9]+,[0-9]+\]<std(?:out|err)>:\s?")  # mpirun --tag-output
# vLLM / Ray prefix their workers' lines: "(EngineCore_DP0 pid=2301) (RayWorkerWrapper pid=2981, ip=...) "
_PROCESS_TAGS = re.compile(r"^(?:\([^()\n]{1,200}\) )+")
_LINE = re.compile(  # optional "[%F %T] " timestamp (WARN, >= 2.26), then host:pid:tid [cudaDev]
    r"^(?:\[[^\]]*\] )?(?P<host>[^\s:\[\]]+):[0-9]+:[0-9]+ \[-?[0-9]+\] "
    r"(?:.*? )?NCCL (?P<lvl>INFO|WARN|TRACE) (?P<msg>.*)$"
)
# Lines quoted without the "host:pid:tid [dev] NCCL INFO" prefix (forum and issue excerpts), with an optional
# "[%F %T] " timestamp and an optional "[dev] file.cc:line (function) NCCL WARN " rest of the prefix.
_TIMESTAMP = re.compile(r"^\[[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.,]{5,20}\] ")
_BARE_LEVEL = re.compile(r"^(?:\[-?[0-9]+\] )?(?:[\w./-]+:[0-9]+ )?(?:\([\w:~]+\) )?NCCL (INFO|WARN|TRACE) (.*)$")
_VERSION = re.compile(r"^NCCL version ([0-9]+(?:\.[0-9]+)+)")
_NETWORK = re.compile(r"^Using network (\S+)")
_IB_USING = re.compile(r"^NET/IB\w*\s*: Using (.*)$")
_SOCKET_USING = re.compile(r"^NET/Socket\s*: Using (.*)$")
_NO_IB = re.compile(r"^NET/IB\w*\s*: No device found")
_CHANNEL = re.compile(r"\bvia NET/(\w+)/([0-9]{1,9})\b")
_ENV = re.compile(r"^(\w+) set by environment to (.*)$|^(NCCL_\w+) set to (.*)$")
_QP = re.compile(  # bounded gap (query_ece={...} is < 100 chars): an open ".*?" per "Dev" is quadratic
    r"\b(?:I[bB]Dev (?P<ibdev>[0-9]{1,9})|Dev [0-9]{1,9}) Port [0-9]+ (?:qpn|qp_num) [0-9]+ mtu [0-9]+ "
    r"(?:.{0,400}? )?GID (?P<gid>-?[0-9]{1,9}) \((?P<sp>[0-9A-Fa-f]{1,16})/(?P<iid>[0-9A-Fa-f]{1,16})\)"
)
_DEV_NAME = re.compile(r"\[[0-9]+\]([^\s:\[\]/]+)")


class NcclQpGid(msgspec.Struct, frozen=True):
    """The GID one RDMA QP was connected with; `ipv4` is set only for an IPv4-mapped (RoCE v2 IPv4) GID."""

    ib_dev: int | None
    gid_index: int
    ipv4: str | None


class NcclRankLog(msgspec.Struct, frozen=True):
    """One host's lines of a merged mpirun log: the network its NCCL chose ("Using network X", the last one), its
    "NET/IB : Using" devices, whether its IB transport found no device, its "NET/Socket : Using" devices, and the
    transport of each of its Channel lines (as often as each appears)."""

    host: str
    network: str | None = None
    ib_devices: tuple[str, ...] = ()
    no_ib_device: bool = False
    socket_devices: tuple[str, ...] = ()
    channel_transports: tuple[str, ...] = ()


class NcclLog(msgspec.Struct, frozen=True):
    """What an NCCL debug log says about versions, devices, the chosen transport and GIDs."""

    nccl_version: str | None
    network: str | None
    ib_devices: tuple[str, ...]
    socket_devices: tuple[str, ...]
    no_ib_device: bool
    channel_net_devs: tuple[int, ...]
    channel_transports: tuple[str, ...]
    env_params: tuple[tuple[str, str], ...]
    qp_gids: tuple[NcclQpGid, ...]
    warnings: tuple[str, ...]
    hosts: tuple[str, ...]
    lines_matched: int
    # Per host, the IB devices its "NET/IB : Using" line named, in NCCL's device order (the index NCCL connects
    # by across ranks); the first such line of a host is kept. Bare lines without a host prefix add nothing.
    ib_devices_by_host: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Per host, what its own rank chose and used: a cluster's transport proof names the rank that fell back, which
    # the job-wide fields above cannot (every host's lines are merged into them).
    ranks: tuple[NcclRankLog, ...] = ()

    @property
    def env(self) -> dict[str, str]:
        """The NCCL_* parameters NCCL echoed back, as a dict (last value wins)."""
        return dict(self.env_params)

    @property
    def uses_socket(self) -> bool:
        """True when NCCL fell back to (or was told to use) the TCP socket transport."""
        return (
            self.network == "Socket"
            or "Socket" in self.channel_transports
            or (bool(self.socket_devices) and not self.ib_devices)
        )


class _RankAcc(msgspec.Struct):
    network: str | None = None
    ib_devices: tuple[str, ...] = ()
    no_ib: bool = False
    socket_devices: tuple[str, ...] = ()
    channels: list[str] = msgspec.field(default_factory=list)


class _Acc(msgspec.Struct):
    version: str | None = None
    network: str | None = None
    ib_devices: dict[str, None] = msgspec.field(default_factory=dict)  # ordered sets
    socket_devices: dict[str, None] = msgspec.field(default_factory=dict)
    no_ib: bool = False
    net_devs: set[int] = msgspec.field(default_factory=set)
    transports: set[str] = msgspec.field(default_factory=set)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    qps: dict[NcclQpGid, None] = msgspec.field(default_factory=dict)
    warnings: list[str] = msgspec.field(default_factory=list)
    hosts: dict[str, None] = msgspec.field(default_factory=dict)
    matched: int = 0
    host: str | None = None  # the host of the line being read
    ib_by_host: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    ranks: dict[str, _RankAcc] = msgspec.field(default_factory=dict)

    def rank(self) -> _RankAcc | None:
        """The accumulator of the current line's host (None for a bare line: it names no host)."""
        if self.host is None:
            return None
        return self.ranks.setdefault(self.host, _RankAcc())


def parse_nccl_log(text: str) -> NcclLog:
    """Parse NCCL_DEBUG=INFO output (NCCL_DEBUG_SUBSYS=INIT,NET gives the per-QP GID lines).

    >>> log = parse_nccl_log(
    ...     "spark-a:2430:2430 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO];"
    ...     " OOB enp1s0f1np1:192.168.100.15<0>\\n"
    ...     "spark-a:2430:2430 [0] NCCL INFO Using network IB\\n"
    ...     "spark-a:2430:2438 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 576 mtu 3 GID 3"
    ...     " (0/F64A8C0FFFF0000) fifoRkey=0x1b9e9c fifoLkey=0x1b9e9c\\n")
    >>> log.ib_devices, log.network, log.qp_gids[0].ipv4, log.uses_socket
    (('rocep1s0f1', 'roceP2p1s0f1'), 'IB', '192.168.100.15', False)
    """
    text = require_text(SPEC, text)
    acc = _Acc()
    for raw in text.split("\n"):
        line = _PROCESS_TAGS.sub("", _MPI_TAG.sub("", raw.strip()), count=1)
        m = _LINE.match(line)
        if m is not None:
            acc.matched += 1
            acc.hosts[m.group("host")] = None
            acc.host = m.group("host")
            _message(acc, m.group("lvl"), m.group("msg").strip())
        else:
            acc.host = None
            _bare_line(acc, line)
    if acc.matched == 0:
        raise ParseError(SPEC, "no NCCL debug lines")
    return NcclLog(
        nccl_version=acc.version, network=acc.network, ib_devices=tuple(acc.ib_devices),
        socket_devices=tuple(acc.socket_devices), no_ib_device=acc.no_ib,
        channel_net_devs=tuple(sorted(acc.net_devs)), channel_transports=tuple(sorted(acc.transports)),
        env_params=tuple(acc.env.items()), qp_gids=tuple(acc.qps), warnings=tuple(acc.warnings),
        hosts=tuple(acc.hosts), lines_matched=acc.matched, ib_devices_by_host=tuple(acc.ib_by_host.items()),
        ranks=tuple(NcclRankLog(host, r.network, r.ib_devices, r.no_ib, r.socket_devices, tuple(r.channels))
                    for host, r in acc.ranks.items()),
    )


def _message(acc: _Acc, level: str, msg: str) -> bool:
    """Record one message; True when a handler knew it (a WARN is always kept)."""
    if level == "WARN":
        acc.warnings.append(msg)
    return any(handler(acc, msg) for handler in _HANDLERS)


def _bare_line(acc: _Acc, line: str) -> None:
    """A line without host:pid:tid: counted when it is a WARN or a message a handler knows.

    NCCL_DEBUG=VERSION prints "NCCL version ..." this way, and pasted excerpts often start at the message.
    """
    msg = _TIMESTAMP.sub("", line, count=1)
    level = _BARE_LEVEL.match(msg)
    lvl, text = (level.group(1), level.group(2).strip()) if level else ("INFO", msg.strip())
    if text and (_message(acc, lvl, text) or lvl == "WARN"):
        acc.matched += 1


def _version_network(acc: _Acc, msg: str) -> bool:
    m = _VERSION.match(msg)
    if m is not None:
        acc.version = acc.version or m.group(1)  # "+cudaX.Y" suffix dropped; first rank's version kept
        return True
    m = _NETWORK.match(msg)
    if m is not None:
        acc.network = m.group(1)
        rank = acc.rank()
        if rank is not None:
            rank.network = m.group(1)
    return m is not None


def _devices(acc: _Acc, msg: str) -> bool:
    rank = acc.rank()
    if _NO_IB.match(msg):
        acc.no_ib = True
        if rank is not None:
            rank.no_ib = True
        return True
    m = _IB_USING.match(msg)
    if m is not None:  # "[0]mlx5_0:1/RoCE [1]mlx5_1:1:0/RoCE [RO]; OOB eth0:..." -> device names only
        names = [n for name in _DEV_NAME.findall(m.group(1).split(";")[0]) for n in name.split("+")]
        acc.ib_devices.update(dict.fromkeys(names))  # merged virtual NICs: "a+b"
        if acc.host is not None:
            acc.ib_by_host.setdefault(acc.host, tuple(names))
        if rank is not None and not rank.ib_devices:
            rank.ib_devices = tuple(names)
        return True
    m = _SOCKET_USING.match(msg)
    if m is not None:
        acc.socket_devices.update(dict.fromkeys(_DEV_NAME.findall(m.group(1))))
        if rank is not None:
            rank.socket_devices = tuple(dict.fromkeys(_DEV_NAME.findall(m.group(1))))
    return m is not None


def _channel(acc: _Acc, msg: str) -> bool:
    m = _CHANNEL.search(msg) if msg.startswith("Channel") else None
    if m is not None:
        acc.transports.add(m.group(1))
        rank = acc.rank()
        if rank is not None:
            rank.channels.append(m.group(1))
        if m.group(1).startswith("IB"):  # IB and IB plugins such as IBext_v8
            acc.net_devs.add(int(m.group(2)))
    return m is not None


def _env(acc: _Acc, msg: str) -> bool:
    m = _ENV.match(msg)
    if m is None:
        return False
    name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if re.fullmatch(r"-?[0-9]+\.", value):  # numeric params print "%lld."
        value = value[:-1]
    acc.env[name] = value
    return True


def _qp(acc: _Acc, msg: str) -> bool:
    m = _QP.search(msg) if msg.startswith("NET/IB") else None
    if m is None:
        return False
    ib_dev = int(m.group("ibdev")) if m.group("ibdev") else None  # <= 2.20 prints only NCCL's "Dev"
    acc.qps[NcclQpGid(ib_dev, int(m.group("gid")), _gid_ipv4(m.group("sp"), m.group("iid")))] = None
    return True


_HANDLERS = (_version_network, _devices, _channel, _env, _qp)


def _gid_ipv4(subnet_prefix: str, interface_id: str) -> str | None:
    """Decode NCCL's `(%lX/%lX)`: raw GID halves printed as little-endian 64-bit integers."""
    raw = int(interface_id, 16).to_bytes(8, "little")
    if int(subnet_prefix, 16) != 0 or raw[:4] != b"\x00\x00\xff\xff":
        return None  # link-local fe80:: (subnet prefix 0x80FE) or an IPv6 GID
    return str(ipaddress.IPv4Address(raw[4:]))
