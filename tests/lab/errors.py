"""The one error type of the lab, so callers can tell a lab failure from a failure under test."""

from __future__ import annotations


class LabError(RuntimeError):
    """The lab could not be built, driven or torn down; the message says which step and why."""
