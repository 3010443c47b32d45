"""Bring a lab up or down by hand: `python -m tests.lab.cli up SCENARIO --workdir DIR | down | status`.

`up` leaves the nodes running after it exits (sshd keeps serving); the work directory holds the state
file with every PID and namespace, the ssh_config to use (`ssh -F DIR/ssh_config a`) and the logs.
`down` ends everything recorded there, by PID, and removes the namespaces, links and files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.lab import netns
from tests.lab.errors import LabError
from tests.lab.lab import Lab
from tests.lab.scenario import scenario_names, specs_for_scenario
from tests.lab.state import STATE_NAME, LabState, teardown


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.lab.cli", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="bring a scenario's nodes up and leave them running")
    up.add_argument("scenario", help="scenario name (see `list`)")
    up.add_argument("--workdir", type=Path, required=True)
    down = sub.add_parser("down", help="stop and remove a lab")
    down.add_argument("--workdir", type=Path, required=True)
    down.add_argument("--keep-files", action="store_true", help="keep keys, configs and logs")
    status = sub.add_parser("status", help="a lab's nodes and processes; without --workdir, all lab namespaces")
    status.add_argument("--workdir", type=Path)
    sub.add_parser("list", help="list scenario names")
    return parser


def cmd_up(scenario: str, workdir: Path) -> int:
    """Start the lab and print how to reach it."""
    if (workdir / STATE_NAME).exists():
        print(f"{workdir} already holds a lab; run `down --workdir {workdir}` first", file=sys.stderr)
        return 2
    existed = workdir.exists()
    lab = Lab(specs_for_scenario(scenario, workdir / "scenario"), workdir)
    lab.state.created_workdir = not existed
    lab.state.files.append(str(workdir / "scenario"))
    lab.up()
    for node in lab.nodes.values():
        print(f"node {node.name}: {node.spec.host_name} at {node.mgmt_ip} (netns {node.netns})")
    print(f"ssh -F {lab.ssh_config} a hostname")
    print(f"python -m tests.lab.cli down --workdir {workdir}")
    return 0


def cmd_down(workdir: Path, keep_files: bool) -> int:
    """Tear down the lab recorded in workdir."""
    state = LabState.load(workdir)
    state.keep_files = state.keep_files or keep_files
    problems = teardown(state)
    for problem in problems:
        print(f"left behind: {problem}", file=sys.stderr)
    return 1 if problems else 0


def cmd_status(workdir: Path | None) -> int:
    """Print each node's namespace, address and whether its processes still run."""
    if workdir is None:
        labs = sorted(ns for ns in netns.list_netns() if ns.startswith("lc-"))
        for ns in labs:
            print(f"{ns}: pids {netns.netns_pids(ns)}")
        if not labs:
            print("no lab namespaces on this machine")
        return 0
    state = LabState.load(workdir)
    existing = netns.list_netns()
    for name, info in sorted(state.nodes.items()):
        ns = info.get("netns", "")
        up = "present" if ns in existing else "MISSING"
        print(f"node {name}: netns {ns} {up}, mgmt {info.get('mgmt_ip')}, pids {netns.netns_pids(ns)}")
    for rec in state.processes:
        print(f"  {rec.role}: pid {rec.pid} {'running' if netns.alive(rec.pid, rec.start) else 'gone'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; LabError becomes one line on stderr and exit status 1."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "up":
            return cmd_up(args.scenario, args.workdir.resolve())
        if args.command == "down":
            return cmd_down(args.workdir.resolve(), args.keep_files)
        if args.command == "status":
            return cmd_status(args.workdir.resolve() if args.workdir else None)
        print("\n".join(scenario_names()))
        return 0
    except LabError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
