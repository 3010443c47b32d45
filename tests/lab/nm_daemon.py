"""The real NetworkManager (Debian 12's 1.42) in a lab node, without systemd as PID 1, after the recipe proven in
/work/shared/design/real-daemons.md s.1.4: a private system bus (dbus-daemon with the stock system policy minus
fork, user, pidfile and activation) at the node's own /run/dbus, then `NetworkManager --no-daemon`, both started in
the node's namespaces after sshd and ended by PID at teardown.

Two things make it work there (s.1.2): the node's /sys is remounted read-only (a per-mount flag, in the node's mount
namespace only), else NetworkManager waits for a udev that never initialises the devices; and its configuration
manages only the ports that a keyfile of the model names (`unmanaged-devices=*,except:interface-name:...`), so the
SSH link `lcm-*` and the RJ45 veth are never touched. NetworkManager starts after the lab configured the ports
with `ip`, so it would take them as they are (`connected (externally)`, with a volatile profile of its own); the lab
then brings each model profile up on its port (`nmcli connection up`), as NetworkManager does at a node's boot, so
the ports are NetworkManager's own (its routes, metric 100) before any test looks, and the model's permanent
neighbour entries are installed after that (an activation flushes them).

The node's sshd sessions run in the node's mount namespace, so `nmcli` and `busctl` over SSH reach this bus at its
default path; no wrapper is needed. Where a fault cannot be made with the real program, a test asks for the
stand-in (tests/lab/nm_standin.py) with `LabNodeSpec(networkmanager="standin")` and says why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from tests.lab.errors import LabError
from tests.lab.nodefiles import NodeFile

TOOLS = ("NetworkManager", "dbus-daemon", "nm-online", "nmcli", "busctl")
READ_ONLY_SYS = "mount -o remount,bind,ro /sys"

# The stock system bus policy (/usr/share/dbus-1/system.conf) without <fork/>, <user>, <pidfile>, service activation
# and syslog: dbus-daemon runs in the foreground as root, and NetworkManager's own policy file in system.d lets root
# own org.freedesktop.NetworkManager and call it.
BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <includedir>/usr/share/dbus-1/system.d</includedir>
</busconfig>
"""


def skip_reason() -> str | None:
    """Why this machine cannot run the real NetworkManager in a node (a tool missing), or None."""
    missing = [t for t in TOOLS if shutil.which(t, path="/usr/sbin:/usr/bin:/sbin:/bin") is None]
    return f"the real NetworkManager needs {', '.join(missing)} (install network-manager and dbus)" if missing else None


def profiles(model_json: Path) -> list[tuple[str, str]]:
    """Each keyfile's `id=` and `interface-name=`, as the model gives them."""
    found = []
    for item in json.loads(model_json.read_text(encoding="utf-8")).get("nm_connections", []):
        keys = dict(line.split("=", 1) for line in str(item.get("text", "")).splitlines() if "=" in line)
        if keys.get("id") and keys.get("interface-name"):
            found.append((keys["id"].strip(), keys["interface-name"].strip()))
    return found


def managed_ports(model_json: Path) -> list[str]:
    """The interfaces the model's keyfiles name (`interface-name=`): the only ones NetworkManager may manage."""
    ports: list[str] = []
    for item in json.loads(model_json.read_text(encoding="utf-8")).get("nm_connections", []):
        for line in str(item.get("text", "")).splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "interface-name" and value.strip() and value.strip() not in ports:
                ports.append(value.strip())
    return ports


def nm_conf(ports: list[str]) -> str:
    """NetworkManager.conf of a lab node (s.4.1): keyfiles only, nothing of DNS, hostname or polkit, no automatic
    default profile, and every device unmanaged but the model's ports."""
    allowed = "".join(f",except:interface-name:{p}" for p in ports)
    return ("[main]\nplugins=keyfile\ndns=none\nrc-manager=unmanaged\nhostname-mode=none\nauth-polkit=false\n"
            f"no-auto-default=*\n\n[keyfile]\nunmanaged-devices=*{allowed}\n")


def stage(model_json: Path, stage_dir: Path, node_dir: Path) -> list[NodeFile]:
    """The node's NetworkManager.conf beside its staged keyfiles (tests.lab.networkmanager made
    `stage/etc-NetworkManager`), its bus policy, and the empty /run/dbus and /var/lib/NetworkManager it shows."""
    etc = stage_dir / "etc-NetworkManager"
    (etc / "conf.d").mkdir(parents=True, exist_ok=True)
    (etc / "NetworkManager.conf").write_text(nm_conf(managed_ports(model_json)), encoding="utf-8")
    run_dbus = stage_dir / "run-dbus"
    var_nm = stage_dir / "var-lib-NetworkManager"
    run_dbus.mkdir(parents=True, exist_ok=True)
    var_nm.mkdir(parents=True, exist_ok=True)
    var_nm.chmod(0o700)
    nm_dir = node_dir / "nm"
    nm_dir.mkdir(parents=True, exist_ok=True)
    (nm_dir / "bus.conf").write_text(BUS_CONF, encoding="utf-8")
    return [NodeFile("/run/dbus", run_dbus), NodeFile("/var/lib/NetworkManager", var_nm)]


def start_argv(node_dir: Path) -> tuple[list[str], list[str]]:
    """argv of the node's dbus-daemon and NetworkManager (each run in the node by its caller)."""
    bus = ["dbus-daemon", f"--config-file={node_dir / 'nm' / 'bus.conf'}", "--nofork", "--nopidfile"]
    nm = ["NetworkManager", "--no-daemon", "--debug", "--log-level=INFO"]
    return bus, nm


def wait_for_bus(run: list[str], deadline_s: float) -> None:
    """Until the node's system bus socket exists (`run` is the node's nsenter prefix)."""
    _poll([*run, "test", "-S", "/run/dbus/system_bus_socket"], deadline_s, "the node's dbus-daemon")


def wait_for_startup(run: list[str], deadline_s: float, log: Path) -> None:
    """Until NetworkManager says its start-up is complete (`nm-online -s`; ~80 ms on the design's machine)."""
    done = subprocess.run([*run, "nm-online", "-s", "-q", "-t", str(int(deadline_s))], capture_output=True,
                          text=True, timeout=deadline_s + 10, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip()[-1500:] if log.exists() else ""
        raise LabError(f"NetworkManager did not complete its start-up in {deadline_s:.0f} s; its log: {tail}")


def _poll(argv: list[str], deadline_s: float, what: str) -> None:
    end = time.monotonic() + deadline_s
    while subprocess.run(argv, capture_output=True, check=False).returncode != 0:
        if time.monotonic() > end:
            raise LabError(f"{what} not ready after {deadline_s:.0f} s")
        time.sleep(0.02)
