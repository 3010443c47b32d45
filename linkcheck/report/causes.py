"""Causes before consequences, for the human reports: a finding that another explains (`explained_by`, which the
playbooks declare and the engine sets) is listed under its cause, and each distinct fix line is printed once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from linkcheck.model import Finding


def causes_first(findings: Sequence[Finding]) -> list[tuple[Finding, int]]:
    """Each finding once with its depth: one whose cause is among `findings` right after that cause (and what it
    explains after it, one level deeper), the others where they were, at depth 0."""
    present = {f.finding_id for f in findings}
    under: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.explained_by in present:
            under.setdefault(finding.explained_by or "", []).append(finding)
    out: list[tuple[Finding, int]] = []
    placed: set[int] = set()

    def place(finding: Finding, depth: int) -> None:
        if id(finding) in placed:
            return
        placed.add(id(finding))
        out.append((finding, depth))
        for effect in under.get(finding.finding_id, []):
            place(effect, depth + 1)

    for finding in findings:
        if finding.explained_by not in present:
            place(finding, 0)
    for finding in findings:  # only a circle the engine would not have made leaves one unplaced
        place(finding, 0)
    return out


def new_fixes(lines: Iterable[str], printed: set[str]) -> list[str]:
    """The fix lines not printed yet (each once), added to `printed`."""
    fresh = [line for line in dict.fromkeys(lines) if line not in printed]
    printed.update(fresh)
    return fresh
