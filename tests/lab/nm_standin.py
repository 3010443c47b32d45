"""A STAND-IN for NetworkManager in the lab, which has none (no daemon, no system bus): `nmcli connection
reload|up` and the checkpoint calls of NetworkManager's D-Bus API as `busctl call` makes them, working on the
node's keyfiles (/etc and /run/NetworkManager/system-connections, tests/lab/networkmanager.py) and its real
interfaces (`ip`). It behaves as org.freedesktop.NetworkManager.xml documents the calls linkcheck makes:

- `GetDeviceByIpIface(s iface) -> o`: the device's object path (here by ifindex), an error for an unknown one;
- `CheckpointCreate(ao devices, u rollback_timeout, u flags) -> o`: saves each device's IPv4 addresses and MTU
  and the keyfiles (bytes and mode); refused for a device another checkpoint holds (no ALLOW_OVERLAPPING, 0x08);
  with a non-zero timeout a rollback runs by itself when it expires, whoever asked is gone or not (here a
  process of its own session, as NetworkManager's timer lives in the daemon, not in the caller);
- `CheckpointRollback(o) -> a{su}`: the saved keyfiles and device state back now (result 0 per device);
- `CheckpointDestroy(o)`: the checkpoint dropped, its changes kept (commit); an error once it rolled back;
- `CheckpointAdjustRollbackTimeout(o, u)`: the timeout reset to that many seconds from now.

`nmcli connection up ID` applies the profile's `addressN=` and `mtu=` to its `interface-name` (what activating
it does to the addresses); `reload` has nothing to re-read (the profiles are read at each `up`). A lab fault
(`$LINKCHECK_LAB_FAULTS/nmcli` = `up-mtu-1500`) makes `up` leave the interface at MTU 1500, as a profile that
says nothing of the MTU does on a port NetworkManager resets; `up-slow` makes `up` take 4 s (a window in
which a test cuts the SSH connection while the checkpoint is held). A lab fault for the checkpoint calls
(`$LINKCHECK_LAB_FAULTS/busctl` = `rollback-reactivates-late`) makes `CheckpointRollback` return with the devices
still without their addresses, which come back 3 s later from a process of their own: the real NetworkManager's
rollback returns before it re-activates the device (no address for ~21 ms, real-daemons.md s.1.3), lengthened
here past the 1 s linkcheck's checkpoint script waits before it writes its result.
Not modelled: every other call and property, activation states, the D-Bus policy, connections by UUID.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

NM = "org.freedesktop.NetworkManager"
NM_PATH = "/org/freedesktop/NetworkManager"
DIRS = ("/etc/NetworkManager/system-connections", "/run/NetworkManager/system-connections")
ALLOW_OVERLAPPING = 0x08
NMCLI_FAULTS = ("up-mtu-1500", "up-slow")  # armed with Lab.set_fault(node, "nmcli", ...)
LATE_REACTIVATION = "rollback-reactivates-late"  # written to the node's fault folder as `busctl`
REACTIVATION_S = 3.0


def _state() -> Path:
    root = Path(os.environ.get("LINKCHECK_LAB_STATE") or "/run") / "nm-standin"
    (root / "checkpoints").mkdir(parents=True, exist_ok=True)
    return root


def _fail(message: str) -> int:
    print(f"Call failed: {message}", file=sys.stderr)
    return 1


def _links() -> dict[str, int]:
    """Each interface's name and ifindex, from the kernel (the lab's /sys/class/net is a staged copy)."""
    return {i["ifname"]: int(i["ifindex"]) for i in json.loads(_ip("-j", "link") or "[]")}


def _ifname(dev_path: str) -> str | None:
    index = dev_path.rsplit("/", 1)[-1]
    return next((name for name, i in _links().items() if str(i) == index), None)


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False).stdout


def _device_state(name: str) -> dict[str, object]:
    links = json.loads(_ip("-j", "-4", "addr", "show", "dev", name) or "[]")
    addrs = [f"{a['local']}/{a['prefixlen']}" for i in links for a in i.get("addr_info", [])
             if a.get("scope") == "global"]
    mtu = json.loads(_ip("-j", "link", "show", "dev", name) or "[{}]")[0].get("mtu")
    return {"addresses": addrs, "mtu": mtu}


def _set_device(name: str, addresses: list[str], mtu: object) -> None:
    subprocess.run(["ip", "-4", "addr", "flush", "dev", name, "scope", "global"], check=False)
    for cidr in addresses:
        subprocess.run(["ip", "addr", "add", cidr, "dev", name], check=False)
    if mtu:
        subprocess.run(["ip", "link", "set", "dev", name, "mtu", str(mtu)], check=False)


def _keyfiles() -> dict[str, dict[str, object]]:
    saved: dict[str, dict[str, object]] = {}
    for d in DIRS:
        for f in sorted(Path(d).glob("*")) if Path(d).is_dir() else ():
            saved[str(f)] = {"text": f.read_bytes().decode("latin-1"), "mode": f.stat().st_mode & 0o7777}
    return saved


def _fault(tool: str) -> str:
    path = Path(os.environ.get("LINKCHECK_LAB_FAULTS") or "/nonexistent") / tool
    return path.read_text().strip() if path.is_file() else ""


def _reactivate(name: str, spec: str) -> int:
    """The late re-activation of one device after a rollback: its saved addresses back after REACTIVATION_S."""
    time.sleep(REACTIVATION_S)
    _set_device(name, json.loads(spec), None)
    return 0


def _rollback(taken: Path, late: bool = False) -> dict[str, int]:
    """The saved keyfiles and device state back; the checkpoint's folder was taken (renamed) by the caller. `late`:
    each device's addresses flushed now and put back REACTIVATION_S later, by a process of their own."""
    saved = json.loads((taken / "saved.json").read_text())
    keyfiles: dict[str, dict[str, object]] = saved["keyfiles"]
    for d in DIRS:
        for f in Path(d).glob("*") if Path(d).is_dir() else ():
            if str(f) not in keyfiles:
                f.unlink()
    for path, item in keyfiles.items():
        p = Path(path)
        p.write_bytes(str(item["text"]).encode("latin-1"))
        p.chmod(int(str(item["mode"])))
    results = {}
    for dev_path, dev in saved["devices"].items():
        _set_device(dev["name"], [] if late else dev["addresses"], dev["mtu"])
        if late:
            subprocess.Popen([sys.executable, "-m", "tests.lab.nm_standin", "reactivate", dev["name"],
                              json.dumps(dev["addresses"])], start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        results[dev_path] = 0  # NM_ROLLBACK_RESULT_OK
    (taken / "rolled-back").write_text("yes\n")
    return results


def _take(number: str, how: str) -> Path | None:
    """The checkpoint's folder renamed: whoever renames it first (destroy, rollback, the timer) owns it."""
    folder = _state() / "checkpoints" / number
    taken = folder.with_name(f"{number}.{how}")
    try:
        folder.rename(taken)
    except OSError:
        return None
    return taken


def _number(path: str) -> str:
    prefix = f"{NM_PATH}/Checkpoint/"
    return path[len(prefix):] if path.startswith(prefix) and path[len(prefix):].isdigit() else ""


def _create(args: list[str]) -> int:
    count = int(args[0])
    devices, timeout, flags = args[1:1 + count], int(args[1 + count]), int(args[2 + count])
    names = {}
    for dev_path in devices:
        name = _ifname(dev_path)
        if name is None:
            return _fail(f"device {dev_path} does not exist")
        names[dev_path] = name
    held = set()
    for other in (_state() / "checkpoints").glob("*"):
        if other.name.isdigit():
            held |= set(json.loads((other / "saved.json").read_text())["devices"])
    if held & set(devices) and not flags & ALLOW_OVERLAPPING:
        return _fail("a checkpoint exists already for a device")
    counter = _state() / "counter"
    number = str(int(counter.read_text()) + 1 if counter.exists() else 1)
    counter.write_text(number)
    folder = _state() / "checkpoints" / number
    building = folder.with_name(number + ".new")
    building.mkdir()
    saved = {"devices": {p: {"name": n, **_device_state(n)} for p, n in names.items()}, "keyfiles": _keyfiles()}
    (building / "saved.json").write_text(json.dumps(saved))
    (building / "deadline").write_text(str(time.time() + timeout) if timeout else "")
    building.rename(folder)
    if timeout:
        subprocess.Popen([sys.executable, "-m", "tests.lab.nm_standin", "timer", number], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f'o "{NM_PATH}/Checkpoint/{number}"')
    return 0


def _timer(number: str) -> int:
    """NetworkManager's rollback timer: rolls back at the deadline unless the checkpoint is gone first."""
    folder = _state() / "checkpoints" / number
    while folder.is_dir():
        try:
            deadline = (folder / "deadline").read_text().strip()
        except OSError:
            return 0
        if deadline and time.time() >= float(deadline):
            taken = _take(number, "timeout")
            if taken is not None:
                _rollback(taken)
            return 0
        time.sleep(0.1)
    return 0


def busctl(argv: list[str]) -> int:
    if argv[:4] != ["call", NM, NM_PATH, NM] or len(argv) < 5:
        return _fail(f"the lab's NetworkManager stand-in does not answer: busctl {' '.join(argv)}")
    method, sig, args = argv[4], argv[5] if len(argv) > 5 else "", argv[6:]
    if method == "GetDeviceByIpIface" and sig == "s" and len(args) == 1:
        index = _links().get(args[0])
        if index is None:
            return _fail("No device found for the requested iface.")
        print(f'o "{NM_PATH}/Devices/{index}"')
        return 0
    if method == "CheckpointCreate" and sig == "aouu":
        return _create(args)
    return _on_checkpoint(method, sig, args)


def _on_checkpoint(method: str, sig: str, args: list[str]) -> int:
    number = _number(args[0]) if args else ""
    if not number:
        return _fail(f"no checkpoint {args[:1]}")
    if method == "CheckpointDestroy" and sig == "o":
        return 0 if _take(number, "destroyed") else _fail(f"checkpoint {args[0]} does not exist")
    if method == "CheckpointRollback" and sig == "o":
        taken = _take(number, "rollback")
        if taken is None:
            return _fail(f"checkpoint {args[0]} does not exist")
        results = _rollback(taken, late=_fault("busctl") == LATE_REACTIVATION)
        print(f"a{{su}} {len(results)} " + " ".join(f'"{p}" {r}' for p, r in results.items()))
        return 0
    if method == "CheckpointAdjustRollbackTimeout" and sig == "ou" and len(args) == 2:
        deadline = _state() / "checkpoints" / number / "deadline"
        if not deadline.parent.is_dir():
            return _fail(f"checkpoint {args[0]} does not exist")
        deadline.write_text(str(time.time() + int(args[1])) if int(args[1]) else "")
        return 0
    return _fail(f"the lab's NetworkManager stand-in does not answer {method} {sig}")


def _profile(conn_id: str) -> dict[str, str] | None:
    for d in DIRS:
        for f in sorted(Path(d).glob("*")) if Path(d).is_dir() else ():
            keys: dict[str, str] = {}
            section = ""
            for line in f.read_text(errors="replace").splitlines():
                if line.startswith("["):
                    section = line.strip("[]")
                elif "=" in line:
                    k, _, v = line.partition("=")
                    keys[f"{section}.{k.strip()}"] = v.strip()
            if keys.get("connection.id") == conn_id:
                return keys
    return None


def nmcli(argv: list[str]) -> int:
    if argv == ["connection", "reload"]:
        return 0
    if argv[:2] == ["connection", "up"] and len(argv) == 3:
        keys = _profile(argv[2])
        if keys is None or not keys.get("connection.interface-name"):
            print(f"Error: unknown connection '{argv[2]}'.", file=sys.stderr)
            return 10
        addresses = [v.split(",")[0] for k, v in sorted(keys.items()) if k.startswith("ipv4.address")]
        mtu: object = keys.get("ethernet.mtu")
        fault = _fault("nmcli")
        if fault == "up-mtu-1500":
            mtu = 1500
        if fault == "up-slow":
            time.sleep(4)
        _set_device(keys["connection.interface-name"], addresses, mtu)
        print("Connection successfully activated")
        return 0
    print(f"Error: the lab's nmcli stand-in does not do: nmcli {' '.join(argv)}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if argv[:1] == ["timer"] and len(argv) == 2:
        return _timer(argv[1])
    if argv[:1] == ["reactivate"] and len(argv) == 3:
        return _reactivate(argv[1], argv[2])
    if argv[:1] == ["busctl"]:
        return busctl(argv[1:])
    if argv[:1] == ["nmcli"]:
        return nmcli(argv[1:])
    print("usage: python -m tests.lab.nm_standin busctl|nmcli ARGS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
