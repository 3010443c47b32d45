"""The acceptance document as rows and lines, for the console and the Markdown report (which escapes them)."""

from __future__ import annotations

import re
from typing import Any

from linkcheck.values import aligned, byte_size, signed, text


def _num(value: Any) -> str:
    return text(value)


def unit(check: dict[str, Any]) -> str:
    return str((check.get("measured") or {}).get("unit") or "")


def statistic(check: dict[str, Any], name: str, *, with_unit: bool = True) -> str:
    """The measured min, median or max (with its unit, unless a table gives it once in the threshold beside); the
    values seen for a check that measures text (in `min`)."""
    measured = check.get("measured") or {}
    if "min" not in measured:
        return (", ".join(map(str, measured.get("values") or [])) or "-") if name == "min" else ""
    value = measured.get(name)
    return "-" if value is None else f"{_num(value)} {unit(check) if with_unit else ''}".strip()


def runs(check: dict[str, Any]) -> str:
    """How many runs a check's statistics are over (its samples); '' for a check that measures text."""
    measured = check.get("measured") or {}
    if "min" not in measured:
        return ""
    count = measured.get("samples", len(measured.get("values") or []))
    return str(count) if isinstance(count, int) else ""


def judged(check: dict[str, Any]) -> str:
    """Which statistic the status is judged on: the lowest for a floor (>=), the highest for a ceiling (<=)."""
    ops = {str(t.get("operator")) for t in check.get("thresholds") or [] if isinstance(t, dict)}
    return "max" if ops == {"<="} else "min"


def missed(check: dict[str, Any]) -> str | None:
    """The statistic (`min` or `max`) that put a measured check outside its line, for its cell to be marked; None
    for a check that passed or measures text."""
    if check.get("status") in ("PASS", None) or "min" not in (check.get("measured") or {}):
        return None
    return judged(check)


def threshold_cell(check: dict[str, Any]) -> str:
    parts = []
    for t in check.get("thresholds", []):
        value = ", ".join(t["value"]) if isinstance(t.get("value"), list) else (
            "the same" if t.get("value") is True else _num(t.get("value")))
        word = "" if len(check.get("thresholds", [])) == 1 else f"{'warn' if t['on_miss'] == 'DEGRADED' else 'fail'} "
        parts.append(f"{word}{t['operator']} {value}" + (f" {t['unit']}" if t["operator"] in (">=", "<=") else ""))
    return "; ".join(parts)


def deciding_line(check: dict[str, Any]) -> dict[str, Any] | None:
    """The threshold that decides the check's status: the fail line a FAIL missed, the warning line a DEGRADED
    missed, else the tightest (last) line; None where the lines are not all numeric or nothing numeric was
    measured (the record's own margin then stands)."""
    lines = [t for t in check.get("thresholds") or [] if isinstance(t, dict)]
    numeric = [t for t in lines if t.get("operator") in (">=", "<=") and isinstance(t.get("value"), (int, float))]
    if not numeric or len(numeric) != len(lines):
        return None
    low = numeric[0]["operator"] == ">="
    judged = (check.get("measured") or {}).get("min" if low else "max")
    if not isinstance(judged, (int, float)):
        return None
    status = str(check.get("status"))
    missed = "FAIL" if status == "FAIL" else "DEGRADED" if status == "DEGRADED" else None
    return next((t for t in numeric if t.get("on_miss") == missed
                 and (judged < t["value"] if low else judged > t["value"])), numeric[-1])


def deciding_margin(check: dict[str, Any]) -> float | None:
    """How far the judged value (the lowest, or the highest for a ceiling) is inside the line that decides the status
    (`deciding_line`); negative outside. Computed from the thresholds, so that a record written when the margin was
    taken against the warning line alone reads the same; the record's own margin where the thresholds do not say."""
    margin = check.get("margin")
    recorded = margin if isinstance(margin, (int, float)) and not isinstance(margin, bool) else None
    deciding = deciding_line(check)
    if deciding is None:
        return recorded
    low = deciding["operator"] == ">="
    judged = float(check["measured"]["min" if low else "max"])
    line = float(deciding["value"])
    return round(judged - line if low else line - judged, 3)


def margin_cell(check: dict[str, Any]) -> str:
    margin = deciding_margin(check)
    return "" if margin is None else signed(margin)


HEADER = ("status", "check", "subject", "min", "median", "max", "runs", "threshold", "margin")
STATISTICS = ("min", "median", "max")
Row = tuple[str, str, str, str, str, str, str, str, str]


def row(check: dict[str, Any]) -> Row:
    """A check as HEADER's cells: the measured min, median and max each in its column with the run count, the
    threshold (with the unit they share) beside them, the margin against the line that decides the status."""
    low, mid, high = (statistic(check, name, with_unit=False) for name in STATISTICS)
    return (str(check.get("status")), str(check.get("id")), str(check.get("subject")), low, mid, high, runs(check),
            threshold_cell(check), margin_cell(check))


def marked_column(check: dict[str, Any]) -> int | None:
    """The index in `row` of the statistic that missed the line, for the writer to mark; None when none did."""
    name = missed(check)
    return None if name is None else HEADER.index(name)


def rows(doc: dict[str, Any]) -> list[Row]:
    return [row(c) for c in doc.get("checks", []) if isinstance(c, dict)]


def marked_rows(doc: dict[str, Any]) -> list[list[str]]:
    """`rows` as plain text, the statistic that missed its line between `!`s (`!13.27 Gb/s!`)."""
    out = []
    for check in (c for c in doc.get("checks", []) if isinstance(c, dict)):
        cells, at = list(row(check)), marked_column(check)
        if at is not None:
            cells[at] = f"!{cells[at]}!"
        out.append(cells)
    return out


# The latency test as the profile and the record's readers name it (bench/latency.py: SIZES, the all_reduce's band).
LATENCY_TEST = "the latency test (ib_write_lat per path at 2 B and 48 KiB, all_reduce_perf 16-64 KiB)"


def headline(doc: dict[str, Any]) -> str:
    p = doc.get("profile", {})
    test = doc.get("test") or {}
    latency = ", with the latency test" if test.get("latency") is True else ""
    return (f"acceptance: {doc.get('verdict')} exit {doc.get('exit_code')} (profile {p.get('name')}, sha256 "
            f"{str(p.get('sha256', ''))[:16]}..., {test.get('repetitions')} repetitions{latency})"
            + (" NON-STANDARD" if non_standard(doc) else ""))


def closing_line(doc: dict[str, Any]) -> str:
    """The acceptance's last line on the console: `ACCEPTANCE: FAIL (11 of 24 checks) exit 2`, counting the checks
    whose status is the verdict (all of them for a PASS); NON-STANDARD when the run was weaker."""
    verdict = str(doc.get("verdict"))
    checks = [c for c in doc.get("checks") or [] if isinstance(c, dict)]
    count = sum(1 for c in checks if str(c.get("status")) == verdict)
    weaker = " NON-STANDARD" if non_standard(doc) else ""
    return (f"ACCEPTANCE: {verdict} ({count} of {len(checks)} checks{_deciding_findings(doc, count)}){weaker} "
            f"exit {doc.get('exit_code')}")


# A rule's id as playbooks spell it; anything else in a saved record is not named on the terminal.
_RULE_ID = re.compile(r"[A-Z][A-Z0-9_]{0,79}")


def _deciding_findings(doc: dict[str, Any], count: int) -> str:
    """`; by the findings RDMA_LATENCY_HIGH, ...` when no check has the verdict's status and the diagnosis' findings
    gave it (a failing rule fails the acceptance, a warning degrades it): `0 of 56 checks` alone reads as a pass."""
    status = {"FAIL": "fail", "DEGRADED": "warn"}.get(str(doc.get("verdict")))
    diagnosis = doc.get("diagnosis")
    if count or status is None or not isinstance(diagnosis, dict):
        return ""
    ids = [str(f.get("id")) for f in diagnosis.get("findings") or []
           if isinstance(f, dict) and f.get("status") == status and _RULE_ID.fullmatch(str(f.get("id")))]
    return f"; by the findings {', '.join(dict.fromkeys(ids))}" if ids else ""


def non_standard(doc: dict[str, Any]) -> list[str] | None:
    """What makes the run weaker than the standard acceptance (accept/standard.py); None when it is the standard
    run, or the record (older than this check) does not say."""
    standard = doc.get("standard")
    if not isinstance(standard, dict) or not standard.get("non_standard"):
        return None
    return [str(d) for d in standard.get("differences") or []] or ["weaker than the standard"]


def non_standard_line(doc: dict[str, Any]) -> str | None:
    """`NON-STANDARD (weaker than dgx-spark-pair): ib_write_bw -D 4 s (standard 10 s); ...`, or None."""
    found = non_standard(doc)
    if found is None:
        return None
    return f"NON-STANDARD (weaker than {doc['standard'].get('profile') or 'the built-in profile'}): {'; '.join(found)}"


def reasons(doc: dict[str, Any], checks: bool = True) -> list[str]:
    """Why the verdict is not PASS: each check that is not (unless `checks` is false: a table shows them), and the
    findings that count."""
    out = [f"{c['status']} {c['id']} {c['subject']}: {c['reason']}" for c in doc.get("checks", [])
           if checks and c.get("status") != "PASS" and c.get("reason")]
    findings = doc.get("diagnosis", {}).get("findings", [])
    out += [f"finding {f['status'].upper()} {f['id']} {f['subject']}" for f in findings]
    return out + [str(n) for n in doc.get("notes", [])]


def _known(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p not in (None, "")) or "?"


def evidence_lines(doc: dict[str, Any]) -> list[str]:
    """Who was tested: each node's product, serial, BIOS, OS and CX-7 firmware/PSID; the cable seen from each end."""
    ev = doc.get("evidence") or {}
    out = []
    for name, node in sorted((ev.get("nodes") or {}).items()):
        fw = sorted({_known(f.get("firmware"), f"({f['psid']})" if f.get("psid") else None)
                     for f in node.get("cx7", [])})
        out.append(f"node {name}: {_known(node.get('hostname'))}, {_known(node.get('vendor'), node.get('product'))}"
                   f", serial {_known(node.get('serial'))}, BIOS {_known(node.get('bios_version'))}, "
                   f"{_known(node.get('os'))}, kernel {_known(node.get('kernel'))}, CX-7 firmware "
                   f"{', '.join(fw) or '?'}")
    for end in ev.get("cable") or []:
        test = f"{end['test']}: " if end.get("test") else ""  # a cluster's: the test the end belongs to
        if end.get("netdev") is None:
            out.append(f"{test}cable seen from {end.get('node')}: not read ({end.get('problem')})")
        else:
            out.append(f"{test}cable seen from {end.get('node')} ({end['netdev']}): "
                       f"{_known(end.get('vendor'), end.get('part_number'))}, serial {_known(end.get('serial'))}")
    return out


def acceptance_text(doc: dict[str, Any]) -> str:
    weaker = non_standard_line(doc)
    lines = [headline(doc), *([weaker] if weaker else []), ""]
    lines += aligned([list(HEADER), *marked_rows(doc)], "  ")
    why = reasons(doc)
    if why:
        lines += ["", *(f"  - {line}" for line in why)]
    evidence = evidence_lines(doc)
    if evidence:
        lines += ["", *(f"  {line}" for line in evidence)]
    return "\n".join(lines)


def _shown(value: Any) -> str:
    return ", ".join(value) if isinstance(value, tuple) else _num(value)


def describe_profile(profile: Any) -> str:
    """A profile in full, for `linkcheck profiles show`."""
    t = profile.test
    lines = [f"profile {profile.name} ({profile.source}, sha256 {profile.sha256})", profile.description, "",
             f"layout: {profile.layout} (`linkcheck accept` runs it on this cabling only)", "",
             f"test: {t.repetitions} repetitions of ib_write_bw -D {t.duration_s} -s {byte_size(t.size_bytes)} -q "
             f"{t.qps} (each path alone and both at once, both directions); all_gather_perf up to "
             f"{byte_size(t.nccl_max_bytes)}"
             + (f"; {LATENCY_TEST}" if getattr(t, "latency", False) else ""),
             ""]
    if profile.require:
        lines += [f"required rules (a skip is INCONCLUSIVE): {', '.join(profile.require)}", ""]
    for check in profile.checks:
        lines.append(f"{check.id}: {check.spec.what}")
        for th in check.thresholds:
            value = ", ".join(th.value) if isinstance(th.value, tuple) else _num(th.value)
            miss = "FAIL" if th.fails else "DEGRADED"
            origin = "" if not th.rule else f", from {th.rule}" if not th.tightened else (
                f", tightened from {th.rule} ({_shown(th.rule_value)} {th.unit})")
            lines.append(f"  {th.band}: {th.operator} {value} {th.unit} (else {miss}){origin}")
            lines.append(f"    source: {th.source}")
    return "\n".join(lines)


def check_tests(doc: dict[str, Any]) -> list[dict[str, Any] | None]:
    """Per check, the test of a cluster's record it belongs to; None for a pair's check and a check of the whole
    cluster (the NCCL run). The record lists each test's checks in the order of `cluster.tests`, each test saying
    how many, then the cluster's; a check whose subject does not start with its test's label belongs to none."""
    found = [c for c in doc.get("checks", []) if isinstance(c, dict)]
    owners: list[dict[str, Any] | None] = []
    for test in (doc.get("cluster") or {}).get("tests") or []:
        count = test.get("checks") if isinstance(test, dict) else 0
        owners += [test] * max(0, min(count if isinstance(count, int) else 0, len(found) - len(owners)))
    owners += [None] * (len(found) - len(owners))
    return [t if t is not None and str(c.get("subject", "")).startswith(f"{t.get('test')} ") else None
            for c, t in zip(found, owners, strict=True)]


def _lowest(doc: dict[str, Any], test: dict[str, Any], check_id: str) -> str:
    """The lowest of a check's measurements over one test's subjects, with its unit; '-' when none was measured."""
    checks = [c for c in doc.get("checks", []) if isinstance(c, dict)]
    found = [(c.get("measured") or {}) for c, owner in zip(checks, check_tests(doc), strict=True)
             if owner is test and c.get("id") == check_id]
    lows = [(m["min"], str(m.get("unit", ""))) for m in found if isinstance(m.get("min"), (int, float))]
    if not lows:
        return "-"
    value, unit = min(lows)
    return f"{_num(value)} {unit}".strip()


TEST_HEADER = ("test", "round", "verdict", "lowest path (both at once)", "lowest total", "why not measured")


def layout_line(doc: dict[str, Any]) -> str:
    cluster = doc.get("cluster") or {}
    return f"layout {cluster.get('layout', '?')}: nodes {', '.join(map(str, cluster.get('nodes', [])))}"


def per_test_rows(doc: dict[str, Any]) -> list[list[str]]:
    """A cluster's tests as TEST_HEADER's rows: each test's verdict, its lowest rates, why it was not measured."""
    return [[str(t.get("test")) + (" (second pass)" if t.get("pass") == 2 else ""), str(t.get("round")),
             str(t.get("verdict")), _lowest(doc, t, "rdma_concurrent_gbps"),
             _lowest(doc, t, "rdma_concurrent_total_gbps"), str(t.get("problem") or "")]
            for t in (doc.get("cluster") or {}).get("tests", []) if isinstance(t, dict)]


def cluster_checks(doc: dict[str, Any], show_all: bool = False) -> list[dict[str, Any]]:
    """Every check of the NCCL run across the nodes; a test's checks where they did not pass (all with show_all)."""
    owned = zip((c for c in doc.get("checks", []) if isinstance(c, dict)), check_tests(doc), strict=True)
    return [c for c, test in owned if show_all or c.get("status") != "PASS" or test is None]


def cluster_acceptance_text(doc: dict[str, Any], show_all: bool = False, *, closing: bool = True) -> str:
    """A cluster's acceptance on the console: the headline, each test's verdict with its lowest rates, the checks
    that did not pass (every check with `show_all`), why, who was tested, and the closing line."""
    weaker = non_standard_line(doc)
    lines = [headline(doc), *([weaker] if weaker else []), layout_line(doc), ""]
    lines += aligned([list(TEST_HEADER), *per_test_rows(doc)], "  ")
    shown = cluster_checks(doc, show_all)
    if shown:
        lines += ["", *aligned([list(HEADER), *marked_rows({"checks": shown})], "  ")]
    why = reasons(doc, checks=False)  # the checks' reasons are in the table
    if why:
        lines += ["", *(f"  - {line}" for line in why)]
    evidence = evidence_lines(doc)
    if evidence:
        lines += ["", *(f"  {line}" for line in evidence)]
    return "\n".join([*lines, *(["", closing_line(doc)] if closing else [])])
