"""Records as plain data: the fields of a record (a msgspec.Struct), recursively, ready for JSON."""

from __future__ import annotations

from typing import Any

import msgspec


def is_record(value: object) -> bool:
    """A record instance (not a class)."""
    return isinstance(value, msgspec.Struct)


def record_fields(record: object) -> dict[str, Any]:
    """One record's fields by name, in definition order, values as they are; a field named with a leading
    underscore is the record's own (SysfsDump's lookup index by path) and not part of what it says."""
    if not isinstance(record, msgspec.Struct):
        raise TypeError(f"not a record: {type(record).__name__}")
    return {name: getattr(record, name) for name in record.__struct_fields__ if not name.startswith("_")}


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
