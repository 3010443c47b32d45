"""`netplan get` (libnetplan's YAML emission) and `sudo -n sh -c 'tail -n +1 /etc/netplan/*.yaml'`.

netplan get re-emits the merged configuration, not the files: keys in netplan's fixed order, strings
double-quoted, numbers and booleans plain, block sequences not indented under their key, `dhcp4: false`
dropped. tail prints one file bare and several with "==> path <==" headers.
"""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from linkcheck.collect.specs import NETPLAN_REDACT_AWK
from tests.emulators.node import Node

Output = tuple[str, str, int]

_DEVICE_KEY_ORDER = ("renderer", "match", "optional", "critical", "ignore-carrier", "addresses", "nameservers",
                     "gateway4", "gateway6", "dhcp4", "dhcp6", "accept-ra", "link-local", "macaddress",
                     "set-name", "mtu", "routes")
_MATCH_KEY_ORDER = ("name", "macaddress", "driver")
_PLAIN_SEQUENCES = ("link-local",)  # enum items are emitted plain, not quoted
_DEVICE_TYPES = ("ethernets", "bonds", "bridges", "vlans")


def _merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def merged_config(node: Node) -> dict[str, Any]:
    """The files' YAML merged in lexicographic file-name order (later files win per key)."""
    merged: dict[str, Any] = {}
    for f in sorted(node.netplan_files, key=lambda f: f.path.rsplit("/", 1)[-1]):
        data = yaml.safe_load(f.text) or {}
        if isinstance(data, dict):
            _merge(merged, data)
    net = merged.get("network")
    return net if isinstance(net, dict) else {}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _emit_device(name: str, dev: dict[str, Any], indent: str) -> list[str]:
    lines = [f"{indent}{name}:"]
    inner = indent + "  "
    for key in _DEVICE_KEY_ORDER:
        if key not in dev or (key in ("dhcp4", "dhcp6") and not dev[key]):
            continue
        value = dev[key]
        if isinstance(value, dict):
            lines.append(f"{inner}{key}:")
            for sub in _MATCH_KEY_ORDER + tuple(k for k in value if k not in _MATCH_KEY_ORDER):
                if sub in value:
                    lines.append(f"{inner}  {sub}: {_scalar(value[sub])}")
        elif isinstance(value, list):
            if not value:
                lines.append(f"{inner}{key}: []")
                continue
            lines.append(f"{inner}{key}:")
            for item in value:
                lines.append(f"{inner}- {item if key in _PLAIN_SEQUENCES else _scalar(item)}")
        else:
            lines.append(f"{inner}{key}: {_scalar(value)}")
    return lines


def render_netplan_get(node: Node) -> Output:
    net = merged_config(node)
    lines = ["network:", "  version: 2"]
    if "renderer" in net:
        lines.append(f"  renderer: {net['renderer']}")
    for dev_type in _DEVICE_TYPES:
        devices = net.get(dev_type)
        if not isinstance(devices, dict) or not devices:
            continue
        lines.append(f"  {dev_type}:")
        for name, dev in devices.items():
            lines += _emit_device(str(name), dev if isinstance(dev, dict) else {}, "    ")
    return "\n".join(lines) + "\n", "", 0


def render_netplan_files(node: Node) -> Output:
    if not node.sudo_ok:
        return "", "sudo: a password is required\n", 1
    files = sorted(node.netplan_files, key=lambda f: f.path)
    if not files:
        return "", "tail: cannot open '/etc/netplan/*.yaml' for reading: No such file or directory\n", 1
    if len(files) == 1:
        return _as_collected(files[0].text), "", 0
    out = ""
    for i, f in enumerate(files):
        out += ("" if i == 0 else "\n") + f"==> {f.path} <==\n" + f.text
    return _as_collected(out), "", 0


def _as_collected(text: str) -> str:
    """What the spec's `$(tail ...)` and its awk filter make of tail's output: trailing newlines cut to one,
    secret values replaced by the node's own filter (redact_netplan.awk), run here with the system's awk."""
    filtered = subprocess.run(["awk", NETPLAN_REDACT_AWK], input=text.rstrip("\n") + "\n", capture_output=True,
                              text=True, check=True, timeout=30)
    return filtered.stdout
