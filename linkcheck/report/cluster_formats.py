"""The report formats of a cluster check, by the names `linkcheck report -f` takes: the same names as a pair's, each
rendered from a ClusterCheck."""

from __future__ import annotations

from collections.abc import Callable

from linkcheck.errors import UsageError
from linkcheck.outcome import ClusterCheck
from linkcheck.report.cluster import check_json, check_markdown
from linkcheck.report.cluster_html import check_html
from linkcheck.report.cluster_junit import check_junit
from linkcheck.report.cluster_prometheus import check_prometheus

CLUSTER_FORMATS: dict[str, Callable[[ClusterCheck], str]] = {
    "json": check_json, "junit": check_junit, "markdown": check_markdown, "html": check_html,
    "prometheus": check_prometheus}


def cluster_renderer(name: str) -> Callable[[ClusterCheck], str]:
    """The renderer of a cluster bundle's report format; UsageError (exit 4) naming those there are."""
    render = CLUSTER_FORMATS.get(name)
    if render is None:
        raise UsageError(f"a cluster's report is one of {', '.join(CLUSTER_FORMATS)}, not {name!r}")
    return render
