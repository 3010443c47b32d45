"""The records of an advice: the workload it was asked for, each figure with its kind, and the advice itself."""

from __future__ import annotations

import math

import msgspec

from linkcheck.errors import UsageError

# The figure kinds: measured (this bundle), published (a source), estimate (computed, with how), given (the user's).
KINDS = ("measured", "published", "estimate", "given")

CHOICES = {
    "two-residents": "two residents",
    "tensor-parallel": "one model across both, tensor parallel",
    "pipeline-parallel": "one model across both, pipeline parallel",
    "one-node": "one node is enough",
    "fix-link-first": "fix the link first",
    "does-not-fit": "the model does not fit the pair",
    "residents": "one resident per node",
}
# The same choices over N nodes (a cluster of three or more; the pair keeps CHOICES' words): "both" becomes all N,
# and one resident runs on each node.
_ACROSS_N = {
    "residents": "one resident per node",
    "tensor-parallel": "one model across all {n}, tensor parallel",
    "pipeline-parallel": "one model across all {n}, pipeline parallel",
    "does-not-fit": "the model does not fit the {n} nodes",
}


def headline(choice: str, nodes: int = 2) -> str:
    """What a choice is called for `nodes` nodes: CHOICES' words for a pair, the N-node words for more."""
    if nodes == 2 or choice not in _ACROSS_N:
        return CHOICES[choice]
    return _ACROSS_N[choice].format(n=nodes)


DEFAULT_KV_KIB_PER_TOKEN = 128  # see Workload.kv_kib_per_token
# The ranges a workload is read within (docs/commands.md, advise): far past any model a pair of 128 GB nodes could
# hold or serve, and small enough that every figure computed from them stays a readable number.
MAX_GIB = 65536.0  # model_gib, active_gib: 64 TiB of weights
MAX_KV_KIB_PER_TOKEN = 65536.0  # 64 MiB a token (a 126-layer bf16 model with full multi-head KV needs about 8)
MAX_CONCURRENCY = 65536
MAX_CONTEXT_TOKENS = 10_000_000  # the longest context a published model takes (10M tokens)
MAX_LAYERS = 1024
MAX_HEADS = 4096


class Workload(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the owner wants to serve. `kv_kib_per_token`: the KV cache one token of context takes; without it
    128 KiB is assumed (32 layers x 2 (K and V) x 8 KV heads x 128 dims x 2 bytes, an 8-KV-head bf16 model) and
    said to be an estimate. `layers`: the model's layer count, for the collective estimate (two all-reduces per
    layer under tensor parallelism); without it the published ~100 per decode step is used."""

    model_gib: float
    concurrency: int
    moe: bool = False
    context_tokens: int = 0
    kv_kib_per_token: float | None = None
    layers: int | None = None
    active_gib: float | None = None  # MoE: the weights one token reads (for the decode estimate)
    heads: int | None = None  # attention heads: tensor parallel across N nodes needs them divisible by N

    def check(self) -> Workload:
        """Refuse what no model is: raise UsageError (exit 4) naming the value."""
        for name, high in (("model_gib", MAX_GIB), ("kv_kib_per_token", MAX_KV_KIB_PER_TOKEN),
                           ("active_gib", MAX_GIB)):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise UsageError(f"{name.replace('_', '-')} must be a finite number above 0, got {value:g}")
            if value is not None and value > high:
                raise UsageError(f"{name.replace('_', '-')} must be at most {high:g}, got {value:g}")
        if self.context_tokens < 0:
            raise UsageError(f"context must be 0 or more tokens, got {_count(self.context_tokens)}")
        for shown, count in (("concurrency", self.concurrency), ("layers", self.layers), ("heads", self.heads)):
            if count is not None and count < 1:
                raise UsageError(f"{shown} must be at least 1, got {_count(count)}")
        for shown, value, high in (("concurrency", self.concurrency, MAX_CONCURRENCY),
                                   ("context", self.context_tokens, MAX_CONTEXT_TOKENS),
                                   ("layers", self.layers, MAX_LAYERS), ("heads", self.heads, MAX_HEADS)):
            if value is not None and value > high:
                raise UsageError(f"{shown} must be at most {high}, got {_count(value)}")
        if self.active_gib is not None and self.active_gib > self.model_gib:
            raise UsageError(f"active-gib {self.active_gib:g} is more than the model's {self.model_gib:g} GiB")
        return self


def _count(value: int) -> str:
    """A count for a message; one of 4,300+ digits is not printed (str() of it raises)."""
    return str(value) if abs(value) < 10**18 else "a number of more than 18 digits"


class Figure(msgspec.Struct, frozen=True):
    """One number the advice rests on: `kind` says whether this bundle measured it, a source published it, linkcheck
    computed it (`source` then says how) or the owner gave it."""

    name: str
    value: float
    unit: str
    kind: str
    source: str


class FixFirst(msgspec.Struct, frozen=True):
    """A finding that voids the cross-node advice, with its first fix."""

    rule_id: str
    status: str
    subject: str
    message: str
    fix: str | None = None


class Advice(msgspec.Struct, frozen=True):
    """The advice for one workload on one bundle's link."""

    choice: str  # a key of CHOICES
    headline: str  # CHOICES[choice]
    reasons: tuple[str, ...]
    link_state: str  # healthy | degraded | not measured
    latency_measured: bool
    workload: Workload
    figures: tuple[Figure, ...]
    fix_first: tuple[FixFirst, ...] = ()
    interim: str | None = None  # with a degraded link: what to run until it is fixed (a key of CHOICES)
    once_fixed: str | None = None  # with a degraded link: the advice once it is healthy (a key of CHOICES)
    notes: tuple[str, ...] = ()
    nodes: int = 2  # the nodes the advice is for: a pair, or a cluster's N
