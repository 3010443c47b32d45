"""Per-pair baselines (the link's known-good state), drift against them, and the run history.

Nothing here is imported by a plain `diagnose`: the CLI loads it only for `--baseline`, `baseline` and `history`.
"""
