"""Put a baseline into a diagnosis: refuse another pair's, else attach it with this bundle's snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from linkcheck.baseline.compare import pair_differences
from linkcheck.baseline.identity import snapshot_of
from linkcheck.baseline.model import Baseline, BaselineFacts
from linkcheck.baseline.store import BaselineError

if TYPE_CHECKING:
    from linkcheck.collect.bundle import Bundle
    from linkcheck.facts.model import LinkFacts


def attach_baseline(bundle: Bundle, link: LinkFacts, baseline: Baseline) -> LinkFacts:
    """The link facts with the baseline to compare with; a baseline of another pair compares nothing."""
    current = snapshot_of(bundle, link, verdict="")
    differences = pair_differences(baseline.snapshot.pair, current.pair)
    if differences:
        raise BaselineError(baseline.path or baseline.name,
                            f"baseline {baseline.name!r} is of another pair: {'; '.join(differences)}",
                            fix="compare with a baseline of this pair (linkcheck baseline list), or save one")
    return link._replace(baseline=BaselineFacts(baseline=baseline, current=current))
