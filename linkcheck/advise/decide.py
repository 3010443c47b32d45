"""Decide how to use the pair for one workload: from the bundle's facts and findings and the published record.

Pure: facts, findings and the workload in, an Advice out. The order of the questions:

1. Does the model with its context fit one node, or only both? (the weights, the KV cache of every request's
   context, in the share of 128 GB a serving runtime takes)
2. With a model that fits one node: vLLM TP=2 served more than two solo replicas from 1 to 32 users and the replicas
   more at 64 (kubis.ai); from 64 users two residents, and between 32 and 64, where nothing was measured, residents
   too (said to be assumed). Up to 32, tensor parallel when its estimated decode speed (tokens per second: the
   weights one token reads, the active ones for MoE, at 273 GB/s per node, half per node across both, plus the
   all-reduces at the measured or the pair's published latency) is clearly above one node's; else one node for one
   user, two residents for more.
3. With a model that needs both: tensor parallel at low batch (published: TP=2 won at batch 1), pipeline parallel
   at high batch (PP=2 won 2.2x at batch 128); dense models keep TP ahead up to batch 32 (published). Its decode
   estimate compares tensor parallel with pipeline parallel (each node reads its half in turn), never with one node,
   which cannot hold it.
4. Any finding that degrades the link voids every cross-node choice: the advice is to fix it first, with what to
   run until then and what the advice becomes once the link is healthy.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
from msgspec.structs import replace

from linkcheck.advise.model import CHOICES, DEFAULT_KV_KIB_PER_TOKEN, Advice, Figure, FixFirst, Workload, headline
from linkcheck.advise.published import published
from linkcheck.cluster.cables import FIRST_PASS
from linkcheck.facts.model import AllReduceRun, LatencyRun, LinkFacts
from linkcheck.model import Finding, Status
from linkcheck.outcome import ClusterCheck, Judged
from linkcheck.values import byte_size, number, plain_number

GIB = 1 << 30
GB_PER_GIB = GIB / 1e9
# Findings that are upkeep, not the link's state now: they never void the cross-node advice (they are listed as
# notes). Every other warning or failure does: a slow, misaddressed or unproven link makes a split a gamble.
UPKEEP_RULES = frozenset({"CABLE_NOT_APPROVED", "NODES_DIFFER", "NM_PROFILE_RUNTIME_ONLY", "NETPLAN_NOT_APPLIED",
                          "LINK_CHANGED", "DRIFT_IDENTITY", "DRIFT_CONFIG"})
# Tensor parallel must beat one node by this much per request to be worth the second node and the link's upkeep:
# linkcheck's own line, a quarter faster.
MIN_TP_SPEEDUP = 1.25
DECODE_PAYLOAD_BYTES = 49152  # the ~48 KB decode all-reduce, as ib_write_lat and all_reduce are measured at it
MOE_TP_MAX_USERS = 7  # MoE: TP published ahead only at batch 1; PP from 8 users on (linkcheck's own line)


class _Figures:
    """The figures of one advice, each once, in the order the reasons name them."""

    def __init__(self) -> None:
        self.items: dict[str, Figure] = {}

    def add(self, figure: Figure) -> str:
        """Keep the figure; return it as the reasons write it: `82.5 GiB (estimate)`."""
        self.items.setdefault(figure.name, figure)
        unit = figure.unit if figure.unit in ("x", "%", "") else f" {figure.unit}"
        return f"{plain_number(round(figure.value, 2))}{unit} ({figure.kind})"

    def published(self, key: str) -> str:
        p = published(key)
        return self.add(Figure(p.what, p.value, p.unit, "published", p.source))


def _fix_first(findings: Iterable[Finding]) -> tuple[tuple[FixFirst, ...], tuple[str, ...]]:
    """The findings that void cross-node advice (their causes first), and the upkeep ones as notes."""
    voiding, notes = [], []
    for f in findings:
        if f.status not in (Status.WARN, Status.FAIL):
            continue
        if f.rule_id in UPKEEP_RULES:
            notes.append(f"{f.rule_id} ({f.subject}) is upkeep, not the link's state now: {f.message}")
        elif f.explained_by is None:  # an explained finding goes away with its cause
            voiding.append(FixFirst(f.rule_id, f.status.value, f.subject, f.message, f.fix[0] if f.fix else None))
    voiding.sort(key=lambda x: x.status != Status.FAIL.value)
    return tuple(voiding), tuple(notes)


def _throughput(link: LinkFacts, figs: _Figures) -> list[str]:
    """The measured rates and latencies, each as `<figure> <what>`."""
    said = []
    for direction, total in link.bench.totals().items():
        if total is not None:
            fig = Figure(f"ib_write_bw both paths at once {direction}", total, "Gb/s", "measured",
                         "this bundle, ib_write_bw concurrent rounds")
            said.append(f"both paths at once {figs.add(fig)} {direction}")
    nccl = link.bench.nccl
    if nccl is not None and nccl.busbw_gbs is not None and not nccl.transport_only:
        said.append("all_gather bus bandwidth " + figs.add(Figure(
            "all_gather_perf bus bandwidth", nccl.busbw_gbs, "GB/s", "measured", "this bundle, all_gather_perf")))
    for lat in link.bench.latency:
        if lat.typical_us is not None:
            name = f"ib_write_lat {byte_size(lat.size_bytes)} on {lat.path_key}"
            said.append(f"{name} {figs.add(Figure(name, lat.typical_us, 'us', 'measured', 'this bundle, t_typical'))}")
    return said


Decode = tuple[float, str]  # the decode all-reduce's time (us), and how it was had


def _allreduce(run: AllReduceRun | None, figs: _Figures) -> tuple[list[str], Decode | None]:
    """The measured small all_reduce (a pair's, or a cluster's across every node): the reason, and its time at the
    decode payload (measured or interpolated)."""
    if run is None or not run.rows:
        return [], None
    for row in sorted(run.rows, key=lambda r: r.size_bytes):
        figs.add(Figure(f"all_reduce {byte_size(row.size_bytes)}", row.time_us, "us", "measured",
                        "this bundle, all_reduce_perf out-of-place time"))
    at = run.time_at(DECODE_PAYLOAD_BYTES)
    if at is None:
        return [], None
    name = f"all_reduce {byte_size(DECODE_PAYLOAD_BYTES)}"
    measured = at[1].startswith("measured")
    shown = figs.add(Figure(name, at[0], "us", "measured" if measured else "estimate", at[1]))
    how = "measured" if measured else "interpolated between the measured sizes"
    return [f"a decode-sized all_reduce ({byte_size(DECODE_PAYLOAD_BYTES)}) takes {shown} across the nodes; "
            f"published for a GB10 pair: {figs.published('allreduce_8k_us')} at 8 KiB and "
            f"{figs.published('allreduce_64k_us')} at 64 KiB"], (at[0], how)


def _measured(link: LinkFacts, figs: _Figures) -> tuple[list[str], Decode | None, bool]:
    """What the bundle measured of the link, as reasons; the decode all-reduce time (us) when measured; whether a
    latency test is in the bundle."""
    said = _throughput(link, figs)
    out = []
    if said:
        tail = (f" (published for a healthy pair: {figs.published('ib_write_lat_2b_us')} at 2 B, "
                f"{figs.published('ib_write_lat_48k_us')} at 48 KB)") if link.bench.latency else ""
        out.append("the link measured: " + "; ".join(said) + tail)
    reduce_reasons, decode = _allreduce(link.bench.allreduce, figs)
    return out + reduce_reasons, decode, bool(link.bench.latency) or link.bench.allreduce is not None


def _link_state(link: LinkFacts, voiding: tuple[FixFirst, ...]) -> str:
    if voiding:
        return "degraded"
    return "healthy" if link.bench_present & {"rdma", "nccl"} else "not measured"


def _memory(w: Workload, figs: _Figures) -> tuple[float, float, float, list[str]]:
    """(weights + KV cache GiB, usable GiB per node, KV GiB, reasons)."""
    node = published("node_memory_gb")
    share = published("runtime_memory_share")
    usable = node.value * share.value / GB_PER_GIB
    figs.published("node_memory_gb")
    figs.published("runtime_memory_share")
    usable_text = figs.add(Figure("usable memory per node", usable, "GiB", "estimate",
                                  f"{plain_number(node.value)} GB ({node.source}) x {share.value:g} ({share.source}), "
                                  "in GiB"))
    kv_per_token = w.kv_kib_per_token
    kv_kind = "given"
    if kv_per_token is None:
        kv_per_token, kv_kind = DEFAULT_KV_KIB_PER_TOKEN, "estimate"
    kv_gib = w.context_tokens * w.concurrency * kv_per_token / (1 << 20)
    weights = figs.add(Figure("model weights", w.model_gib, "GiB", "given", "--model-gib"))
    reasons = []
    if w.context_tokens:
        per_token = figs.add(Figure("KV cache per token", kv_per_token, "KiB", kv_kind,
                                    "--kv-kib-per-token" if kv_kind == "given" else
                                    "an 8-KV-head bf16 model of 32 layers: 32 x 2 (K, V) x 8 heads x 128 dims x 2 B "
                                    "= 131072 B; give your model's with --kv-kib-per-token"))
        kv_text = figs.add(Figure("KV cache of every request's context", kv_gib, "GiB", "estimate",
                                  f"{w.context_tokens} tokens x {w.concurrency} requests x KV cache per token"))
        reasons.append(f"the KV cache of {w.concurrency} request(s) of {w.context_tokens} tokens takes {kv_text} "
                       f"at {per_token} per token")
    need = w.model_gib + kv_gib
    need_text = figs.add(Figure("weights and KV cache", need, "GiB", "estimate", "model weights + KV cache"))
    reasons.append(f"the model needs {need_text}, of which {weights} are weights; one node can give it {usable_text}")
    return need, usable, kv_gib, reasons


class DecodeEstimate(msgspec.Struct, frozen=True):
    """Per-request decode speed in tokens per second: on one node and across both with tensor parallel (across both
    with pipeline parallel each node reads its half in turn: one node's speed, less a hop per token, not counted);
    the reason against one node (a model that fits one), and against pipeline parallel (one that does not)."""

    one_tps: float
    tp_tps: float
    reason_one: str
    reason_pp: str

    @property
    def speedup(self) -> float:
        return self.tp_tps / self.one_tps


def _across(nodes: int) -> str:
    """How the reasons name the nodes a model spans: "both" for a pair, "all N" for more."""
    return "both" if nodes == 2 else f"all {nodes}"


def _decode_estimate(w: Workload, decode: Decode | None, figs: _Figures, nodes: int = 2) -> DecodeEstimate | None:
    """The estimated decode speeds and the reasons that state them; None when the weights one token reads are not
    known (an MoE model without --active-gib). Across `nodes` each node reads its share of the weights, then the
    decode step's all-reduces; without a measured one across them, the pair's published time, times N-1 for more
    nodes (a ring all-reduce takes 2(N-1) steps, a pair's 2; linkcheck's estimate)."""
    read_gib = w.active_gib if w.moe else w.model_gib
    if read_gib is None:
        return None
    bw = published("node_memory_bandwidth_gbs")
    bw_text = figs.published("node_memory_bandwidth_gbs")
    one_ms = read_gib * GB_PER_GIB / bw.value * 1e3
    if w.layers is not None:
        count, how = 2 * w.layers, f"2 per layer x {w.layers} layers (given)"
    else:
        count = int(published("decode_allreduces_per_step").value)
        how = "about 100 per step, published for four Sparks with speculative steps (give --layers for yours)"
        figs.published("decode_allreduces_per_step")
    if decode is None:
        # The pair's own published figure at 64 KiB, above the 48 KB payload: an upper bound for it.
        allreduce_us = published("allreduce_64k_us").value * (nodes - 1)
        kind_how = "the published 68 us of a GB10 pair at 64 KiB (not measured; at most that at 48 KB)"
        if nodes > 2:
            kind_how = (f"the published 68 us of a GB10 pair at 64 KiB x {nodes - 1} (not measured: a ring "
                        f"all-reduce takes {2 * (nodes - 1)} steps across {nodes} nodes, a pair's 2; an estimate)")
        figs.published("allreduce_64k_us")
    else:
        allreduce_us, kind_how = decode[0], f"{number(decode[0])} us each ({decode[1]})"
    collectives_ms = count * allreduce_us / 1e3
    split_ms = one_ms / nodes + collectives_ms
    across = _across(nodes)
    what = "active weights" if w.moe else "weights"
    share_of = "half the weights" if nodes == 2 else f"1/{nodes} of the weights"
    one = figs.add(Figure("decode speed on one node", 1e3 / one_ms, "tok/s", "estimate",
                          f"one token reads {plain_number(read_gib)} GiB of {what} at {plain_number(bw.value)} GB/s "
                          "memory bandwidth per node"))
    tp = figs.add(Figure(f"decode speed across {across}, tensor parallel", 1e3 / split_ms, "tok/s", "estimate",
                         f"each node reads {share_of}, then the all-reduces of a decode step"))
    coll = figs.add(Figure("all-reduces of a decode step", collectives_ms, "ms", "estimate",
                           f"{count} all-reduces ({how}) x {kind_how}"))
    share = figs.add(Figure("collective share of a tensor-parallel decode step", 100 * collectives_ms / split_ms, "%",
                            "estimate", f"all-reduces of a decode step / decode step across {across}"))
    pp = figs.add(Figure(f"decode speed across {across}, pipeline parallel", 1e3 / one_ms, "tok/s", "estimate",
                         "each node reads its half in turn: one node's time per token (the hop between them is "
                         "not counted)" if nodes == 2 else "each node reads its share in turn: one node's time per "
                         "token (the hops between them are not counted)"))
    basis = f"at {bw_text} memory bandwidth per node, with the all-reduces {coll} per token ({share})"
    return DecodeEstimate(
        1e3 / one_ms, 1e3 / split_ms,
        f"one request decodes at about {one} on one node and {tp} across {across} with tensor parallel, {basis}: "
        f"{one_ms / split_ms:.2f}x per request",
        f"one request decodes at about {tp} with tensor parallel and {pp} with pipeline parallel, {basis}")


def _cross_node(w: Workload, fits_one: bool, speedup: float | None, figs: _Figures) -> tuple[str, list[str]]:
    """The choice on a healthy link, and why."""
    users = int(published("replicas_ahead_at_users").value)
    tp_up_to = int(published("tp_ahead_of_replicas_up_to_users").value)
    if fits_one:
        if w.concurrency > tp_up_to:
            measured_here = w.concurrency >= users
            return "two-residents", [
                f"{w.concurrency} concurrent users: two solo replicas served more than tensor parallel at "
                f"{figs.published('replicas_ahead_at_users')}, tensor parallel more up to "
                f"{figs.published('tp_ahead_of_replicas_up_to_users')}"
                + ("" if measured_here else "; between them nothing was measured, and linkcheck assumes replicas")
                + f"; on one GX10 pair two residents gave {figs.published('gx10_residents_aggregate')} against "
                f"{figs.published('gx10_split_aggregate')} for one model across both; two llama.cpp replicas serve "
                f"{figs.published('replicas_gain_32')} one node's throughput at 32 users (against one node, not a "
                "split)"]
        if speedup is None:
            return "tensor-parallel", [
                f"{w.concurrency} concurrent user(s): vLLM TP=2 served more than two solo replicas up to "
                f"{figs.published('tp_ahead_of_replicas_up_to_users')} (one GX10 pair: "
                f"{figs.published('gx10_split_single')} for one request across both against "
                f"{figs.published('gx10_resident_single_a')} on one node); give --active-gib for an estimate for "
                "this MoE model"]
        if speedup >= MIN_TP_SPEEDUP:
            return "tensor-parallel", [
                f"{w.concurrency} concurrent user(s), up to the {tp_up_to} where vLLM TP=2 served more than two solo "
                f"replicas, and tensor parallel is estimated {speedup:.2f}x per request (linkcheck asks for "
                f"{MIN_TP_SPEEDUP:g}x)"]
        if w.concurrency >= 2:
            return "two-residents", [
                f"{w.concurrency} concurrent users and tensor parallel is estimated only {speedup:.2f}x per request "
                f"(below {MIN_TP_SPEEDUP:g}x): the all-reduces eat what the second node's memory bandwidth gives, so "
                "two residents serve more"]
        return "one-node", [
            f"one user and tensor parallel is estimated only {speedup:.2f}x per request (below {MIN_TP_SPEEDUP:g}x): "
            "the all-reduces eat what the second node's memory bandwidth gives"]
    tp_max = int(published("oem_llama8b_tp_max_batch").value) if not w.moe else MOE_TP_MAX_USERS
    if w.concurrency <= tp_max:
        basis = (f"for a dense model tensor parallel led up to batch {figs.published('oem_llama8b_tp_max_batch')}"
                 if not w.moe else
                 f"at batch 1 tensor parallel won ({figs.published('oem_gptoss_tp_b1')} against "
                 f"{figs.published('oem_gptoss_pp_b1')} for GPT-OSS-120B); for MoE linkcheck keeps it below "
                 f"{MOE_TP_MAX_USERS + 1} users")
        return "tensor-parallel", [f"{w.concurrency} concurrent user(s) on a model that needs both nodes: {basis}"]
    return "pipeline-parallel", [
        f"{w.concurrency} concurrent users on a model that needs both nodes: at high batch pipeline parallel wins "
        f"({figs.published('oem_gptoss_pp_b128')} against {figs.published('oem_gptoss_tp_b128')} with tensor parallel "
        f"at batch 128, GPT-OSS-120B)" + ("" if w.moe else "; dense models keep tensor parallel ahead only up to "
                                          f"batch {figs.published('oem_llama8b_tp_max_batch')}")]


def _estimate_reason(estimate: DecodeEstimate | None, choice: str, fits_one: bool, scratch: _Figures,
                     figs: _Figures) -> list[str]:
    """The decode estimate as a reason, its figures joining the advice: against one node where the model fits one
    and the choice is tensor parallel or one node; against pipeline parallel where it does not fit one."""
    if estimate is None or (fits_one and choice not in ("tensor-parallel", "one-node")):
        return []
    for figure in scratch.items.values():
        if fits_one or figure.name != "decode speed on one node":
            figs.add(figure)
    return [estimate.reason_one if fits_one else estimate.reason_pp]


def advise(link: LinkFacts, findings: Iterable[Finding], workload: Workload) -> Advice:
    """The advice for `workload` on this bundle's link."""
    w = workload.check()
    figs = _Figures()
    voiding, notes = _fix_first(findings)
    state = _link_state(link, voiding)
    measured, decode, latency = _measured(link, figs)
    need, usable, kv_gib, reasons = _memory(w, figs)
    fits_one, fits_two = need <= usable, need / 2 <= usable
    scratch = _Figures()  # the decode estimate's figures join the advice only where a reason quotes it
    estimate = _decode_estimate(w, decode, scratch)
    speedup = estimate.speedup if estimate is not None else None
    notes_out = list(notes)
    if not latency:
        notes_out.append("the link's latency is not measured in this bundle (no ib_write_lat or small all_reduce "
                         "run): the collective figures are the published ones")
    if state == "not measured":
        notes_out.append("this bundle has no traffic test: the link's throughput is not measured, so a cross-node "
                         "choice rests on the published record alone (run `linkcheck check --quick` first)")
    if not fits_two:
        reasons.append(f"even split in two it needs {number(need / 2)} GiB per node, more than the usable "
                       f"{number(usable)} GiB; a 295B model that did fit across both ran at "
                       f"{figs.published('gx10_295b_split')} and was discarded")
        return Advice("does-not-fit", CHOICES["does-not-fit"], tuple(reasons + measured), state, latency, w,
                      tuple(figs.items.values()), voiding, notes=tuple(notes_out))
    choice, why = _cross_node(w, fits_one, speedup, figs)
    why += _estimate_reason(estimate, choice, fits_one, scratch, figs)
    if not fits_one:
        why.insert(0, "it does not fit one node: one model must span both")
    reasons += why + measured
    if choice in ("tensor-parallel", "pipeline-parallel"):
        pct = figs.published("link_100g_vs_200g_decode_pct")
        reasons.append(f"a 100G against a 200G link changed decode by about {pct}: latency, not bandwidth, is what a "
                       "split pays for")
    if voiding:
        # Every choice waits for the link: a split crosses it at every step, and even two residents should not be
        # set up as the pair's plan on a link that cannot carry the split it may later need. What runs meanwhile
        # needs nothing from the link.
        interim = ("two-residents" if fits_one and w.concurrency >= 2 else "one-node" if fits_one else None)
        lead = [f"{v.rule_id} ({v.subject}, {v.status})" for v in voiding]
        reasons.insert(0, "a finding degrades the link, which voids any advice to split a model across both: "
                       + "; ".join(lead))
        if interim is None:
            notes_out.append("until the link is fixed the model cannot be served: it needs both nodes")
        return Advice("fix-link-first", CHOICES["fix-link-first"], tuple(reasons), state, latency, w,
                      tuple(figs.items.values()), voiding, interim, choice, tuple(notes_out))
    return Advice(choice, CHOICES[choice], tuple(reasons), state, latency, w, tuple(figs.items.values()), voiding,
                  notes=tuple(notes_out))


# --- a cluster of N nodes --------------------------------------------------------------------------------------
# vLLM refuses tensor parallel across a number of ranks that does not divide the model's attention heads: "Total
# number of attention heads (28) must be divisible by tensor parallel size (3)." (vLLM ModelConfig's check of the
# parallel config, as it prints it). The same holds for KV heads; the attention heads are the ones asked for.
HEADS_RULE = "vLLM: the attention heads must be divisible by the tensor parallel size"


class Nodes(msgspec.Struct, frozen=True):
    """What a cluster's advice reads besides its findings: how many nodes, the layout, each cable's measured rate
    with both twins at once (Gb/s, its slower direction; None where it was not measured), and the latency test:
    each cable's ib_write_lat runs (by its label) and the small all_reduce across every node."""

    count: int
    layout: str
    cables: tuple[tuple[str, float | None], ...] = ()
    latency: tuple[tuple[str, LatencyRun], ...] = ()
    allreduce: AllReduceRun | None = None


def _cable_latency(nodes: Nodes, figs: _Figures) -> list[str]:
    """Each cable's measured ib_write_lat, as a reason, with the published figures of a healthy pair."""
    said = []
    for label, lat in nodes.latency:
        if lat.typical_us is not None:
            name = f"ib_write_lat {byte_size(lat.size_bytes)} on {lat.path_key} (cable {label})"
            said.append(f"{name} {figs.add(Figure(name, lat.typical_us, 'us', 'measured', 'this bundle, t_typical'))}")
    if not said:
        return []
    return ["the cables' latency measured: " + "; ".join(said) + f" (published for a healthy pair: "
            f"{figs.published('ib_write_lat_2b_us')} at 2 B, {figs.published('ib_write_lat_48k_us')} at 48 KB)"]


def _cables(nodes: Nodes, figs: _Figures) -> tuple[list[str], bool]:
    """The cables as measured, the slowest named as what bounds a ring collective, with NVIDIA's figure for the
    layout; whether every cable was measured."""
    measured = [(label, gbps) for label, gbps in nodes.cables if gbps is not None]
    every = bool(nodes.cables) and len(measured) == len(nodes.cables)
    if not measured:
        return [], False
    source = "this bundle, ib_write_bw concurrent rounds, the slower direction"
    said = [f"{label} {figs.add(Figure(f'cable {label} both paths at once', gbps, 'Gb/s', 'measured', source))}"
            for label, gbps in measured]
    slowest, low = min(measured, key=lambda c: c[1])
    ring = nodes.layout.startswith("ring")
    nvidia = figs.published("ring_busbw_min_gbs" if ring else "switch_busbw_min_gbs")
    return [f"the cables measured: {'; '.join(said)}",
            f"the slowest cable, {slowest} at {plain_number(round(low, 2))} Gb/s ({plain_number(round(low / 8, 2))} "
            "GB/s), bounds a collective across the nodes: NCCL's ring passes every chunk over each link in turn "
            "(src/graph/connect.cc connectRings: ranks in cable order), so each step waits for the slowest; NVIDIA's "
            f"cluster check warns below {nvidia} of bus bandwidth "
            + ("on a ring" if ring else "direct or through a switch")], every


def _heads(w: Workload, n: int) -> tuple[bool, str]:
    """Whether tensor parallel across n can split the model's attention heads, and why (said as a reason)."""
    if w.heads is None:
        return False, (f"the model's attention heads are not given (--heads): tensor parallel across {n} needs them "
                       f"divisible by {n} ({HEADS_RULE}), so linkcheck does not advise it")
    if w.heads % n:
        return False, (f"{w.heads} attention heads do not divide by {n} ({HEADS_RULE}): no tensor parallel across "
                       f"all {n}")
    return True, f"{w.heads} attention heads divide by {n}: tensor parallel across all {n} can split them"


def _cluster_choice(w: Workload, n: int, fits_one: bool, speedup: float | None, figs: _Figures
                    ) -> tuple[str, list[str]]:
    """The choice across n healthy nodes, and why: tensor parallel only where the heads divide by n; pipeline
    parallel where the model needs several nodes but tensor parallel cannot or should not split it; one resident
    per node for a model that fits one."""
    tp_ok, heads = _heads(w, n)
    tp_up_to = int(published("tp_ahead_of_replicas_up_to_users").value)
    if fits_one:
        if tp_ok and speedup is not None and speedup >= MIN_TP_SPEEDUP and w.concurrency <= tp_up_to:
            return "tensor-parallel", [heads, (
                f"{w.concurrency} concurrent user(s), up to the {figs.published('tp_ahead_of_replicas_up_to_users')} "
                f"where a pair's tensor parallel served more than its solo replicas, and tensor parallel across {n} "
                f"is estimated {speedup:.2f}x per request (linkcheck asks for {MIN_TP_SPEEDUP:g}x)")]
        why = (f"tensor parallel across {n} is estimated only {speedup:.2f}x per request (below "
               f"{MIN_TP_SPEEDUP:g}x)" if tp_ok and speedup is not None else heads)
        if w.concurrency >= 2:
            return "residents", [why, (
                f"{w.concurrency} concurrent users and a model that fits one node: one resident per node serves "
                "them with no collective crossing a cable; on one GX10 pair two residents gave "
                f"{figs.published('gx10_residents_aggregate')} against {figs.published('gx10_split_aggregate')} "
                "for one model across both")]
        return "one-node", [why, "one user and a model that fits one node: one node serves it"]
    tp_max = int(published("oem_llama8b_tp_max_batch").value) if not w.moe else MOE_TP_MAX_USERS
    if tp_ok and w.concurrency <= tp_max:
        return "tensor-parallel", [heads, (
            f"{w.concurrency} concurrent user(s) on a model that needs several nodes: at low batch tensor parallel "
            f"led (a pair: {figs.published('oem_gptoss_tp_b1')} against {figs.published('oem_gptoss_pp_b1')} with "
            "pipeline parallel at batch 1, GPT-OSS-120B)")]
    why = heads if not tp_ok else (
        f"{w.concurrency} concurrent users: at high batch pipeline parallel wins (a pair: "
        f"{figs.published('oem_gptoss_pp_b128')} against {figs.published('oem_gptoss_tp_b128')} with tensor "
        "parallel at batch 128, GPT-OSS-120B)")
    return "pipeline-parallel", [why, f"pipeline parallel across {n} splits the model by layers: each node holds "
                                      "its layers, and only the activations cross a cable, once per stage"]


def advise_cluster(nodes: Nodes, findings: Iterable[Finding], workload: Workload) -> Advice:
    """The advice for `workload` on a cluster of `nodes.count` nodes (three or more; a pair is `advise`'s): any
    finding of a node or a cable that degrades it voids a split, as on a pair."""
    w = workload.check()
    n = nodes.count
    figs = _Figures()
    voiding, notes = _fix_first(findings)
    measured, every = _cables(nodes, figs)
    state = "degraded" if voiding else "healthy" if every else "not measured"
    need, usable, _, reasons = _memory(w, figs)
    fits_one = need <= usable
    latency = _cable_latency(nodes, figs)
    reduce_reasons, decode = _allreduce(nodes.allreduce, figs)
    measured += latency + reduce_reasons
    latency_measured = bool(nodes.latency) or nodes.allreduce is not None
    notes_out = list(notes)
    if decode is None:
        notes_out.append("the decode-sized all_reduce across the nodes is not measured in a cluster's bundle: the "
                         "collective figures are the pair's published ones, scaled by linkcheck")
    if state == "not measured":
        notes_out.append("not every cable of this bundle was measured: a cross-node choice rests on the published "
                         "record alone (run `linkcheck check --quick` over every node first)")
    if need / n > usable:
        reasons.append(f"even split in {n} it needs {number(need / n)} GiB per node, more than the usable "
                       f"{number(usable)} GiB")
        return Advice("does-not-fit", headline("does-not-fit", n), tuple(reasons + measured), state,
                      latency_measured, w, tuple(figs.items.values()), voiding, notes=tuple(notes_out), nodes=n)
    scratch = _Figures()
    estimate = _decode_estimate(w, decode, scratch, nodes=n)
    choice, why = _cluster_choice(w, n, fits_one, estimate.speedup if estimate else None, figs)
    tp_ok, _ = _heads(w, n)
    if estimate is not None and tp_ok and (choice == "tensor-parallel" or not fits_one):
        for figure in scratch.items.values():
            figs.add(figure)
        why.append(estimate.reason_one if fits_one else estimate.reason_pp)
    if not fits_one:
        why.insert(0, f"it does not fit one node: one model must span several of the {n}")
    reasons += why + measured
    if voiding:
        interim = "residents" if fits_one and w.concurrency >= 2 else "one-node" if fits_one else None
        lead = [f"{v.rule_id} ({v.subject}, {v.status})" for v in voiding]
        reasons.insert(0, "a finding degrades a node or a cable, which voids any advice to split a model across "
                       "the nodes: " + "; ".join(lead))
        if interim is None:
            notes_out.append("until the cluster is fixed the model cannot be served: it needs several nodes")
        return Advice("fix-link-first", CHOICES["fix-link-first"], tuple(reasons), state, latency_measured, w,
                      tuple(figs.items.values()), voiding, interim, choice, tuple(notes_out), n)
    return Advice(choice, headline(choice, n), tuple(reasons), state, latency_measured, w, tuple(figs.items.values()),
                  voiding, notes=tuple(notes_out), nodes=n)


def advise_judged(judged: Judged, workload: Workload) -> Advice:
    """The advice for a judged run: a pair's on its one link, a cluster's on its N nodes and every cable (each
    cable's findings named with its label). Two nodes on one cable are a pair however they were named (a hostfile
    runs them as the cluster of that cable): their advice is the pair's, on that cable, which the published pair
    figures speak to directly."""
    if isinstance(judged, ClusterCheck):
        cable = _one_cable(judged)
        if cable is None:
            return advise_cluster(_cluster_nodes(judged), _cluster_findings(judged), workload)
        link, findings = cable
        return advise(link, [*judged.view.diagnosis.findings, *findings], workload)
    return advise(judged.link, judged.diagnosis.findings, workload)


def _one_cable(check: ClusterCheck) -> tuple[LinkFacts, tuple[Finding, ...]] | None:
    """A cluster of two nodes and one cable: that cable's pair view (with its traffic where it was measured) and its
    findings; None for any other cluster (three nodes or more, or two joined by two cables)."""
    if len(check.view.hosts) != 2:
        return None
    measured = [r for r in check.cables if r.test.pass_no == FIRST_PASS]
    if len(measured) == 1:
        return measured[0].link, measured[0].findings
    links = check.links
    return (links[0], ()) if not measured and len(links) == 1 else None


def _cluster_nodes(check: ClusterCheck) -> Nodes:
    """The cluster as its advice reads it: its nodes, its layout, each first-pass test's rate with both twins at
    once (the slower direction; None where not measured), and its latency test."""
    cables, latency = [], []
    allreduce = None
    for result in check.cables:
        if result.test.pass_no != FIRST_PASS:
            continue
        totals = [t for t in result.link.bench.totals("concurrent").values() if t is not None]
        cables.append((result.test.label, min(totals) if totals else None))
        latency += [(result.test.label, run) for run in result.link.bench.latency]
        allreduce = allreduce or result.link.bench.allreduce  # one run across every node, which each cable carries
    return Nodes(len(check.view.hosts), check.view.topology.layout, tuple(cables), tuple(latency), allreduce)


def _cluster_findings(check: ClusterCheck) -> list[Finding]:
    """The cluster's findings and every test's, a test's subject named with its label (two cables share path
    keys)."""
    tests = [replace(f, subject=f"{f.subject} (cable {r.test.label})") for r in check.cables for f in r.findings]
    return [*check.view.diagnosis.findings, *tests]
