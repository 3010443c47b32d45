"""Fixtures of every test: a private XDG_DATA_HOME, and SIGINT handling restored after each test (the live
end-to-end tests' own fixtures are in tests/live/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _sigint_handler_restored() -> Iterator[None]:
    """`linkcheck.cli.run()` ignores Ctrl-C once it is done (its process is exiting); a test that calls it in
    process must not leave pytest ignoring SIGINT, which every later subprocess would inherit."""
    import signal

    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _private_data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs append to a per-pair history and baselines live under XDG_DATA_HOME: every test, and every linkcheck
    it starts, uses its own, never the user's (which would also make results depend on earlier runs)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
