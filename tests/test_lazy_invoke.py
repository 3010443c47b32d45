"""paramiko's `invoke` import is deferred until an SSH config `Match exec` line needs it, and then works."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          check=True, timeout=60)
    return proc.stdout


def test_paramiko_loads_without_invoke_and_match_exec_still_runs() -> None:
    out = _run("""
        import sys
        import linkcheck.transport.ssh  # installs the placeholder before paramiko is imported
        import paramiko
        print("before", type(sys.modules["invoke"]).__name__, "invoke.tasks" in sys.modules)
        config = paramiko.SSHConfig.from_text('Match exec "exit 0"\\n  User matched\\nHost *\\n  Port 2222\\n')
        print("lookup", config.lookup("node")["user"], config.lookup("node")["port"])
        print("after", type(sys.modules["invoke"]).__name__, "invoke.tasks" in sys.modules)
    """).splitlines()
    assert out == ["before _DeferredInvoke False", "lookup matched 2222", "after module True"]


def test_match_exec_false_does_not_match() -> None:
    out = _run("""
        import linkcheck.transport.ssh
        import paramiko
        config = paramiko.SSHConfig.from_text('Match exec "exit 1"\\n  User matched\\n')
        print(config.lookup("node").get("user", "none"))
    """)
    assert out.strip() == "none"


def test_an_already_imported_invoke_is_left_alone() -> None:
    out = _run("""
        import sys
        import invoke
        from linkcheck.transport.lazy_invoke import defer_invoke
        defer_invoke()
        print(sys.modules["invoke"] is invoke)
    """)
    assert out.strip() == "True"
