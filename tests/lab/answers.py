"""Pre-rendered answers for the emulated tools' static calls, so a lab inspection starts no Python.

Every emulated tool call starts a Python process (~80 ms of CPU), and an inspection makes ~23 of them
per node: on a 2-CPU machine that alone took seconds, which no real node pays and which drowned what
the benchmarks measure. The inspection's calls depend only on the node model (written once, when the
lab is staged) and on running as root, so they are rendered once, in-process, into files; the tool's
wrapper answers a call with exactly those arguments, as root, from its files (no process but `cat`),
and runs the emulator for anything else. tests/live/test_lab.py checks that both give the same answer.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from pathlib import Path

from tests.emulators.node import Node

Output = tuple[str, str, int]


def static_calls(node: Node) -> dict[str, list[list[str]]]:
    """Per tool, the argument lists the inspection uses (collect/specs.py) whose answer is static."""
    netdevs = [f.netdev for f in sorted(node.functions, key=lambda f: f.bdf)]
    return {
        "ibv_devinfo": [["-v"]],
        "ibstat": [[]],
        "ibdev2netdev": [[]],
        "show_gids": [[]],
        "rdma": [["-j", "link", "show"]],
        "lspci": [["-vv", "-d", "15b3:"]],
        "dmesg": [[]],
        "ib_write_bw": [["-V"]],
        "ethtool": [args for nd in netdevs for args in ([nd], ["-i", nd], ["-S", nd], ["-m", nd],
                                                                ["--show-fec", nd])],
    }


@functools.lru_cache(maxsize=256)
def _rendered(tool: str, model_text: str, render: Callable[[Node, list[str]], Output]
              ) -> tuple[tuple[tuple[str, ...], Output], ...]:
    """The tool's static calls with their answers; the same model (every lab of a scenario) renders them once in a
    process."""
    node = Node.from_json(model_text)
    return tuple((tuple(args), render(node, list(args))) for args in static_calls(node).get(tool, []))


# The wrapper's check for root without a process: the effective uid from the shell's own status.
_AS_ROOT = ('lc_e=; while read -r lc_k lc_r lc_e lc_x; do [ "$lc_k" = Uid: ] && break; lc_e=; done '
            "</proc/self/status\n")


def answer_block(tool: str, model_json: Path, answers_dir: Path,
                 render: Callable[[Node, list[str]], Output]) -> str:
    """The wrapper lines that answer the tool's static calls from files (empty when it has none)."""
    rendered = _rendered(tool, model_json.read_text(encoding="utf-8"), render)
    if not rendered:
        return ""
    answers_dir.mkdir(parents=True, exist_ok=True)
    cases = []
    for i, (args, (stdout, stderr, rc)) in enumerate(rendered):
        out, err = answers_dir / f"{tool}.{i}.out", answers_dir / f"{tool}.{i}.err"
        out.write_text(stdout, encoding="utf-8")
        err.write_text(stderr, encoding="utf-8")
        if not stderr and rc == 0:
            action = f"exec cat {shlex.quote(str(out))}"
        else:
            action = f"cat {shlex.quote(str(out))}; cat {shlex.quote(str(err))} >&2; exit {int(rc)}"
        cases.append(f"    {shlex.quote(' '.join(args))}) {action} ;;\n")
    return _AS_ROOT + 'if [ "$lc_e" = 0 ]; then\n  case "$*" in\n' + "".join(cases) + "  esac\nfi\n"
