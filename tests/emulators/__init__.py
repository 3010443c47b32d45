"""Emulators of the tools linkcheck runs on a DGX Spark / GB10 node, driven by a node model.

`node` holds the model (JSON round-trippable dataclasses), `build` makes GB10 nodes, `render` prints what
each inspection spec prints, `bench` prints perftest / nccl-tests / NCCL log outputs, `scenarios` pairs two
nodes into named traps with the findings they must raise, and `cli` runs any of it as a fake tool binary.
In the lab, `live_perftest` and `live_nccl` make ib_write_bw and all_gather_perf talk across the nodes.
"""
