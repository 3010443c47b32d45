"""One line per node saying what could not be gathered and why, for stderr after a live run."""

from __future__ import annotations

from linkcheck.outcome import Outcome


def node_problem_lines(outcome: Outcome) -> list[str]:
    """Collection errors first (unreachable, refused, truncated), then per node the fact groups missing."""
    lines = [error for _, error in sorted(outcome.bundle.collection_errors.items())]
    failed = set(outcome.bundle.collection_errors)
    for node in (outcome.link.a, outcome.link.b):
        if node.name in failed or not node.unavailable:
            continue
        reasons = "; ".join(f"{group}: {why}" for group, why in sorted(node.unavailable.items()))
        lines.append(f"node {node.name}: some facts could not be gathered, the rules needing them are not "
                     f"judged: {reasons}")
    return lines
