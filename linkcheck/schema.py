"""Typed models for the files linkcheck reads, and their errors told as `file:line: what is wrong (what is allowed)`.

Every file is decoded into a msgspec model that refuses unknown keys (`forbid_unknown_fields=True`). A
msgspec.ValidationError names the offending place as a path (`$.ssh.connect_timeout_s`, `$.paths[0].a`); `locate`
turns it into the steps to that value, which the YAML loader's marks (`line_of`) or `json_line` turn into a line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
from msgspec.structs import replace

from linkcheck.errors import InputFileError
from linkcheck.yamlfile import line_of

_MESSAGE = re.compile(r"^(?P<what>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>.*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<key>.*)`$", re.S)


class Problem(msgspec.Struct, frozen=True):
    """One ValidationError, taken apart: the steps to the value it is about, and what msgspec said."""

    steps: tuple[str | int, ...]  # keys and list indices from the document's top; for a key error, its mapping
    what: str  # msgspec's words, `- at ...` left off
    unknown: str | None = None  # the key that no field of the model has
    missing: str | None = None  # the required key that is absent
    key: bool = False  # msgspec refused a key itself (`- at `key` in ...`: a key that is not text), not its value


def locate(exc: msgspec.ValidationError) -> Problem:
    match = _MESSAGE.match(str(exc))
    what, path = (match.group("what"), match.group("path") or "") if match else (str(exc), "")
    is_key = bool(match and match.group("key"))
    steps: list[str | int] = []
    for key, index in _STEP.findall(path):
        if index == "...":  # a mapping's value whose key msgspec does not name: stop at the mapping
            break
        steps.append(int(index) if index else key)
    unknown, missing = _UNKNOWN.match(what), _MISSING.match(what)
    return Problem(tuple(steps), what, unknown and unknown.group("key"), missing and missing.group("key"), is_key)


def dotted(steps: tuple[str | int, ...]) -> str:
    """`ssh.connect_timeout_s`, `link.paths[1].a`."""
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else f".{step}" if out else step
    return out


def value_at(data: Any, steps: tuple[str | int, ...]) -> tuple[Any, Any, str | int | None]:
    """(the value at `steps`, the container holding it, its key there); what cannot be walked stops the walk."""
    parent: Any = None
    key: str | int | None = None
    for step in steps:
        index: Any = step  # a str on a list, or an int on a mapping, is a miss
        if not isinstance(data, (Mapping, list)):
            break
        try:
            data, parent, key = data[index], data, step
        except (KeyError, IndexError, TypeError):
            break
    return data, parent, key


def yaml_line(data: Any, problem: Problem) -> int | None:
    """The line of the value a problem is about, by the YAML loader's marks: its key's line in its mapping, or the
    line of the nearest mapping above it (a list item has no key)."""
    node, parent, key = value_at(data, problem.steps)
    if problem.unknown is not None:
        return line_of(node, problem.unknown) or line_of(parent, key if isinstance(key, str) else None)
    if isinstance(key, str) and line_of(parent, key):
        return line_of(parent, key)
    node_line = line_of(node)
    if node_line:
        return node_line
    walk: Any = data
    best = line_of(data)
    for step in problem.steps:  # the deepest mapping on the way
        try:
            walk = walk[step]
        except (KeyError, IndexError, TypeError):
            break
        best = line_of(walk) or best
    return best


def line_at(data: Any, steps: tuple[str | int, ...], key: str | None = None) -> int | None:
    """The line of what a check after decoding is about, by the YAML loader's marks: `key` in the mapping at
    `steps` (the mapping's own line when it has no such key); else the value at `steps` if it is a mapping, its
    key's line in its mapping, or the line of the nearest mapping above it."""
    walk: Any = data
    best = line_of(data)
    for step in steps:
        try:
            parent, walk = walk, walk[step]
        except (KeyError, IndexError, TypeError):
            return best
        best = line_of(walk) or (line_of(parent, step) if isinstance(step, str) else None) or best
    return line_of(walk, key) or best if key is not None else line_of(walk) or best


_M = TypeVar("_M")
Steps = tuple[str | int, ...]
# How a file words a refusal: the problem (its steps from the document's top) and the value it is about.
Wording = Callable[[Problem, Any], str]


class YamlFile(msgspec.Struct, frozen=True):
    """A YAML file as the line-marking loader read it, and the error it raises: a section decodes into its model
    (`decode`), and a check after decoding refuses at the line of what it is about (`refuse`)."""

    path: str
    data: Any
    error: type[InputFileError]

    def line(self, steps: Steps, key: str | None = None) -> int | None:
        return line_at(self.data, steps, key)

    def refuse(self, reason: str, steps: Steps = (), key: str | None = None) -> InputFileError:
        return self.error(self.path, reason, line=self.line(steps, key))

    def decode(self, model: type[_M], steps: Steps = (), wording: Wording | None = None) -> _M:
        """The value at `steps` as `model`; a msgspec refusal becomes one error at file:line, in `wording`'s words
        (`describe`'s by default)."""
        value, _, _ = value_at(self.data, steps)
        try:
            return msgspec.convert(value, model)
        except msgspec.ValidationError as exc:
            problem = locate(exc)
            problem = replace(problem, steps=steps + problem.steps)
            found, _, _ = value_at(self.data, problem.steps)
            reason = wording(problem, found) if wording is not None else describe(problem, found)
            raise self.error(self.path, reason, line=yaml_line(self.data, problem)) from None


def shown(value: Any) -> str:
    """A value as a message shows it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_GOT = re.compile(r"^Expected (?P<expected>.*?)(?:, got `(?P<got>[^`]*)`)?$", re.S)
_ENUM = re.compile(r"^Invalid enum value (.*)$", re.S)
UNSEEN: Any = object()  # the value is not at hand (a JSON file): msgspec's words say what it was


def describe(problem: Problem, value: Any = UNSEEN,
             allowed: Callable[[str], str | None] = lambda _: None) -> str:
    """`what is wrong (what is allowed)`: `allowed(dotted path)` says what a field may hold; msgspec's words
    otherwise."""
    where = dotted(problem.steps)
    if problem.unknown is not None:
        fields = allowed(f"{where}.*" if where else "*")
        under = f" under '{where}'" if where else ""
        return f"unknown key '{problem.unknown}'{under} (expected: {fields or 'none other'})"
    if problem.missing is not None:
        field = f"{where}.{problem.missing}" if where else problem.missing
        return f"'{field}' is missing (expected: {allowed(field) or 'it is required'})"
    words = _GOT.match(problem.what)
    expected = allowed(where) or (words.group("expected") if words else problem.what).replace("`", "")
    enum = _ENUM.match(problem.what)
    if value is UNSEEN and enum:
        return f"'{where or 'the document'}' is {enum.group(1)} (expected: {expected})"
    if value is UNSEEN:
        got = f"a JSON {words.group('got')}" if words and words.group("got") else \
            "out of range" if words or "out of range" in problem.what else problem.what
        return f"'{where or 'the document'}' is {got} (expected: {expected})"
    return f"'{where or 'the document'}' is {shown(value)} (expected: {expected})"


def field_names(model: Any, steps: tuple[str | int, ...]) -> list[str] | None:
    """The keys the model allows at `steps` (a Struct's fields), found by walking the model's type info."""
    info: Any = msgspec.inspect.type_info(model)
    for step in steps:
        info = _inner(info, step)
        if info is None:
            return None
    info = _struct(info)
    return sorted(f.encode_name for f in info.fields) if info is not None else None


def _struct(info: Any) -> Any:
    if isinstance(info, msgspec.inspect.StructType):
        return info
    if isinstance(info, msgspec.inspect.UnionType):
        return next((t for t in info.types if isinstance(t, msgspec.inspect.StructType)), None)
    return None


def _inner(info: Any, step: str | int) -> Any:
    struct = _struct(info)
    if struct is not None and isinstance(step, str):
        return next((f.type for f in struct.fields if f.encode_name == step), None)
    for candidate in info.types if isinstance(info, msgspec.inspect.UnionType) else (info,):
        if isinstance(step, int) and isinstance(candidate, (msgspec.inspect.ListType, msgspec.inspect.TupleType,
                                                            msgspec.inspect.VarTupleType)):
            return getattr(candidate, "item_type", None)
        if isinstance(step, str) and isinstance(candidate, msgspec.inspect.DictType):
            return candidate.value_type
    return None


def json_line(text: str, steps: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the key (or list item) at `steps` in the JSON `text`; None when it cannot be found."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")
    pos = ws.match(text, 0).end()  # type: ignore[union-attr]
    line = 1
    try:
        for step in steps:
            if text[pos] == "{" and isinstance(step, str):
                pos = ws.match(text, pos + 1).end()  # type: ignore[union-attr]
                while text[pos] != "}":
                    key_start = pos
                    key, pos = decoder.raw_decode(text, pos)
                    pos = ws.match(text, ws.match(text, pos).end() + 1).end()  # type: ignore[union-attr]
                    if key == step:
                        line = text.count("\n", 0, key_start) + 1
                        break
                    _, pos = decoder.raw_decode(text, pos)
                    pos = ws.match(text, pos).end()  # type: ignore[union-attr]
                    if text[pos] == ",":
                        pos = ws.match(text, pos + 1).end()  # type: ignore[union-attr]
                else:
                    return None
            elif text[pos] == "[" and isinstance(step, int):
                pos = ws.match(text, pos + 1).end()  # type: ignore[union-attr]
                for _ in range(step):
                    _, pos = decoder.raw_decode(text, pos)
                    pos = ws.match(text, ws.match(text, pos).end() + 1).end()  # type: ignore[union-attr]
                line = text.count("\n", 0, pos) + 1
            else:
                return None
    except (ValueError, IndexError, RecursionError):
        return None
    return line


def decode_line(text: str, exc: msgspec.DecodeError) -> int | None:
    """The line of a msgspec.DecodeError's `(byte N)` in `text`."""
    found = re.search(r"\(byte (\d+)\)", str(exc))
    if "truncated" in str(exc):
        return text.count("\n") + 1
    return text.encode("utf-8", errors="surrogateescape")[:int(found.group(1))].count(b"\n") + 1 if found else None


_LONG_NUMBER = re.compile(r"[:\[,]\s*-?\d{4301,}")


def long_number_line(text: str, exc: msgspec.ValidationError) -> int | None:
    """When `exc` is about a number out of range and `text` holds a number literal of more than 4300 digits, the
    line of that literal: JSON that Python's own reader refuses, and that linkcheck has always called not valid."""
    found = _LONG_NUMBER.search(text) if "out of range" in str(exc) else None
    return text.count("\n", 0, found.start()) + 1 if found else None
