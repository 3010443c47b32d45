"""What differs between a cluster and its baseline beyond each cable's own fields: the nodes (replaced, missing, new,
their node-wide settings) and the cabling (a cable missing or new, the layout). Computed by
linkcheck.baseline.cluster_drift, judged by the CLUSTER_DRIFT_* rules (playbooks/cluster-drift.yaml); each cable's
own fields are judged by the pair's DRIFT_* rules on that cable."""

from __future__ import annotations

import msgspec

from linkcheck.facts.drift import Change


class NodeDrift(msgspec.Struct, frozen=True):
    """One node that is not as the baseline recorded it.

    `kind`: replaced (another machine under the node's name), missing (in the baseline, not named now), new (named
    now, not in the baseline) or settings (its kernel, OS or NCCL settings changed); `was` and `now` say who the
    node is (hostname, MACs) or what changed."""

    node: str
    kind: str
    was: str
    now: str
    changes: tuple[Change, ...] = ()
    unread: tuple[str, ...] = ()  # fields one of the runs could not read (settings only)


class CableDrift(msgspec.Struct, frozen=True):
    """A cable (or a test through the switch) missing since the baseline, or new; or the layout changed
    (`kind` layout, the cable `cluster`)."""

    cable: str
    kind: str  # missing | new | layout
    was: str
    now: str
    nodes: tuple[str, ...] = ()


class ClusterDrift(msgspec.Struct, frozen=True):
    """The cluster against its baseline: the baseline's name, when it was saved, the nodes and cables that
    differ."""

    baseline: str
    saved: str
    nodes: tuple[NodeDrift, ...] = ()
    cables: tuple[CableDrift, ...] = ()
