"""Plain system outputs: hostname, /proc files, os-release, uname, sysctl, dmesg and the NCCL config."""

from __future__ import annotations

import re

from linkcheck.collect.specs import NM_KEEP
from tests.emulators.node import Node

Output = tuple[str, str, int]
GB10_CPUS = 20


def render_hostname(node: Node) -> Output:
    return node.hostname + "\n", "", 0


def render_uptime(node: Node) -> Output:
    idle = node.uptime_s * GB10_CPUS * 0.93
    return f"{node.uptime_s:.2f} {idle:.2f}\n", "", 0


def _kb(label: str, value: int) -> str:
    # fs/proc/meminfo.c show_val_kb(): the label is padded to 16 columns, the value is "%8lu kB".
    return f"{label + ':':<16}{value:>8} kB\n"


def render_meminfo(node: Node) -> Output:
    total, avail = node.mem_total_kib, node.mem_available_kib
    free = max(avail - 6_000_000, 1_000_000)
    cached = max(avail - free - 200_000, 0)
    rows: list[tuple[str, int]] = [
        ("MemTotal", total), ("MemFree", free), ("MemAvailable", avail), ("Buffers", 213_448),
        ("Cached", cached), ("SwapCached", 0), ("Active", 3_912_880), ("Inactive", 2_906_312),
        ("Active(anon)", 1_522_076), ("Inactive(anon)", 0), ("Active(file)", 2_390_804),
        ("Inactive(file)", 2_906_312), ("Unevictable", 30_720), ("Mlocked", 27_648), ("SwapTotal", 0),
        ("SwapFree", 0), ("Zswap", 0), ("Zswapped", 0), ("Dirty", 212), ("Writeback", 0),
        ("AnonPages", 1_497_336), ("Mapped", 684_652), ("Shmem", 55_948), ("KReclaimable", 390_476),
        ("Slab", 812_340), ("SReclaimable", 390_476), ("SUnreclaim", 421_864), ("KernelStack", 27_264),
        ("PageTables", 30_988), ("SecPageTables", 0), ("NFS_Unstable", 0), ("Bounce", 0),
        ("WritebackTmp", 0), ("CommitLimit", total // 2), ("Committed_AS", 9_144_320),
        ("VmallocTotal", 135_288_315_904), ("VmallocUsed", 180_544), ("VmallocChunk", 0),
        ("Percpu", 25_600), ("HardwareCorrupted", 0), ("AnonHugePages", 0), ("ShmemHugePages", 0),
        ("ShmemPmdMapped", 0), ("FileHugePages", 0), ("FilePmdMapped", 0), ("CmaTotal", 0), ("CmaFree", 0),
    ]
    text = "".join(_kb(k, v) for k, v in rows)
    for name in ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp"):
        text += f"{name + ':':<16}{0:>8}\n"
    text += _kb("Hugepagesize", 2048) + _kb("Hugetlb", 0)
    return text, "", 0


def render_os_release(node: Node) -> Output:
    return node.os_release, "", 0


def render_kernel_release(node: Node) -> Output:
    return node.kernel_release + "\n", "", 0


def render_cmdline_iommu(node: Node) -> Output:
    """`tr ' ' '\\n' </proc/cmdline | grep -E 'iommu|smmu' || true`: the IOMMU words, one a line, exit 0."""
    return "".join(w + "\n" for w in node.cmdline_iommu), "", 0


def render_sysctl(node: Node) -> Output:
    out = (
        f"net.ipv4.conf.all.arp_ignore = {node.arp_ignore}\n"
        f"net.ipv4.conf.all.arp_announce = {node.arp_announce}\n"
    )
    return out, "", 0


def dmesg_text(node: Node) -> str:
    # util-linux dmesg prints "[%5ld.%06ld] " (= "%12.6f"); lines sorted by time as the ring buffer is.
    return "".join(f"[{m.time_s:12.6f}] {m.text}\n" for m in sorted(node.dmesg, key=lambda m: m.time_s))


def render_dmesg(node: Node) -> Output:
    """`dmesg 2>/dev/null || sudo -n dmesg`: the first fails silently under dmesg_restrict."""
    if not node.dmesg_restrict:
        return dmesg_text(node), "", 0
    if not node.sudo_ok:
        return "", "sudo: a password is required\n", 1
    return dmesg_text(node), "", 0


def render_nccl_env(node: Node) -> Output:
    return "".join(f"{k}={v}\n" for k, v in node.nccl_env.items() if k.startswith("NCCL_")), "", 0


def _cat(path: str, text: str | None) -> Output:
    if text is None:
        return "", f"cat: {path}: No such file or directory\n", 1
    return text, "", 0


def render_nccl_conf(node: Node) -> Output:
    return _cat("/etc/nccl.conf", node.nccl_conf)


def render_nccl_conf_user(node: Node) -> Output:
    return _cat(f"{node.home}/.nccl.conf", node.nccl_conf_user)


def render_nccl_conf_file(node: Node) -> Output:
    """The file NCCL_CONF_FILE names (the emulated nodes keep none: an unset variable is an empty answer)."""
    path = node.nccl_env.get("NCCL_CONF_FILE")
    return ("", "", 0) if not path else _cat(path, None)


def render_nm_connections(node: Node) -> Output:
    """`tail -v -n +1` of the keyfiles under /etc then /run (glob order), errors sent to /dev/null, through the
    spec's `grep -E` of the lines it keeps (headers, sections, the keys the diagnosis reads)."""
    etc = sorted((f for f in node.nm_connections if f.path.startswith("/etc/")), key=lambda f: f.path)
    run = sorted((f for f in node.nm_connections if f.path.startswith("/run/")), key=lambda f: f.path)
    text = "\n".join(f"==> {f.path} <==\n{f.text}" for f in etc + run)
    keep = re.compile(NM_KEEP)  # the ERE is also a valid Python pattern with the same meaning
    return "".join(line + "\n" for line in text.split("\n") if keep.match(line)), "", 0


def render_perftest_version(node: Node) -> Output:
    # perftest prints the version and returns FAILURE (1) from its parser (src/perftest_parameters.c).
    return f"Version: {node.version('perftest')}\n", "", 1


def nccl_files(node: Node) -> tuple[str, ...]:
    """The libnccl.so* paths of the node: its own list, else the layout of NVIDIA's libnccl2 .deb."""
    if node.nccl_files:
        return node.nccl_files
    version = node.version("nccl")
    if not version:
        return ()
    return ("/usr/lib/aarch64-linux-gnu/libnccl.so.2", f"/usr/lib/aarch64-linux-gnu/libnccl.so.{version}")


def render_nccl_install(node: Node) -> Output:
    lines = [f"lib {p}" for p in nccl_files(node)]
    if "all_gather_perf" not in node.missing_tools:
        lines.append(f"tests {node.home}/nccl-tests/build/all_gather_perf")
    return "".join(line + "\n" for line in lines), "", 0
