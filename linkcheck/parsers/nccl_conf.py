"""Parsers for NCCL settings: NCCL_* variables from `env`, and /etc/nccl.conf or ~/.nccl.conf.

An empty value is kept as "": a set but empty variable is worth a note, and in the environment it keeps a
config file's line from taking effect (setenv(..., 0)), although NCCL reads an empty value as unset.
nccl.conf is read the way NCCL's `setEnvFile()` (src/misc/param.cc) reads it: the key is everything before
the first '=' and the value everything after, verbatim, so `NCCL_IB_HCA = x` sets a variable named
"NCCL_IB_HCA " that NCCL never looks up. Such lines are kept under that name and listed in `warnings`, so a rule
can say why the setting is ignored.
"""

from __future__ import annotations

import re

import msgspec

from linkcheck.errors import ParseError

ENV_LINE_RE = re.compile(r"^(?:export\s+|declare -x\s+)?(NCCL_[A-Za-z0-9_]*)=(.*)$")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class NcclSettings(msgspec.Struct, frozen=True):
    """NCCL variables in order of first appearance (a later assignment wins) and their line numbers."""

    values: tuple[tuple[str, str], ...]
    source: str
    line_numbers: tuple[tuple[str, int], ...]
    warnings: tuple[tuple[int, str], ...] = ()

    def get(self, key: str) -> str | None:
        """The value NCCL would see for `key` from this source ("" when set empty), None when unset."""
        return self.as_dict.get(key)

    @property
    def as_dict(self) -> dict[str, str]:
        return dict(self.values)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _reject_binary(spec: str, text: str) -> list[str]:
    if "\x00" in text:
        raise ParseError(spec, "binary data (NUL bytes)")
    return text.replace("\r\n", "\n").split("\n")


Found = dict[str, tuple[str, int]]  # key -> (value, line number)


def _settings(source: str, found: Found, warnings: list[tuple[int, str]]) -> NcclSettings:
    return NcclSettings(
        values=tuple((key, value) for key, (value, _) in found.items()),
        source=source,
        line_numbers=tuple((key, line_no) for key, (_, line_no) in found.items()),
        warnings=tuple(warnings),
    )


def parse_nccl_env(text: str) -> NcclSettings:
    """Parse `env` output (or `export`/`declare -x` lines), keeping NCCL_* only; empty text means none set.

    >>> s = parse_nccl_env("PATH=/usr/bin\\nNCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\\nNCCL_IB_GID_INDEX=\\n")
    >>> s.get("NCCL_IB_HCA"), s.get("NCCL_IB_GID_INDEX"), s.get("NCCL_NET")
    ('rocep1s0f1,roceP2p1s0f1', '', None)
    """
    found: Found = {}
    for line_no, line in enumerate(_reject_binary("nccl_env", text), start=1):
        # Other lines (other variables, continuation lines of multi-line values) are not ours to judge.
        match = ENV_LINE_RE.match(line)
        if match is not None:
            found.pop(match.group(1), None)
            found[match.group(1)] = (_unquote(match.group(2)), line_no)
    return _settings("env", found, [])


def _conf_line(line: str, line_no: int, warnings: list[tuple[int, str]]) -> tuple[str, str] | None:
    """One nccl.conf line as NCCL reads it: (key, value), or None for blank and comment lines."""
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    key, sep, value = line.partition("=")
    if not sep or not NAME_RE.match(key.strip()):
        raise ParseError("nccl_conf", f"not a KEY=VALUE line: {line[:60]!r}", line_no)
    if key != key.strip() or value != value.strip():
        warnings.append((line_no, f"blanks around '=': NCCL reads the name {key!r} and the value {value!r}"))
    elif value != _unquote(value):
        warnings.append((line_no, f"quoted value: NCCL keeps the quotes in {value!r}"))
    return key, value


def parse_nccl_conf(text: str) -> NcclSettings:
    """Parse /etc/nccl.conf or ~/.nccl.conf (KEY=VALUE lines, '#' comments); an empty file is valid.

    >>> s = parse_nccl_conf("# pinned by admin\\nNCCL_IB_GID_INDEX=3\\nNCCL_NET = IB\\n")
    >>> s.get("NCCL_IB_GID_INDEX"), s.get("NCCL_NET"), s.warnings[0][0]
    ('3', None, 3)
    """
    found: Found = {}
    warnings: list[tuple[int, str]] = []
    for line_no, line in enumerate(_reject_binary("nccl_conf", text), start=1):
        pair = _conf_line(line, line_no, warnings)
        if pair is not None:
            # NCCL never overrides a variable already set (setenv(..., 0)), so the first line wins.
            found.setdefault(pair[0], (pair[1], line_no))
    return _settings("nccl.conf", found, warnings)
