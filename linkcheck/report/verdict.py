"""One verdict per bundle: where the bundle holds an acceptance (`linkcheck accept`), the acceptance's verdict is the
bundle's, for people and for gates alike (the last console line, `-q`, the exit code of `diagnose` and `report`, the
HTML badge, JUnit, Prometheus); the diagnosis stays beside it as what explains it. Without an acceptance, or with one
that is not shown (its digest does not match), the diagnosis's verdict is the bundle's."""

from __future__ import annotations

from typing import Any

import msgspec

from linkcheck.accept.text import closing_line, non_standard
from linkcheck.errors import ExitCode
from linkcheck.model import Verdict

# The acceptance's words in the diagnosis's scale (the exit codes agree: 0 PASS, 1 DEGRADED, 2 FAIL, 3 INCONCLUSIVE).
ACCEPT_VERDICT = {"PASS": Verdict.PASS, "DEGRADED": Verdict.WARN, "FAIL": Verdict.FAIL,
                  "INCONCLUSIVE": Verdict.INCONCLUSIVE}


class BundleVerdict(msgspec.Struct, frozen=True):
    """The bundle's one verdict and where it comes from."""

    verdict: Verdict  # in the diagnosis's scale (a DEGRADED acceptance is WARN), for colours and one-hot gauges
    word: str  # as said: PASS, DEGRADED, FAIL, INCONCLUSIVE for an acceptance; pass, warn, ... for a diagnosis
    exit_code: int
    line: str  # the one line: the console's last, `-q`'s
    by_acceptance: bool  # the acceptance decided it
    non_standard: bool = False  # the acceptance's run was weaker than the standard one: never a green gate
    diagnosis: Verdict = Verdict.PASS  # the diagnosis's own verdict, shown beneath


def decide(diagnosis: Verdict, diagnosis_exit: int, diagnosis_line: str, doc: dict[str, Any] | None) -> BundleVerdict:
    """The acceptance's verdict where `doc` is a shown acceptance with a verdict this version knows; else the
    diagnosis's (`diagnosis_line` its one line)."""
    word = str((doc or {}).get("verdict"))
    if doc is None or "problem" in doc or word not in ACCEPT_VERDICT:
        return BundleVerdict(diagnosis, diagnosis.value, diagnosis_exit, diagnosis_line, False, diagnosis=diagnosis)
    code = doc.get("exit_code")
    exit_code = code if isinstance(code, int) and not isinstance(code, bool) else int(_EXIT[ACCEPT_VERDICT[word]])
    return BundleVerdict(ACCEPT_VERDICT[word], word, exit_code, closing_line(doc), True,
                         non_standard(doc) is not None, diagnosis)


_EXIT = {Verdict.PASS: ExitCode.PASS, Verdict.WARN: ExitCode.WARN, Verdict.FAIL: ExitCode.FAIL,
         Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE}
