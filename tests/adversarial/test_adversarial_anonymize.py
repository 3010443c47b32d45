"""`linkcheck anonymize` on a bundle whose NetworkManager keyfiles name DNS search domains (`dns-search=`, ;
separated, in [ipv4] and [ipv6]) and a Wi-Fi network, with underscore hostnames: none survives."""

from __future__ import annotations

from pathlib import Path

from tests.adversarial.adversarial_helpers import copy_healthy, rewrite_capture, run

KEYFILE = b"""
==> /etc/NetworkManager/system-connections/CafeNorth.nmconnection <==
[connection]
id=CafeNorth
type=wifi
[wifi]
ssid=CafeNorth
[ipv4]
method=auto
dns-search=corp.zebrafirm.internal;lab.zebrafirm.internal;
[ipv6]
method=auto
dns-search=v6zebra.example
"""
SECRETS = ("zebrafirm", "v6zebra", "CafeNorth", "lab_node_01", "lab_node_02")


def test_nm_dns_search_domains_ssids_and_underscore_hosts_do_not_survive(tmp_path: Path) -> None:
    bundle = copy_healthy(tmp_path)
    for node, host in (("a", b"lab_node_01"), ("b", b"lab_node_02")):
        rewrite_capture(bundle, node, "hostname", host + b"\n")
        keyfiles = (bundle / node / "nm_connections.stdout").read_bytes() + KEYFILE
        rewrite_capture(bundle, node, "nm_connections", keyfiles)
    out = tmp_path / "out"
    proc = run("anonymize", str(bundle), str(out))
    assert proc.returncode == 0, proc.stderr
    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file()).decode("utf-8", "replace").lower()
    for secret in SECRETS:
        assert secret.lower() not in blob, secret
    assert "dns-search=" in blob  # the key stays; only its names change
    assert run("verify", str(out)).returncode == 0
