"""A STAND-IN for `netplan try` in the lab, which has no renderer (systemd-networkd or NetworkManager) for the real
one to apply to. It behaves as netplan-try(8) and netplan 0.106's try_command.py document, minus the renderer:

- runs the real `netplan generate` on a copy of /etc/netplan first (netplan try generates before it applies);
  a configuration that does not generate ends it at once ("An error occurred", "Reverting.");
- prints "Do you want to keep these settings?" once the configuration is "applied" (nothing is: no renderer);
- accepts on SIGUSR1 or a newline on stdin ("Configuration accepted."), exit 0;
- reverts on its timeout (--timeout, default 120 s) or SIGINT ("Reverting."), exit 0; as the real one, a revert
  restores the renderer's configuration only, never the files in /etc/netplan;
- SIGHUP and SIGTERM kill it without a revert (their default action), as they do the real one.

`--config-file` is not supported here (linkcheck does not use it): exit 2.
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str]) -> int:
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
    try:
        error = _generate()
        if error is not None:
            print(f"\nAn error occurred: {error}")
            raise _Rejected()
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
