"""Per-pair run history: one JSON line per run under $XDG_DATA_HOME/linkcheck/history/<pair>.jsonl.

JSON lines need no extra dependency to write. Each record is appended with one write(2) on an O_APPEND
descriptor under an exclusive fcntl lock, so two runs appending at once lose and interleave nothing.
The log that `linkcheck history` prints is app/history.py's.

A timer every 5 minutes makes ~105,000 runs a year, so the file is bounded and read bounded: at ROTATE_BYTES the
current file becomes `<pair>.jsonl.1` (replacing the one before), so a pair keeps at most twice that; readers
stream it line by line (never the whole file in memory) and `last` reads only the end of it.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from linkcheck import schema, strict_json
from linkcheck.baseline.store import data_dir, now_iso
from linkcheck.bench.runner import repetition_of
from linkcheck.diagnose.engine import EXIT_CODES
from linkcheck.errors import InputFileError, UsageError
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.snapshot import pair_id, pair_key, performance_of
from linkcheck.model import Capture, Finding, Verdict
from linkcheck.outcome import ClusterCheck, Judged, Outcome
from linkcheck.safe_read import open_capped

SCHEMA = "linkcheck-history"
SCHEMA_VERSION = 1
ROTATE_BYTES = 32 << 20  # the current file of a pair: ~55,000 runs of ~600 bytes (a check's record)
MAX_BYTES = 64 << 20  # a history file read at all: twice what rotation leaves, for a file written before it
LINE_CAP = 1 << 20  # one record: a run writes ~1 KB; a longer line is not a record
TAIL_BLOCK = 1 << 16


class HistoryError(InputFileError):
    """A history file has a line that is not a history record."""


def history_dir() -> Path:
    return data_dir() / "history"


def _record(link: LinkFacts, findings: Iterable[Finding], verdict: Verdict, captures: Sequence[Capture],
            command: str, baseline: str | None) -> dict[str, Any]:
    """What one measured pair adds to its history: when, what, the verdict, each path's rates and the NCCL bus
    bandwidth (the bundle's folder and collection time are the caller's)."""
    perf = performance_of(captures, link)
    problems = sorted({f"{f.rule_id}:{f.status.value}" for f in findings if f.status.value in ("warn", "fail")})
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "time": now_iso(), "command": command,
        "pair": pair_id(pair_key(link)), "hosts": [link.a.hostname, link.b.hostname],
        "verdict": verdict.value, "exit_code": int(EXIT_CODES[verdict]), "baseline": baseline,
        "rdma_gbps": perf.rdma_gbps, "concurrent_total_gbps": perf.concurrent_total_gbps,
        "nccl_busbw_gbs": perf.nccl_busbw_gbs, "findings": problems,
        "duration_s": perf.rdma_parameters.get("duration_s"),  # none without an RDMA rate
        "repetitions": len({repetition_of(run.round_id) for run in link.bench.rdma}) if link.bench.rdma else None,
    }


def run_record(outcome: Outcome, command: str, baseline: str | None) -> dict[str, Any]:
    """What one run of a pair adds to the history."""
    bundle, diagnosis = outcome.bundle, outcome.diagnosis
    return {**_record(outcome.link, diagnosis.findings, diagnosis.verdict, bundle.captures, command, baseline),
            "bundle": str(bundle.path or ""), "bundle_created": bundle.created}


def cable_records(check: ClusterCheck, command: str) -> list[dict[str, Any]]:
    """What a cluster's run adds: one record per test it scheduled (each cable, or pair through the switch), for
    the history of that test's two nodes, naming the test (`cable`) and the cluster's size (`cluster_nodes`), with
    the bundle it was judged from (its folder and collection time). A test that never had a second node (a
    placeholder for a node not inspected) is no pair's run; a check made from captures alone is no saved run."""
    bundle = check.bundle
    if bundle is None or bundle.path is None:
        return []
    return [{**_record(r.link, r.findings, r.verdict, bundle.captures, command, check.baseline_name),
             "bundle": str(bundle.path), "bundle_created": bundle.created, "cable": r.test.label,
             "cluster_nodes": len(check.view.hosts)}
            for r in check.cables if r.test.round > 0]


def _rotated(path: Path) -> Path:
    return path.with_name(path.name + ".1")


def _open_locked(path: Path) -> int:
    """The history file opened for appending under its exclusive lock, the current file even when another run
    rotated it while this one waited for the lock."""
    while True:
        fd = _open_history(path)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # renamed away by a rotation: open the new one


def append_line(path: Path, record: dict[str, Any], rotate_bytes: int = ROTATE_BYTES) -> None:
    """Append one record as one line: a single write on an O_APPEND descriptor, under an exclusive lock. A file
    that this line would take past `rotate_bytes` is first renamed to `<name>.1` (replacing the one before).

    Whole records or nothing: a write cut short (a full disk) is truncated back to where the file ended, so the
    history never holds part of a line; the OSError is raised for the caller to say."""
    data = (strict_json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_locked(path)
    try:
        if os.fstat(fd).st_size > 0 and os.fstat(fd).st_size + len(data) > rotate_bytes:
            os.replace(path, _rotated(path))  # under the lock: a writer waiting on it reopens the new file
            os.close(fd)
            fd = _open_locked(path)
        end = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
        except OSError:
            os.ftruncate(fd, end)
            raise
        if written != len(data):
            os.ftruncate(fd, end)
            raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes; the line was taken back)",
                          str(path))
    finally:
        os.close(fd)  # closing releases the lock


def _open_history(path: Path) -> int:
    """The history file opened to append, created when missing. Never through a link (O_NOFOLLOW), never blocked
    by a FIFO (O_NONBLOCK: with no reader the open fails at once, with one the file is refused as not regular);
    an OSError whose strerror says what is there otherwise."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        kind = _kind_at(path)
        if kind is None:
            raise
        raise OSError(exc.errno, f"{path} is {kind}, not a history file (move it away)", str(path)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a plain file"
        raise OSError(errno.EINVAL, f"{path} is {kind}, not a history file (move it away)", str(path))
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def _kind_at(path: Path) -> str | None:
    """What is at `path` when it is not a plain file (None: a plain file, or nothing)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a plain file"


def append_run(outcome: Outcome, command: str, baseline: str | None, acceptance: str | None = None) -> Path:
    """The run appended to its pair's history; an `accept` run's acceptance verdict beside the diagnosis's."""
    record = run_record(outcome, command, baseline)
    if acceptance is not None:
        record["acceptance"] = acceptance
    path = history_dir() / f"{record['pair']}.jsonl"
    append_line(path, record)
    return path


def append_cluster_run(check: ClusterCheck, command: str, *, once: bool = False,
                       acceptance: str | None = None) -> list[Path]:
    """Each of the cluster run's tests appended to its pair's history (an `accept` run's acceptance verdict beside
    each, as a pair's run keeps its own); the files written. With `once` (an offline `diagnose --record`), a test
    whose pair's history already holds this very bundle is not written again."""
    paths = []
    for record in cable_records(check, command):
        if acceptance is not None:
            record["acceptance"] = acceptance
        path = history_dir() / f"{record['pair']}.jsonl"
        if once and _holds_bundle(path, record["bundle"], record["bundle_created"]):
            continue
        append_line(path, record)
        paths.append(path)
    return paths


def _same_folder(a: str, b: str) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


def append_judged(judged: Judged, command: str, acceptance: str | None = None, *, once: bool = False) -> list[Path]:
    """A judged run appended to its pairs' histories: a pair's one record, a cluster's one per test, each in the
    history of that test's two nodes; the files written. With `once` (an offline `diagnose --record`), a run of
    this very bundle already in a history is not written again."""
    if isinstance(judged, ClusterCheck):
        return append_cluster_run(judged, command, once=once, acceptance=acceptance)
    if once and already_recorded(judged):
        return []
    return [append_run(judged, command, judged.baseline_name, acceptance)]


def already_recorded(outcome: Outcome) -> bool:
    """Whether the pair's history holds a run of this very bundle (same folder, same collection time): a later
    offline `diagnose` of it is the same run, not a new one."""
    bundle = outcome.bundle
    if bundle.path is None:
        return False
    return _holds_bundle(history_dir() / f"{pair_id(pair_key(outcome.link))}.jsonl", str(bundle.path), bundle.created)


def _holds_bundle(path: Path, folder: str, created: str) -> bool:
    """Whether the history file holds a run of the bundle in `folder` collected at `created`. Only lines that hold
    the collection time are parsed."""
    if not path.is_file():
        return False
    needle = strict_json.dumps(created)
    try:
        for generation in generations(path):
            for number, line in _lines(generation):
                if needle in line:
                    r = _parse_line(generation, number, line)
                    if r.get("bundle_created") == created and _same_folder(str(r.get("bundle", "")), folder):
                        return True
    except HistoryError:  # said by `linkcheck history`; the run is recorded as before
        return False
    return False


Finite = Annotated[float, msgspec.Meta(ge=0, lt=1e15)]  # a rate: never negative, inf, nan or a 400-digit number


class _Head(msgspec.Struct, frozen=True):
    """What makes a line a history record at all, and of a version this linkcheck reads."""

    schema: Literal["linkcheck-history"]
    time: str
    schema_version: Any = None


class _Record(msgspec.Struct, frozen=True):
    """A version-1 record: every field but `verdict` optional. Keys it does not name are kept, not refused: a
    record is a whole line that another linkcheck may have appended, and the table reads what it knows."""

    verdict: str
    command: str = ""
    bundle: str = ""
    bundle_created: str = ""
    pair: str = ""
    baseline: str | None = None
    exit_code: Annotated[int, msgspec.Meta(ge=-(1 << 31), lt=1 << 31)] = 0
    hosts: list[str | None] = msgspec.field(default_factory=list)
    findings: list[str] = msgspec.field(default_factory=list)
    rdma_gbps: dict[str, Finite] = msgspec.field(default_factory=dict)
    concurrent_total_gbps: dict[str, Finite] = msgspec.field(default_factory=dict)
    nccl_busbw_gbs: Finite | None = None
    duration_s: str | None = None
    repetitions: Annotated[int, msgspec.Meta(ge=0, lt=1 << 31)] | None = None
    cable: str | None = None  # a cluster's run: the test (cable, or pair through the switch) this record is of
    cluster_nodes: Annotated[int, msgspec.Meta(ge=0, lt=1 << 31)] | None = None


def _parse_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = msgspec.json.decode(line)
        head = msgspec.convert(record, _Head)
    except UnicodeEncodeError:  # bytes that are not UTF-8, kept by read_records as surrogates
        raise HistoryError(str(path), "not a history record (not UTF-8 text)", line=number,
                           fix="remove or repair that line") from None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # not JSON, out of range, too deep
        raise HistoryError(str(path), "not a history record (corrupt line)", line=number,
                           fix="remove or repair that line") from None
    version = head.schema_version
    if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
        raise HistoryError(str(path), f"history schema version {version!r} is not one this linkcheck reads",
                           line=number, fix="upgrade linkcheck")
    try:
        msgspec.convert(record, _Record)
    except msgspec.ValidationError as exc:
        problem = schema.describe(schema.locate(exc), allowed=_ALLOWED.get)
        raise HistoryError(str(path), f"a history record with fields of the wrong type: {problem}", line=number,
                           fix="remove or repair that line") from None
    return dict(record)


_ALLOWED = {"rdma_gbps": "an object of finite rates, 0 or more",
            "concurrent_total_gbps": "an object of finite rates, 0 or more",
            "nccl_busbw_gbs": "a finite rate, 0 or more, or null", "hosts": "a list of text",
            "findings": "a list of text",
            "duration_s": "text or null", "repetitions": "an integer or null", "cable": "text or null",
            "cluster_nodes": "an integer or null"}


def generations(path: Path) -> list[Path]:
    """A pair's history files, oldest first: the rotated one (if any), then the current one. Whatever stands at
    either name is read, so that one that is not a plain file (a FIFO, a link) is refused, never skipped."""
    return [p for p in (_rotated(path), path) if os.path.lexists(p)]


def _decoded(path: Path, number: int, raw: bytes) -> str:
    if len(raw) > LINE_CAP:
        raise HistoryError(str(path), f"not a history record (a line of {len(raw)} bytes)", line=number,
                           fix="remove or repair that line")
    return raw.decode("utf-8", errors="surrogateescape")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line, the last one without its newline included, streamed."""
    try:
        with open_capped(path, MAX_BYTES) as handle:
            for number, raw in enumerate(handle, 1):
                yield number, _decoded(path, number, raw.rstrip(b"\n"))
    except OSError as exc:
        raise HistoryError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _tail_lines(path: Path, count: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of the last `count` lines (1 or more), read from the end in blocks; their numbers are
    the newlines counted before them, in blocks too."""
    try:
        with open_capped(path, MAX_BYTES) as handle:
            start = handle.seek(0, os.SEEK_END)
            tail = b""
            while start > 0 and tail.count(b"\n") <= count:  # one more newline: the first line kept is whole
                step = min(TAIL_BLOCK, start)
                start -= step
                handle.seek(start)
                tail = handle.read(step) + tail
            body = tail[:-1] if tail.endswith(b"\n") else tail
            kept = body.split(b"\n")[-max(1, count):]
            first = start + len(body) - len(b"\n".join(kept))  # the byte where the first line kept starts
            handle.seek(0)
            before = read = 0
            while read < first:
                block = handle.read(min(1 << 20, first - read))
                if not block:
                    break
                before, read = before + block.count(b"\n"), read + len(block)
            for offset, raw in enumerate(kept, 1):
                yield before + offset, _decoded(path, before + offset, raw)
    except OSError as exc:
        raise HistoryError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _warn_torn(path: Path, number: int, torn: str, warn: Callable[[str], None] | None) -> None:
    message = f"{path}:{number}: a torn last line (a write cut short; {len(torn)} bytes, no newline) is skipped"
    (warn or (lambda line: sys.stderr.write(f"linkcheck: warning: {line}\n")))(message)


def iter_records(path: Path, warn: Callable[[str], None] | None = None,
                 last: int | None = None) -> Iterator[dict[str, Any]]:
    """The file's records in order, streamed (or only its `last` lines'); a last line without its newline that is
    not a record (a write torn by a crash) is skipped, said through `warn` (stderr by default)."""
    try:
        size = path.stat().st_size
        ends_whole = size == 0 or _last_byte(path) == b"\n"
    except OSError as exc:
        raise HistoryError(str(path), f"cannot read: {exc.strerror or exc}") from None
    lines = _tail_lines(path, last) if last is not None else _lines(path)
    pending: tuple[int, str] | None = None
    for number, line in lines:
        if pending is not None and pending[1].strip():
            yield _parse_line(path, *pending)
        pending = (number, line)
    if pending is None or not pending[1].strip():
        return
    if ends_whole:
        yield _parse_line(path, *pending)
        return
    try:
        yield _parse_line(path, *pending)
    except HistoryError:
        _warn_torn(path, pending[0], pending[1], warn)


def _last_byte(path: Path) -> bytes:
    with open_capped(path, MAX_BYTES) as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1)


def read_records(path: Path, warn: Callable[[str], None] | None = None,
                 last: int | None = None) -> list[dict[str, Any]]:
    """Every record of the file (or of its last `last` lines), as `iter_records`."""
    return list(iter_records(path, warn, last))


def recent_records(path: Path, last: int | None, start: dt.datetime | None) -> list[dict[str, Any]]:
    """The pair's records (rotated file first) from `start` on, the last `last` of them: without `start` only the
    end of the files is read; with it the files are streamed, holding `last` records at most."""
    if start is None and last is not None:
        out: list[dict[str, Any]] = []
        for generation in reversed(generations(path)):
            out = read_records(generation, last=last - len(out)) + out
            if len(out) >= last:
                break
        return out[-last:]
    found: deque[dict[str, Any]] = deque(maxlen=last)
    for generation in generations(path):
        found.extend(r for r in iter_records(generation) if start is None or when_of(r) >= start)
    return list(found)


def history_files(pair: str | None) -> list[Path]:
    files = sorted(history_dir().glob("*.jsonl")) if history_dir().is_dir() else []
    if pair is None:
        return files
    chosen = [f for f in files if f.stem == pair] or [f for f in files if pair in f.stem]
    if not chosen:
        known = ", ".join(f.stem for f in files) or "none yet"
        raise UsageError(f"no history for pair {pair!r} (pairs: {known})")
    return chosen


def since_time(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        stamp = dt.datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since {value!r} is not a date (YYYY-MM-DD or an ISO 8601 time)") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


def when_of(record: dict[str, Any]) -> dt.datetime:
    """When the run's bundle was collected (a later diagnosis of an old bundle belongs at its own time)."""
    for key in ("bundle_created", "time"):
        try:
            stamp = dt.datetime.fromisoformat(str(record.get(key)))
        except ValueError:
            continue
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)
    return dt.datetime.fromtimestamp(0, dt.timezone.utc)


def path_minimums(record: dict[str, Any]) -> dict[str, float]:
    """Per path, its lowest rate: the slower direction of the concurrent round (alone when there was none)."""
    out: dict[str, dict[str, float]] = {}
    for key, gbps in record.get("rdma_gbps", {}).items():
        path, _, rest = str(key).partition("|")
        mode = rest.partition("|")[0]
        out.setdefault(path, {})[mode] = min(float(gbps), out.get(path, {}).get(mode, float(gbps)))
    return {p: modes.get("concurrent", modes.get("alone", 0.0)) for p, modes in sorted(out.items())}
