"""Parsers for what NCCL a process would load: linkcheck/collect/nccl_probe.sh's tagged lines (on a node, or inside a
container through `docker|podman exec`), and the tools' own outputs it is made of: `ldconfig -p`, `readelf -n` and
`file` build IDs, an `od -An -tx1` dump of an ELF file's head, `env`, `nvidia-smi --query-gpu ... --format=csv`.

The ELF build ID is the GNU note NT_GNU_BUILD_ID (type 3, owner "GNU") that `ld --build-id` writes: two builds of one
NCCL version (a pip wheel and DGX OS's libnccl2) carry different IDs, the same build the same one.
"""

from __future__ import annotations

import re
import struct

import msgspec

from linkcheck.errors import ParseError

BUILD_ID_HEX = re.compile(r"^[0-9a-f]{8,128}$")
_READELF_RE = re.compile(r"Build ID:\s*([0-9a-fA-F]+)")
_FILE_RE = re.compile(r"BuildID\[[a-z0-9]+\]=([0-9a-fA-F]+)")
# `ldconfig -p`: "\tlibnccl.so.2 (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libnccl.so.2"
_LDCONFIG_RE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)(?:\s+OS ABI: [^=]*)?\s+=>\s+(\S.*)$")
_VERSION_IN_NAME = re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)$")
_WHEEL_DIST = re.compile(r"nvidia_nccl(?:_cu\d+)?-(\d+\.\d+\.\d+)(?:[.+-][^/]*)?\.dist-info$")
_VERSION_STRING = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_ENV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
PT_NOTE, NT_GNU_BUILD_ID = 4, 3


class LdconfigEntry(msgspec.Struct, frozen=True):
    """One line of `ldconfig -p`: the soname, its flags (`libc6,AArch64`) and the file it resolves to."""

    name: str
    flags: str
    path: str


class NcclLibFile(msgspec.Struct, frozen=True):
    """One libnccl file: where it was found, the file it resolves to, size, version (and from what), ELF build ID,
    and where it comes from: `pip wheel` (site-packages/nvidia/nccl/lib), `system` (the distribution's library
    folders), `source build` (a ~/nccl/build tree) or `vendored` (anything else: an application's own copy)."""

    path: str
    real_path: str
    size_bytes: int | None = None
    version: str | None = None
    version_from: str | None = None  # "file name", "pip wheel <dist-info>", "version string"
    build_id: str | None = None
    origin: str = "vendored"
    plugin: bool = False  # a net plugin (libnccl-net*.so), not NCCL itself


class ConfFile(msgspec.Struct, frozen=True):
    path: str
    lines: tuple[str, ...]


class NcclProbe(msgspec.Struct, frozen=True):
    """One probe's answer. On a node `state` is None; inside a container it is `running`, `not running`, `not found`
    or `no engine`, with the engine that answered and why a container was not found."""

    state: str | None = None
    engine: str | None = None
    why: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    pid1_env: tuple[tuple[str, str], ...] | None = None
    conf_files: tuple[ConfFile, ...] = ()
    ldconfig: tuple[LdconfigEntry, ...] = ()
    libraries: tuple[NcclLibFile, ...] = ()
    mapped: tuple[str, ...] = ()


class GpuReading(msgspec.Struct, frozen=True):
    """One GPU's line of `nvidia-smi --query-gpu=utilization.gpu,power.draw --format=csv`; None where it says
    [N/A] or [Not Supported]."""

    utilization_pct: float | None
    power_w: float | None


def build_id_from_readelf(text: str) -> str | None:
    """`readelf -n`'s "Build ID: <hex>" (binutils and elfutils' eu-readelf -n print it the same way)."""
    match = _READELF_RE.search(text)
    return match.group(1).lower() if match else None


def build_id_from_file(text: str) -> str | None:
    """`file`'s "BuildID[sha1]=<hex>" (or [md5], [xxHash])."""
    match = _FILE_RE.search(text)
    return match.group(1).lower() if match else None


def od_bytes(lines: list[str]) -> bytes:
    """The bytes of an `od -An -tx1 -v` dump: two hex digits per byte, 16 to a line."""
    try:
        return bytes(int(word, 16) for line in lines for word in line.split())
    except ValueError:
        raise ParseError("od", "not an od -An -tx1 dump") from None


def build_id_from_elf(head: bytes) -> str | None:
    """NT_GNU_BUILD_ID from the PT_NOTE segments an ELF file's head holds (ELF32/64, either byte order); None when the
    head is not ELF or the note lies beyond it."""
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
    if wide:
        if len(head) < 64:
            return None
        phoff, = struct.unpack_from(end + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
    else:
        phoff, = struct.unpack_from(end + "I", head, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 42)
    for i in range(phnum):
        at = phoff + i * phentsize
        if at + (56 if wide else 32) > len(head):
            break
        ptype, = struct.unpack_from(end + "I", head, at)
        if ptype != PT_NOTE:
            continue
        if wide:
            offset, = struct.unpack_from(end + "Q", head, at + 8)
            size, = struct.unpack_from(end + "Q", head, at + 32)
        else:
            offset, = struct.unpack_from(end + "I", head, at + 4)
            size, = struct.unpack_from(end + "I", head, at + 16)
        found = _gnu_build_id(head[offset:min(offset + size, len(head))], end)
        if found:
            return found
    return None


def _gnu_build_id(notes: bytes, end: str) -> str | None:
    at = 0
    while at + 12 <= len(notes):
        namesz, descsz, ntype = struct.unpack_from(end + "III", notes, at)
        name_at = at + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        if desc_at + descsz > len(notes):
            return None
        if ntype == NT_GNU_BUILD_ID and notes[name_at:name_at + namesz].rstrip(b"\0") == b"GNU":
            return notes[desc_at:desc_at + descsz].hex() or None
        at = desc_at + ((descsz + 3) & ~3)
    return None


def parse_ldconfig_p(text: str) -> tuple[LdconfigEntry, ...]:
    """`ldconfig -p`: its header ("N libs found in cache `/etc/ld.so.cache'") and every entry line."""
    out = []
    for line in text.splitlines():
        match = _LDCONFIG_RE.match(line)
        if match:
            out.append(LdconfigEntry(match.group(1), match.group(2), match.group(3).strip()))
        elif line.strip() and "found in cache" not in line and not line.startswith("Cache generated by"):
            raise ParseError("ldconfig", f"not an ldconfig -p line: {line[:80]!r}")
    return tuple(out)


def parse_env(text: str) -> tuple[tuple[str, str], ...]:
    """`env` (or `docker exec NAME env`): NAME=VALUE lines; a line that continues a multi-line value is dropped."""
    if "\x00" in text:
        raise ParseError("env", "binary data (NUL bytes)")
    return tuple((m.group(1), m.group(2)) for line in text.splitlines() if (m := _ENV_RE.match(line)))


def parse_gpu_query(text: str) -> tuple[GpuReading, ...]:
    """`nvidia-smi --query-gpu=utilization.gpu,power.draw --format=csv` (with or without units, or noheader): a
    reading per GPU, the columns found by their header names."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ParseError("gpu_state", "no output")
    header = [h.strip().split(" ", 1)[0] for h in lines[0].split(",")]
    if "utilization.gpu" in header and "power.draw" in header:
        util_at, power_at, rows = header.index("utilization.gpu"), header.index("power.draw"), lines[1:]
    else:
        util_at, power_at, rows = 0, 1, lines
    out = []
    for row in rows:
        cells = [c.strip() for c in row.split(",")]
        if len(cells) <= max(util_at, power_at):
            raise ParseError("gpu_state", f"a row without both columns: {row[:80]!r}")
        out.append(GpuReading(_number(cells[util_at], "%"), _number(cells[power_at], "W")))
    return tuple(out)


def _number(cell: str, unit: str) -> float | None:
    value = cell.removesuffix(unit).strip()
    if value.startswith("[") or value in ("N/A", ""):
        return None
    try:
        return float(value)
    except ValueError:
        raise ParseError("gpu_state", f"not a number: {cell[:40]!r}") from None


def origin_of(path: str) -> str:
    """Where a libnccl file comes from, by where it lies."""
    if "/nvidia/nccl/lib/" in path:
        return "pip wheel"
    if "/nccl/build/lib/" in path:
        return "source build"
    if re.match(r"^/(usr/)?lib(64|32)?/([a-z0-9_]+-linux-gnu[a-z]*/)?[^/]+$", path):
        return "system"
    return "vendored"


_TAGS = frozenset({"state", "engine", "why", "env", "pid1", "conf", "confline", "ldconfig", "lib", "dist", "version",
                   "buildid", "elf", "mapped"})


def _keyed(lines: list[str]) -> dict[str, list[str]]:
    """`key<TAB>value` lines grouped by key, in order."""
    out: dict[str, list[str]] = {}
    for line in lines:
        key, _, value = line.partition("\t")
        out.setdefault(key, []).append(value)
    return out


def _env(lines: list[str]) -> tuple[tuple[str, str], ...]:
    return tuple((m.group(1), m.group(2)) for line in lines if (m := _ENV_RE.match(line)))


def parse_nccl_probe(text: str) -> NcclProbe:
    """nccl_probe.sh's tagged lines (and, for a container, the engine's `state` lines ahead of them)."""
    if "\x00" in text:
        raise ParseError("nccl_probe", "binary data (NUL bytes)")
    tags: dict[str, list[str]] = {}
    for line in text.splitlines():
        tag, _, rest = line.partition("\t")
        if tag not in _TAGS:
            if line.strip():
                raise ParseError("nccl_probe", f"unknown line: {line[:80]!r}")
            continue
        tags.setdefault(tag, []).append(rest)
    confs: dict[str, list[str]] = {path: [] for path in tags.get("conf", [])}
    for path, lines in _keyed(tags.get("confline", [])).items():
        confs.setdefault(path, []).extend(lines)
    libs = [line.split("\t") for line in tags.get("lib", [])]
    if any(len(parts) != 3 for parts in libs):
        raise ParseError("nccl_probe", "a lib line without path, target and size")
    found = {tag: {k: v[-1] for k, v in _keyed(tags.get(tag, [])).items()} for tag in ("dist", "version", "buildid")}
    heads = _keyed(tags.get("elf", []))
    single = {tag: (tags[tag][-1] if tags.get(tag) else None) for tag in ("state", "engine", "why")}
    return NcclProbe(
        state=single["state"], engine=single["engine"], why=single["why"], env=_env(tags.get("env", [])),
        pid1_env=_env(tags["pid1"]) if "pid1" in tags else None,
        conf_files=tuple(ConfFile(p, tuple(lines)) for p, lines in confs.items()),
        ldconfig=parse_ldconfig_p("\n".join(tags.get("ldconfig", []))),
        libraries=tuple(_library(path, real, size, found["dist"], found["version"], found["buildid"], heads)
                        for path, real, size in libs),
        mapped=tuple(dict.fromkeys(tags.get("mapped", []))))


def _library(path: str, real: str, size: str, dists: dict[str, str], strings: dict[str, str],
             readelf: dict[str, str], heads: dict[str, list[str]]) -> NcclLibFile:
    version, source = None, None
    for name in (real, path):
        if (m := _VERSION_IN_NAME.search(name)) is not None:
            version, source = m.group(1), "file name"
            break
    if version is None and path in dists and (m := _WHEEL_DIST.search(dists[path])) is not None:
        version, source = m.group(1), f"pip wheel {dists[path].rsplit('/', 1)[-1]}"
    if version is None and real in strings and (m := _VERSION_STRING.search(strings[real])) is not None:
        version, source = m.group(1), "version string"
    build_id = build_id_from_readelf(readelf.get(real, ""))
    if build_id is None and real in heads:
        build_id = build_id_from_elf(od_bytes(heads[real]))
    base = path.rsplit("/", 1)[-1]
    return NcclLibFile(path=path, real_path=real, size_bytes=int(size) if size.isdigit() else None, version=version,
                       version_from=source, build_id=build_id, origin=origin_of(path),
                       plugin=base.startswith("libnccl-net"))
