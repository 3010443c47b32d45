"""What every report is written from: a pair's `Outcome` (one cable) or a cluster's `ClusterCheck` (3-8 nodes).

Each format's one writer (report/formats.py) takes either; the sections a cluster adds (the per-cable table, the
N x N matrix, the heatmap) are written where the record holds more than one cable.
"""

from __future__ import annotations

from linkcheck.outcome import Judged

__all__ = ["Judged"]
