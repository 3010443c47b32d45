"""`lldpctl -f json` (and `-f json0`): each netdev's LLDP neighbours, as lldpd saw them.

`lldpctl` is `lldpcli show neighbors details`. Its `-f json0` form is a fixed shape where every member is a list
and every value sits in `{"value": ...}`. `-f json` is the same tree folded by lldpd's `json_element_cleanup()`
(src/client/json_writer.c), which makes the shape depend on the data:

- a one-element list becomes its element: one neighbour interface is `{"interface": {"eth0": {...}}}`, several are
  `{"interface": [{"eth0": {...}}, {"eth1": {...}}]}` (a netdev with two neighbours appears twice); one management
  address is a string, several a list;
- an object whose only member is `value` becomes that value: `"descr": "eth1"`;
- an object with a string `name` becomes `{name: the rest}`: a chassis that sends a SysName is keyed by it, one that
  does not has `id` directly; an interface is keyed by its netdev name;
- the words `yes`/`on` and `no`/`off` become JSON booleans.

The neighbour's TTL is under `port` since lldpd 1.0 and under `chassis` in 0.9. A netdev without a neighbour is not
listed; no neighbour at all is `{"lldp": {}}` (json) or `{"lldp": [{}]}` (json0). When lldpd is not running or its
socket is closed to the user, lldpctl prints nothing on stdout and lldpd's `ctl_connect()` (src/ctl.c) logs
`unable to connect to socket PATH: <strerror>` on stderr; `lldpd_unreachable` reads that line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from linkcheck.errors import ParseError
from linkcheck.integers import NumberError, bounded_int, quoted

SPEC = "lldp"
MAX_TTL_S = 65535  # the TTL TLV's field is 16 bits (IEEE 802.1AB)


class LldpNeighbour(msgspec.Struct, frozen=True):
    """One neighbour seen on one local netdev. `chassis_id_type` and `port_id_type` are lldpd's subtype words
    (`mac`, `ifname`, `local`, `ip`, `ifalias`); a node running lldpd sends its chassis MAC as the chassis id, its
    netdev's MAC as the port id (`mac`) and the netdev's name as the port description."""

    interface: str
    chassis_id: str | None
    chassis_id_type: str | None
    system_name: str | None
    port_id: str | None
    port_id_type: str | None
    port_descr: str | None
    ttl: int | None
    mgmt_ips: tuple[str, ...]


class LldpNeighbours(msgspec.Struct, frozen=True):
    """Every neighbour lldpctl listed, in its order; `form` is `json`, `json0` or `empty` (no output at all)."""

    neighbours: tuple[LldpNeighbour, ...]
    form: str

    def on(self, interface: str) -> tuple[LldpNeighbour, ...]:
        """The neighbours seen on one local netdev (none, one, or several behind a hub or a switch that floods)."""
        return tuple(n for n in self.neighbours if n.interface == interface)

    @property
    def interfaces(self) -> tuple[str, ...]:
        """The local netdevs with at least one neighbour, in lldpctl's order."""
        return tuple(dict.fromkeys(n.interface for n in self.neighbours))


class LldpdUnreachable(ParseError):
    """lldpctl could not reach lldpd: `cause` is `not_running` (no socket, or a socket nobody listens on),
    `permission` (the socket is root:_lldpd 0770 and the user is in neither) or `other`."""

    def __init__(self, reason: str, cause: str) -> None:
        super().__init__(SPEC, reason)
        self.cause = cause


# src/ctl.c: log_warn("control", "unable to connect to socket %s", name), which log_warn ends with ": strerror".
# A terminal gets an ANSI reset after the level tag; LC_ALL=C keeps strerror in English.
_CONNECT_RE = re.compile(r"unable to connect to socket (\S+): ([^\n\x1b]*)")
_CANNOT_CONNECT = "Unable to connect to lldpd daemon"  # src/lib/errors.c, LLDPCTL_ERR_CANNOT_CONNECT
_NOT_RUNNING = ("No such file or directory", "Connection refused")


def lldpd_unreachable(text: str) -> LldpdUnreachable | None:
    """The error lldpctl's words (its stderr, or stdout and stderr together) describe, or None.

    >>> lldpd_unreachable("2021-07-23T17:12:15 [WARN/control] unable to connect to socket /run/lldpd.socket: "
    ...                   "No such file or directory\\n").cause
    'not_running'
    >>> lldpd_unreachable('{"lldp": {}}') is None
    True
    """
    match = _CONNECT_RE.search(text)
    if match is None:
        if _CANNOT_CONNECT in text:
            return LldpdUnreachable("lldpctl cannot reach lldpd (Unable to connect to lldpd daemon)", "other")
        return None
    path, why = match.group(1), match.group(2).strip()
    if why in _NOT_RUNNING:
        state = "no socket" if why == _NOT_RUNNING[0] else "a socket nobody listens on"
        return LldpdUnreachable(f"lldpd is not running ({state} at {path})", "not_running")
    if why == "Permission denied":
        return LldpdUnreachable(f"no access to lldpd's socket {path} (it is root:_lldpd 0770: the user needs the"
                                " _lldpd group or sudo)", "permission")
    return LldpdUnreachable(f"lldpctl cannot reach lldpd at {path}: {why}", "other")


def parse_lldpctl_json(text: str) -> LldpNeighbours:
    """Parse `lldpctl -f json` or `lldpctl -f json0` (`lldpcli -f json[0] show neighbors [details]`).

    Raises LldpdUnreachable (a ParseError) for lldpctl's words when it cannot reach lldpd, ParseError for anything
    else that is not lldpctl's JSON.

    >>> out = parse_lldpctl_json('{"lldp": {"interface": {"enp1s0f0np0": {"via": "LLDP", "chassis": {"spark-b": '
    ...     '{"id": {"type": "mac", "value": "4c:bb:47:00:00:02"}}}, "port": {"id": {"type": "mac", "value": '
    ...     '"4c:bb:47:00:00:12"}, "descr": "enp1s0f1np1", "ttl": "120"}}}}}')
    >>> n = out.neighbours[0]
    >>> n.interface, n.system_name, n.port_descr, n.ttl, out.form
    ('enp1s0f0np0', 'spark-b', 'enp1s0f1np1', 120, 'json')
    >>> parse_lldpctl_json('{"lldp": [{}]}')
    LldpNeighbours(neighbours=(), form='json0')
    """
    if "\x00" in text:
        raise ParseError(SPEC, "binary data (NUL bytes)")
    body = text.strip().lstrip("\ufeff")
    if not body:
        return LldpNeighbours((), "empty")
    if body[0] not in "{[":
        unreachable = lldpd_unreachable(body)
        if unreachable is not None:
            raise unreachable
        raise ParseError(SPEC, f"not JSON (lldpctl without -f json prints text): {body.splitlines()[0][:60]!r}", 1)
    try:
        data = json.loads(body, strict=False)  # a raw control character in a name is data, not a fault
    except json.JSONDecodeError as exc:
        raise ParseError(SPEC, f"invalid or truncated JSON: {exc.msg}", exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise ParseError(SPEC, f"invalid JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict) or "lldp" not in data:
        raise ParseError(SPEC, 'expected a JSON object with an "lldp" member (lldpctl -f json)')
    top = data["lldp"]
    if isinstance(top, dict):
        sections, form = [top], "json"
    elif isinstance(top, list) and all(isinstance(s, dict) for s in top):
        sections, form = top, "json0"
    else:
        raise ParseError(SPEC, f'"lldp" is {_kind(top)}, expected an object or a list of objects')
    neighbours = tuple(_neighbour(name, entry) for section in sections
                       for name, entry in _entries(section.get("interface")))
    return LldpNeighbours(neighbours, form)


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _named_entry(entry: dict[str, Any]) -> bool:
    return isinstance(entry.get("name"), str) and any(k in entry for k in ("chassis", "port", "via", "rid"))


def _entries(value: object) -> Iterator[tuple[str, dict[str, Any]]]:
    """(netdev, neighbour body) pairs of an `interface` member in any of its shapes."""
    if value is None:
        return
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, dict):
            raise ParseError(SPEC, f"an interface entry is {_kind(item)}, expected an object")
        if _named_entry(item):  # json0: {"name": "eth0", "via": ..., "chassis": [...], ...}
            yield item["name"], item
            continue
        for name, body in item.items():  # json: {"eth0": {...}} or [{"eth0": {...}}, ...]
            if not isinstance(body, dict):
                raise ParseError(SPEC, f"interface {name[:40]!r} is {_kind(body)}, expected an object")
            yield name, body


def _neighbour(interface: str, body: dict[str, Any]) -> LldpNeighbour:
    if not interface:
        raise ParseError(SPEC, "an interface without a name")
    system_name, chassis = _chassis(body.get("chassis"), interface)
    port = _object(body.get("port"), f"{interface}: port")
    chassis_id, chassis_id_type = _typed(chassis.get("id"), f"{interface}: chassis id")
    port_id, port_id_type = _typed(port.get("id"), f"{interface}: port id")
    ttl_text = _text(port.get("ttl", chassis.get("ttl")), f"{interface}: ttl")  # 1.0: port; 0.9: chassis
    # LLDP's TTL is a 16-bit count of seconds (IEEE 802.1AB, the Time To Live TLV): 0 to 65535.
    ttl = None
    if ttl_text is not None:
        try:
            ttl = bounded_int(ttl_text, 0, MAX_TTL_S, "ttl")
        except NumberError:
            raise ParseError(SPEC, f"{interface}: ttl {quoted(ttl_text)} is not a number of seconds (0 to "
                             f"{MAX_TTL_S})") from None
    return LldpNeighbour(
        interface=interface, chassis_id=chassis_id, chassis_id_type=chassis_id_type, system_name=system_name,
        port_id=port_id, port_id_type=port_id_type, port_descr=_text(port.get("descr"), f"{interface}: port descr"),
        ttl=ttl,
        mgmt_ips=_texts(chassis.get("mgmt-ip"), f"{interface}: mgmt-ip"),
    )


def _object(value: object, what: str) -> dict[str, Any]:
    """A member that is one object: json has it bare, json0 as a one-element list; absent is empty."""
    if value is None:
        return {}
    if isinstance(value, list):
        if not value:
            return {}
        value = value[0]
    if not isinstance(value, dict):
        raise ParseError(SPEC, f"{what} is {_kind(value)}, expected an object")
    return value


def _chassis(value: object, interface: str) -> tuple[str | None, dict[str, Any]]:
    """(SysName, the chassis's members): json0 and a nameless json chassis carry `id` directly, a named json
    chassis is `{SysName: {...}}`."""
    chassis = _object(value, f"{interface}: chassis")
    if "name" in chassis and not isinstance(chassis["name"], dict):  # json0, or a json SysName that became a boolean
        return _text(chassis["name"], f"{interface}: chassis name"), chassis
    if "id" in chassis and _is_id(chassis["id"]):
        return None, chassis
    if len(chassis) == 1:
        ((name, inner),) = chassis.items()
        if isinstance(inner, dict):
            return name, inner
    return None, chassis


def _is_id(value: object) -> bool:
    """An id member: {"type": ..., "value": ...}, json0's list of one, or a bare value."""
    if isinstance(value, list):
        value = value[0] if value else None
    return isinstance(value, str) or isinstance(value, dict) and ("type" in value or "value" in value)


def _typed(value: object, what: str) -> tuple[str | None, str | None]:
    """(value, subtype) of a chassis or port id."""
    if value is None:
        return None, None
    if isinstance(value, list):
        if not value:
            return None, None
        value = value[0]
    if isinstance(value, dict):
        return _text(value.get("value"), what), _text(value.get("type"), f"{what} type")
    return _text(value, what), None


def _text(value: object, what: str) -> str | None:
    """A scalar in any of its forms: "x", {"value": "x"}, [{"value": "x"}]. lldpd writes yes/on and no/off as
    booleans; they come back as yes and no."""
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict):
        if set(value) - {"value"}:
            raise ParseError(SPEC, f"{what} is an object without a single value")
        value = value.get("value")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    raise ParseError(SPEC, f"{what} is {_kind(value)}, expected a string")


def _texts(value: object, what: str) -> tuple[str, ...]:
    """A member that may repeat: one string, a list of strings, or json0's list of {"value": ...}."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out = (_text(item, what) for item in items)
    return tuple(v for v in out if v)
