"""Load YAML safely while remembering the line of every mapping key, for file:line error messages.

Bounded, since playbooks and linkcheck.yaml may come from anyone: at most `MAX_YAML_BYTES`, nesting at
most `MAX_DEPTH` deep, and no anchors or aliases (`&a`/`*a`): nine aliases of nine aliases of ... build
a "billion laughs" that any later walk over the value (a message, a comparison) expands in full.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from linkcheck.errors import InputFileError
from linkcheck.safe_read import read_capped

MAX_YAML_BYTES = 1 << 20
MAX_DEPTH = 64
# An integer scalar longer than this stays its text, which every reader refuses as "not a number" with file:line:
# Python's int() raises on 4300+ digits, and a sexagesimal `1:2:3:...` of a megabyte takes quadratic time. 64
# characters hold every count, size and port linkcheck reads.
MAX_INT_CHARS = 64


class YamlLimitError(yaml.MarkedYAMLError):
    """The document breaks one of the bounds; `problem` and `problem_mark` say which and where."""


class LineDict(dict[str, Any]):
    """A mapping that knows the 1-based line of itself and of each of its keys."""

    line: int = 0
    key_lines: dict[str, int]


# libyaml's parser when available (several times faster); construction stays in the safe Python layer.
_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SafeBase):  # type: ignore[valid-type,misc]
    """SafeLoader (no arbitrary objects, no eval) that records key lines and rejects duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        result = LineDict()
        result.line = node.start_mark.line + 1
        result.key_lines = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict, set)):  # `? [a, b]`, `? {a: 1}`, `? !!set {a}`: no dict can hold it
                raise yaml.constructor.ConstructorError(
                    None, None, f"a key that is a {'list' if isinstance(key, list) else 'mapping or set'}, not a "
                    "name", key_node.start_mark)
            if key in result:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            result[key] = self.construct_object(value_node, deep=True)
            result.key_lines[str(key)] = key_node.start_mark.line + 1
        return result


    def construct_bounded_int(self, node: yaml.ScalarNode) -> int | str:
        if len(node.value) > MAX_INT_CHARS:
            return str(node.value)
        value: int = self.construct_yaml_int(node)
        return value


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)
_LineLoader.add_constructor("tag:yaml.org,2002:int", _LineLoader.construct_bounded_int)


def read_yaml_file(path: Path) -> str:
    """The file's UTF-8 text, read only up to the bound; OSError (RefusedFile: not a regular file, or larger than
    the bound), UnicodeDecodeError."""
    return read_capped(path, MAX_YAML_BYTES).decode("utf-8")


def read_yaml_text(path: Path, error: type[InputFileError]) -> str:
    """read_yaml_file, with an oversized, unreadable or non-UTF-8 file raised as `error` naming the file."""
    try:
        return read_yaml_file(path)
    except YamlLimitError as exc:
        raise error(str(path), str(exc.problem)) from None
    except OSError as exc:
        raise error(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(str(path), f"cannot read: {exc}") from None


def parse_yaml_text(text: str, path: str, error: type[InputFileError]) -> Any:
    """load_with_lines, with invalid or unbounded YAML raised as `error` naming path:line."""
    try:
        return load_with_lines(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(path, f"invalid YAML: {problem}", line=mark.line + 1 if mark else None) from None


def _check_graph(root: yaml.Node) -> None:
    """Refuse a node reached twice (an alias) or nested past MAX_DEPTH, walking each node once."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise YamlLimitError(problem="anchors and aliases (&name, *name) are not allowed",
                                 problem_mark=node.start_mark)
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise YamlLimitError(problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=node.start_mark)
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((child, depth + 1) for pair in node.value for child in pair)


def load_with_lines(text: str) -> Any:
    """yaml.safe_load with LineDict mappings, within the bounds; raises yaml.YAMLError (with problem_mark)."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlLimitError(problem=f"document is larger than {MAX_YAML_BYTES // 1024} KiB")
    loader = _LineLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_graph(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def line_of(mapping: Any, key: str | None = None) -> int | None:
    if not isinstance(mapping, LineDict):
        return None
    return mapping.key_lines.get(key, mapping.line) if key else mapping.line
