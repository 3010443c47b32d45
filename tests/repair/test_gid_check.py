"""The runtime verification's GID check: the RoCE v2 entry of the address itself (its IPv4-mapped GID, type RoCE v2,
bound to the interface), not any RoCE v2 entry of the interface. Run with its real shell loop on a GB10 sysfs tree
materialised from a node model."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from linkcheck.repair.checks import mapped_gid, roce_v2_index
from linkcheck.repair.node import ShellNode
from linkcheck.transport.local import LocalTransport
from tests.emulators.node import materialise_sysfs
from tests.emulators.scenarios import SCENARIOS

DEV, RDMA, OTHER = "enp1s0f1np1", "rocep1s0f1", "enP2p1s0f1np1"
IP = "192.168.100.10"  # the healthy model's address of DEV: RoCE v2 at index 3


@pytest.fixture
def root(tmp_path: Path) -> Path:
    materialise_sysfs(SCENARIOS["healthy"].node_a, tmp_path)
    return tmp_path / "sys" / "class" / "infiniband"


def _slot(root: Path, index: int, gid: str, gid_type: str, ndev: str) -> None:
    port = root / RDMA / "ports" / "1"
    (port / "gid_attrs" / "types" / str(index)).write_text(gid_type + "\n")
    (port / "gid_attrs" / "ndevs" / str(index)).write_text(ndev + "\n")
    (port / "gids" / str(index)).write_text(gid + "\n")


def _index(root: Path, ip: str, wait_s: int = 0) -> int | None:
    return roce_v2_index(ShellNode(LocalTransport("a")), RDMA, DEV, ip, wait_s=wait_s, root=str(root))


def test_the_address_own_roce_v2_entry_is_found(root: Path) -> None:
    assert mapped_gid(IP) == "0000:0000:0000:0000:0000:ffff:c0a8:640a"
    assert _index(root, IP) == 3


@pytest.mark.parametrize(("gid_type", "ndev"), [("IB/RoCE v1", DEV), ("RoCE v2", OTHER)])
def test_a_v1_entry_or_one_bound_to_another_interface_is_not_the_address_entry(root: Path, gid_type: str,
                                                                              ndev: str) -> None:
    # The interface keeps RoCE v2 entries (fe80 at 1, the old address at 3): the check must not take those.
    _slot(root, 7, mapped_gid("192.168.101.10"), gid_type, ndev)
    assert _index(root, "192.168.101.10") is None
    assert _index(root, IP) == 3


def test_an_address_without_entries_has_none(root: Path) -> None:
    assert _index(root, "192.168.101.10") is None


def test_an_entry_the_kernel_adds_a_moment_later_is_waited_for(root: Path) -> None:
    def later() -> None:
        time.sleep(0.6)
        _slot(root, 5, mapped_gid("192.168.101.10"), "RoCE v2", DEV)

    writer = threading.Thread(target=later)
    writer.start()
    started = time.monotonic()
    try:
        assert _index(root, "192.168.101.10", wait_s=5) == 5
    finally:
        writer.join()
    assert time.monotonic() - started < 4
