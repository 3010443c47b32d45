"""NCCL_IB_HCA semantics: which RDMA devices NCCL will use (prefix match, '=' exact, '^' exclude)."""

from __future__ import annotations


def select_hcas(value: str | None, devices: list[str]) -> list[str]:
    """The devices NCCL would pick from `devices` given NCCL_IB_HCA (None or empty = all).

    >>> select_hcas("rocep1s0f1,roceP2p1s0f1", ["rocep1s0f1", "roceP2p1s0f1", "rocep1s0f0"])
    ['rocep1s0f1', 'roceP2p1s0f1']
    >>> select_hcas("^=rocep1s0f0", ["rocep1s0f0", "rocep1s0f1"])
    ['rocep1s0f1']
    >>> select_hcas("roce", ["rocep1s0f0", "mlx5_0"])
    ['rocep1s0f0']
    """
    if value is None or not value.strip():
        return list(devices)
    spec = value.strip()
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    spec = spec.lstrip("=")
    names = [item.split(":", 1)[0].strip() for item in spec.split(",") if item.strip()]

    def matches(dev: str) -> bool:
        return any(dev == n if exact else dev.startswith(n) for n in names)

    return [d for d in devices if matches(d) != exclude]
