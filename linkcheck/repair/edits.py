"""Pure text edits of the files a repair changes: a netplan YAML file (block style, edited line by line so that
comments, order and the other definitions stay as they are) and a KEY=VALUE file (nccl.conf). Each edit returns
the new text, or raises EditError saying why it cannot be made safely: the plan then leaves that file to a person.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from linkcheck.errors import ParseError
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.repair.model import FileEdit

_ETHERNETS = re.compile(r"^(\s*)ethernets:\s*(#.*)?$")
_KEY = re.compile(r"""^(\s*)(["']?)([^"':#\s][^"':#]*?)\2:(\s.*)?$""")
_FLOW_LIST = re.compile(r"^(\s*addresses:\s*)\[(.*)\]\s*(#.*)?$")


class EditError(Exception):
    """The edit cannot be made safely on this text (flow style, the value found more than once, ...)."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _meaningful(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _netdef_block(lines: list[str], netdef: str) -> tuple[int, int, int]:
    """(header line, body indent, end) of `ethernets: <netdef>:` in block style."""
    eth = next((i for i, line in enumerate(lines) if _ETHERNETS.match(line)), None)
    if eth is None:
        raise EditError("no block-style 'ethernets:' mapping")
    eth_indent = _indent(lines[eth])
    for i in range(eth + 1, len(lines)):
        line = lines[i]
        if not _meaningful(line):
            continue
        if _indent(line) <= eth_indent:
            break
        m = _KEY.match(line)
        if m and m.group(3) == netdef and not (m.group(4) or "").strip().lstrip("#"):
            end = i + 1
            while end < len(lines) and (not _meaningful(lines[end]) or _indent(lines[end]) > _indent(line)):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            body = [ln for ln in lines[i + 1:end] if _meaningful(ln)]
            return i, _indent(body[0]) if body else _indent(line) + 2, end
    raise EditError(f"no block-style definition of {netdef} under 'ethernets:'")


def _key_line(lines: list[str], start: int, end: int, indent: int, key: str) -> int | None:
    found = [i for i in range(start, end)
             if _indent(lines[i]) == indent and re.match(rf"^\s*{re.escape(key)}:", lines[i])]
    if len(found) > 1:
        raise EditError(f"'{key}:' appears twice in one definition")
    return found[0] if found else None


def netplan_set_mtu(text: str, netdef: str, mtu: int) -> str:
    lines = text.split("\n")
    head, indent, end = _netdef_block(lines, netdef)
    at = _key_line(lines, head + 1, end, indent, "mtu")
    if at is None:
        lines.insert(head + 1, f"{' ' * indent}mtu: {mtu}")
    else:
        lines[at] = f"{' ' * indent}mtu: {mtu}"
    return "\n".join(lines)


def _token(text: str, old: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9A-Za-z.:/]){re.escape(old)}(?![0-9A-Za-z.:/])")


def netplan_replace_address(text: str, old: str, new: str) -> str:
    pattern = _token(text, old)
    count = len(pattern.findall(text))
    if count != 1:
        raise EditError(f"{old} appears {count} times in the file (exactly once is replaced)")
    return pattern.sub(new, text)


def netplan_remove_address(text: str, old: str) -> str:
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if _token(line, old).search(line)]
    if len(hits) != 1:
        raise EditError(f"{old} appears on {len(hits)} lines of the file (exactly one is edited)")
    line = lines[hits[0]]
    flow = _FLOW_LIST.match(line)
    if flow:
        items = [i.strip() for i in flow.group(2).split(",") if i.strip() and i.strip().strip("\"'") != old]
        lines[hits[0]] = f"{flow.group(1)}[{', '.join(items)}]"
    elif re.match(rf"^\s*-\s*[\"']?{re.escape(old)}[\"']?\s*(#.*)?$", line):
        del lines[hits[0]]
    else:
        raise EditError(f"{old} is not a list item of its own")
    return "\n".join(lines)


def netplan_add_address(text: str, netdef: str, new: str) -> str:
    lines = text.split("\n")
    head, indent, end = _netdef_block(lines, netdef)
    at = _key_line(lines, head + 1, end, indent, "addresses")
    if at is None:
        lines.insert(head + 1, f"{' ' * indent}addresses: [{new}]")
        return "\n".join(lines)
    flow = _FLOW_LIST.match(lines[at])
    if flow:
        items = [i.strip() for i in flow.group(2).split(",") if i.strip()]
        lines[at] = f"{flow.group(1)}[{', '.join([*items, new])}]"
        return "\n".join(lines)
    rows = [i for i in range(at + 1, end) if re.match(r"^\s*-\s", lines[i]) and _indent(lines[i]) >= indent]
    if not rows or lines[at].split(":", 1)[1].strip():
        raise EditError("'addresses:' is neither a flow list nor a block list")
    lines.insert(rows[-1] + 1, f"{' ' * _indent(lines[rows[-1]])}- {new}")
    return "\n".join(lines)


def netplan_add_route(text: str, netdef: str, to: str, via: str) -> str:
    """A `routes:` item `{to, via}` in the definition (netplan's routes: "to", "via"), a block list made where it
    has none; a flow-style `routes:`, or one that already routes `to`, is left to a person."""
    lines = text.split("\n")
    head, indent, end = _netdef_block(lines, netdef)
    at = _key_line(lines, head + 1, end, indent, "routes")
    if at is None:
        lines[head + 1:head + 1] = [f"{' ' * indent}routes:", f"{' ' * (indent + 2)}- to: {to}",
                                    f"{' ' * (indent + 4)}via: {via}"]
        return "\n".join(lines)
    if lines[at].split(":", 1)[1].split("#", 1)[0].strip():
        raise EditError("'routes:' is not a block list")
    block = at + 1
    while block < end and (not _meaningful(lines[block]) or _indent(lines[block]) > indent):
        block += 1
    items = [i for i in range(at + 1, block) if re.match(r"^\s*-\s", lines[i])]
    if not items:
        raise EditError("'routes:' holds no block list item")
    same = re.compile(rf"^\s*(-\s*)?to:\s*[\"']?{re.escape(to)}[\"']?\s*(#.*)?$")
    if any(same.match(lines[i]) for i in range(at + 1, block)):
        raise EditError(f"a route to {to} is there already")
    item = _indent(lines[items[0]])
    last = max(i for i in range(at + 1, block) if _meaningful(lines[i]))
    lines[last + 1:last + 1] = [f"{' ' * item}- to: {to}", f"{' ' * (item + 2)}via: {via}"]
    return "\n".join(lines)


def netplan_new(netdef: str, addresses: tuple[str, ...], mtu: int) -> str:
    """A netplan file of one definition, as NVIDIA's playbook writes /etc/netplan/40-cx7.yaml."""
    body = [f"      addresses: [{', '.join(addresses)}]"] if addresses else []
    body += ["      dhcp4: false"] + ([f"      mtu: {mtu}"] if mtu else [])
    return "\n".join(["network:", "  version: 2", "  ethernets:", f"    {netdef}:", *body]) + "\n"


def _conf_line(line: str, key: str) -> bool:
    return re.match(rf"^\s*(export\s+)?{re.escape(key)}\s*=", line) is not None


def conf_sets_key(text: str | None, key: str) -> bool:
    """An nccl.conf text has a `key=` line (None: the file does not exist)."""
    return text is not None and any(_conf_line(line, key) for line in text.split("\n"))


def conf_drop_key(text: str, key: str) -> str:
    lines = text.split("\n")
    kept = [line for line in lines if not _conf_line(line, key)]
    if len(kept) == len(lines):
        raise EditError(f"no {key}= line")
    return "\n".join(kept)


def conf_set_key(text: str, key: str, value: str) -> str:
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if _conf_line(line, key)]
    if len(hits) > 1:
        raise EditError(f"{key}= is set on {len(hits)} lines")
    if hits:
        lines[hits[0]] = f"{key}={value}"
        return "\n".join(lines)
    body = text.rstrip("\n")
    return (body + "\n" if body else "") + f"{key}={value}\n"


_TEXT_EDITS: dict[str, Callable[[str, FileEdit], str]] = {
    "netplan_set_mtu": lambda t, e: netplan_set_mtu(t, e.netdef, e.value),
    "netplan_replace_address": lambda t, e: netplan_replace_address(t, e.old, e.new),
    "netplan_add_address": lambda t, e: netplan_add_address(t, e.netdef, e.new),
    "netplan_remove_address": lambda t, e: netplan_remove_address(t, e.old),
    "conf_drop_key": lambda t, e: conf_drop_key(t, e.key),
    "conf_set_key": lambda t, e: conf_set_key(t, e.key, e.new),
    "netplan_add_route": lambda t, e: netplan_add_route(t, e.netdef, e.new, e.old),
}


def apply_edit(text: str | None, edit: FileEdit) -> str:
    """The file's new text after `edit` (`text` None: the file does not exist). Raises EditError."""
    if edit.kind == "netplan_new":
        if text is not None:
            raise EditError("the file already exists")
        return netplan_new(edit.netdef, edit.addresses, edit.value)
    if edit.kind == "copy_from":
        raise EditError("a copy is made from the source file on the node, not from text")
    if edit.kind not in _TEXT_EDITS:
        raise EditError(f"unknown edit {edit.kind!r}")
    if text is None and edit.kind != "conf_set_key":
        raise EditError("the file does not exist")
    return _TEXT_EDITS[edit.kind](text or "", edit)


def check_netplan(text: str, netdef: str, addresses: tuple[str, ...] | None, mtu: int | None) -> None:
    """The edited file read back as netplan reads it says what the edit meant to say (EditError otherwise): the
    plan's own check, before `netplan generate` checks the file on the node."""
    try:
        config = parse_netplan(text)
    except ParseError as exc:
        raise EditError(f"the edited file does not parse: {exc}") from None
    eth = next((e for e in config.ethernets if e.netdef_id == netdef), None)
    if eth is None:
        raise EditError(f"the edited file no longer defines {netdef}")
    if addresses is not None and tuple(sorted(eth.addresses)) != tuple(sorted(addresses)):
        raise EditError(f"the edited file gives {netdef} {list(eth.addresses)}, not {list(addresses)}")
    if mtu is not None and eth.mtu != mtu:
        raise EditError(f"the edited file gives {netdef} MTU {eth.mtu}, not {mtu}")


def unified_diff(path: str, before: str | None, after: str) -> str:
    """The change as `diff -u` prints it, `/dev/null` for a new file."""
    old = [] if before is None else before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    name = path.lstrip("/")
    return "".join(difflib.unified_diff(old, new, fromfile="/dev/null" if before is None else f"a/{name}",
                                        tofile=f"b/{name}"))
