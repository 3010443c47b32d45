"""`sudo -n ethtool -m IFACE`: the QSFP module EEPROM decoded (SFF-8636, CMIS) or dumped in hex.

Every decoded line is "\\t%-41s : %s" (ethtool sff-common/qsfp/cmis). ethtool < 6.7 does not know the
CMIS identifier 0x1e and dumps lower page 00h (128 bytes) in hex instead (netlink/module-eeprom.c
eeprom_dump_hex), so the vendor fields of a QSFP112 cable are not visible there.
"""

from __future__ import annotations

from tests.emulators.node import Cable, Node

Output = tuple[str, str, int]


def _line(label: str, value: str) -> str:
    return f"\t{label:<41} : {value}\n"


def _vendor(cable: Cable, revision_label: str, revision: str) -> str:
    return (
        _line("Vendor name", cable.vendor_name)
        + _line("Vendor OUI", cable.vendor_oui)
        + _line("Vendor PN", cable.vendor_pn)
        + _line("Vendor rev", cable.vendor_rev)
        + _line("Vendor SN", cable.vendor_sn)
        + _line("Date code", cable.date_code)
        + _line(revision_label, revision)
    )


def sff8636_text(cable: Cable) -> str:
    """QSFP28-class passive DAC: legacy fields with the copper attenuation in the OM1 byte (see §4)."""
    length = max(1, round(cable.length_m))  # whole metres; < 1 m encodes as 1 m
    return (
        _line("Identifier", "0x11 (QSFP28)")
        + _line("Extended identifier", "0x00")
        + _line("Extended identifier description", "1.5W max. Power consumption")
        + _line("Extended identifier description", "No CDR in TX, No CDR in RX")
        + _line("Extended identifier description", "High Power Class (> 3.5 W) not enabled")
        + _line("Power set", "Off")
        + _line("Power override", "On")
        + _line("Connector", "0x23 (No separable connector)")
        + _line("Transceiver codes", "0x88 0x00 0x00 0x00 0x00 0x00 0x00 0x00")
        + _line("Transceiver type", "40G Ethernet: 40G Base-CR4")
        + _line("Transceiver type", "Extended: 100G Base-CR4 or 25G Base-CR CA-L")
        + _line("Encoding", "0x08 (PAM4)")
        + _line("BR, Nominal", "25500Mbps")
        + _line("Rate identifier", "0x00")
        + _line("Length (SMF,km)", "0km")
        + _line("Length (OM3 50um)", "0m")
        + _line("Length (OM2 50um)", "0m")
        + _line("Length (OM1 62.5um)", "7m")
        + _line("Length (Copper or Active cable)", f"{length}m")
        + _line("Transmitter technology", "0xa0 (Copper cable unequalized)")
        + _line("Attenuation at 2.5GHz", "2db")
        + _line("Attenuation at 5.0GHz", "3db")
        + _line("Attenuation at 7.0GHz", "4db")
        + _line("Attenuation at 12.9GHz", "5db")
        + _vendor(cable, "Revision Compliance", "Unallocated")
    )


def cmis_text(cable: Cable) -> str:
    """QSFP112 passive DAC with flat memory (no page 01h: no optical lengths, no DOM)."""
    return (
        _line("Identifier", "0x1e (QSFP+ or later with Common Management Interface Specification (CMIS))")
        + _line("Power class", "1")
        + _line("Max power", "0.25W")
        + _line("Connector", "0x23 (No separable connector)")
        + _line("Cable assembly length", f"{cable.length_m:0.2f}m")
        + _line("Transmitter technology", "0x0a (Copper cable, unequalized)")
        + _line("Attenuation at 5GHz", "4db")
        + _line("Attenuation at 7GHz", "5db")
        + _line("Attenuation at 12.9GHz", "8db")
        + _line("Attenuation at 25.8GHz", "13db")
        + _vendor(cable, "Revision compliance", "Rev. 5.0")
        + _line("Module State", "0x03 (ModuleReady)")
        + _line("LowPwrAllowRequestHW", "Off")
        + _line("LowPwrRequestSW", "Off")
    )


def cmis_lower_page(cable: Cable) -> bytes:
    """Lower page 00h of a CMIS 5.0 passive copper module (flat memory, module ready)."""
    page = bytearray(128)
    page[0] = cable.identifier_code
    page[1] = 0x50  # CMIS revision 5.0
    page[2] = 0x80  # flat memory
    page[3] = 0x06  # module state ModuleReady (3 << 1)
    page[14], page[15] = 0x1A, 0x80  # temperature monitor (26.5 C; unused on passive copper)
    page[85] = 0x03  # media type: passive copper
    page[86:90] = bytes([0x11, 0x01, 0x44, 0x11])  # first application descriptor
    page[90:94] = bytes([0xFF, 0x00, 0x00, 0x00])  # end of list
    return bytes(page)


def hex_dump(data: bytes, offset: int = 0) -> str:
    """ethtool's dump_hex(): header, then 16 bytes a row as "0x%04x:\\t\\t" + "%02x " each."""
    text = "Offset\t\tValues\n------\t\t------"
    for i, b in enumerate(data):
        if i % 16 == 0:
            text += f"\n0x{i + offset:04x}:\t\t"
        text += f"{b:02x} "
    return text + "\n"


def _ethtool_knows_cmis(version: str) -> bool:
    try:
        major, minor = (int(x) for x in (version.split(".") + ["0"])[:2])
    except ValueError:
        return True
    return (major, minor) >= (6, 7)


def render_ethtool_m(node: Node, netdev: str) -> Output:
    """Reads the cage's module: works on a down twin of the cabled cage, fails on the empty cage."""
    try:
        fn = node.function(netdev)
    except KeyError:
        return "", "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n", 1
    cable = node.cable_in(fn.cage)
    if cable is None:
        return "", "netlink error: Operation not supported\n", 1
    if cable.identifier_code == 0x1E:
        if _ethtool_knows_cmis(node.version("ethtool")):
            return cmis_text(cable), "", 0
        return hex_dump(cmis_lower_page(cable)), "", 0
    return sff8636_text(cable), "", 0
