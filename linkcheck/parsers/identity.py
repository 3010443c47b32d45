"""Parsers for what identifies a node and its software: the DMI product serial, perftest's version and the NCCL
installation.

The DMI fields other than the serial and the boot id come as a sysfs dump (`sysfs_dmi`, parsed by the
sysfs parser); the serial is root-only and comes through `sudo -n grep -H .` (`dmi_serial`). NCCL has no
version command: the cheapest real source is the file name of its library (`libnccl.so.2.28.9`, as the
Debian/NVIDIA packages and NCCL's own `make` install it), found by shell globs without starting a tool.
nccl-tests prints its version only when it runs a collective (`# nccl-tests version 2.17.6 ...`, since
v2.17.4); `-h` prints the usage only, so the inspection records the binary's path and a traffic test adds
the version.
"""

from __future__ import annotations

import posixpath
import re

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text

# What firmware writes into DMI strings it was never given (SMBIOS "Default string", AMI's "To Be Filled
# By O.E.M.", ...): no serial at all.
_PLACEHOLDERS = frozenset({
    "", "default string", "to be filled by o.e.m.", "not specified", "not applicable", "none", "n/a",
    "system serial number", "0123456789", "invalid", "notdefined",
})
_SERIAL_LINE = re.compile(r"^(?:/sys/class/dmi/id/product_serial:)?(.*)$")
# Each part at most 9 digits: a longer one is no version NCCL ships, and int() of 4,300 digits raises.
_LIB_VERSION = re.compile(r"^libnccl\.so\.([0-9]{1,9}\.[0-9]{1,9}\.[0-9]{1,9})$")
_INSTALL_LINE = re.compile(r"^(lib|tests) (/\S.*)$")


class DmiSerial(msgspec.Struct, frozen=True):
    """The DMI product serial; None when the firmware holds a placeholder."""

    serial: str | None


def dmi_value(value: str | None) -> str | None:
    """A DMI string, or None for empty and placeholder values."""
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in _PLACEHOLDERS else value


def parse_dmi_serial(text: str) -> DmiSerial:
    """Parse `grep -H . /sys/class/dmi/id/product_serial` (or the bare value of `cat`).

    >>> parse_dmi_serial("/sys/class/dmi/id/product_serial:1234525012345\\n")
    DmiSerial(serial='1234525012345')
    >>> parse_dmi_serial("/sys/class/dmi/id/product_serial:Default string\\n").serial is None
    True
    """
    text = require_text("dmi_serial", text)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) != 1:
        raise ParseError("dmi_serial", f"expected one line, got {len(lines)}", 2)
    m = _SERIAL_LINE.match(lines[0])
    assert m is not None  # the pattern matches any line
    return DmiSerial(dmi_value(m.group(1)))


class NcclInstall(msgspec.Struct, frozen=True):
    """NCCL libraries and nccl-tests binaries found on the node."""

    libraries: tuple[str, ...]  # every libnccl.so* path, links included
    nccl_version: str | None  # the highest X.Y.Z of a libnccl.so.X.Y.Z file name
    tests_binaries: tuple[str, ...]  # all_gather_perf paths (PATH first, then ~/nccl-tests/build)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def parse_nccl_install(text: str) -> NcclInstall:
    """Parse the `nccl_install` listing: "lib PATH" and "tests PATH" lines (empty: nothing installed).

    >>> r = parse_nccl_install("lib /usr/lib/aarch64-linux-gnu/libnccl.so.2\\n"
    ...                        "lib /usr/lib/aarch64-linux-gnu/libnccl.so.2.28.9\\n"
    ...                        "tests /home/nvidia/nccl-tests/build/all_gather_perf\\n")
    >>> r.nccl_version, r.tests_binaries
    ('2.28.9', ('/home/nvidia/nccl-tests/build/all_gather_perf',))
    """
    if "\x00" in text:
        raise ParseError("nccl_install", "binary data (NUL bytes)")
    libs: list[str] = []
    tests: list[str] = []
    for no, line in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        if not line.strip():
            continue
        m = _INSTALL_LINE.match(line.strip())
        if m is None:
            raise ParseError("nccl_install", f"not a 'lib PATH' or 'tests PATH' line: {line[:80]!r}", no)
        (libs if m.group(1) == "lib" else tests).append(m.group(2))
    versions = [v.group(1) for p in libs if (v := _LIB_VERSION.match(posixpath.basename(p)))]
    return NcclInstall(
        libraries=tuple(dict.fromkeys(libs)),
        nccl_version=max(versions, key=_version_key) if versions else None,
        tests_binaries=tuple(dict.fromkeys(tests)),
    )


def nccl_version_code(code: int | None) -> str | None:
    """NCCL's version code as nccl-tests prints it (22809 -> "2.28.9"; 2.8 and older: 2804 -> "2.8.4")."""
    if code is None or code <= 0:
        return None
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


class PerftestVersion(msgspec.Struct, frozen=True):
    """What `ib_write_bw -V` says, and the two output traits that depend on it."""

    version: str
    json_valid: bool
    header_unit: str


def parse_perftest_version(text: str) -> PerftestVersion:
    """Parse `ib_write_bw -V` (its exit status 1 is normal) into the version and its output traits.

    >>> parse_perftest_version("Version: 6.22\\n")
    PerftestVersion(version='6.22', json_valid=True, header_unit='MiB/sec')
    """
    text = require_text("perftest_version", text)
    m = re.search(r"^\s*Version:\s*([0-9]+\.[0-9]+)", text, re.MULTILINE)
    if m is None:
        raise ParseError("perftest_version", "no 'Version: X.Y' line")
    # A float keeps "6.2" == "6.20" and orders "6.205" < "6.22" as the decimal numbers they are (parsing is
    # correctly rounded, so comparing with the same literals is exact); every diagnosis reads this version now,
    # and `decimal` alone cost more to import than the rest of the parse.
    number = float(m.group(1))
    return PerftestVersion(
        version=m.group(1),
        json_valid=number >= 6.20,  # perftest 24.01: --out_json became standard JSON
        header_unit="MiB/sec" if number >= 6.22 else "MB/sec",  # 24.07 renamed the unit
    )
