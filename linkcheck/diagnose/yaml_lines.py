"""Load YAML safely while remembering the line of every mapping key, for file:line error messages."""

from __future__ import annotations

from typing import Any

import yaml


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
            if key in result:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            result[key] = self.construct_object(value_node, deep=True)
            result.key_lines[str(key)] = key_node.start_mark.line + 1
        return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)


def load_with_lines(text: str) -> Any:
    """yaml.safe_load with LineDict mappings; raises yaml.YAMLError (with problem_mark) on bad input."""
    return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - _LineLoader derives from a SafeLoader


def line_of(mapping: Any, key: str | None = None) -> int | None:
    if not isinstance(mapping, LineDict):
        return None
    return mapping.key_lines.get(key, mapping.line) if key else mapping.line
