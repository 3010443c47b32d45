"""RDMA port views from `rdma link` and `ibdev2netdev`, all versions: which netdev an RDMA port serves.

Why two parsers for one fact: neither tool is everywhere (ibdev2netdev is an MLNX_OFED extra, `rdma`
needs RDMA netlink). `ibv_devinfo` and `ibstat` live in ibverbs.py: a diagnosis rarely needs them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text

# ---------------------------------------------------------------- rdma link (iproute2 rdma/link.c)

# "link mlx5_0/1 state ..." (iproute2 >= 4.19) or "0/1: mlx5_0/1: state ..." (4.16-4.18).
_RDMA_LINK_RE = re.compile(r"^(?:link\s+|[0-9]{1,9}/[0-9]{1,9}:\s+)([^\s/]+)/([0-9]{1,4}):?(?:\s+(.*))?$")


class RdmaPort(msgspec.Struct, frozen=True):
    """One RDMA device port and the netdev the kernel binds to it (none on InfiniBand ports)."""

    device: str
    port: int
    state: str | None
    physical_state: str | None
    netdev: str | None


def _rdma_link_text_line(line: str, line_no: int) -> RdmaPort:
    match = _RDMA_LINK_RE.match(line.strip())
    if match is None:
        raise ParseError("rdma_link", f"unexpected line {line.strip()[:80]!r}", line_no)
    tokens = (match.group(3) or "").split()
    if len(tokens) % 2:
        raise ParseError("rdma_link", "attributes are not key/value pairs", line_no)
    attrs = dict(zip(tokens[::2], tokens[1::2], strict=True))
    return RdmaPort(match.group(1), int(match.group(2)), attrs.get("state"), attrs.get("physical_state"),
                    attrs.get("netdev"))


def _opt_str(obj: dict[str, Any], key: str, spec: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ParseError(spec, f"{key!r} is {type(value).__name__}, expected a string")


def _rdma_link_json_item(obj: Any) -> RdmaPort:
    spec = "rdma_link"
    if not isinstance(obj, dict):
        raise ParseError(spec, "JSON array holds a non-object")
    name = _opt_str(obj, "ifname", spec)
    port = obj.get("port")
    if name is None or not isinstance(port, int) or isinstance(port, bool):
        raise ParseError(spec, "object lacks ifname or an integer port")
    # iproute2 4.16-4.18 spelled ifname "mlx5_0/1"; later versions just "mlx5_0".
    if name.endswith(f"/{port}"):
        name = name[: -len(f"/{port}")]
    return RdmaPort(name, port, _opt_str(obj, "state", spec), _opt_str(obj, "physical_state", spec),
                    _opt_str(obj, "netdev", spec))


def parse_rdma_link(text: str) -> tuple[RdmaPort, ...]:
    """Parse `rdma link show` text (lines end in a space, `-d` adds caps lines) or `rdma -j link show`.

    Empty output and `[]` both mean no RDMA devices.

    >>> parse_rdma_link("link rocep1s0f1/1 state DOWN physical_state DISABLED netdev enp1s0f1np1 \\n")
    (RdmaPort(device='rocep1s0f1', port=1, state='DOWN', physical_state='DISABLED', netdev='enp1s0f1np1'),)
    """
    spec = "rdma_link"
    if "\x00" in text:
        raise ParseError(spec, "binary data (NUL bytes)")
    stripped = text.strip()
    if not stripped:
        return ()
    if stripped[0] in "[{":
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError) as exc:
            raise ParseError(spec, f"invalid or truncated JSON: {exc}") from None
        return tuple(_rdma_link_json_item(o) for o in (data if isinstance(data, list) else [data]))
    ports: list[RdmaPort] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.strip().startswith("caps: <") and ports:
            continue
        ports.append(_rdma_link_text_line(line, line_no))
    return tuple(ports)


# ---------------------------------------------------------------- ibdev2netdev (MLNX_OFED script)

_I2N_PLAIN_RE = re.compile(r"^(\S+) port ([0-9]{1,4}) ==> (\S+) \((\w+)\)$")
# -v: "<bdf> <dev> (MT4129 - PART) <description> fw <ver> port <p> (<IB STATE padded>) ==> <if> (<state>)";
# the description is word-split VPD text, so anchor on the tail and the first two words only.
# Tail searched and head cut in code: one "^(.*?)\s+\(.*\bport" regex backtracks quadratically.
_I2N_VERBOSE_TAIL_RE = re.compile(
    r"\bport (?P<port>[0-9]{1,4}) \((?P<ib>[A-Za-z_]+)\s*\) ==> (?P<net>\S+) \((?P<ls>\w+)\)$"
)
_BDF_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class Ibdev2NetdevEntry(msgspec.Struct, frozen=True):
    """One `ibdev2netdev` line; `link_state` is the netdev carrier: Up, Down or NA."""

    device: str
    port: int
    netdev: str
    link_state: str
    pci_bdf: str | None = None
    ib_state: str | None = None


def _ibdev2netdev_line(line: str, line_no: int) -> Ibdev2NetdevEntry:
    plain = _I2N_PLAIN_RE.match(line)
    if plain:
        return Ibdev2NetdevEntry(plain.group(1), int(plain.group(2)), plain.group(3), plain.group(4))
    verbose = _I2N_VERBOSE_TAIL_RE.search(line)
    before, paren, _ = line[: verbose.start()].partition("(") if verbose else ("", "", "")
    head = before.split() if paren and before[-1:].isspace() else []
    if verbose is None or not 1 <= len(head) <= 2:
        raise ParseError("ibdev2netdev", f"unexpected line {line[:80]!r}", line_no)
    bdf = head[0] if len(head) == 2 and _BDF_RE.match(head[0]) else None
    if len(head) == 2 and bdf is None:
        raise ParseError("ibdev2netdev", f"{head[0]!r} is not a PCI address", line_no)
    ib_state = verbose.group("ib")
    return Ibdev2NetdevEntry(head[-1], int(verbose.group("port")), verbose.group("net"), verbose.group("ls"),
                             bdf, None if ib_state == "NA" else ib_state)


def parse_ibdev2netdev(text: str) -> tuple[Ibdev2NetdevEntry, ...]:
    """Parse `ibdev2netdev` or `ibdev2netdev -v`; line order varies between hosts, so keep it as given.

    >>> parse_ibdev2netdev("roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)\\n")[0].netdev
    'enP2p1s0f1np1'
    """
    text = require_text("ibdev2netdev", text)
    lines = enumerate(text.split("\n"), start=1)
    return tuple(_ibdev2netdev_line(line.strip(), n) for n, line in lines if line.strip())
