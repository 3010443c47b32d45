"""The published record the advice quotes: every figure with what it measured and where it was published.

Nothing here is measured by linkcheck. Each figure is quoted as `published` with its source, never as a
measurement; docs/advise.md lists the same figures for people.
"""

from __future__ import annotations

import msgspec


class Published(msgspec.Struct, frozen=True):
    """One published figure: its value and unit, what it is, and where it was published."""

    key: str
    value: float
    unit: str
    what: str
    source: str


_GX10 = "GX10 pair lab report, a month of testing (Spanish-language; spark-link.md s.8)"
_OEM = "three OEM dual-Spark pairs review (Dell, GIGABYTE, HP; Spanish-language; spark-link.md s.8)"
_B12X = "local-inference-lab/b12x#295 (GLM-5.3-Flash TP4 on four DGX Sparks, 6-token speculative steps)"
_KUBIS = "kubis.ai, vLLM TP=2 against two solo replicas on two DGX Sparks (spark-link.md s.10)"
_SETUP = ("NVIDIA/dgx-spark-playbooks nvidia/multi-sparks-through-switch/assets/spark_cluster_setup/"
          "spark_cluster_setup.py (spark-link.md s.10; a miss only warns)")
_UNSLOTH = "unslothai/unsloth studio/spark_cluster.py (llama.cpp replicas against one node)"

FIGURES: tuple[Published, ...] = (
    Published("node_memory_gb", 128, "GB", "unified memory of one GB10 node", "NVIDIA DGX Spark specification"),
    Published("node_memory_bandwidth_gbs", 273, "GB/s", "memory bandwidth of one GB10 node",
              "two DGX Sparks buyer's guide (Russian-language; spark-link.md s.8)"),
    Published("runtime_memory_share", 0.9, "", "share of a GPU's memory a serving runtime takes by default",
              "vLLM engine argument gpu_memory_utilization, default 0.9"),
    Published("gx10_split_aggregate", 95.5, "tok/s", "one model across both nodes, aggregate work", _GX10),
    Published("gx10_split_single", 40.9, "tok/s", "one model across both nodes, one request with 1,048,576 tokens "
              "of context", _GX10),
    Published("gx10_residents_aggregate", 170, "tok/s", "two independent residents, aggregate work (about)", _GX10),
    Published("gx10_resident_single_a", 20.3, "tok/s", "a resident, one request with 131,072 tokens of context",
              _GX10),
    Published("gx10_resident_single_b", 20.8, "tok/s", "the other resident, one request with 262,144 tokens of "
              "context", _GX10),
    Published("gx10_295b_split", 8.17, "tok/s", "a 295B model that fitted across both nodes (discarded as too slow)",
              _GX10),
    Published("oem_gptoss_tp_b128", 252.01, "tok/s", "GPT-OSS-120B, tensor parallel TP=2, batch 128", _OEM),
    Published("oem_gptoss_pp_b128", 554.69, "tok/s", "GPT-OSS-120B, pipeline parallel PP=2, batch 128", _OEM),
    Published("oem_gptoss_tp_b1", 39.55, "tok/s", "GPT-OSS-120B, tensor parallel TP=2, batch 1", _OEM),
    Published("oem_gptoss_pp_b1", 28.79, "tok/s", "GPT-OSS-120B, pipeline parallel PP=2, batch 1", _OEM),
    Published("oem_llama8b_tp_max_batch", 32, "requests", "Llama-3.1-8B: tensor parallel led pipeline parallel up "
              "to this batch", _OEM),
    Published("decode_allreduces_per_step", 100, "all-reduces", "all-reduces per decode step (about) of four Sparks "
              "running one model (TP4) with 6-token speculative steps, not a pair", _B12X),
    Published("decode_allreduce_payload_kb", 48, "KB", "payload of each decode all-reduce (about), four Sparks", _B12X),
    Published("decode_allreduce_nccl_us_low", 54, "us", "NCCL time of one 48 KB all-reduce across four Sparks, low "
              "end", _B12X),
    Published("decode_allreduce_nccl_us_high", 64, "us", "NCCL time of one 48 KB all-reduce across four Sparks, high "
              "end", _B12X),
    Published("ib_write_lat_48k_us", 8.8, "us", "ib_write_lat of 48 KB on a GB10 pair", _B12X),
    Published("ib_write_lat_2b_us", 1.47, "us", "ib_write_lat of 2 B on a GB10 pair (t_typical)",
              "eugr/spark-vllm-docker docs/NETWORKING.md"),
    Published("allreduce_8k_us", 35, "us", "NCCL all_reduce of 8 KiB on a GB10 pair",
              "NVIDIA/dgx-spark-playbooks#103"),
    Published("allreduce_64k_us", 68, "us", "NCCL all_reduce of 64 KiB on a GB10 pair",
              "NVIDIA/dgx-spark-playbooks#103"),
    Published("link_100g_vs_200g_decode_pct", 3, "%", "change in decode speed between 100G and 200G links (about)",
              "NVIDIA developer forum thread 373146"),
    Published("tp_ahead_of_replicas_up_to_users", 32, "users", "concurrent users up to which vLLM TP=2 across both "
              "nodes served more than two solo replicas (measured from 1 user)", _KUBIS),
    Published("replicas_ahead_at_users", 64, "users", "concurrent users at which two solo replicas served more than "
              "vLLM TP=2 across both nodes", _KUBIS),
    Published("ring_busbw_min_gbs", 10, "GB/s", "NCCL bus bandwidth below which NVIDIA's cluster check warns on a "
              "ring of Sparks", _SETUP),
    Published("switch_busbw_min_gbs", 21.875, "GB/s", "NCCL bus bandwidth below which NVIDIA's cluster check warns, "
              "Sparks direct or through a switch", _SETUP),
    Published("replicas_gain_8", 1.30, "x", "two llama.cpp replicas against ONE node (not a split) at 8 users",
              _UNSLOTH),
    Published("replicas_gain_16", 1.75, "x", "two llama.cpp replicas against ONE node (not a split) at 16 users",
              _UNSLOTH),
    Published("replicas_gain_32", 1.91, "x", "two llama.cpp replicas against ONE node (not a split) at 32 users",
              _UNSLOTH),
)

BY_KEY = {f.key: f for f in FIGURES}


def published(key: str) -> Published:
    return BY_KEY[key]
