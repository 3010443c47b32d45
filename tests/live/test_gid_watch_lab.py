"""The lab's GID tables follow the nodes' IPv4 addresses, as the kernel's do (tests/lab/gid_watch.py): an address
added gets a RoCE v1 and a RoCE v2 entry with its IPv4-mapped GID in the first free slots, bound to its interface;
removed, both go. The tables a scenario staged stay as they were until an address changes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.emulators.node import Node, materialise_sysfs
from tests.emulators.scenarios import SCENARIOS
from tests.lab import Lab
from tests.lab.gid_watch import SLOTS, ZERO_GID, Port, mapped_gid
from tests.lab.scenario import specs_for_scenario

DEV, RDMA = "enp1s0f1np1", "rocep1s0f1"
Table = dict[int, tuple[str, str | None, str | None]]


def _table(read: Callable[[int], tuple[str, str | None, str | None]]) -> Table:
    """The used slots: index -> (gid, type, ndev)."""
    return {i: slot for i in range(SLOTS) if (slot := read(i))[0] != ZERO_GID}


def test_mapped_gid_is_printed_as_sysfs_prints_it() -> None:
    assert mapped_gid("192.168.100.10") == "0000:0000:0000:0000:0000:ffff:c0a8:640a"


def test_an_address_takes_the_first_free_slots_v1_then_v2_and_gives_them_back(tmp_path: Path) -> None:
    node: Node = SCENARIOS["healthy"].node_a
    materialise_sysfs(node, tmp_path)
    port = Port(RDMA, tmp_path / "sys" / "class" / "infiniband")
    staged = _table(port.slot)
    assert sorted(staged) == [0, 1, 2, 3]  # fe80 v1/v2, then the address's v1/v2
    port.add(DEV, "198.19.77.5")
    gid = mapped_gid("198.19.77.5")
    assert _table(port.slot) == {**staged, 4: (gid, "IB/RoCE v1", DEV), 5: (gid, "RoCE v2", DEV)}
    port.add(DEV, "198.19.77.5")  # already there: nothing more
    assert len(_table(port.slot)) == 6
    port.remove(DEV, _ipv4(staged[3][0]))
    assert sorted(_table(port.slot)) == [0, 1, 4, 5]  # a hole where the old address was, as on a node
    assert not (port.dir / "gid_attrs" / "types" / "3").exists()
    port.add(DEV, "198.19.88.1")  # the first free slots: the hole
    assert _table(port.slot)[2] == (mapped_gid("198.19.88.1"), "IB/RoCE v1", DEV)
    assert _table(port.slot)[3] == (mapped_gid("198.19.88.1"), "RoCE v2", DEV)
    port.remove("enP2p1s0f1np1", "198.19.88.1")  # bound to another interface: not this one's entries
    assert 3 in _table(port.slot)


def _ipv4(gid: str) -> str:
    groups = gid.split(":")
    return ".".join(str(int(g[i:i + 2], 16)) for g in groups[-2:] for i in (0, 2))


def _lab_table(lab: Lab, node: str) -> Table:
    script = (f"cd /sys/class/infiniband/{RDMA}/ports/1 && for f in gids/*; do g=$(cat $f); i=${{f#gids/}}; "
              '[ "$g" = ' + ZERO_GID + ' ] && continue; '
              'echo "$i $g $(cat gid_attrs/types/$i 2>/dev/null | tr " " _) $(cat gid_attrs/ndevs/$i 2>/dev/null)"; '
              "done")
    out = lab.exec(node, ["sh", "-c", script]).stdout
    table: Table = {}
    for line in out.splitlines():
        words = line.split()
        table[int(words[0])] = (words[1], words[2].replace("_", " ") if len(words) > 2 else None,
                                words[3] if len(words) > 3 else None)
    return table


def _eventually(check: Callable[[], bool], timeout_s: float = 5) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _write_bw(lab: Lab, index: str) -> tuple[int, str]:
    """ib_write_bw from a's twin with -x `index` to b's (-x 3, its address's RoCE v2): exit status, output."""
    server = lab.spawn("b", ["ib_write_bw", "-d", RDMA, "-x", "3", "-p", "18999", "-D", "1", "-F"])
    assert _eventually(lambda: ":18999 " in lab.exec("b", ["ss", "-ltnH"]).stdout, 15), server.stderr
    client = lab.exec("a", ["ib_write_bw", "-d", RDMA, "-x", index, "-p", "18999", "-D", "1", "-F",
                            "198.19.100.11"], timeout=30)
    server.communicate(timeout=30)
    return client.returncode, client.stdout + client.stderr


@pytest.mark.lab
def test_the_lab_node_gid_table_follows_its_addresses(lab_factory: Callable[..., Lab], tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("healthy", tmp_path / "models"))
    staged = _lab_table(lab, "a")
    assert staged[3] == (mapped_gid("198.19.100.10"), "RoCE v2", DEV)  # the staged table, untouched at start
    lab.exec("a", ["ip", "addr", "add", "198.19.77.5/24", "dev", DEV])
    gid = mapped_gid("198.19.77.5")
    wanted = {**staged, 4: (gid, "IB/RoCE v1", DEV), 5: (gid, "RoCE v2", DEV)}
    assert _eventually(lambda: _lab_table(lab, "a") == wanted), _lab_table(lab, "a")
    # The emulated ib_write_bw reads the live table too: -x 5 is the new address's RoCE v2 entry ...
    code, said = _write_bw(lab, "5")
    assert code == 0 and "Failed to modify QP" not in said, said
    assert "GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:19:77:05" in said, said  # perftest prints bytes
    lab.exec("a", ["ip", "addr", "del", "198.19.77.5/24", "dev", DEV])
    assert _eventually(lambda: _lab_table(lab, "a") == staged), _lab_table(lab, "a")
    # ... and an empty slot once the address is gone, which fails QP RTR as perftest does.
    code, said = _write_bw(lab, "5")
    assert code == 1 and "Failed to modify QP" in said, said
