"""Acceptance profiles: the test to run and the thresholds it is judged by, loaded strictly with file:line.

A profile is YAML (bounded like playbooks: 1 MiB, 64 levels, no anchors or aliases):

    profile: dgx-spark-pair
    version: 1
    layout: pair                          # pair (the default), ring3 .. ring8, or switch: what `accept` runs it on
    description: ...
    test:
      repetitions: 3                      # RDMA rounds run this many times; the minimum is judged
      rdma: {duration_s: 10, size_bytes: 1048576, qps: 1}
      nccl: {max_bytes: 17179869184}
      latency: true                       # also the latency test (ib_write_lat per path, the small all_reduce;
                                          # over a cluster every path of every cable, the all_reduce across all)
    checks:
      rdma_alone_gbps:
        fail_below: {value: 92, unit: Gb/s, source: "..."}
      nccl_busbw_gbs:
        warn_below: {threshold: NCCL_BUSBW_LOW.min_busbw_gbs, unit: GB/s}   # below it: DEGRADED
        fail_below: {threshold: NCCL_BUSBW_LOW.fail_below_busbw_gbs, unit: GB/s, value: 10, source: "..."}

Each check id is one of `CHECKS`, which fixes its unit, its bands and what is impossible for it. A threshold
either states its value, unit and source, or names a rule's threshold (`RULE.name`), whose value and source
(the playbook's `threshold_sources`) it takes: a threshold is declared once, in the playbook. A profile may
tighten a named threshold (a `value` stricter than the rule's, with its own `source`); a looser one is refused,
as a run judged by it would not be the standard acceptance. Unknown keys, wrong types, a unit other than the
check's, a value outside what the hardware can show, and a warn floor under the fail floor (or a warn ceiling
over the fail ceiling) are refused naming file:line.

`layout` is the cabling the profile accepts, named as `linkcheck topology` names it: a pair's profile judges the
one cable; a cluster's (a ring, a switch) judges every test of the cluster's schedule by the per-cable checks and
the NCCL run across every node by the `nccl_*` checks (accept/judge.py). A check that cannot hold for the
layout (the same cable serial at both ends of a test through a switch) is refused.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import reprlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec
from msgspec.structs import replace

from linkcheck import schema
from linkcheck.diagnose.playbook import load_playbooks, of_kind, renamed, resolve_id
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import InputFileError, UsageError
from linkcheck.integers import quoted
from linkcheck.yamlfile import parse_yaml_text, read_yaml_text

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "profiles"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
THRESHOLD_KEYS = {"value", "unit", "source"}
REF_RE = re.compile(r"^([A-Z][A-Z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
# The layouts a profile may accept, as cluster/topology.py names them: two nodes direct, a ring of 3 to 8, a switch.
LAYOUT_RE = re.compile(r"^(pair|switch|ring[3-8])$")
# Checks that no test of a layout can pass: through a switch each node's cable ends at the switch, not at its peer.
NOT_FOR_LAYOUT = {"switch": {"cable_serial_both_ends": "each node's cable ends at the switch, not at the other node"}}


class ProfileError(InputFileError):
    """An acceptance profile breaks the schema: unknown key, wrong type, impossible or contradictory threshold."""


class CheckSpec(msgspec.Struct, frozen=True):
    """What a check measures and which thresholds make sense for it.

    kind: `min` (measured >= value passes: fail_below / warn_below), `max` (measured <= value passes:
    fail_above / warn_above), `in` (the measured text is one of a list: approved), `same` (both ends or
    both nodes read the same: same).
    """

    kind: str
    unit: str
    what: str
    low: float = 0.0  # the lowest value a threshold may take
    high: float | None = None  # the highest a measurement can reach; a floor above it can never pass
    integer: bool = False


CHECKS: dict[str, CheckSpec] = {
    "rdma_alone_gbps": CheckSpec("min", "Gb/s", "ib_write_bw on each path alone, per direction", high=200),
    "rdma_concurrent_gbps": CheckSpec("min", "Gb/s", "ib_write_bw per path with both paths at once, per direction",
                                      high=200),
    "rdma_concurrent_total_gbps": CheckSpec("min", "Gb/s", "both paths at once, summed, per direction (one 200G "
                                            "cage)", high=200),
    "nccl_busbw_gbs": CheckSpec("min", "GB/s", "all_gather_perf bus bandwidth by NVIDIA's statistic: the mean "
                                "of out-of-place and in-place at 16 GiB (else at the largest size >= 1 GiB)", high=25),
    "nccl_wrong": CheckSpec("max", "errors", "all_gather_perf #wrong over every row", integer=True),
    "pcie_speed_gts": CheckSpec("min", "GT/s", "PCIe link speed of every used CX-7 function", high=64),
    "pcie_width": CheckSpec("min", "lanes", "PCIe link width of every used CX-7 function", low=1, high=16,
                            integer=True),
    "cable_part_number": CheckSpec("in", "part number", "the cable's EEPROM part number, at each end"),
    "cable_serial_both_ends": CheckSpec("same", "serial number", "the same cable serial seen from both nodes"),
    "firmware_same": CheckSpec("same", "firmware version", "the same ConnectX-7 firmware on every used function "
                               "of both nodes"),
}
BANDS = {"min": ("fail_below", "warn_below"), "max": ("fail_above", "warn_above"), "in": ("approved",),
         "same": ("same",)}
OPERATORS = {"min": ">=", "max": "<=", "in": "in", "same": "=="}


class Threshold(msgspec.Struct, frozen=True):
    """One band of a check: measured `operator` value passes it."""

    band: str  # fail_below, warn_below, fail_above, warn_above, approved, same
    operator: str
    value: Any  # a number, a list of texts (approved) or True (same)
    unit: str
    source: str
    rule: str = ""  # the rule threshold it takes (RULE.name), when it names one
    rule_value: Any = None  # that threshold's value in the rule; differs from `value` when the profile tightens it

    @property
    def op(self) -> str:
        """The rule language's operator (ge, le, in) that a measurement must meet: a band holds when
        diagnose.conditions.compare(op, measured, value) does, as a `when:` condition compares a fact with a
        threshold. `same` has none."""
        return {">=": "ge", "<=": "le", "in": "in"}.get(self.operator, "")

    @property
    def tightened(self) -> bool:
        return bool(self.rule) and self.value != self.rule_value

    @property
    def fails(self) -> bool:
        """Missing this band is a failure (else: DEGRADED)."""
        return not self.band.startswith("warn")


class ProfileCheck(msgspec.Struct, frozen=True):
    id: str
    spec: CheckSpec
    thresholds: tuple[Threshold, ...]  # the fail band first, then the warn band when there is one


class TestPlan(msgspec.Struct, frozen=True):
    """What `accept` runs: the RDMA rounds `repetitions` times, then NCCL once, then (`latency`) the latency test
    once (bench/latency.py)."""

    repetitions: int = 3
    duration_s: int = 10
    size_bytes: int = 1048576
    qps: int = 1
    nccl_max_bytes: int = 1 << 34
    latency: bool = False


class Profile(msgspec.Struct, frozen=True):
    name: str
    description: str
    test: TestPlan
    checks: tuple[ProfileCheck, ...]
    source: str  # the file it came from
    sha256: str  # of the file's bytes
    text: str = ""
    require: tuple[str, ...] = ()  # rules whose findings the acceptance needs: a skip of one is INCONCLUSIVE
    layout: str = "pair"  # the cabling it accepts (LAYOUT_RE): a pair, a ring of N, a switch

    @property
    def cluster(self) -> bool:
        return self.layout != "pair"

    def check(self, check_id: str) -> ProfileCheck | None:
        return next((c for c in self.checks if c.id == check_id), None)

# Ranges of the test parameters, as the CLI takes them (`bench rdma --duration`, ...).


_TEST_RANGES = {"repetitions": (1, 100), "duration_s": (1, 3600), "size_bytes": (1, 1 << 30), "qps": (1, 1024),
                "max_bytes": (8, 1 << 40)}


_M = TypeVar("_M", bound=msgspec.Struct)
Steps = schema.Steps


# The profile's shape as msgspec models, decoded through linkcheck/schema.py: unknown keys are refused by msgspec
# (forbid_unknown_fields) and told at file:line; what each value may be (ranges, units, the bands of a check) is
# checked after decoding, each refusal at the line of what it is about.
class _TestDoc(msgspec.Struct, forbid_unknown_fields=True):
    repetitions: int | msgspec.UnsetType = msgspec.UNSET
    rdma: _RdmaDoc | msgspec.UnsetType = msgspec.UNSET
    nccl: _NcclDoc | msgspec.UnsetType = msgspec.UNSET
    latency: bool | msgspec.UnsetType = msgspec.UNSET


class _RdmaDoc(msgspec.Struct, forbid_unknown_fields=True):
    duration_s: int | msgspec.UnsetType = msgspec.UNSET
    size_bytes: int | msgspec.UnsetType = msgspec.UNSET
    qps: int | msgspec.UnsetType = msgspec.UNSET


class _NcclDoc(msgspec.Struct, forbid_unknown_fields=True):
    max_bytes: int | msgspec.UnsetType = msgspec.UNSET


class _ProfileDoc(msgspec.Struct, forbid_unknown_fields=True):
    profile: Any = None
    version: Any = None
    layout: Any = "pair"
    description: Any = ""
    test: _TestDoc | msgspec.UnsetType = msgspec.UNSET
    checks: Any = None
    require: Any = msgspec.field(default_factory=list)


class _BandDoc(msgspec.Struct, forbid_unknown_fields=True):
    value: Any = msgspec.UNSET
    unit: Any = msgspec.UNSET
    source: Any = msgspec.UNSET
    threshold: Any = msgspec.UNSET


def _section(steps: Steps) -> str:
    """How a refusal names the part of the profile it is about."""
    if not steps:
        return "a profile"
    if steps[0] == "checks" and len(steps) >= 3:
        return f"'{steps[1]}.{steps[2]}'"
    return "'" + ".".join(str(s) for s in steps) + "'"


def _decode(file: schema.YamlFile, cls: type[_M], steps: Steps = ()) -> _M:
    """The part of the profile at `steps` as the model `cls`; a msgspec refusal is one line naming file:line and
    what is allowed."""

    def wording(problem: schema.Problem, value: Any) -> str:
        at = problem.steps if problem.unknown is not None or problem.key else problem.steps[:-1]
        where = _section(at)
        allowed = ", ".join(schema.field_names(_ProfileDoc, at) or sorted(cls.__struct_fields__))
        if problem.unknown is not None:
            return f"unknown key '{problem.unknown}' in {where}; expected one of {allowed}"
        if problem.key:  # a YAML key such as `1:` is no field name
            odd = next((k for k in value if not isinstance(k, str)), "?") if isinstance(value, dict) else "?"
            return f"unknown key '{odd}' in {where}; expected one of {allowed}"
        field = problem.steps[-1] if problem.steps else None
        if field in _TEST_RANGES:
            low, high = _TEST_RANGES[str(field)]
            return f"'{field}' must be an integer from {low} to {high}, got {_got(value)}"
        if "Expected `object`" in problem.what:
            return f"{_section(problem.steps)} must be a mapping"
        return f"{where}: {problem.what}"

    return file.decode(cls, steps, wording)


def _got(value: object) -> str:
    """A refused value for a message: quoted and cut short (a YAML number of 5,000 digits stays its text)."""
    return quoted(value) if isinstance(value, str) else reprlib.repr(value)


def _integer(file: schema.YamlFile, value: int | msgspec.UnsetType, steps: Steps, key: str) -> int | None:
    """A test parameter (an integer, msgspec says) within its range, or None when it is not given."""
    if isinstance(value, msgspec.UnsetType):
        return None
    low, high = _TEST_RANGES[key]
    if not low <= value <= high:
        raise file.refuse(f"'{key}' must be an integer from {low} to {high}, got {_got(value)}", steps, key)
    return value


def _test(file: schema.YamlFile, test: _TestDoc | msgspec.UnsetType) -> TestPlan:
    if isinstance(test, msgspec.UnsetType):
        return TestPlan()
    found: dict[str, int | None] = {"repetitions": _integer(file, test.repetitions, ("test",), "repetitions")}
    if not isinstance(test.rdma, msgspec.UnsetType):
        rdma = test.rdma
        found.update({k: _integer(file, getattr(rdma, k), ("test", "rdma"), k) for k in _RdmaDoc.__struct_fields__})
    if not isinstance(test.nccl, msgspec.UnsetType):
        found["nccl_max_bytes"] = _integer(file, test.nccl.max_bytes, ("test", "nccl"), "max_bytes")
    given: dict[str, Any] = {k: v for k, v in found.items() if v is not None}
    if not isinstance(test.latency, msgspec.UnsetType):
        given["latency"] = test.latency
    return TestPlan(**given)


def _number(file: schema.YamlFile, at: Steps, spec: CheckSpec, check_id: str, raw: dict[str, Any]) -> float:
    value = raw["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise file.refuse(f"{check_id}: 'value' must be a number, got {_got(value)}", at, "value")
    if spec.integer and (not math.isfinite(value) or value != int(value)):  # int() of an infinity raises
        raise file.refuse(f"{check_id}: 'value' must be a whole number of {spec.unit}, got {_got(value)}", at, "value")
    if value < spec.low:
        raise file.refuse(f"{check_id}: {value} {spec.unit} is impossible (the lowest is {spec.low:g})", at, "value")
    if spec.high is not None and value > spec.high:
        raise file.refuse(f"{check_id}: {value} {spec.unit} can never be measured ({spec.what} reaches at most "
                          f"{spec.high:g} {spec.unit})", at, "value")
    return float(value)


def _value(file: schema.YamlFile, at: Steps, spec: CheckSpec, check_id: str, raw: dict[str, Any]) -> Any:
    if spec.kind == "in":
        value = raw["value"]
        if not (isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value)):
            raise file.refuse(f"{check_id}: 'value' must be a non-empty list of {spec.unit}s", at, "value")
        return tuple(v.strip() for v in value)
    if spec.kind == "same":
        if raw["value"] is not True:
            raise file.refuse(f"{check_id}: 'value' must be true (the two sides must read the same)", at, "value")
        return True
    return _number(file, at, spec, check_id, raw)


def _threshold(file: schema.YamlFile, rules: Mapping[str, Rule], spec: CheckSpec, check_id: str,
               band: str) -> Threshold:
    where = f"'{check_id}.{band}'"
    at: Steps = ("checks", check_id, band)
    _decode(file, _BandDoc, at)
    raw: dict[str, Any] = schema.value_at(file.data, at)[0]
    if "threshold" in raw:
        return _reference(file, at, rules, spec, check_id, band, raw)
    missing = sorted(THRESHOLD_KEYS - set(raw))
    if missing:
        raise file.refuse(f"{where} needs {', '.join(missing)} (every threshold states its value, unit and source, "
                          "or names a rule's threshold: threshold: RULE.name)", at)
    _unit(file, at, spec, check_id, raw)
    return Threshold(band, OPERATORS[spec.kind], _value(file, at, spec, check_id, raw), spec.unit,
                     _source(file, at, where, raw))


def _unit(file: schema.YamlFile, at: Steps, spec: CheckSpec, check_id: str, raw: dict[str, Any]) -> None:
    if raw["unit"] != spec.unit:
        raise file.refuse(f"{check_id}: unit must be '{spec.unit}', got {_got(raw['unit'])}", at, "unit")


def _source(file: schema.YamlFile, at: Steps, where: str, raw: dict[str, Any]) -> str:
    source = raw["source"]
    if not isinstance(source, str) or not source.strip():
        raise file.refuse(f"{where}: 'source' must say where the value comes from", at, "source")
    return " ".join(source.split())


def _reference(file: schema.YamlFile, at: Steps, rules: Mapping[str, Rule], spec: CheckSpec, check_id: str,
               band: str, raw: dict[str, Any]) -> Threshold:
    """A band that takes a rule's threshold: its value and source come from the playbook, once; a `value` here
    may only tighten it and then states its own `source`."""
    where = f"'{check_id}.{band}'"
    ref = raw["threshold"]
    match = REF_RE.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        raise file.refuse(f"{where}: 'threshold' must name a rule's threshold as RULE_ID.name, got {_got(ref)}", at,
                          "threshold")
    rule = rules.get(resolve_id(match.group(1), renamed(list(rules.values())), file.path))
    ref = ref if rule is None else f"{rule.id}.{match.group(2)}"  # a former id: the rule's current one
    if rule is None:
        raise file.refuse(f"{where}: no rule {match.group(1)} (`linkcheck playbooks list` names the rules)", at,
                          "threshold")
    name = match.group(2)
    if name not in rule.thresholds:
        raise file.refuse(f"{where}: rule {rule.id} has no threshold '{name}' (it has: "
                          f"{', '.join(sorted(rule.thresholds)) or 'none'})", at, "threshold")
    if name not in rule.threshold_sources:
        raise file.refuse(f"{where}: {ref} states no source (its playbook's threshold_sources must cite one)", at,
                          "threshold")
    if "unit" not in raw:
        raise file.refuse(f"{where} needs unit (every threshold states its unit)", at)
    _unit(file, at, spec, check_id, raw)
    if "value" not in raw:
        if "source" in raw:
            raise file.refuse(f"{where}: the source of {ref} is its playbook's threshold_sources; 'source' goes only "
                              "with a tighter 'value'", at, "source")
        value = _value(file, at, spec, check_id, {**raw, "value": _plain(rule.thresholds[name])})
        return Threshold(band, OPERATORS[spec.kind], value, spec.unit, " ".join(rule.threshold_sources[name].split()),
                         ref, value)
    if "source" not in raw:
        raise file.refuse(f"{where}: a 'value' that tightens {ref} needs its own 'source'", at, "value")
    rule_value = _value(file, at, spec, check_id, {**raw, "value": _plain(rule.thresholds[name])})
    return Threshold(band, OPERATORS[spec.kind], _value(file, at, spec, check_id, raw), spec.unit,
                     _source(file, at, where, raw), ref, rule_value)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _looser(spec: CheckSpec, t: Threshold) -> bool:
    """A tightened threshold that is in fact looser than its rule's: a lower floor, a higher ceiling, a part
    number the rule does not approve."""
    if not t.tightened:
        return False
    if spec.kind == "min":
        return bool(t.value < t.rule_value)
    if spec.kind == "max":
        return bool(t.value > t.rule_value)
    if spec.kind == "in":
        return not set(t.value) <= set(t.rule_value)
    return False


def _shown(value: Any) -> str:
    return ", ".join(value) if isinstance(value, tuple) else f"{value:g}" if isinstance(value, float) else str(value)


def _contradiction(check_id: str, spec: CheckSpec, fail: Threshold, warn: Threshold) -> str | None:
    if spec.kind == "min" and warn.value < fail.value:
        return (f"{check_id}: warn_below {warn.value:g} is under fail_below {fail.value:g}: the warn floor must be "
                "at or above the fail floor")
    if spec.kind == "max" and warn.value > fail.value:
        return (f"{check_id}: warn_above {warn.value:g} is over fail_above {fail.value:g}: the warn ceiling must be "
                "at or below the fail ceiling")
    return None


def _check(file: schema.YamlFile, rules: Mapping[str, Rule], check_id: str, raw: Any) -> ProfileCheck:
    at: Steps = ("checks", check_id)
    spec = CHECKS.get(check_id)
    if spec is None:
        raise file.refuse(f"unknown check '{check_id}'; expected one of {', '.join(CHECKS)}", ("checks",), check_id)
    bands = BANDS[spec.kind]
    if not isinstance(raw, dict):
        raise file.refuse(f"check '{check_id}' must be a mapping", ("checks",), check_id)
    unknown = sorted(str(k) for k in raw if k not in bands)
    if unknown:  # the bands depend on the check's kind: checked here, not by a model
        raise file.refuse(f"unknown key '{unknown[0]}' in check '{check_id}'; expected one of "
                          f"{', '.join(sorted(bands))}", at, unknown[0])
    if bands[0] not in raw:
        raise file.refuse(f"check '{check_id}' needs '{bands[0]}'", ("checks",), check_id)
    found = tuple(_threshold(file, rules, spec, check_id, band) for band in bands if band in raw)
    if len(found) == 2:
        problem = _contradiction(check_id, spec, found[0], found[1])
        if problem:
            raise file.refuse(problem, at, bands[1])
    for band, t in zip((b for b in bands if b in raw), found, strict=True):
        if _looser(spec, t):
            raise file.refuse(f"{check_id}.{band}: {_shown(t.value)} {spec.unit} is looser than {t.rule} "
                              f"({_shown(t.rule_value)} {spec.unit}); a profile may only tighten a rule's threshold "
                              "(a looser one belongs in a playbook, and the run is then not the standard acceptance)",
                              (*at, band), "value")
    return ProfileCheck(check_id, spec, found)


def _checks(file: schema.YamlFile, rules: Mapping[str, Rule], raw: Any, layout: str) -> tuple[ProfileCheck, ...]:
    if not isinstance(raw, dict) or not raw:
        raise file.refuse("'checks' must be a non-empty mapping of check ids to thresholds", (),
                          "checks" if "checks" in file.data else None)
    for check_id in raw:
        why = NOT_FOR_LAYOUT.get(layout, {}).get(str(check_id))
        if why:
            raise file.refuse(f"check '{check_id}' cannot hold on a {layout}: {why}", ("checks",), check_id)
    checks = tuple(_check(file, rules, str(k), v) for k, v in raw.items())
    _consistent(file, checks)
    return checks


def _layout(file: schema.YamlFile, raw: Any) -> str:
    if not isinstance(raw, str) or not LAYOUT_RE.fullmatch(raw):
        raise file.refuse(f"'layout' must be pair, ring3 to ring8, or switch (as `linkcheck topology` names the "
                          f"cabling), got {raw!r}", (), "layout")
    return raw


def _consistent(file: schema.YamlFile, checks: tuple[ProfileCheck, ...]) -> None:
    """Thresholds that no pair can meet together: both paths share one 200 Gb/s cage, so a per-path
    concurrent floor over 100 Gb/s asks for more than the cage carries."""
    per_path = next((c for c in checks if c.id == "rdma_concurrent_gbps"), None)
    if per_path is not None:
        floor = max(t.value for t in per_path.thresholds)
        if 2 * floor > 200:
            raise file.refuse(f"rdma_concurrent_gbps: two paths at {floor:g} Gb/s each exceed the cage's 200 Gb/s; "
                              "no pair can meet it", ("checks",), "rdma_concurrent_gbps")


def _require(file: schema.YamlFile, every: Sequence[Rule], raw: Any, layout: str) -> tuple[str, ...]:
    """The rules the acceptance needs, each one that runs on the layout: a pair's rules judge a pair, a cluster's
    rules a cluster (a rule that never runs there would leave no finding, and so nothing to require); a former id
    names the rule that replaced it."""
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise file.refuse("'require' must be a list of rule ids", (), "require")
    names = renamed(list(every))
    raw = [resolve_id(r, names, file.path) for r in raw]
    unknown = [r for r in raw if r not in {rule.id for rule in every}]
    if unknown:
        raise file.refuse(f"'require' names no rule {unknown[0]} (`linkcheck playbooks list` names the rules)", (),
                          "require")
    kind: Literal["pair", "cluster"] = "pair" if layout == "pair" else "cluster"
    runs = {r.id for r in of_kind(list(every), kind)}
    elsewhere = [r for r in raw if r not in runs]
    if elsewhere:
        raise file.refuse(f"'require' names {elsewhere[0]}, which does not run on a {layout} (a "
                          f"{'cluster' if kind == 'pair' else 'pair'}'s rule); require a {kind}'s rules", (),
                          "require")
    return tuple(dict.fromkeys(raw))


def parse_profile(text: str, path: str, rules: Sequence[Rule] | None = None) -> Profile:
    """A profile from its YAML text; ProfileError naming path:line on the first problem. Rule thresholds that
    it names are taken from `rules` (by default the built-in playbooks)."""
    # A pair's rules and a cluster's: a cluster profile takes the thresholds of the cluster's NCCL rule.
    every = load_playbooks(kind="all") if rules is None else list(rules)
    by_id = {r.id: r for r in every}  # a rule's layouts share its thresholds: either one serves
    file = schema.YamlFile(path, parse_yaml_text(text, path, ProfileError), ProfileError)
    if not isinstance(file.data, dict):
        raise ProfileError(path, "a profile must be a mapping", line=1)
    doc = _decode(file, _ProfileDoc)
    if not isinstance(doc.profile, str) or not NAME_RE.fullmatch(doc.profile):
        raise file.refuse("'profile' must be a name of a-z, 0-9, '.', '_' and '-' (at most 64 characters)", (),
                          "profile" if "profile" in file.data else None)
    if doc.version != 1 or isinstance(doc.version, bool):
        raise file.refuse(f"'version' must be 1, got {doc.version!r}", (),
                          "version" if "version" in file.data else None)
    if not isinstance(doc.description, str):
        raise file.refuse("'description' must be text", (), "description")
    layout = _layout(file, doc.layout)
    test = _test(file, doc.test)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Profile(doc.profile, " ".join(doc.description.split()), test, _checks(file, by_id, doc.checks, layout),
                   path, digest, text, _require(file, every, doc.require, layout), layout)


# The line breaks YAML reads besides `\n`: a file saved on Windows (CRLF), an old Mac's CR, Unicode's NEL.
_LINE_BREAK = re.compile("\r\n?|\x85")


def yaml_text(profile: Profile) -> str:
    """The profile's file to print (`profiles show --yaml`): its text with every line break a `\n`, the same document
    to YAML. A CR or NEL, printed, would be shown as the escape `\\r` or `\\x85` (safe_text.shown), no longer a
    line break, and the printed file would not parse."""
    return _LINE_BREAK.sub("\n", profile.text).rstrip("\n")


def load_profile_file(path: Path) -> Profile:
    return parse_profile(read_yaml_text(path, ProfileError), str(path))


def builtin_profiles() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.yaml"))}


DEFAULT_PROFILE = "dgx-spark-pair"


def layout_profile(layout: str) -> str | None:
    """The built-in profile that accepts `layout`: a pair's, a ring of 3's, a switch's; None for a layout no
    built-in profile accepts (a ring of 4 or more, mixed, unknown)."""
    for name, path in builtin_profiles().items():
        if load_profile_file(path).layout == layout:
            return name
    return None


def resolve_profile(name_or_file: str | None) -> Profile:
    """A built-in profile by name, or a profile file by path (anything with a '/' or ending in .yaml/.yml)."""
    wanted = name_or_file or DEFAULT_PROFILE
    builtins = builtin_profiles()
    if wanted in builtins:
        return replace(load_profile_file(builtins[wanted]), source=f"built-in ({builtins[wanted].name})")
    path = Path(wanted)
    if "/" in wanted or path.suffix in (".yaml", ".yml") or path.is_file():
        if not os.path.lexists(path):
            raise ProfileError(wanted, "no such profile file")
        return load_profile_file(path)
    raise UsageError(f"no profile {wanted!r}; built in: {', '.join(builtins) or 'none'} "
                     "(`linkcheck profiles list`), or give a file")
