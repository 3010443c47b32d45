"""`python -m tests.emulators.cli <tool> [args...]`: run one emulated tool on the node in $LINKCHECK_LAB_NODE.

Accepts the real flags our specs and bench runners use, prints to stdout/stderr and exits with the real
tool's status. Flags a tool would accept but the emulator does not model are refused with exit 2 and a
line naming the emulator, so a test never mistakes a gap for real output.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tests.emulators import render_ethtool, render_ip, render_pci, render_rdma, render_sys
from tests.emulators.node import Node
from tests.emulators.render_eeprom import render_ethtool_m
from tests.emulators.render_netfilter import render_iptables

Output = tuple[str, str, int]
ENV_NODE = "LINKCHECK_LAB_NODE"


def _unsupported(tool: str, args: list[str]) -> Output:
    return "", f"{tool}: emulator does not model: {' '.join(args)}\n", 2


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def run_ip(node: Node, args: list[str]) -> Output:
    flags = {a for a in args if a.startswith("-")}
    words = [a for a in args if not a.startswith("-")]
    if not flags & {"-j", "-json"}:
        return _unsupported("ip", args)
    obj = words[0] if words else ""
    if words[1:2] not in ([], ["show"], ["list"], ["ls"]) or len(words) > 2:
        return _unsupported("ip", args)
    if obj in ("link", "l"):
        return render_ip.render_ip_link(node)
    table: dict[str, Callable[[Node], Output]] = {
        "addr": render_ip.render_ip_addr, "a": render_ip.render_ip_addr, "address": render_ip.render_ip_addr,
        "route": render_ip.render_ip_route, "r": render_ip.render_ip_route,
        "neigh": render_ip.render_ip_neigh, "n": render_ip.render_ip_neigh, "neighbour": render_ip.render_ip_neigh,
    }
    return table[obj](node) if obj in table else _unsupported("ip", args)


def run_sysctl(node: Node, args: list[str]) -> Output:
    values = {"net.ipv4.conf.all.arp_ignore": node.arp_ignore, "net.ipv4.conf.all.arp_announce": node.arp_announce}
    out, err, rc = "", "", 0
    for name in (a for a in args if not a.startswith("-")):
        if name in values:
            out += f"{name} = {values[name]}\n"
        else:
            err += f"sysctl: cannot stat /proc/sys/{name.replace('.', '/')}: No such file or directory\n"
            rc = 255
    return out, err, rc


def run_rdma(node: Node, args: list[str]) -> Output:
    as_json = "-j" in args or "-json" in args
    words = [a for a in args if not a.startswith("-")]
    if words[:1] != ["link"] or words[1:2] not in ([], ["show"]) or len(words) > 3:
        return _unsupported("rdma", args)
    wanted = words[2].split("/")[0] if len(words) > 2 else None
    if wanted is not None and all(f.rdma_dev != wanted for f in node.functions):
        return "", "Wrong device name\n", 1
    links = [link for link in json.loads(render_rdma.render_rdma_link(node)[0]) if wanted in (None, link["ifname"])]
    if as_json:
        return json.dumps(links, separators=(",", ":")) + "\n", "", 0
    text = "".join(f"link {x['ifname']}/{x['port']} state {x['state']} physical_state {x['physical_state']} "
                   f"netdev {x['netdev']} \n" for x in links)
    return text, "", 0


def run_ibv_devinfo(node: Node, args: list[str]) -> Output:
    device: str | None = None
    it = iter(args)
    for a in it:
        if a in ("-d", "--ib-dev"):
            device = next(it, None)
        elif a.startswith("--ib-dev="):
            device = a.split("=", 1)[1]
        elif a in ("-l", "--list"):
            names = [f.rdma_dev for f in sorted(node.functions, key=lambda f: f.bdf)]
            plural = "s" if len(names) != 1 else ""
            return f"{len(names)} HCA{plural} found:\n" + "".join(f"\t{n}\n" for n in names) + "\n", "", 0
        elif a not in ("-v", "--verbose"):
            return _unsupported("ibv_devinfo", args)
    return render_rdma.render_ibv_devinfo(node, verbose="-v" in args or "--verbose" in args, device=device)


def run_lspci(node: Node, args: list[str]) -> Output:
    vendor: str | None = None
    for i, a in enumerate(args):
        if a == "-d":
            vendor = args[i + 1] if i + 1 < len(args) else ""
        elif a.startswith("-d"):
            vendor = a[2:]
    if vendor is not None and not vendor.lower().startswith("15b3"):
        return "", "", 0
    if any(a.startswith("-v") for a in args):
        return render_pci.render_lspci(node)
    short = "".join(f"{f.bdf} Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
                    for f in sorted(node.functions, key=lambda f: f.bdf))
    return short, "", 0


def _show_fec(node: Node, args: list[str]) -> Output:
    """`ethtool [--json|-j] [-I|--include-statistics] --show-fec IFACE` (global options before the command)."""
    at = args.index("--show-fec")
    options, rest = args[:at], args[at + 1:]
    if len(rest) != 1 or any(o not in ("--json", "-j", "-I", "--include-statistics") for o in options):
        return "", "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1
    return render_ethtool.render_ethtool_fec(node, rest[0], as_json=bool({"--json", "-j"} & set(options)),
                                             statistics=bool({"-I", "--include-statistics"} & set(options)))


# `ethtool --set-fec IF encoding MODE...` in the lab: the configured FEC is kept per interface in the node's
# emulator state (LINKCHECK_LAB_STATE/fec/<netdev>), and `--show-fec` answers from it from then on, as the driver
# does once it renegotiated. Offline (no state folder) it is accepted and kept nowhere.
STATE_ENV = "LINKCHECK_LAB_STATE"
FEC_MODES = {"auto": "Auto", "off": "Off", "rs": "RS", "baser": "BaseR", "llrs": "LLRS"}
FEC_ACTIVE = {"Off": "None", "RS": "RS", "BaseR": "BaseR", "LLRS": "LLRS"}  # what a configured mode runs


def _fec_dir() -> Path | None:
    state = os.environ.get(STATE_ENV, "")
    return Path(state) / "fec" if state else None


def _with_set_fec(node: Node) -> Node:
    """The node with each interface's FEC as `--set-fec` last configured it (Auto: as the model has it)."""
    where = _fec_dir()
    if where is None:
        return node
    functions = []
    for fn in node.functions:
        try:
            configured = (where / fn.netdev).read_text(encoding="ascii").strip()
        except OSError:
            functions.append(fn)
            continue
        active = next((FEC_ACTIVE[m] for m in configured.split() if m in FEC_ACTIVE), fn.fec_active)
        functions.append(replace(fn, fec_configured=configured, fec_active=active))
    return replace(node, functions=tuple(functions))


def _set_fec(node: Node, args: list[str]) -> Output:
    """`ethtool --set-fec IFACE encoding MODE...` (netlink/fec.c): root only, a known interface and modes."""
    if len(args) < 4 or args[0] != "--set-fec" or args[2] != "encoding" or any(
            m.lower() not in FEC_MODES for m in args[3:]):
        return "", "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1
    if not _is_root():
        return "", "netlink error: Operation not permitted\n", 1
    try:
        fn = node.function(args[1])
    except KeyError:
        return "", "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n", 1
    where = _fec_dir()
    if where is not None:
        where.mkdir(parents=True, exist_ok=True)
        (where / fn.netdev).write_text(" ".join(FEC_MODES[m.lower()] for m in args[3:]) + "\n", encoding="ascii")
    return "", "", 0


def run_ethtool(node: Node, args: list[str]) -> Output:
    node = _with_set_fec(node)
    if args in (["--version"], ["-V"]):
        return f"ethtool version {node.version('ethtool')}\n", "", 0
    if len(args) == 1 and not args[0].startswith("-"):
        return render_ethtool.render_ethtool(node, args[0], root=_is_root())
    if len(args) == 2 and args[0] in ("-i", "--driver"):
        return render_ethtool.render_ethtool_i(node, args[1])
    if len(args) == 2 and args[0] in ("-S", "--statistics"):
        return render_ethtool.render_ethtool_s(node, args[1])
    if "--show-fec" in args:
        return _show_fec(node, args)
    if args and args[0] == "--set-fec":
        return _set_fec(node, args)
    if len(args) == 2 and args[0] in ("-m", "--dump-module-eeprom", "--module-info"):
        if not _is_root():
            return "", "netlink error: Operation not permitted\n", 1
        return render_ethtool_m(node, args[1])
    return "", "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1


def run_dmesg(node: Node, args: list[str]) -> Output:
    if node.dmesg_restrict and not _is_root():
        return "", "dmesg: read kernel buffer failed: Operation not permitted\n", 1
    return render_sys.dmesg_text(node), "", 0


def run_netplan(node: Node, args: list[str]) -> Output:
    words = [a for a in args if not a.startswith("--root-dir")]
    if words[:1] != ["get"] or len(words) > 1:
        return _unsupported("netplan", args)
    from tests.emulators.render_netplan import render_netplan_get  # needs yaml: loaded only for netplan

    return render_netplan_get(node)


def run_simple(render: Callable[[Node], Output]) -> Callable[[Node, list[str]], Output]:
    return lambda node, args: render(node)


def run_iptables(node: Node, args: list[str]) -> Output:
    """`iptables -S CHAIN`: the only form linkcheck runs."""
    if len(args) == 2 and args[0] == "-S":
        return render_iptables(node, args[1])
    return _unsupported("iptables", args)


TOOLS: dict[str, Callable[[Node, list[str]], Output]] = {
    "ip": run_ip,
    "iptables": run_iptables,
    "sysctl": run_sysctl,
    "rdma": run_rdma,
    "ibv_devinfo": run_ibv_devinfo,
    "ibstat": run_simple(render_rdma.render_ibstat),
    "ibdev2netdev": run_simple(render_rdma.render_ibdev2netdev),
    "show_gids": run_simple(render_rdma.render_show_gids),
    "lspci": run_lspci,
    "ethtool": run_ethtool,
    "dmesg": run_dmesg,
    "netplan": run_netplan,
    "hostname": run_simple(render_sys.render_hostname),
    "uname": lambda node, args: (node.kernel_release + "\n", "", 0) if "-r" in args else ("Linux\n", "", 0),
}
# The traffic tools live in cli_bench, whose imports (sockets, NCCL and perftest renderers) would cost
# every inspection call ~60 ms; they load only when one of them runs.
BENCH_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "all_gather_perf", "all_reduce_perf")


def _bench_tool(tool: str) -> Callable[[Node, list[str]], Output]:
    def run(node: Node, args: list[str]) -> Output:
        from tests.emulators import cli_bench

        return cli_bench.TOOLS[tool](node, args)

    return run


TOOLS.update({tool: _bench_tool(tool) for tool in BENCH_TOOLS})


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in TOOLS:
        sys.stderr.write(f"usage: python -m tests.emulators.cli <{'|'.join(sorted(TOOLS))}> [args...]\n")
        return 2
    tool, args = argv[0], argv[1:]
    path = os.environ.get(ENV_NODE, "")
    if not path:
        sys.stderr.write(f"{tool}: emulator needs {ENV_NODE} (a node model JSON file)\n")
        return 2
    node = Node.load(path)
    if tool in node.missing_tools:
        sys.stderr.write(f"bash: line 1: {tool}: command not found\n")
        return 127
    stdout, stderr, rc = TOOLS[tool](node, args)
    sys.stdout.write(stdout)
    sys.stdout.flush()
    sys.stderr.write(stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
