"""Host ranges as the schedulers and inventories write them: Slurm's hostlist (`spark[01-04,07],other`) and
Ansible's pattern ranges (`node[01:04]`, `db-[a:f]`, `web[1:9:2]`).

Pure functions over text. Slurm's rule for padding: a range takes the width of its lower bound, so `[01-10]` gives
01..10 and `[8-10]` gives 8, 9, 10; `compress_hostlist` writes a list back in that syntax, keeping its order, so
`expand_hostlist(compress_hostlist(names)) == names`.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Callable

from linkcheck.integers import NumberError, bounded_int, quoted

MAX_HOSTS = 1024  # far beyond a cluster of GB10 nodes; `n[0-99999999]` must not build a list of a hundred million

MAX_INDEX = 999_999_999  # a host number in a range: nine digits (leading zeros aside), far past any cluster
# ASCII digits only (`\d` also takes other scripts' digits) and `\Z`, not `$` (which allows a final newline).
_SLURM_RANGE_RE = re.compile(r"^([0-9]+)(?:-([0-9]+))?\Z")
_ANSIBLE_RANGE_RE = re.compile(r"^([0-9]+|[a-zA-Z]):([0-9]+|[a-zA-Z])(?::([0-9]+))?\Z")
_TRAILING_DIGITS_RE = re.compile(r"^(.*?)([0-9]+)\Z")


class HostRangeError(ValueError):
    """A host range that cannot be expanded; the message says what, the caller says where."""


def split_top_level(text: str, separators: str = ",") -> list[str]:
    """`text` cut at the separators that are outside brackets (`a[1,2],b` is two items); empty items dropped."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostRangeError(f"a ']' without its '[' in {quoted(text)}")
        if char in separators and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise HostRangeError(f"a '[' that is never closed in {quoted(text)}")
    items.append("".join(current))
    return [item for item in items if item]


def _segments(pattern: str) -> list[str | list[str]]:
    """A pattern cut into literal text and bracket bodies: `a[1-2]b` -> ['a', ['1-2'], 'b']."""
    out: list[str | list[str]] = []
    for part in re.split(r"(\[[^\[\]]*\])", pattern):
        if part.startswith("[") and part.endswith("]"):
            out.append([part[1:-1]])
        elif "[" in part or "]" in part:
            raise HostRangeError(f"unbalanced or nested brackets in {quoted(pattern)}")
        elif part:
            out.append(part)
    return out


def _slurm_values(body: str, pattern: str) -> list[str]:
    values: list[str] = []
    for item in body.split(","):
        match = _SLURM_RANGE_RE.match(item.strip())
        if match is None:
            raise HostRangeError(f"{quoted(item.strip())} in {quoted(pattern)} is not a number or a range N-M")
        lo_text, hi_text = match.group(1), match.group(2) or match.group(1)
        lo, hi = _index(lo_text, pattern), _index(hi_text, pattern)
        if hi < lo:
            raise HostRangeError(f"range {quoted(lo_text + '-' + hi_text)} in {quoted(pattern)} runs backwards")
        if len(values) + hi - lo + 1 > MAX_HOSTS:
            raise HostRangeError(f"{quoted(pattern)} names more than {MAX_HOSTS} hosts")
        values += [str(n).zfill(len(lo_text)) for n in range(lo, hi + 1)]
    return values


def _index(text: str, pattern: str) -> int:
    """A number of a host range: ASCII digits, at most MAX_INDEX."""
    try:
        return bounded_int(text, 0, MAX_INDEX, "host number")
    except NumberError as exc:
        raise HostRangeError(f"{exc} in {quoted(pattern)}") from None


def _expand(pattern: str, values_of: Callable[[str, str], list[str]]) -> list[str]:
    """Every name a pattern with bracket bodies stands for, the bodies read by `values_of`, in product order."""
    choices: list[list[str]] = []
    for segment in _segments(pattern):
        choices.append([segment] if isinstance(segment, str) else values_of(segment[0], pattern))
    total = 1
    for options in choices:
        total *= len(options)
        if total > MAX_HOSTS:
            raise HostRangeError(f"{quoted(pattern)} names more than {MAX_HOSTS} hosts")
    return ["".join(parts) for parts in itertools.product(*choices)]


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Slurm's hostlist syntax, as `scontrol show hostnames` expands it; HostRangeError when malformed.

    >>> expand_hostlist("spark[01-03,07],other")
    ('spark01', 'spark02', 'spark03', 'spark07', 'other')
    >>> expand_hostlist("r[1-2]n[8-10]")[:4]
    ('r1n8', 'r1n9', 'r1n10', 'r2n8')
    """
    names: list[str] = []
    for item in split_top_level(text.strip(), ", \t\n"):
        names += _expand(item, _slurm_values)
        if len(names) > MAX_HOSTS:
            raise HostRangeError(f"the list names more than {MAX_HOSTS} hosts")
    return tuple(names)


def compress_hostlist(names: list[str] | tuple[str, ...]) -> str:
    """The hostlist that expands to `names` in their order: runs of consecutive numbers after one prefix become
    `prefix[lo-hi,...]`; names without a trailing number stay as they are.

    >>> compress_hostlist(["spark01", "spark02", "spark03", "spark07", "other"])
    'spark[01-03,07],other'
    """
    groups: list[tuple[str, list[list[str]]]] = []  # (prefix, ranges of digit texts); "" prefix-less literals
    for name in names:
        match = _TRAILING_DIGITS_RE.match(name)
        if match is None:
            groups.append((name, []))
            continue
        prefix, digits = match.group(1), match.group(2)
        if groups and groups[-1][1] and groups[-1][0] == prefix:
            ranges = groups[-1][1]
            run = ranges[-1]
            if int(digits) == int(run[-1]) + 1 and digits == str(int(digits)).zfill(len(run[0])):
                run.append(digits)
            else:
                ranges.append([digits])
            continue
        groups.append((prefix, [[digits]]))
    items = []
    for prefix, ranges in groups:
        if not ranges:
            items.append(prefix)
            continue
        bodies = [run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in ranges]
        items.append(f"{prefix}[{','.join(bodies)}]")
    return ",".join(items)


def _ansible_values(body: str, pattern: str) -> list[str]:
    match = _ANSIBLE_RANGE_RE.match(body.strip())
    if match is None:
        raise HostRangeError(f"{quoted('[' + body + ']')} in {quoted(pattern)} is not a range [start:end] or "
                             "[start:end:stride]")
    start, end, stride_text = match.groups()
    stride = _index(stride_text, pattern) if stride_text else 1
    if stride < 1:
        raise HostRangeError(f"{quoted('[' + body + ']')} in {quoted(pattern)} has a stride below 1")
    if start.isdigit() != end.isdigit():
        raise HostRangeError(f"{quoted('[' + body + ']')} in {quoted(pattern)} mixes a number and a letter")
    if start.isdigit():
        lo, hi = _index(start, pattern), _index(end, pattern)
        if hi < lo:
            raise HostRangeError(f"range {quoted('[' + body + ']')} in {quoted(pattern)} runs backwards")
        if (hi - lo) // stride + 1 > MAX_HOSTS:
            raise HostRangeError(f"{quoted(pattern)} names more than {MAX_HOSTS} hosts")
        # Ansible pads to the width of the start when it begins with a zero (`[01:10]`), else not at all.
        width = len(start) if start.startswith("0") and len(start) > 1 else 0
        if width and len(end) != width:
            raise HostRangeError(f"{quoted('[' + body + ']')} in {quoted(pattern)}: a zero-padded range needs a start "
                                 "and an end of one width")
        return [str(n).zfill(width) for n in range(lo, hi + 1, stride)]
    letters = string.ascii_letters
    lo, hi = letters.index(start), letters.index(end)
    if hi < lo:
        raise HostRangeError(f"range {quoted('[' + body + ']')} in {quoted(pattern)} runs backwards")
    return [letters[i] for i in range(lo, hi + 1, stride)]


def expand_ansible_pattern(pattern: str) -> tuple[str, ...]:
    """An Ansible inventory host pattern with its ranges expanded.

    >>> expand_ansible_pattern("node[01:03]")
    ('node01', 'node02', 'node03')
    >>> expand_ansible_pattern("db-[a:c]")
    ('db-a', 'db-b', 'db-c')
    """
    return tuple(_expand(pattern, _ansible_values))
