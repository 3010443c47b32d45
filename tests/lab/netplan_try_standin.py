"""A STAND-IN for `netplan try` and `netplan apply` in the lab, which has no renderer (systemd-networkd or
NetworkManager) for the real ones to apply to. `try` behaves as netplan-try(8) and netplan 0.106's try_command.py
document, minus the renderer:

- runs the real `netplan generate` on a copy of /etc/netplan first (netplan try generates before it applies);
  a configuration that does not generate ends it at once ("An error occurred", "Reverting.");
- prints "Do you want to keep these settings?" once the configuration is "applied" (nothing is: no renderer);
- accepts on SIGUSR1 or a newline on stdin ("Configuration accepted."), exit 0;
- reverts on its timeout (--timeout, default 120 s) or SIGINT ("Reverting."), exit 0; as the real one, a revert
  restores the renderer's configuration only, never the files in /etc/netplan;
- SIGHUP and SIGTERM kill it without a revert (their default action), as they do the real one.

`--config-file` is not supported here (linkcheck does not use it): exit 2.

Renderer mode (a lab fault: `renderer-0.106` in the node's `$LINKCHECK_LAB_FAULTS/netplan`): the stand-in then
behaves as the real netplan 0.106 did with a real renderer (systemd-networkd or NetworkManager) in
/work/shared/design/real-daemons.md s.2.3: once generated, it applies each ethernet of /etc/netplan whose name is
a live interface (its `mtu:`, and its IPv4 `addresses:` in place of the live ones), and its revert puts the
addresses that were live back but leaves the new MTU (neither renderer resets an MTU the old configuration does
not set). What it applied and left is printed as `renderer:` lines. Without the fault it applies nothing.

`apply` (what linkcheck's revert and `fix --restore` run after putting the files back) runs the real `netplan
generate` the same way (a configuration that does not generate: its error, exit 1, as the real apply) and, in
renderer mode, applies the files as `try` does; without the fault it applies nothing, exit 0.

What the real one does and this stand-in does not: the NetworkManager renderer's disconnect of every
netplan-defined NetworkManager interface (~250 ms, twice), and EOF on stdin rejecting at once in 0.106 (linkcheck's
FIFO never gives EOF). Where a node has the real renderer tier (tests/lab/nspawn.py), its `try` and `apply` are the
real ones and this stand-in is not used.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import FrameType

REAL_NETPLAN = "/usr/sbin/netplan"
RENDERER_FAULT = "renderer-0.106"


class _Accepted(Exception):
    pass


class _Rejected(Exception):
    pass


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Accepted() if signum == signal.SIGUSR1 else _Rejected()


def _generate() -> str | None:
    root = tempfile.mkdtemp(prefix="netplan-try-standin.")
    try:
        os.makedirs(os.path.join(root, "etc"))
        shutil.copytree("/etc/netplan", os.path.join(root, "etc", "netplan"))
        done = subprocess.run([REAL_NETPLAN, "generate", "--root-dir", root], capture_output=True, text=True,
                              check=False)
        return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _renderer_mode() -> bool:
    faults = os.environ.get("LINKCHECK_LAB_FAULTS") or "/nonexistent"
    try:
        with open(os.path.join(faults, "netplan"), encoding="ascii") as f:
            return f.read().strip() == RENDERER_FAULT
    except OSError:
        return False


def _ethernets() -> dict[str, dict[str, object]]:
    """The ethernets of /etc/netplan/*.yaml, later files' keys over earlier ones' (as netplan merges them)."""
    import yaml  # the lab's own dependency, as the emulators'

    merged: dict[str, dict[str, object]] = {}
    for path in sorted(glob.glob("/etc/netplan/*.yaml")):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        network = doc.get("network") if isinstance(doc, dict) else None
        eths = network.get("ethernets") if isinstance(network, dict) else None
        for name, body in (eths or {}).items():
            if isinstance(body, dict):
                merged.setdefault(str(name), {}).update(body)
    return merged


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def _live_v4(dev: str) -> list[str] | None:
    done = _ip("-j", "-4", "addr", "show", "dev", dev)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return [f"{a['local']}/{a['prefixlen']}" for i in json.loads(done.stdout) for a in i.get("addr_info", [])
            if a.get("scope") != "link"]


def _set_v4(dev: str, have: list[str], want: list[str]) -> None:
    for a in have:
        if a not in want:
            _ip("addr", "del", a, "dev", dev)
    for a in want:
        if a not in have:
            _ip("addr", "add", a, "dev", dev)


def _apply_renderer() -> dict[str, list[str]]:
    """Each live ethernet set as the files say (MTU, IPv4 addresses); the addresses that were live, per device."""
    previous: dict[str, list[str]] = {}
    for dev, body in sorted(_ethernets().items()):
        live = _live_v4(dev)
        if live is None:
            continue
        previous[dev] = live
        if isinstance(body.get("mtu"), int):
            _ip("link", "set", "dev", dev, "mtu", str(body["mtu"]))
        addresses = body.get("addresses")
        want = [str(a) for a in addresses if "." in str(a)] if isinstance(addresses, list) else live
        _set_v4(dev, live, want)
        print(f"renderer: {dev} applied: mtu {body.get('mtu', '-')}, addresses {','.join(want) or '-'}", flush=True)
    return previous


def _revert_renderer(previous: dict[str, list[str]]) -> None:
    """The addresses that were live put back; the MTU left as it is now (netplan 0.106 with either renderer)."""
    for dev, addresses in sorted(previous.items()):
        _set_v4(dev, _live_v4(dev) or [], addresses)
        mtu = _ip("-j", "link", "show", "dev", dev)
        left = json.loads(mtu.stdout)[0].get("mtu") if mtu.returncode == 0 and mtu.stdout.strip() else "?"
        print(f"renderer: {dev} reverted: addresses {','.join(addresses) or '-'}, mtu left at {left}", flush=True)


def apply() -> int:
    error = _generate()
    if error is not None:
        print(f"netplan apply stand-in: {error}", file=sys.stderr)
        return 1
    if _renderer_mode():
        _apply_renderer()
    return 0


def main(argv: list[str]) -> int:
    if argv == ["apply"]:
        return apply()
    parser = argparse.ArgumentParser(prog="netplan try")
    parser.add_argument("command", choices=["try"])
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--config-file")
    args = parser.parse_args(argv)
    if args.config_file:
        print("netplan try stand-in: --config-file is not supported in the lab", file=sys.stderr)
        return 2
    # As the real one: SIGINT and SIGUSR1 handled explicitly (a shell's background job starts with SIGINT ignored).
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGUSR1, _on_signal)
    previous: dict[str, list[str]] | None = None
    try:
        error = _generate()
        if error is not None:
            print(f"\nAn error occurred: {error}")
            raise _Rejected()
        if _renderer_mode():
            previous = _apply_renderer()
        print("Do you want to keep these settings?\n\n", flush=True)
        print("Press ENTER before the timeout to accept the new configuration\n\n", flush=True)
        end = time.monotonic() + args.timeout
        while time.monotonic() < end:
            ready, _, _ = select.select([sys.stdin], [], [], min(1.0, max(0.0, end - time.monotonic())))
            if ready and sys.stdin.readline() == "\n":
                raise _Accepted()
        raise _Rejected()
    except _Accepted:
        print("\nConfiguration accepted.", flush=True)
    except _Rejected:
        print("\nReverting.", flush=True)
        if previous is not None:
            _revert_renderer(previous)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
