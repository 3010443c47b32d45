"""NCCL settings as NCCL reads them: which RDMA devices NCCL_IB_HCA selects (prefix match, '=' exact, '^'
exclude), the addressed twins NCCL uses, and how a setting is removed where it is set."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkcheck.facts.model import Function, NodeFacts


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


def nccl_functions(node: NodeFacts) -> list[Function]:
    """The addressed twins whose RDMA device NCCL_IB_HCA lets NCCL use."""
    used = [f for f in node.used_functions if f.rdma_dev]
    chosen = set(select_hcas(node.nccl.get("NCCL_IB_HCA"), [f.rdma_dev or "" for f in used]))
    return [f for f in used if f.rdma_dev in chosen]


def unset_command(name: str, source: str, otherwise: str = "") -> str:
    """How to remove the NCCL setting `name` where it is set (`source`: environment, ~/.nccl.conf, /etc/nccl.conf);
    for a source of another name, `otherwise` (default `remove NAME`) from that source, quoted: it is the node's
    text."""
    known = {
        "/etc/nccl.conf": f"sudo sed -i '/^{name}=/d' /etc/nccl.conf",
        "~/.nccl.conf": f"sed -i '/^{name}=/d' ~/.nccl.conf",
        "environment": f"unset {name}  # and remove it from the job's environment (shell profile, compose file, "
                       "mpirun -x)",
    }
    return known.get(source) or f"{otherwise or f'remove {name}'} from {shlex.quote(source)}"
