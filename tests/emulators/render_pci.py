"""`sudo -n lspci -vv -d 15b3:` for the four CX-7 functions (pciutils >= 3.8 form; <= 3.7 adds "(ok)").

LnkCap/LnkSta follow ls-caps.c cap_express_link(); the rest of each block is a plausible CX-7 PF
(capability offsets and flags as on a MT2910) so the parser meets the full, noisy text.
"""

from __future__ import annotations

from tests.emulators.node import Function, Node

Output = tuple[str, str, int]


def _speed(gts: float) -> str:
    return f"{gts:g}GT/s"


def _old_pciutils(version: str) -> bool:
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < (3, 8)


def _lnksta(fn: Function, legacy: bool) -> str:
    """`LnkSta:\\tSpeed %s%s, Width x%d%s`: suffix vs the capability (3.8+: only when it differs)."""
    cap_speed, cap_width = 32.0, fn.pcie_cap_width

    def suffix(cur: float, cap: float) -> str:
        if cur < cap:
            return " (downgraded)"
        if cur > cap:
            return " (overdriven)" if not legacy else " (strange)"
        return " (ok)" if legacy else ""

    return (f"\t\tLnkSta:\tSpeed {_speed(fn.pcie_speed_gts)}{suffix(fn.pcie_speed_gts, cap_speed)}, "
            f"Width x{fn.pcie_width}{suffix(fn.pcie_width, cap_width)}\n")


def _block(fn: Function, legacy: bool, region: str) -> str:
    bus_fn = fn.bdf.split(":", 1)[1]
    next_fn = 1 if bus_fn.endswith(".0") else 0
    return (
        f"{fn.bdf} Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
        "\tSubsystem: Mellanox Technologies Device 0070\n"
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- "
        "DisINTx+\n"
        "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- "
        "INTx-\n"
        "\tLatency: 0, Cache Line Size: 64 bytes\n"
        "\tInterrupt: pin A routed to IRQ 255\n"
        f"\tRegion 0: Memory at {region} (64-bit, prefetchable) [size=32M]\n"
        "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited\n"
        "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W\n"
        "\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+\n"
        "\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-\n"
        "\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes\n"
        "\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-\n"
        f"\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x{fn.pcie_cap_width}, ASPM not supported\n"
        "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+\n"
        "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+\n"
        "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-\n"
        + _lnksta(fn, legacy)
        + "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
        "\t\tDevCap2: Completion Timeout: Range ABC, TimeoutDis+ NROPrPrP- LTR-\n"
        "\t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Not Supported, ExtFmt- EETLPPrefix-\n"
        "\t\t\t EmergencyPowerReduction Not Supported, EmergencyPowerReductionInit-\n"
        "\t\t\t FRS- TPHComp- ExtTPHComp-\n"
        "\t\t\t AtomicOpsCap: 32bit+ 64bit+ 128bitCAS+\n"
        "\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq- OBFF Disabled,\n"
        "\t\t\t AtomicOpsCtl: ReqEn+\n"
        "\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-\n"
        "\t\tLnkCtl2: Target Link Speed: 32GT/s, EnterCompliance- SpeedDis-\n"
        "\t\t\t Transmit Margin: Normal Operating Range, EnterModifiedCompliance- ComplianceSOS-\n"
        "\t\t\t Compliance Preset/De-emphasis: -6dB de-emphasis, 0dB preshoot\n"
        "\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+\n"
        "\t\t\t EqualizationPhase2+ EqualizationPhase3+ LinkEqualizationRequest-\n"
        "\t\t\t Retimer- 2Retimers- CrosslinkRes: unsupported\n"
        "\tCapabilities: [48] Vital Product Data\n"
        "\t\tProduct Name: NVIDIA ConnectX-7 Integrated Adapter\n"
        "\t\tRead-only fields:\n"
        "\t\t\t[PN] Part number: 699-2G548-0201-A00\n"
        "\t\t\t[EC] Engineering changes: A3\n"
        "\t\t\t[V2] Vendor specific: 699-2G548-0201-A00\n"
        "\t\t\t[V0] Vendor specific: PCIeGen5 x4\n"
        "\t\t\t[RV] Reserved: checksum good, 1 byte(s) reserved\n"
        "\t\tEnd\n"
        "\tCapabilities: [9c] MSI-X: Enable+ Count=64 Masked-\n"
        "\t\tVector table: BAR=0 offset=00002000\n"
        "\t\tPBA: BAR=0 offset=00003000\n"
        "\tCapabilities: [c0] Vendor Specific Information: Len=18 <?>\n"
        "\tCapabilities: [40] Power Management version 3\n"
        "\t\tFlags: PMEClk- DSI- D1- D2- AuxCurrent=375mA PME(D0-,D1-,D2-,D3hot-,D3cold+)\n"
        "\t\tStatus: D0 NoSoftRst+ PME-Enable- DSel=0 DScale=0 PME-\n"
        "\tCapabilities: [100 v1] Advanced Error Reporting\n"
        "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-\n"
        "\t\tUEMsk:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq+ ACSViol-\n"
        "\t\tUESvrt:\tDLP+ SDES- TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-\n"
        "\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-\n"
        "\t\tCEMsk:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr+\n"
        "\t\tAERCap:\tFirst Error Pointer: 04, ECRCGenCap+ ECRCGenEn- ECRCChkCap+ ECRCChkEn-\n"
        "\t\t\tMultHdrRecCap- MultHdrRecEn- TLPPfxPres- HdrLogCap-\n"
        "\t\tHeaderLog: 00000000 00000000 00000000 00000000\n"
        "\tCapabilities: [150 v1] Alternative Routing-ID Interpretation (ARI)\n"
        f"\t\tARICap:\tMFVC- ACS-, Next Function: {next_fn}\n"
        "\t\tARICtl:\tMFVC- ACS-, Function Group: 0\n"
        "\tCapabilities: [1c0 v1] Secondary PCI Express\n"
        "\t\tLnkCtl3: LnkEquIntrruptEn- PerformEqu-\n"
        "\t\tLaneErrStat: 0\n"
        "\tCapabilities: [320 v1] Lane Margining at the Receiver <?>\n"
        "\tCapabilities: [370 v1] Physical Layer 16.0 GT/s <?>\n"
        "\tCapabilities: [420 v1] Data Link Feature <?>\n"
        "\tKernel driver in use: mlx5_core\n"
        "\tKernel modules: mlx5_core\n"
        "\n"
    )


def render_lspci(node: Node) -> Output:
    legacy = _old_pciutils(node.version("pciutils"))
    text = ""
    for i, fn in enumerate(sorted(node.functions, key=lambda f: f.bdf)):
        region = f"{0x1800000000 + (i // 2) * 0x100000000 + (i % 2) * 0x2000000:x}"
        text += _block(fn, legacy, region)
    return text, "", 0
