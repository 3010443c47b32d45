"""`ib_write_bw` client and server output (text and --out_json) in the formats of a given perftest version.

Banner, address lines and result rows follow src/perftest_parameters.[ch] and perftest_communication.h
(tool-formats.md 1.3-1.8): <= 6.21 (tags <= 24.04) print "MB/sec" and a 3-space row tail, >= 6.22 (24.07)
"MiB/sec" and a 5-space tail; --report_gbits prints Gb/sec in every version; -D prints the "BW peak won't
be measured" warning first and a 0.00 peak.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

RESULT_LINE = "-" * 87 + "\n"
DEFAULT_MARGIN_S = 2
WAITING_BOX = (
    "\n************************************\n* Waiting for client to connect... *\n"
    "************************************\n"
)


@dataclass(frozen=True)
class PerftestRun:
    """One side of one ib_write_bw run. GIDs are IPv6-notation strings (e.g. ::ffff:192.168.100.10)."""

    role: str  # client | server
    device: str
    gid_index: int
    local_gid: str
    remote_gid: str
    gbps: float  # the measured average, Gb/s (10^9 bit/s)
    mtu_bytes: int = 4096  # RoCE MTU both sides agreed on
    size_bytes: int = 1048576
    duration_s: int | None = 10  # None: iteration mode (-n iterations)
    iterations: int = 5000
    version: str = "6.22"
    report_gbits: bool = True
    seed: int = 0  # varies QPN/PSN/RKey/VAddr between runs
    peak_gbps: float | None = None  # iteration mode: the measured peak (default: a hair above the average)
    msg_rate_mpps: float | None = None  # default: derived from the average and the message size


def version_tuple(version: str) -> tuple[int, int]:
    try:
        major, minor = (int(x) for x in (version.split(".") + ["0"])[:2])
    except ValueError:
        return (6, 29)
    return (major, minor)


def unit(run: PerftestRun) -> str:
    if run.report_gbits:
        return "Gb/sec"
    return "MiB/sec" if version_tuple(run.version) >= (6, 22) else "MB/sec"


def bw_in_unit(run: PerftestRun, gbps: float) -> float:
    return gbps if run.report_gbits else gbps * 1e9 / 8 / 1048576


def msg_rate_mpps(run: PerftestRun) -> float:
    if run.msg_rate_mpps is not None:
        return run.msg_rate_mpps
    return run.gbps * 1e9 / 8 / run.size_bytes / 1e6


def margin_s(run: PerftestRun) -> int:
    """perftest's default margin in duration mode: duration / 4 (integer), 2 s for the usual -D 10."""
    return DEFAULT_MARGIN_S if run.duration_s is None else run.duration_s // 4


def measured_iterations(run: PerftestRun) -> int:
    if run.duration_s is None:
        return run.iterations
    window = run.duration_s - 2 * margin_s(run)
    return int(run.gbps * 1e9 / 8 * window / run.size_bytes)


def peak(run: PerftestRun) -> float:
    # Duration mode and > 20000 iterations do not measure the peak.
    if run.duration_s is not None or run.iterations > 20000:
        return 0.0
    return run.peak_gbps if run.peak_gbps is not None else run.gbps * 1.0007


def banner(run: PerftestRun) -> str:
    v = version_tuple(run.version)
    text = RESULT_LINE + "                    RDMA_Write BW Test\n"
    text += f" Dual-port       : OFF\t\tDevice         : {run.device}\n"
    text += " Number of qps   : 1\t\tTransport type : IB\n"
    text += " Connection type : RC\t\tUsing SRQ      : OFF\n"
    text += " PCIe relax order: ON\t\tLock-free      : OFF\n" if v >= (6, 23) else " PCIe relax order: ON\n"
    text += " ibv_wr* API     : ON\n"
    if run.role == "client":
        text += " TX depth        : 128\n"
    text += " CQ Moderation   : 1\n"
    text += f" Mtu             : {run.mtu_bytes}[B]\n"
    text += " Link type       : Ethernet\n"
    text += f" GID index       : {run.gid_index}\n"
    text += " Max inline data : 0[B]\n"
    text += " rdma_cm QPs\t : OFF\n"
    text += " Data ex. method : Ethernet\n"
    return text + RESULT_LINE


def _decimal_gid(gid: str) -> str:
    return ":".join(f"{b:02d}" for b in ipaddress.IPv6Address(gid).packed)


def _address(kind: str, qpn: int, psn: int, rkey: int, vaddr: int, gid: str) -> str:
    lid = "0000"  # "%#04x" of 0 prints no 0x
    return (f" {kind} address: LID {lid} QPN {qpn:#06x} PSN {psn:#06x} RKey {rkey:#08x} VAddr {vaddr:#016x}\n"
            f" GID: {_decimal_gid(gid)}\n")


def addresses(run: PerftestRun) -> str:
    s = run.seed
    client = (0x0107 + s, 0x3A1B2C ^ (s * 7919), 0x1FFF00 + s * 0x100, 0xFFFF7E5C0000 + s * 0x100000)
    server = (0x0108 + s, 0x9D4E10 ^ (s * 104729), 0x200F00 + s * 0x100, 0xFFFF8A210000 + s * 0x100000)
    local, remote = (client, server) if run.role == "client" else (server, client)
    return _address("local", *local, run.local_gid) + _address("remote", *remote, run.remote_gid)


def result_row(run: PerftestRun) -> str:
    avg = bw_in_unit(run, run.gbps)
    pk = bw_in_unit(run, peak(run))
    rate = msg_rate_mpps(run)
    it = measured_iterations(run)
    if run.report_gbits and avg < 0.1:
        return f" {run.size_bytes:<7d}    {it}           {pk:<7.6f}            {avg:<7.6f}            {rate:<7.6f}\n"
    tail = "\t\t     " if version_tuple(run.version) >= (6, 22) else "\t\t   "
    return f" {run.size_bytes:<7d}    {it:<10d}       {pk:<7.2f}            {avg:<7.2f}{tail}{rate:<7.6f}\n"


def results_header(run: PerftestRun) -> str:
    """The separator and column header printed before the run (the row follows after it)."""
    u = unit(run)
    return RESULT_LINE + f" #bytes     #iterations    BW peak[{u}]    BW average[{u}]   MsgRate[Mpps]\n"


def render_ib_write_bw(run: PerftestRun) -> tuple[str, str, int]:
    """Full stdout of one side; stderr empty (-F given), exit 0."""
    text = " WARNING: BW peak won't be measured in this run.\n" if run.duration_s is not None else ""
    if run.role == "server":
        text += WAITING_BOX
    text += banner(run) + addresses(run) + results_header(run)
    text += result_row(run) + RESULT_LINE
    return text, "", 0


def render_ib_write_bw_json(run: PerftestRun) -> str:
    """The --out_json file of perftest >= 6.20 (standard JSON, keys in write_test_info_to_file order)."""
    info = [
        ("test", '"RDMA_Write_BW_Test"'), ("Dual_port", '"OFF"'), ("Device", f'"{run.device}"'),
        ("Number_of_qps", "1"), ("Transport_type", '"IB"'), ("Connection_type", '"RC"'),
        ("Using_SRQ", '"OFF"'), ("PCIe_relax_order", '"ON"'), ("ibv_wr_API", '"ON"'),
    ]
    if run.role == "client":
        info.append(("TX_depth", "128"))
    info += [
        ("CQ_Moderation", "1"), ("Mtu", str(run.mtu_bytes)), ("Link_type", '"Ethernet"'),
        ("GID_index", str(run.gid_index)), ("Max_inline_data", "0"), ("rdma_cm_QPs", '"OFF"'),
        ("Use_ROCm_memory", '"OFF"'), ("Use_MUSA_memory", '"OFF"'), ("Data_ex_method", '"Ethernet"'),
    ]
    results = [
        ("MsgSize", str(run.size_bytes)), ("n_iterations", str(measured_iterations(run))),
        ("BW_peak", f"{bw_in_unit(run, peak(run)):.2f}"), ("BW_average", f"{bw_in_unit(run, run.gbps):.2f}"),
        ("MsgRate", f"{msg_rate_mpps(run):.6f}"),
    ]
    body = ",\n".join(f'"{k}": {v}' for k, v in info)
    res = ",\n".join(f'"{k}": {v}' for k, v in results)
    return "{\n" + '"test_info": {\n' + body + "\n},\n" + '"results": {\n' + res + "\n}\n}\n"


def command_line(run: PerftestRun, server_ip: str | None) -> str:
    """The command a runner would issue for this side (recorded as the capture's command)."""
    parts = ["ib_write_bw", "-d", run.device, "-x", str(run.gid_index), "-F", "-s", str(run.size_bytes)]
    if run.report_gbits:
        parts.append("--report_gbits")
    if run.duration_s is not None:
        parts += ["-D", str(run.duration_s)]
    else:
        parts += ["-n", str(run.iterations)]
    if run.role == "client" and server_ip:
        parts.append(server_ip)
    return " ".join(parts)


# Error texts (tool-formats.md 1.2, 1.9, 1.10), by version where they changed. --------------------

GID_INCOMPATIBLE = "\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n"


def socket_init_error(version: str, first_line: str) -> str:
    """establish_connection() failing: <= 6.17 lacks the newline after "...socket connection"."""
    sep = "\n" if version_tuple(version) >= (6, 20) else ""
    return (f"{first_line}\nUnable to open file descriptor for socket connection{sep}"
            " Unable to init the socket connection\n")


def connect_error(version: str, host: str, port: int) -> str:
    return socket_init_error(version, f"Couldn't connect to {host}:{port}")


def listen_error(version: str, port: int) -> str:
    return socket_init_error(version, f"Couldn't listen to port {port}")


def handshake_error(role: str) -> str:
    """ctx_hand_shake() when the peer closed the socket (the wording differs by side, sic)."""
    way = " Unable to read from socket/rdma_cm\n" if role == "client" else " Unable to read to socket/rdma_cm\n"
    return ("ethernet_read_keys: Couldn't read remote address\n" + way
            + " Failed to exchange data between server and clients\n")


def rtr_error(qpn: int) -> str:
    """ctx_connect() failing on a bad GID (the QPN is printed in decimal)."""
    return f"Failed to modify QP {qpn} to RTR\n Unable to Connect the HCA's through the link\n"


def completion_error(version: str, role: str, qpn: int) -> str:
    """NOTIFY_COMP_ERROR_SEND/RECV with status 12 (retry exceeded), then run_iter_bw's failure line."""
    v = version_tuple(version)
    if v >= (6, 28):
        status = " Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81\n"
    elif v >= (6, 27):
        status = f" Failed status 12: qp_num {qpn} wr_id 0 syndrom 0x81\n"
    else:
        status = " Failed status 12: wr_id 0 syndrom 0x81\n"
    if role == "client":
        text = " Completion with error at client\n" + status + (" " if v >= (6, 28) else "") + "scnt=128, ccnt=0\n"
    else:
        text = " Completion with error at server\n" + status + " rcnt=0\n"
    return text + " Failed to complete run_iter_bw function successfully\n"


def qpn(run: PerftestRun) -> int:
    """This side's QPN as the address lines show it."""
    return (0x0107 if run.role == "client" else 0x0108) + run.seed


# ib_write_lat (tool-formats.md 1.7): the banner of a latency test, then one row per size. -----------------

LAT_HEADER = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
              "   99% percentile[usec]   99.9% percentile[usec] \n")


def latency_banner(run: PerftestRun) -> str:
    """The BW banner with the latency title; a latency client has TX depth 1 and no CQ moderation line."""
    text = banner(run).replace("RDMA_Write BW Test", "RDMA_Write Latency Test")
    text = text.replace(" TX depth        : 128\n", " TX depth        : 1\n")
    return text.replace(" CQ Moderation   : 1\n", "")


def latency_row(size_bytes: int, iterations: int, typical_us: float) -> str:
    """REPORT_FMT_LAT: min a little under the median, a long max tail, the percentiles in between."""
    t_min, t_max = typical_us * 0.97, typical_us * 2.6
    avg, p99, p999 = typical_us * 1.004, typical_us * 1.06, t_max
    return (f" {size_bytes:<7d} {iterations:<7d}       {t_min:<7.2f}        {t_max:<7.2f}      {typical_us:<7.2f}  "
            f"\t       {avg:<7.2f}     \t{0.05:<7.2f}\t\t{p99:<7.2f}\t\t{p999:<7.2f}\n")


def render_ib_write_lat(run: PerftestRun, typical_us: float) -> tuple[str, str, int]:
    """Full stdout of one side of `ib_write_lat -s SIZE -n ITERS` (both sides print the row), exit 0."""
    text = WAITING_BOX if run.role == "server" else ""
    text += latency_banner(run) + addresses(run) + RESULT_LINE + LAT_HEADER
    text += latency_row(run.size_bytes, run.iterations, typical_us) + RESULT_LINE
    return text, "", 0
