"""Build NodeFacts from one node's captures: CX-7 functions, twins, GIDs, PCIe, cable, NCCL settings."""

from __future__ import annotations

import msgspec

from linkcheck.facts.draft import NodeDraft
from linkcheck.facts.host_facts import host_facts
from linkcheck.facts.identity_facts import nm_runtime_profiles, node_identity
from linkcheck.facts.model import CableInfo, Function, NetplanIntent, NodeFacts
from linkcheck.facts.nccl_views import nccl_views
from linkcheck.facts.netplan_facts import netplan_intents
from linkcheck.facts.rdma_facts import attach_rdma
from linkcheck.facts.sysfs_views import ib_devices, int_or_none, net_attrs, pci_links
from linkcheck.model import Capture
from linkcheck.parsers.sysfs import parse_link_speed_gts


class _Builder(NodeDraft):
    """Gathers one node's facts; each step fills what it can and records what it could not."""

    # -- functions -------------------------------------------------------------------------------
    def _cx7_bdfs(self) -> tuple[set[str], bool]:
        """PCI functions of the ConnectX-7, and whether any source could tell (else: unknown, not absent)."""
        pci = self.src.sysfs("sysfs_pci")
        ib = self.src.sysfs("sysfs_infiniband")
        bdfs = set(pci_links(pci)) if pci is not None else set()
        bdfs |= {bdf for d in (ib_devices(ib) if ib is not None else {}).values() if (bdf := d.get("bdf"))}
        return bdfs, pci is not None or ib is not None

    def discover(self) -> None:
        net = self.src.sysfs("sysfs_net")
        attrs = net_attrs(net) if net is not None else {}
        cx7_bdfs, known = self._cx7_bdfs()
        names = {n for n, a in attrs.items() if a.get("device") in cx7_bdfs}
        names |= set(self.src.args("ethtool")) | set(self.src.args("ethtool_i"))
        if not names and (net is None or not known):
            # Neither "which netdevs" nor "which PCI functions are CX-7" is known: that is not "no CX-7".
            self.missing("netdevs", self.src.reason("sysfs_net" if net is None else "sysfs_pci"))
        for netdev in sorted(names):
            a = attrs.get(netdev, {})
            carrier = a.get("carrier")
            speed = int_or_none(a.get("speed"))
            self.functions[netdev] = Function(
                node=self.name, netdev=netdev, bdf=a.get("device"), cage=a.get("phys_port_name"),
                mac=a.get("address"), mtu=int_or_none(a.get("mtu")),
                carrier=None if carrier is None else carrier == "1", operstate=a.get("operstate"),
                speed_mbps=speed if speed and speed > 0 else None,
                carrier_changes=int_or_none(a.get("carrier_changes")),
            )

    def addresses(self) -> None:
        links = self.src.ip_interfaces("ip_addr")
        if links is None:
            self.missing("addresses", self.src.reason("ip_addr"))
            return
        detail = {i.ifname: i for i in (self.src.ip_interfaces("ip_link") or ())}
        for iface in links:
            if iface.ifname not in self.functions:
                continue
            fn = self.functions[iface.ifname]
            extra = detail.get(iface.ifname)
            self.update(
                iface.ifname,
                ipv4=tuple(f"{a.local}/{a.prefixlen}" for a in iface.ipv4),
                mtu=iface.mtu if iface.mtu is not None else fn.mtu,
                mac=fn.mac or iface.mac,
                operstate=(iface.operstate or fn.operstate or "").lower() or None,
                cage=fn.cage or (extra.phys_port_name if extra else None),
                bdf=fn.bdf or (extra.parentdev if extra else None),
                carrier=fn.carrier if fn.carrier is not None else iface.lower_up,
            )

    def pcie(self) -> None:
        pci = self.src.sysfs("sysfs_pci")
        links = pci_links(pci) if pci is not None else {}
        lspci = {p.bdf: p for p in (self.src.lspci() or ()) if p.bdf}
        for netdev, fn in list(self.functions.items()):
            sys_link = links.get(fn.bdf or "")
            if sys_link and sys_link.get("current_link_width"):
                self.update(netdev, pcie_speed_gts=parse_link_speed_gts(sys_link.get("current_link_speed") or ""),
                         pcie_width=int_or_none(sys_link.get("current_link_width")),
                         pcie_cap_width=int_or_none(sys_link.get("max_link_width")),
                         iommu_type=(sys_link.get("iommu_group/type") or "").strip() or None)
            elif fn.bdf in lspci and not lspci[fn.bdf].access_denied:
                item = lspci[fn.bdf]
                self.update(netdev, pcie_speed_gts=item.sta_speed_gts, pcie_width=item.sta_width,
                         pcie_cap_width=item.cap_width)
            else:
                self.missing("pcie", f"{self.src.reason('sysfs_pci')}; {self.src.reason('lspci')}")

    def ethtool(self) -> None:
        for netdev in list(self.functions):
            info = self.src.ethtool_i(netdev)
            if info is not None:
                driver = " ".join(p for p in (info.driver, info.version) if p) or None
                self.update(netdev, firmware=info.firmware_version, psid=info.psid, driver=driver)
            settings = self.src.ethtool(netdev)
            if settings is not None and settings.speed_mbps:
                self.update(netdev, speed_mbps=settings.speed_mbps)
            if settings is not None and self.functions[netdev].carrier is None:
                self.update(netdev, carrier=settings.link_detected)

    def fec(self) -> None:
        """The active and configured FEC of each function; the group is missing when an up twin's is unknown."""
        for netdev in list(self.functions):
            fec = self.src.ethtool_fec(netdev)
            if fec is not None:
                self.update(netdev, fec_active=fec.active or None, fec_configured=fec.configured or None)
            elif self.functions[netdev].carrier:
                self.missing("fec", self.src.reason("ethtool_fec", netdev))

    def cable(self) -> None:
        reasons = []
        for netdev in list(self.functions):
            eeprom = self.src.ethtool_m(netdev)
            if eeprom is None:
                reasons.append(self.src.reason("ethtool_m", netdev))
                continue
            self.update(netdev, cable=CableInfo(
                vendor_name=eeprom.vendor_name, vendor_pn=eeprom.vendor_pn, vendor_sn=eeprom.vendor_sn,
                identifier=eeprom.identifier, memory_map=eeprom.memory_map, length_m=eeprom.length_m,
                vendor_oui=eeprom.vendor_oui, vendor_rev=eeprom.vendor_rev, date_code=eeprom.date_code))
        if not any(f.cable for f in self.functions.values()):
            self.missing("cable", "; ".join(reasons) or "no ConnectX-7 function to read a module from")

    def netplan(self) -> tuple[NetplanIntent, ...]:
        config = self.src.netplan()
        if config is None:
            self.missing("netplan", self.src.reason("netplan_files"))
            return ()
        return netplan_intents(config, self.functions)


def build_node_facts(name: str, captures: list[Capture]) -> NodeFacts:
    """All facts about one node; what could not be learned is listed in `unavailable`."""
    b = _Builder(name, captures)
    b.discover()
    b.addresses()
    b.pcie()
    b.ethtool()
    attach_rdma(b)
    b.cable()
    b.fec()
    netplan = b.netplan()
    nm_runtime = nm_runtime_profiles(b.src, b.functions, netplan, b.missing)
    host = host_facts(b.src, b.missing)
    hostname_cap = b.src.capture("hostname")
    return NodeFacts(
        name=name,
        hostname=hostname_cap.stdout.strip() if hostname_cap and hostname_cap.ok else None,
        functions=tuple(b.functions[n] for n in sorted(b.functions)),
        netplan=netplan,
        identity=node_identity(b.src),
        nm_runtime=nm_runtime,
        nccl_views=nccl_views(b.src),
        gpus=b.src.gpu_state(),
        unavailable=b.unavailable,
        **msgspec.structs.asdict(host),
    )
