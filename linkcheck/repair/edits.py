"""Pure text edits of the files a repair changes: a netplan YAML file (block style, edited line by line so that
comments, order and the other definitions stay as they are) and a KEY=VALUE file (nccl.conf). Each edit returns
the new text, or raises EditError saying why it cannot be made safely: the plan then leaves that file to a person.

A netplan file is read by the YAML parser netplan uses (libyaml, through PyYAML's C loader where it has one) to
find the lines an edit touches, so that every way YAML lets a key be written is the same key: a comment after it,
quoted ('e0': or "e0":), space before the colon, a tab after it. netplan takes a definition ID as any YAML scalar
key under `ethernets:` (canonical/netplan src/parse.c, handle_network_type: `assert_valid_id` wants
`^[[:alnum:][:punct:]]+$`, and no glob character `*[]?`). What libyaml refuses (a tab in the indentation, a second
document) and what a line edit cannot change alone (flow style, anchors and aliases, a key written twice, a line
break other than \\n) is refused with one line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

import msgspec
import yaml

from linkcheck.errors import ParseError
from linkcheck.parsers.netplan import SAFE_LOADER, parse_netplan
from linkcheck.repair.model import FileEdit

# YAML line breaks that str.split("\n") does not split on: libyaml counts lines on them too.
_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")
_NULL_TAG = "tag:yaml.org,2002:null"


class EditError(Exception):
    """The edit cannot be made safely on this text (flow style, the value found more than once, ...)."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _meaningful(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


class _Definition(msgspec.Struct, frozen=True):
    """`ethernets: <netdef>:` in block style: its key's line, its body's indent, the line after its body, and its
    own keys (key node, value node) by name."""

    head: int
    indent: int
    end: int
    keys: dict[str, list[tuple[yaml.Node, yaml.Node]]]


def _compose(text: str) -> yaml.Node | None:
    if _OTHER_BREAKS.search(text):
        raise EditError("the file has line breaks other than \\n (CR, NEL, LS or PS)")
    try:
        return yaml.compose(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        lines = text.split("\n")
        if mark is not None and mark.line < len(lines) and "\t" in lines[mark.line][:mark.column + 1]:
            problem = "a tab where YAML wants spaces (YAML indents with spaces only)"
        raise EditError(f"not valid YAML{f' at line {mark.line + 1}' if mark else ''}: {problem}") from None
    except (RecursionError, UnicodeEncodeError):  # nested past the stack; a lone surrogate libyaml cannot read
        raise EditError("not YAML that can be read") from None


def _aliased(root: yaml.Node) -> bool:
    """A node reached twice: an anchor with an alias (an edit of one would change the other)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
    return False


def _named(mapping: yaml.Node, key: str) -> list[tuple[yaml.Node, yaml.Node]]:
    if not isinstance(mapping, yaml.MappingNode):
        return []
    return [(k, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and k.value == key]


def _block_mapping(node: yaml.Node) -> bool:
    return isinstance(node, yaml.MappingNode) and not node.flow_style


def _starts_line(lines: list[str], key: yaml.Node) -> bool:
    """The key is the first thing on its line and ends there (not `? key`, not a key after `- `)."""
    mark = key.start_mark
    return key.end_mark.line == mark.line and mark.column == _indent(lines[mark.line])


def _ethernets(lines: list[str]) -> yaml.Node:
    """The file's block-style `network: ethernets:` mapping."""
    root = _compose("\n".join(lines))
    if root is not None and _aliased(root):
        raise EditError("the file uses YAML anchors and aliases (&name, *name): a line edit could change both")
    networks = _named(root, "network") if root is not None else []
    if len(networks) != 1:
        raise EditError("no single 'network:' mapping at the top")
    ethernets = _named(networks[0][1], "ethernets")
    if len(ethernets) != 1 or not _block_mapping(ethernets[0][1]):
        raise EditError("no block-style 'ethernets:' mapping" if len(ethernets) < 2 else "'ethernets:' appears twice")
    return ethernets[0][1]


def _netdef_block(lines: list[str], netdef: str) -> _Definition:
    found = _named(_ethernets(lines), netdef)
    if len(found) > 1:
        raise EditError(f"{netdef} is defined twice under 'ethernets:'")
    if not found:
        raise EditError(f"no block-style definition of {netdef} under 'ethernets:'")
    key, body = found[0]
    head = key.start_mark.line
    empty = isinstance(body, yaml.ScalarNode) and body.tag == _NULL_TAG and not body.value
    after = lines[head][key.end_mark.column:] if _starts_line(lines, key) else ""
    if not (_block_mapping(body) or empty) or not re.fullmatch(r"\s*:(\s+#.*|\s*)", after):
        raise EditError(f"no block-style definition of {netdef} under 'ethernets:' (its line holds more than its "
                        "name and a comment)")
    end = head + 1
    while end < len(lines) and (not _meaningful(lines[end]) or _indent(lines[end]) > _indent(lines[head])):
        end += 1
    while end > head + 1 and not lines[end - 1].strip():
        end -= 1
    pairs = body.value if isinstance(body, yaml.MappingNode) else []
    if any(not head < k.start_mark.line < end or not head < v.end_mark.line <= end for k, v in pairs):
        raise EditError(f"the definition of {netdef} does not end where its indentation does")
    keys: dict[str, list[tuple[yaml.Node, yaml.Node]]] = {}
    for k, v in pairs:
        if isinstance(k, yaml.ScalarNode):
            keys.setdefault(k.value, []).append((k, v))
    indent = pairs[0][0].start_mark.column if pairs else _indent(lines[head]) + 2
    return _Definition(head, indent, end, keys)


def _key_line(lines: list[str], block: _Definition, key: str) -> int | None:
    """The line of the definition's own `key:`, None without one."""
    found = block.keys.get(key, [])
    if len(found) > 1:
        raise EditError(f"'{key}:' appears twice in one definition")
    if not found:
        return None
    if not _starts_line(lines, found[0][0]):
        raise EditError(f"'{key}:' is not a key at the start of its own line")
    line: int = found[0][0].start_mark.line
    return line


def netplan_set_mtu(text: str, netdef: str, mtu: int) -> str:
    lines = text.split("\n")
    block = _netdef_block(lines, netdef)
    at = _key_line(lines, block, "mtu")
    if at is None:
        lines.insert(block.head + 1, f"{' ' * block.indent}mtu: {mtu}")
        return "\n".join(lines)
    value = block.keys["mtu"][0][1]
    if not isinstance(value, yaml.ScalarNode) or value.start_mark.line != at or value.end_mark.line != at:
        raise EditError("'mtu:' is not a value on its own line")
    comment = lines[at][value.end_mark.column:]  # a comment after the value stays
    lines[at] = f"{' ' * block.indent}mtu: {mtu}" + (comment if comment.strip().startswith("#") else "")
    return "\n".join(lines)


def _token(text: str, old: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9A-Za-z.:/]){re.escape(old)}(?![0-9A-Za-z.:/])")


def netplan_replace_address(text: str, old: str, new: str) -> str:
    pattern = _token(text, old)
    count = len(pattern.findall(text))
    if count != 1:
        raise EditError(f"{old} appears {count} times in the file (exactly once is replaced)")
    return pattern.sub(new, text)


def _flow_addresses(lines: list[str], at: int) -> yaml.SequenceNode | None:
    """The flow-style `addresses:` list that holds line `at`, None when none does."""
    root = _compose("\n".join(lines))
    stack, seen = ([root] if root is not None else []), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if (isinstance(key, yaml.ScalarNode) and key.value == "addresses"
                        and isinstance(value, yaml.SequenceNode) and value.flow_style
                        and value.start_mark.line <= at <= value.end_mark.line):
                    return value
                stack.append(value)
    return None


def _written(line: str, node: yaml.Node) -> str:
    """A flow list's item as its line writes it (quotes and all)."""
    return line[node.start_mark.column:node.end_mark.column]


def _flow_line(line: str, flow: yaml.Node, items: list[str]) -> str:
    """The line with its one-line flow list holding `items`, and the rest of the line (its comment) as it was."""
    return f"{line[:flow.start_mark.column]}[{', '.join(items)}]{line[flow.end_mark.column:]}"


def netplan_remove_address(text: str, old: str) -> str:
    """The file without the address `old`: its item taken out of a flow-style `addresses:` list on one line (the
    other items, as written, and the rest of the line, its comment included, kept), or its block list item's line
    removed. The items are the ones libyaml reads, so a `#` inside a quoted scalar or glued to an address is never
    taken for a comment."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if _token(line, old).search(line)]
    if len(hits) != 1:
        raise EditError(f"{old} appears on {len(hits)} lines of the file (exactly one is edited)")
    at = hits[0]
    line = lines[at]
    flow = _flow_addresses(lines, at)
    if flow is not None:
        if flow.start_mark.line != flow.end_mark.line:
            raise EditError("'addresses:' is a flow list over more than one line")
        items = flow.value
        kept = [i for i in items if not (isinstance(i, yaml.ScalarNode) and i.value == old)]
        if len(kept) == len(items):
            raise EditError(f"{old} is not an item of the 'addresses:' list on its line")
        lines[at] = _flow_line(line, flow, [_written(line, i) for i in kept])
    elif re.match(rf"^\s*-\s+([\"']?){re.escape(old)}\1(\s+#.*|\s*)$", line):
        del lines[at]
    else:
        raise EditError(f"{old} is not a list item of its own")
    return "\n".join(lines)


def _block_items(lines: list[str], value: yaml.Node, end: int, key: str) -> tuple[int, int]:
    """(column of its dashes, its last line) of the block list `key:` holds, within its definition (before `end`)."""
    if not isinstance(value, yaml.SequenceNode) or value.flow_style:
        raise EditError(f"'{key}:' is not a block list")
    if not value.value:
        raise EditError(f"'{key}:' holds no block list item")
    first = value.value[0].start_mark.line
    dash = _indent(lines[first])
    last = first
    for i in range(first + 1, end):
        if not _meaningful(lines[i]):
            continue
        if _indent(lines[i]) > dash or (_indent(lines[i]) == dash and re.match(r"-(\s|$)", lines[i][dash:])):
            last = i
        else:
            break
    if not re.match(r"-(\s|$)", lines[first][dash:]) or value.value[-1].start_mark.line > last:
        raise EditError(f"'{key}:' is not a block list of one item a line")
    return dash, last


def netplan_add_address(text: str, netdef: str, new: str) -> str:
    lines = text.split("\n")
    block = _netdef_block(lines, netdef)
    at = _key_line(lines, block, "addresses")
    if at is None:
        lines.insert(block.head + 1, f"{' ' * block.indent}addresses: [{new}]")
        return "\n".join(lines)
    value = block.keys["addresses"][0][1]
    if isinstance(value, yaml.SequenceNode) and value.flow_style:
        if value.start_mark.line != at or value.end_mark.line != at:
            raise EditError("'addresses:' is a flow list over more than one line")
        lines[at] = _flow_line(lines[at], value, [*(_written(lines[at], i) for i in value.value), new])
        return "\n".join(lines)
    if not isinstance(value, yaml.SequenceNode):
        raise EditError("'addresses:' is neither a flow list nor a block list")
    dash, last = _block_items(lines, value, block.end, "addresses")
    lines.insert(last + 1, f"{' ' * dash}- {new}")
    return "\n".join(lines)


def netplan_add_route(text: str, netdef: str, to: str, via: str) -> str:
    """A `routes:` item `{to, via}` in the definition (netplan's routes: "to", "via"), a block list made where it
    has none; a flow-style `routes:`, or one that already routes `to`, is left to a person."""
    lines = text.split("\n")
    block = _netdef_block(lines, netdef)
    at = _key_line(lines, block, "routes")
    indent = block.indent
    if at is None:
        lines[block.head + 1:block.head + 1] = [f"{' ' * indent}routes:", f"{' ' * (indent + 2)}- to: {to}",
                                                f"{' ' * (indent + 4)}via: {via}"]
        return "\n".join(lines)
    value = block.keys["routes"][0][1]
    dash, last = _block_items(lines, value, block.end, "routes")
    if any(k.value == "to" and isinstance(v, yaml.ScalarNode) and v.value == to
           for item in value.value if isinstance(item, yaml.MappingNode) for k, v in item.value):
        raise EditError(f"a route to {to} is there already")
    lines[last + 1:last + 1] = [f"{' ' * dash}- to: {to}", f"{' ' * (dash + 2)}via: {via}"]
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
