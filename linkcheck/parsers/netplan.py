"""Parser for netplan intent: `netplan get` (merged YAML), one YAML file, or `tail -n +1` of several files.

Several files merge as netplan does (`netplan-generate(8)`): lexicographic by file name, later scalars
override, mappings merge key by key; `addresses` accumulate (observed with netplan 0.106 `get`) while
`link-local` is replaced. Only `ethernets` is modelled: the CX-7 ports are plain ethernets.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from typing import Any

import msgspec
import yaml

from linkcheck.errors import ParseError
from linkcheck.integers import ascii_int

FILE_HEADER_RE = re.compile(r"^==> (.+) <==$")
# GLib warnings netplan >= 0.106 prints when stderr is captured with stdout; blanked to keep line numbers.
GLIB_WARNING_RE = re.compile(r"^\*\* \(.*\): WARNING \*\*")
BOOL_WORDS = {"true": True, "yes": True, "on": True, "y": True, "false": False, "no": False, "off": False,
              "n": False}
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# /run shadows /etc shadows /lib for the same file name.
DIR_PRIORITY = {"/lib/netplan": 0, "/etc/netplan": 1, "/run/netplan": 2}


class NetplanEthernet(msgspec.Struct, frozen=True):
    """One `network.ethernets.<id>` definition after merging; `renderer` is the definition's own."""

    netdef_id: str
    match_name: str | None
    match_mac: str | None
    set_name: str | None
    addresses: tuple[str, ...]
    mtu: int | None
    dhcp4: bool | None
    link_local: tuple[str, ...] | None
    renderer: str | None
    source_file: str | None

    @property
    def ifname(self) -> str:
        """The interface this definition configures: set-name, else a glob-free match name, else the id."""
        if self.set_name:
            return self.set_name
        if self.match_name and not any(c in self.match_name for c in "*?["):
            return self.match_name
        return self.netdef_id


class NetplanConfig(msgspec.Struct, frozen=True):
    """The merged netplan configuration: global renderer, ethernets, and the files merged (in order)."""

    renderer: str | None
    ethernets: tuple[NetplanEthernet, ...]
    files: tuple[str, ...]


def _split_files(text: str) -> list[tuple[str | None, str]]:
    """Split a `tail -n +1 f1 f2 ...` dump on its "==> f <==" headers; no header means one unnamed file."""
    chunks: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.split("\n"):
        header = FILE_HEADER_RE.match(line)
        if header is not None:
            chunks.append((header.group(1), []))
        else:
            chunks[-1][1].append("" if GLIB_WARNING_RE.match(line) else line)
    if len(chunks) > 1 and any(line.strip() for line in chunks[0][1]):
        raise ParseError("netplan", "text before the first '==> file <==' header", 1)
    named: list[tuple[str | None, str]] = [(n, "\n".join(lines)) for n, lines in chunks if n is not None]
    return named or [(None, "\n".join(chunks[0][1]))]


def _merge_order(name: str | None) -> tuple[str, int]:
    if name is None:
        return ("", 0)
    return (posixpath.basename(name), DIR_PRIORITY.get(posixpath.dirname(name), 1))


def _files_in_merge_order(files: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    """Sort by file name; of files sharing a name, keep the one netplan reads (/run, then /etc, then /lib)."""
    by_name: dict[str, tuple[str | None, str]] = {}
    for file in sorted(files, key=lambda f: _merge_order(f[0])):
        by_name[_merge_order(file[0])[0]] = file  # a higher-priority directory replaces the lower
    return [by_name[name] for name in sorted(by_name)]


def _load(name: str | None, body: str) -> dict[str, Any]:
    """yaml.safe_load one file; returns its `network` mapping ({} for an empty file or `network: null`)."""
    where = f"{name}: " if name else ""
    try:  # libyaml's loader when PyYAML has it: the pure-Python one takes seconds per MB
        doc = yaml.load(body, Loader=SAFE_LOADER)  # a SafeLoader, C or Python
    except RecursionError:
        raise ParseError("netplan", f"{where}YAML nested too deeply") from None
    except UnicodeEncodeError:  # libyaml reads UTF-8: a lone surrogate cannot be encoded
        raise ParseError("netplan", f"{where}invalid YAML: text is not valid Unicode") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error).split("\n")[0]
        raise ParseError("netplan", f"{where}invalid YAML: {problem}", line) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or "network" not in doc:
        raise ParseError("netplan", f"{where}top level is not a 'network:' mapping")
    network = doc["network"]
    if network is None:
        return {}
    if not isinstance(network, dict):
        raise ParseError("netplan", f"{where}'network' is not a mapping")
    return network


def _merge(merged: dict[str, Any], new: dict[str, Any], owned: dict[int, object]) -> None:
    """Merge `new` into `merged` in place; `addresses` lists are extended (duplicates cut in _ethernet).

    Copying the merged tree for every file made N files cost N^2. A mapping or list taken from a file is
    copied once, the first time a later file changes it, so YAML aliases shared with other keys never
    change; `owned` keeps the copies (and so their ids) alive.
    """
    for key, value in new.items():
        old = merged.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            _merge(_owned(merged, key, old, owned), value, owned)
        elif key == "addresses" and isinstance(value, list) and isinstance(old, list):
            _owned(merged, key, old, owned).extend(value)
        else:
            merged[key] = value


def _owned(parent: dict[str, Any], key: str, value: Any, owned: dict[int, object]) -> Any:
    if id(value) not in owned:
        value = value.copy()
        owned[id(value)] = value
        parent[key] = value
    return value


def _type_error(netdef: str, key: str, expected: str, value: Any) -> ParseError:
    path = f"ethernets.{netdef}.{key}" if key else f"ethernets.{netdef}"
    return ParseError("netplan", f"{path}: expected {expected}, got {type(value).__name__} {value!r:.40}")


def _str(netdef: str, key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # YAML read an unquoted number; netplan treats every scalar as text first
    raise _type_error(netdef, key, "a string", value)


def _mtu(netdef: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    number = ascii_int(value.strip(), 0, (1 << 32) - 1) if isinstance(value, str) else None
    if number is not None:  # netplan's mtu is an unsigned 32-bit int
        return number
    raise ParseError("netplan", f"ethernets.{netdef}.mtu: invalid unsigned int value {value!r}")


def _bool(netdef: str, key: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in BOOL_WORDS:
        return BOOL_WORDS[value.lower()]
    raise ParseError("netplan", f"ethernets.{netdef}.{key}: invalid boolean value {value!r}")


def _address(netdef: str, item: Any) -> str:
    """A CIDR string from a plain entry or the mapping form `- 10.0.0.15/24: {lifetime: 0}`."""
    if isinstance(item, dict) and len(item) == 1:
        item = next(iter(item))
    if isinstance(item, str) and "/" in item:
        try:
            ipaddress.ip_interface(item.strip())
            return item.strip()
        except ValueError:
            pass
    raise ParseError("netplan", f"ethernets.{netdef}.addresses: malformed address {item!r}, must be IP/NN")


def _str_list(netdef: str, key: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _type_error(netdef, key, "a sequence", value)
    return tuple(_str(netdef, key, v) or "" for v in value)


def _ethernet(netdef: str, body: Any, source: str | None) -> NetplanEthernet:
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise _type_error(netdef, "", "a mapping", body)
    match = body.get("match") or {}
    if not isinstance(match, dict):
        raise _type_error(netdef, "match", "a mapping", match)
    addresses = body.get("addresses")
    if addresses is not None and not isinstance(addresses, list):
        raise _type_error(netdef, "addresses", "a sequence", addresses)
    return NetplanEthernet(
        netdef_id=netdef,
        match_name=_str(netdef, "match.name", match.get("name")),
        match_mac=_str(netdef, "match.macaddress", match.get("macaddress")),
        set_name=_str(netdef, "set-name", body.get("set-name")),
        addresses=tuple(dict.fromkeys(_address(netdef, a) for a in addresses or ())),
        mtu=_mtu(netdef, body.get("mtu")),
        dhcp4=_bool(netdef, "dhcp4", body.get("dhcp4")),
        link_local=_str_list(netdef, "link-local", body.get("link-local")),
        renderer=_str(netdef, "renderer", body.get("renderer")),
        source_file=source,
    )


def parse_netplan(text: str) -> NetplanConfig:
    """Parse netplan YAML (merged, single or several files); empty output is an empty configuration.

    `netplan get` prints nothing when no file configures anything, and so does `network: {}`.

    >>> cfg = parse_netplan("network:\\n  version: 2\\n  ethernets:\\n    enp1s0f1np1:\\n"
    ...                     "      addresses: [192.168.100.10/24]\\n      dhcp4: no\\n")
    >>> eth = cfg.ethernets[0]
    >>> eth.ifname, eth.addresses, eth.dhcp4, eth.mtu
    ('enp1s0f1np1', ('192.168.100.10/24',), False, None)
    """
    if "\x00" in text:
        raise ParseError("netplan", "binary data (NUL bytes)")
    files = _files_in_merge_order(_split_files(text.replace("\r\n", "\n")))
    merged: dict[str, Any] = {}
    owned: dict[int, object] = {}
    sources: dict[str, str | None] = {}
    for name, body in files:
        network = _load(name, body)
        ethernets = network.get("ethernets") or {}
        if not isinstance(ethernets, dict):
            raise ParseError("netplan", f"{name or 'network'}: 'ethernets' is not a mapping")
        for netdef in ethernets:
            sources.setdefault(str(netdef), name)
        _merge(merged, network, owned)
    renderer = merged.get("renderer")
    if renderer is not None and not isinstance(renderer, str):
        raise ParseError("netplan", "renderer: expected a string")
    ethernets = merged.get("ethernets") or {}
    return NetplanConfig(
        renderer=renderer,
        ethernets=tuple(_ethernet(str(k), v, sources.get(str(k))) for k, v in ethernets.items()),
        files=tuple(name for name, _ in files if name is not None),
    )
