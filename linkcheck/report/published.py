"""The published figures a healthy pair reads with both paths at once, which the reports draw or colour against: the
accepted GX10 pair of spark-link s.8 (98.01 + 98.01 = 196.02 Gb/s; also 98.03 + 98.03 [S12] and 98.04 + 98.04
[S27], s.5). A module of their own, so a report without matplotlib (a cluster's heatmap) reads the same figures as
the pair's plots."""

from __future__ import annotations

PUBLISHED_PATH_GBPS = 98.01
PUBLISHED_TOTAL_GBPS = 196.02
