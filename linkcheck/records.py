"""Records as plain data: the fields of a NamedTuple or dataclass record, recursively, ready for JSON.

The offline pipeline's records (parsers, facts, diagnosis) are `typing.NamedTuple`s and the rest are frozen
dataclasses (README, "Speed"). `dataclasses.asdict` knows only the second kind and would leave a
NamedTuple inside a dataclass as a tuple, which JSON writes as a bare list; `plain` treats both alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def is_record(value: object) -> bool:
    """A NamedTuple or dataclass instance (not a class)."""
    return (isinstance(value, tuple) and hasattr(value, "_fields")) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type))


def record_fields(record: object) -> dict[str, Any]:
    """One record's fields by name, in definition order, values as they are; a dataclass field named with a
    leading underscore is the record's own (SysfsDump's lookup index by path) and not part of what it says."""
    if isinstance(record, tuple) and hasattr(record, "_asdict"):
        fields: dict[str, Any] = record._asdict()
        return fields
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: getattr(record, f.name) for f in dataclasses.fields(record) if not f.name.startswith("_")}
    raise TypeError(f"not a record: {type(record).__name__}")


def plain(value: object, properties: bool = False) -> Any:
    """`value` with every record turned into a dict of its fields (and, with `properties`, its public properties)
    and every tuple into a list, recursively; mapping keys become text, as JSON needs."""
    if is_record(value):
        out = {name: plain(v, properties) for name, v in record_fields(value).items()}
        for name in _properties(type(value)) if properties else ():
            out[name] = plain(getattr(value, name), properties)
        return out
    if isinstance(value, (list, tuple)):
        return [plain(v, properties) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v, properties) for k, v in value.items()}
    return value


def _properties(cls: type) -> list[str]:
    return [n for n in dir(cls) if not n.startswith("_") and isinstance(getattr(cls, n, None), property)]
