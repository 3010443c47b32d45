"""One root error type, one subclass per cause, and the documented exit codes.

Every error carries what a person needs to act (node, file, line, the fix) and renders as one line.
The CLI catches `LinkcheckError` once and prints `str(error)`; a traceback only with --debug.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes; stable and documented in the README."""

    PASS = 0
    WARN = 1
    FAIL = 2
    INCONCLUSIVE = 3
    BAD_INPUT = 4  # bad input we can name: a wrong option, a malformed bundle, playbook, config or tool output
    INTERNAL = 70  # a bug in linkcheck itself (EX_SOFTWARE)
    OUTPUT = 74  # the report could not be written: stdout closed or its device full (EX_IOERR)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class LinkcheckError(Exception):
    """Root of every error linkcheck raises on purpose."""

    exit_code: ExitCode = ExitCode.INCONCLUSIVE

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} (fix: {self.fix})" if self.fix else self.message


class ParseError(LinkcheckError):
    """A tool output was recognised as broken: truncated, garbage, binary or of an unknown shape."""

    def __init__(self, spec: str, reason: str, line_no: int | None = None) -> None:
        where = f" at line {line_no}" if line_no is not None else ""
        super().__init__(f"cannot parse {spec} output{where}: {reason}")
        self.spec = spec
        self.reason = reason
        self.line_no = line_no


class UsageError(LinkcheckError):
    """The command line asked for something that does not exist (an unknown kind, rule id or option)."""

    exit_code = ExitCode.BAD_INPUT


class InputFileError(LinkcheckError):
    """A file the user gave us (bundle, manifest, playbook, config) is missing or malformed."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, path: str, reason: str, *, line: int | None = None, fix: str | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}", fix=fix)
        self.path = path
        self.line = line
        self.reason = reason


class BaselineError(InputFileError):
    """A baseline file is corrupt, of a newer schema, or of another pair."""


class BundleError(InputFileError):
    """The evidence bundle is missing, partial or inconsistent with its manifest."""


class PlaybookError(InputFileError):
    """A playbook file breaks the schema: unknown key, operator, fact path, placeholder, duplicate id."""


class ConfigError(InputFileError):
    """linkcheck.yaml or a --node option is malformed."""


class NodeError(LinkcheckError):
    """A node could not be inspected: unreachable, refused, timed out, or its answer was truncated."""

    def __init__(self, node: str, reason: str, *, fix: str | None = None) -> None:
        super().__init__(f"node {node}: {reason}", fix=fix)
        self.node = node
        self.reason = reason


class UnreachableError(LinkcheckError):
    """No node answered at all: nothing to save or diagnose. One line per node."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.lines = [errors[name] for name in sorted(errors)]
        super().__init__("; ".join(self.lines))


class HostKeyError(NodeError):
    """The node's SSH host key is unknown or has changed; never accepted silently."""


class OutputError(LinkcheckError):
    """Standard output cannot take the report: closed (`>&-`), or its device is full (`>/dev/full`)."""

    exit_code = ExitCode.OUTPUT


class BenchError(LinkcheckError):
    """A traffic test could not produce a trustworthy number."""
