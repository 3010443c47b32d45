"""Ansible inventories, read only, INI or YAML: which hosts, and how to reach them (ansible_host, ansible_user,
ansible_port, ansible_ssh_private_key_file and their older ansible_ssh_* names).

Pure functions over the file's text; nothing of Ansible is imported or run. Group variables apply as Ansible
applies them: `all` first, then deeper groups over shallower ones (siblings by name), the host's own last.
Every refusal is a ConfigError naming file:line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.cluster.hostlist import MAX_HOSTS, HostRangeError, expand_ansible_pattern
from linkcheck.errors import ConfigError
from linkcheck.integers import NumberError, bounded_int, quoted
from linkcheck.transport.base import MAX_PORT
from linkcheck.yamlfile import LineDict, line_of, parse_yaml_text

# The variables that say where a host is; the ansible_ssh_* spellings are the pre-2.0 ones, still honoured.
HOST_VARS = ("ansible_host", "ansible_ssh_host")
USER_VARS = ("ansible_user", "ansible_ssh_user")
PORT_VARS = ("ansible_port", "ansible_ssh_port")
KEY_VARS = ("ansible_ssh_private_key_file", "ansible_private_key_file")
_GROUP_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}\Z")
# A section header as Ansible's INI plugin reads one (lib/ansible/plugins/inventory/ini.py, _compile_patterns:
# `^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:\#.*)?$`), tried before anything else on a line: `[db]` and `[cafe]` are groups,
# whatever letters they are made of. A group name has no colon, so `[fd00::1]:22` is never a header.
_SECTION_RE = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?\Z")
_SECTION_KINDS = ("vars", "children")
_YAML_KEY_RE = re.compile(r"^[^\s=\[\]]+:(\s|$)")  # `all:` or `all: {...}`; an INI `host:22` has no blank
_BRACKETED_V6_RE = re.compile(r"^\[([0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)\](?::([^:]*))?\Z")
MAX_GROUP_DEPTH = 64  # groups below groups below ...: far past any real inventory, and no walk goes deeper


class InventoryHost(msgspec.Struct, frozen=True):
    """One host as the inventory names it, with the connection variables that apply to it."""

    name: str  # the inventory hostname (an alias when ansible_host is set)
    line: int  # where it is first named
    host: str
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None


class _Group(msgspec.Struct):
    """A group while the inventory is read (a draft: hosts and children are added as they come)."""

    line: int
    hosts: list[str] = msgspec.field(default_factory=list)
    children: list[str] = msgspec.field(default_factory=list)
    vars: dict[str, tuple[Any, int]] = msgspec.field(default_factory=dict)


class _Inventory(msgspec.Struct):
    """What an inventory file declares: groups, and each host's own variables and port."""

    path: str
    groups: dict[str, _Group] = msgspec.field(default_factory=dict)
    host_vars: dict[str, dict[str, tuple[Any, int]]] = msgspec.field(default_factory=dict)
    host_line: dict[str, int] = msgspec.field(default_factory=dict)

    def group(self, name: str, line: int) -> _Group:
        if not _GROUP_RE.match(name):
            raise ConfigError(self.path, f"bad group name {quoted(name)}", line=line)
        return self.groups.setdefault(name, _Group(line=line))

    def add_host(self, group: str, pattern: str, line: int, host_vars: Mapping[str, Any]) -> None:
        for name, port in _expand_host(self.path, pattern, line):
            if name not in self.host_line and len(self.host_line) >= MAX_HOSTS:
                raise ConfigError(self.path, f"the inventory names more than {MAX_HOSTS} hosts", line=line)
            self.host_line.setdefault(name, line)
            own = self.host_vars.setdefault(name, {})
            own.update({k: (v, line) for k, v in host_vars.items()})
            if port is not None:
                own.setdefault("ansible_port", (port, line))
            members = self.group(group, line).hosts
            if name not in members:
                members.append(name)


def _expand_host(path: str, pattern: str, line: int) -> list[tuple[str, int | None]]:
    """A host pattern (ranges, an optional :port, IPv6 bare or in brackets) as (name, port) pairs."""
    bracketed = _BRACKETED_V6_RE.match(pattern)
    if bracketed:
        port_text = bracketed.group(2)
        return [(bracketed.group(1), None if port_text is None else _port(path, line, port_text, pattern))]
    if pattern.count(":") > 1 and "[" not in pattern:
        return [(pattern, None)]  # a bare IPv6 address carries no port
    port: int | None = None
    if ":" in pattern.rsplit("]", 1)[-1]:
        pattern, port_text = pattern.rsplit(":", 1)
        port = _port(path, line, port_text, f"{pattern}:{port_text}")
    try:
        names = expand_ansible_pattern(pattern)
    except HostRangeError as exc:
        raise ConfigError(path, str(exc), line=line) from None
    return [(name, port) for name in names]


def _port(path: str, line: int, text: str, where: str) -> int:
    try:
        return bounded_int(text, 1, MAX_PORT, "port")
    except NumberError as exc:
        raise ConfigError(path, f"bad {exc} in host {quoted(where)}", line=line) from None


def parse_ini_inventory(text: str, path: str, group: str | None = None) -> tuple[InventoryHost, ...]:
    """An INI inventory's hosts (those of `group` and its children when given), in the order first named.

    >>> [h.host for h in parse_ini_inventory("[sparks]\\nspark[01:02] ansible_user=nv\\n", "hosts")]
    ['spark01', 'spark02']
    """
    inv = _Inventory(path)
    section, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = _SECTION_RE.match(line)
        if header is not None or (line.startswith("[") and not _BRACKETED_V6_RE.match(line.split()[0])):
            if header is None or (header.group(2) is not None and header.group(2) not in _SECTION_KINDS):
                raise ConfigError(path, f"bad section header {quoted(line)} (expected [group], [group:vars] or "
                                  "[group:children])", line=number)
            section, kind = header.group(1), header.group(2) or "hosts"
            inv.group(section, number)
            continue
        _ini_line(inv, section, kind, line, number)
    return _hosts(inv, group)


def _ini_line(inv: _Inventory, section: str, kind: str, text: str, number: int) -> None:
    if kind == "vars":
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError(inv.path, f"expected key=value in [{section}:vars], got {text!r}", line=number)
        value = value.strip()
        if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]  # Ansible keeps the quotes of a :vars value; no user or host has them
        inv.group(section, number).vars[key.strip()] = (value, number)
        return
    if kind == "children":
        child = text.split("#", 1)[0].strip()
        inv.group(child, number)
        members = inv.group(section, number).children
        if child not in members:
            members.append(child)
        return
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError as exc:
        raise ConfigError(inv.path, f"cannot split the host line: {exc}", line=number) from None
    if not tokens:
        return
    host_vars: dict[str, Any] = {}
    for token in tokens[1:]:
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ConfigError(inv.path, f"expected key=value after the host, got {token!r}", line=number)
        host_vars[key] = value
    inv.add_host(section, tokens[0], number, host_vars)


def parse_yaml_inventory(text: str, path: str, group: str | None = None) -> tuple[InventoryHost, ...]:
    """A YAML inventory's hosts (all/children/hosts/vars), those of `group` and its children when given."""
    data = parse_yaml_text(text, path, ConfigError)
    if data is None:
        data = LineDict()
    if not isinstance(data, dict):
        raise ConfigError(path, "expected a mapping of groups (all: {hosts: ..., children: ...})", line=1)
    inv = _Inventory(path)
    for name, body in data.items():
        _yaml_group(inv, str(name), body, line_of(data, str(name)) or 1)
    return _hosts(inv, group)


def _yaml_group(inv: _Inventory, name: str, body: Any, line: int) -> None:
    inv.group(name, line)
    if body is None:
        return
    if not isinstance(body, dict):
        raise ConfigError(inv.path, f"group {name}: expected a mapping of hosts, vars and children", line=line)
    for key in body:
        if key not in ("hosts", "vars", "children"):
            raise ConfigError(inv.path, f"group {name}: unknown key {key!r} (allowed: hosts, vars, children)",
                              line=line_of(body, str(key)))
    for key in ("hosts", "vars", "children"):
        section = body.get(key)
        where = line_of(body, key) or line
        if section is None:
            continue
        if not isinstance(section, dict):
            raise ConfigError(inv.path, f"group {name}: {key} must be a mapping", line=where)
        for item, value in section.items():
            _yaml_item(inv, name, key, str(item), value, line_of(section, str(item)) or where)


def _yaml_item(inv: _Inventory, name: str, key: str, item: str, value: Any, line: int) -> None:
    """One entry under a group's hosts, vars or children."""
    group = inv.groups[name]
    if key == "hosts":
        if value is not None and not isinstance(value, dict):
            raise ConfigError(inv.path, f"host {item}: expected a mapping of variables", line=line)
        inv.add_host(name, item, line, value or {})
    elif key == "vars":
        group.vars[item] = (value, line)
    else:
        _yaml_group(inv, item, value, line)
        if item not in group.children:
            group.children.append(item)


def _order(inv: _Inventory) -> tuple[list[str], dict[str, int]]:
    """The groups parents first, and each group's depth below `all` (the longest way down), in time linear in the
    groups and their child links (however many ways lead to a group, it is reached once). A group that is its own
    ancestor, or that lies deeper than MAX_GROUP_DEPTH, is refused."""
    parents: dict[str, list[str]] = {name: [] for name in inv.groups}
    for name, group in inv.groups.items():
        for child in group.children:
            parents[child].append(name)
    waiting = {name: len(up) for name, up in parents.items()}
    depth = {name: 0 if name == "all" else 1 for name, up in parents.items() if not up}
    ready = [name for name, count in waiting.items() if count == 0]
    order: list[str] = []
    while ready:
        name = ready.pop()
        order.append(name)
        if depth[name] > MAX_GROUP_DEPTH:
            raise ConfigError(inv.path, f"group {name} is nested more than {MAX_GROUP_DEPTH} groups deep",
                              line=inv.groups[name].line)
        for child in inv.groups[name].children:
            depth[child] = max(depth.get(child, 0), depth[name] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    if len(order) < len(inv.groups):
        _refuse_circle(inv, parents, {name for name, count in waiting.items() if count})
    return order, depth


def _refuse_circle(inv: _Inventory, parents: Mapping[str, list[str]], left: set[str]) -> None:
    """Name one circle among the groups `left` (each has a parent among them): walk up until a group repeats."""
    trail: list[str] = []
    seen: dict[str, int] = {}
    name = min(left)
    while name not in seen:
        seen[name] = len(trail)
        trail.append(name)
        name = min(p for p in parents[name] if p in left)
    circle = [name, *reversed(trail[seen[name] + 1:]), name]  # parent -> child, back to where it started
    raise ConfigError(inv.path, f"group {name} is its own child ({' -> '.join(circle)})",
                      line=inv.groups[name].line)


def _masks(inv: _Inventory, order: list[str], index: Mapping[str, int]) -> dict[str, int]:
    """Each group's hosts, its children's included, as a bit mask over the hosts (bit `index[host]`): children
    before parents, each child link followed once."""
    masks: dict[str, int] = {}
    for name in reversed(order):
        group = inv.groups[name]
        mask = 0
        for host in group.hosts:
            mask |= 1 << index[host]
        for child in group.children:
            mask |= masks[child]
        masks[name] = mask
    return masks


def _hosts(inv: _Inventory, group: str | None) -> tuple[InventoryHost, ...]:
    order, depth = _order(inv)
    if group is not None and group not in inv.groups:
        known = ", ".join(sorted(inv.groups)[:20]) or "none"
        raise ConfigError(inv.path, f"no group {quoted(group)} in the inventory (groups: {known})")
    names = list(inv.host_line)
    masks = _masks(inv, order, {name: i for i, name in enumerate(names)})
    chosen = (1 << len(names)) - 1 if group is None or group == "all" else masks[group]
    # Ansible's order: `all`, then groups by depth and name, then the host's own variables.
    merged: dict[int, dict[str, tuple[Any, int]]] = {
        i: dict(inv.groups["all"].vars) if "all" in inv.groups else {} for i in range(len(names)) if chosen >> i & 1}
    for name in sorted((g for g in inv.groups if inv.groups[g].vars), key=lambda g: (depth[g], g)):
        holding = masks[name] & chosen
        for i in merged:
            if holding >> i & 1:
                merged[i].update(inv.groups[name].vars)
    hosts = []
    for i in sorted(merged, key=lambda i: (inv.host_line[names[i]], names[i])):
        merged[i].update(inv.host_vars.get(names[i], {}))
        hosts.append(_host(inv.path, names[i], inv.host_line[names[i]], merged[i]))
    return tuple(hosts)


def _first(merged: Mapping[str, tuple[Any, int]], keys: tuple[str, ...]) -> tuple[Any, int] | None:
    return next((merged[k] for k in keys if k in merged and merged[k][0] not in (None, "")), None)


def _host(path: str, name: str, line: int, merged: Mapping[str, tuple[Any, int]]) -> InventoryHost:
    host, user, port, key = (_first(merged, keys) for keys in (HOST_VARS, USER_VARS, PORT_VARS, KEY_VARS))
    port_value: int | None = None
    if port is not None:
        raw = port[0]
        try:  # an INI value is text; a YAML one may be an integer already
            port_value = bounded_int(raw.strip() if isinstance(raw, str) else raw, 1, MAX_PORT, "ansible_port")
        except NumberError as exc:
            raise ConfigError(path, f"host {name}: bad {exc}", line=port[1]) from None
    for item, what in ((host, "ansible_host"), (user, "ansible_user"), (key, "the key file")):
        if item is not None and not isinstance(item[0], str):
            raise ConfigError(path, f"host {name}: {what} must be text, not {item[0]!r}", line=item[1])
    return InventoryHost(name=name, line=line, host=str(host[0]) if host else name,
                         user=str(user[0]) if user else None, port=port_value,
                         identity_file=str(key[0]) if key else None)


def parse_inventory(text: str, path: str, group: str | None = None) -> tuple[InventoryHost, ...]:
    """An inventory in either format: YAML when its first meaningful line is a `key:` mapping, INI otherwise."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and ln.strip()[0] not in "#;"), "")
    if first == "---" or first.startswith("{") or _YAML_KEY_RE.match(first):
        return parse_yaml_inventory(text, path, group)
    return parse_ini_inventory(text, path, group)
