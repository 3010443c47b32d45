"""Record gives frozen dataclasses the same ==, hash() and repr() that @dataclass(frozen=True) generates."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.model import Capture, Finding, Record, Severity, Status


@dataclass(frozen=True, repr=False, eq=False)
class Shared(Record):
    name: str
    value: Any = None
    hidden: Any = field(default=None, repr=False)
    ignored: dict[str, str] = field(default_factory=dict, compare=False)
    unhashed: Any = field(default=None, hash=False)
    hashed_only: Any = field(default=None, compare=False, hash=True)


@dataclass(frozen=True)
class Generated:
    name: str
    value: Any = None
    hidden: Any = field(default=None, repr=False)
    ignored: dict[str, str] = field(default_factory=dict, compare=False)
    unhashed: Any = field(default=None, hash=False)
    hashed_only: Any = field(default=None, compare=False, hash=True)


def _pair(*args: Any, **kwargs: Any) -> tuple[Shared, Generated]:
    return Shared(*args, **kwargs), Generated(*args, **kwargs)


def _repr(obj: object) -> str:
    return repr(obj).replace(type(obj).__qualname__, "X", 1)


VALUES = st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=5), st.tuples(st.integers()))


@settings(max_examples=200)
@given(VALUES, VALUES, VALUES, VALUES, VALUES, VALUES, VALUES)
def test_same_semantics_as_generated_methods(v1: Any, v2: Any, h: Any, u1: Any, u2: Any, k1: Any, k2: Any) -> None:
    s1, g1 = _pair("n", v1, hidden=h, ignored={"a": "b"}, unhashed=u1, hashed_only=k1)
    s2, g2 = _pair("n", v2, hidden=h, ignored={}, unhashed=u2, hashed_only=k2)
    assert (s1 == s2) == (g1 == g2)
    assert (s1 != s2) == (g1 != g2)
    assert _repr(s1) == _repr(g1)
    try:
        expected: int | type[Exception] = hash(g1)
    except TypeError:
        expected = TypeError
    if expected is TypeError:
        with pytest.raises(TypeError):
            hash(s1)
    else:
        assert hash(s1) == expected


def test_identity_and_nan_follow_tuple_comparison() -> None:
    nan = math.nan  # tuple == tries identity first: the same NaN object compares equal, two NaNs do not
    assert Generated("n", nan) == Generated("n", nan) and Shared("n", nan) == Shared("n", nan)
    assert Generated("n", float("nan")) != Generated("n", float("nan"))
    assert Shared("n", float("nan")) != Shared("n", float("nan"))


@dataclass(frozen=True, repr=False, eq=False)
class Twin(Record):
    name: str
    value: Any = None


def test_other_classes_are_not_equal() -> None:
    s, g = _pair("n", 1)
    assert s != g and g != s
    assert s.__eq__(g) is NotImplemented
    assert Shared("n", 1) != Twin("n", 1)  # same field values, other record class


def test_still_frozen_and_a_dataclass() -> None:
    s = Shared("n", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "m"  # type: ignore[misc]
    assert dataclasses.replace(s, value=2) == Shared("n", 2)
    assert [f.name for f in dataclasses.fields(s)][:2] == ["name", "value"]
    assert Shared("n", 1) in {Shared("n", 1)}


def test_recursive_repr_prints_ellipsis() -> None:
    box: dict[str, Any] = {}
    s = Shared("n", box)
    box["self"] = s
    assert repr(s) == "Shared(name='n', value={'self': ...}, ignored={}, unhashed=None, hashed_only=None)"


def test_project_records_keep_their_repr_and_equality() -> None:
    cap = Capture("a", "uptime", "cat /proc/uptime", "1.0 2.0\n", meta={"k": "v"})
    assert repr(cap) == ("Capture(node='a', spec='uptime', command='cat /proc/uptime', stdout='1.0 2.0\\n', "
                         "stderr='', exit_status=0, duration_s=0.0, arg=None, skipped=None, meta={'k': 'v'})")
    assert cap == dataclasses.replace(cap, meta={})  # meta is compare=False
    finding = Finding("X", Status.PASS, Severity.INFO, "pair", "t", "m", extra={"k": 1})
    assert finding == dataclasses.replace(finding)
    with pytest.raises(TypeError):
        hash(finding)  # a dict field: unhashable, as with the generated __hash__
