"""The acceptance document as rows and lines, for the console and the Markdown report (which escapes them)."""

from __future__ import annotations

from typing import Any


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def measured_cell(check: dict[str, Any]) -> str:
    m = check.get("measured") or {}
    unit = m.get("unit", "")
    if "min" in m:
        if m.get("min") is None:
            return "-"
        if m["min"] == m["max"]:
            return f"{_num(m['min'])} {unit} (n={len(m.get('values', []))})"
        return f"{_num(m['min'])} / {_num(m['median'])} / {_num(m['max'])} {unit} (n={len(m.get('values', []))})"
    return ", ".join(map(str, m.get("values", []))) or "-"


def threshold_cell(check: dict[str, Any]) -> str:
    parts = []
    for t in check.get("thresholds", []):
        value = ", ".join(t["value"]) if isinstance(t.get("value"), list) else (
            "the same" if t.get("value") is True else _num(t.get("value")))
        word = "" if len(check.get("thresholds", [])) == 1 else f"{'warn' if t['on_miss'] == 'DEGRADED' else 'fail'} "
        parts.append(f"{word}{t['operator']} {value}" + (f" {t['unit']}" if t["operator"] in (">=", "<=") else ""))
    return "; ".join(parts)


def margin_cell(check: dict[str, Any]) -> str:
    margin = check.get("margin")
    return "" if margin is None else f"{margin:+g}"


HEADER = ("status", "check", "subject", "measured min / median / max", "threshold", "margin")


def rows(doc: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    return [(str(c.get("status")), str(c.get("id")), str(c.get("subject")), measured_cell(c), threshold_cell(c),
             margin_cell(c)) for c in doc.get("checks", [])]


def headline(doc: dict[str, Any]) -> str:
    p = doc.get("profile", {})
    reps = doc.get("test", {}).get("repetitions")
    return (f"acceptance: {doc.get('verdict')} exit {doc.get('exit_code')} (profile {p.get('name')}, sha256 "
            f"{str(p.get('sha256', ''))[:16]}..., {reps} repetitions)")


def reasons(doc: dict[str, Any]) -> list[str]:
    """Why the verdict is not PASS: each check that is not, and the findings that count."""
    out = [f"{c['status']} {c['id']} {c['subject']}: {c['reason']}" for c in doc.get("checks", [])
           if c.get("status") != "PASS" and c.get("reason")]
    findings = doc.get("diagnosis", {}).get("findings", [])
    out += [f"finding {f['status'].upper()} {f['id']} {f['subject']}" for f in findings]
    return out + [str(n) for n in doc.get("notes", [])]


def acceptance_text(doc: dict[str, Any]) -> str:
    table = [HEADER, *rows(doc)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    lines = [headline(doc), ""]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    why = reasons(doc)
    if why:
        lines += ["", *(f"  - {line}" for line in why)]
    return "\n".join(lines)


def describe_profile(profile: Any) -> str:
    """A profile in full, for `linkcheck profiles show`."""
    t = profile.test
    lines = [f"profile {profile.name} ({profile.source}, sha256 {profile.sha256})", profile.description, "",
             f"test: {t.repetitions} repetitions of ib_write_bw -D {t.duration_s} -s {t.size_bytes} -q {t.qps} "
             f"(each path alone and both at once, both directions); all_gather_perf up to {t.nccl_max_bytes} bytes",
             ""]
    for check in profile.checks:
        lines.append(f"{check.id}: {check.spec.what}")
        for th in check.thresholds:
            value = ", ".join(th.value) if isinstance(th.value, tuple) else _num(th.value)
            miss = "FAIL" if th.fails else "DEGRADED"
            lines.append(f"  {th.band}: {th.operator} {value} {th.unit} (else {miss})")
            lines.append(f"    source: {th.source}")
    return "\n".join(lines)
