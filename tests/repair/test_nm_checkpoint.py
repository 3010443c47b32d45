"""The NetworkManager checkpoint's parts that need no node: the profiles a change brings up, the script's words,
and what the next run reads from the result the script leaves."""

from __future__ import annotations

import shlex

import pytest

from linkcheck.repair.commit import CommitError, FilePlan
from linkcheck.repair.journal import (
    COMMITTED,
    PERSISTENT_PENDING,
    REVERTED,
    SCHEMA,
    FoundJournal,
    Journal,
    SavedFile,
    describe,
    settled_state,
)
from linkcheck.repair.nm_checkpoint import checkpoint_script, profiles
from linkcheck.repair.runtime import MTU, RuntimeOp

KEYFILE = "[connection]\nid=cx7 p1;2\ninterface-name=enP2p1s0f1np1\n\n[ipv4]\naddress1=192.168.101.10/24\n"
DEST = "/etc/NetworkManager/system-connections/x.nmconnection"


def _plan(text: str) -> FilePlan:
    return FilePlan(DEST, "NetworkManager", False, "", 0, 0, b"", text, "600")


def test_profiles_are_read_from_the_keyfile_and_one_without_an_interface_is_refused() -> None:
    assert profiles([_plan(KEYFILE)]) == [("cx7 p1;2", "enP2p1s0f1np1")]
    with pytest.raises(CommitError, match="no connection id or interface-name"):
        profiles([_plan("[connection]\nid=x\n")])
    with pytest.raises(CommitError):  # a name that is no interface name is never put in a command
        profiles([_plan("[connection]\nid=x\ninterface-name=$(reboot)\n")])


def test_the_script_makes_the_checkpoint_with_the_documented_signature_and_puts_files_back_unless_kept() -> None:
    saved = [SavedFile(DEST, False)]
    script = checkpoint_script("/var/lib/linkcheck/journal/r 1", 12, ["enP2p1s0f1np1"], saved,
                               [RuntimeOp(MTU, "enP2p1s0f1np1", "1500")])
    assert "CheckpointCreate aouu $n $paths 12 2" in script
    assert "GetDeviceByIpIface s" in script and 'CheckpointDestroy o "$cp"' in script
    assert "cd '/var/lib/linkcheck/journal/r 1'" in script
    kept = script.index('if [ -n "$kept" ]')
    assert script.index(f"rm -f {DEST}", kept) > kept  # the copy removed only when not kept
    assert "ip link set dev enP2p1s0f1np1 mtu 1500 || true" in script
    shlex.split(script)  # one well-formed shell text


def _journal(state: str) -> Journal:
    return Journal(SCHEMA, "20261202T120000Z-abcdef", "a", "spark-1", "2026-12-02T12:00:00+00:00", state, (), (),
                   (), ())


def test_the_next_run_names_the_checkpoint_that_reverted_or_kept_the_change() -> None:
    reverted = FoundJournal("/d", _journal(PERSISTENT_PENDING), "reverted\nnm-checkpoint")
    assert settled_state(reverted) == REVERTED
    assert "was not confirmed: the NetworkManager checkpoint reverted it by its timeout" in (describe(reverted) or "")
    kept = FoundJournal("/d", _journal(PERSISTENT_PENDING), "accepted\nnm-checkpoint")
    assert settled_state(kept) == COMMITTED
    assert "the NetworkManager checkpoint accepted the change" in (describe(kept) or "")
    netplan = FoundJournal("/d", _journal(PERSISTENT_PENDING), "reverted")
    assert "netplan try reverted it by its timeout" in (describe(netplan) or "")
