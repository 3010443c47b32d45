"""SSH transport against a real OpenSSH sshd on 127.0.0.1: host keys, auth, timeouts, draining, config."""

from __future__ import annotations

import inspect
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from linkcheck.collect.script import build_inspection_script, new_token, split_script_output
from linkcheck.collect.specs import Spec
from linkcheck.errors import ConfigError, HostKeyError, NodeError
from linkcheck.transport.base import (
    CommandTimeoutError,
    ConnectionDroppedError,
    NodeTarget,
    parse_target,
)
from linkcheck.transport.ssh import SshTransport, resolve_target
from tests.transport import sshd_helper
from tests.transport.sshd_helper import Sshd, free_port, keygen

pytestmark = pytest.mark.lab  # a real OpenSSH sshd


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    reason = sshd_helper.skip_reason()
    if reason:
        pytest.skip(reason)
    running = sshd_helper.start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not borrow the developer's ssh-agent keys."""
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def fingerprint_of(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)], capture_output=True, text=True)
    return out.stdout.split()[1]


def make_transport(
    server: Sshd,
    tmp_path: Path,
    *,
    known: str | None = None,
    identity: Path | None = None,
    accept_new_host_keys: bool = False,
) -> SshTransport:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(server.host_key_line() if known is None else known)
    target = NodeTarget("a", "127.0.0.1", "root", server.port, str(identity or server.client_key))
    return SshTransport(
        target,
        known_hosts=known_hosts,
        ssh_config=tmp_path / "no-ssh-config",
        system_known_hosts=None,
        accept_new_host_keys=accept_new_host_keys,
    )


def test_runs_commands_and_keeps_exit_statuses(server: Sshd, tmp_path: Path) -> None:
    transport = make_transport(server, tmp_path)
    try:
        result = transport.run("echo out; echo err >&2; exit 3", timeout_s=10)
        assert (result.stdout, result.stderr, result.exit_status) == ("out\n", "err\n", 3)
        assert transport.run("true", timeout_s=10).exit_status == 0
        assert transport.run("printf 'a\\377b'", timeout_s=10).stdout == "a\ufffdb"
        assert transport.run("cat", timeout_s=10, stdin="fed on stdin\n").stdout == "fed on stdin\n"
    finally:
        transport.close()


def test_nagle_is_off_and_acks_are_prompt(server: Sshd, tmp_path: Path) -> None:
    """Small requests leave at once (TCP_NODELAY on the socket handed to paramiko), and what sshd sends is
    acknowledged at once (transport/tcp.py), so neither end waits on the other's delayed ACK
    (benchmarks/check_vs_ssh.py measures it)."""
    import socket

    from linkcheck.transport.tcp import PromptAckSocket

    transport = make_transport(server, tmp_path)
    try:
        assert transport.run("echo fine", timeout_s=10).stdout == "fine\n"
        assert transport._client is not None
        link = transport._client.get_transport()
        assert link is not None
        assert isinstance(link.sock, PromptAckSocket)
        assert link.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        transport.close()


def test_big_stdout_and_stderr_are_both_drained(server: Sshd, tmp_path: Path) -> None:
    # stderr first: a reader that waits for stdout's EOF before touching stderr would deadlock here.
    size = 3 * 1024 * 1024
    command = f"head -c {size} /dev/zero | tr '\\0' e >&2; head -c {size} /dev/zero | tr '\\0' o"
    transport = make_transport(server, tmp_path)
    try:
        result = transport.run(command, timeout_s=20)
    finally:
        transport.close()
    assert result.exit_status == 0
    assert len(result.stdout) == size and set(result.stdout) == {"o"}
    assert len(result.stderr) == size and set(result.stderr) == {"e"}


def test_unknown_host_key_is_refused_with_the_exact_fix(server: Sshd, tmp_path: Path) -> None:
    transport = make_transport(server, tmp_path, known="")
    with pytest.raises(HostKeyError) as caught:
        transport.run("true", timeout_s=5)
    error = caught.value
    known_hosts = tmp_path / "known_hosts"
    assert "unknown SSH host key" in error.message
    assert fingerprint_of(server.host_key.with_suffix(".pub")) in error.message
    command = f"ssh-keyscan -p {server.port} -t ed25519 127.0.0.1 >> {known_hosts}"
    assert error.fix is not None and command in error.fix
    assert "StrictHostKeyChecking=accept-new" in error.fix
    assert known_hosts.read_text() == ""  # nothing was added behind the user's back
    # The fix, run as printed, makes the next connection succeed.
    subprocess.run(["sh", "-c", command], check=True, capture_output=True)
    fixed = SshTransport(
        transport.target, known_hosts=known_hosts, ssh_config=tmp_path / "none", system_known_hosts=None
    )
    try:
        assert fixed.run("echo ok", timeout_s=5).stdout == "ok\n"
    finally:
        fixed.close()


def test_accept_new_host_keys_writes_an_openssh_known_hosts_line(server: Sshd, tmp_path: Path) -> None:
    transport = make_transport(server, tmp_path, known="", accept_new_host_keys=True)
    try:
        assert transport.run("echo ok", timeout_s=5).stdout == "ok\n"
    finally:
        transport.close()
    known_hosts = tmp_path / "known_hosts"
    assert known_hosts.read_text() == server.host_key_line()
    found = subprocess.run(
        ["ssh-keygen", "-F", f"[127.0.0.1]:{server.port}", "-f", str(known_hosts)], capture_output=True
    )
    assert found.returncode == 0  # OpenSSH itself finds the entry
    again = SshTransport(
        transport.target, known_hosts=known_hosts, ssh_config=tmp_path / "none", system_known_hosts=None
    )
    try:
        assert again.run("true", timeout_s=5).exit_status == 0
    finally:
        again.close()


def test_changed_host_key_is_always_refused(server: Sshd, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other_host_key")
    kind, blob = other.with_suffix(".pub").read_text().split()[:2]
    stale = f"[127.0.0.1]:{server.port} {kind} {blob}\n"
    transport = make_transport(server, tmp_path, known=stale, accept_new_host_keys=True)
    with pytest.raises(HostKeyError) as caught:
        transport.run("true", timeout_s=5)
    message = caught.value.message
    assert "CHANGED" in message
    assert fingerprint_of(other.with_suffix(".pub")) in message
    assert fingerprint_of(server.host_key.with_suffix(".pub")) in message
    assert (tmp_path / "known_hosts").read_text() == stale  # accept-new never overwrites a key
    assert "ssh-keygen -R" in (caught.value.fix or "")  # the warning and the way out, in one line


def test_wrong_key_gives_an_auth_error_naming_the_file_not_its_contents(server: Sshd, tmp_path: Path) -> None:
    wrong = keygen(tmp_path / "not_authorized")
    transport = make_transport(server, tmp_path, identity=wrong)
    with pytest.raises(NodeError) as caught:
        transport.run("true", timeout_s=5)
    text = str(caught.value)
    assert "authentication failed" in text and "wrong key" in text
    assert str(wrong) in text
    for line in wrong.read_text().splitlines()[1:-1]:
        assert line not in text
    assert not isinstance(caught.value, HostKeyError)


def test_connection_refused_is_one_clear_line(tmp_path: Path) -> None:
    port = free_port()
    transport = SshTransport(NodeTarget("b", "127.0.0.1", "root", port, None), ssh_config=tmp_path / "none")
    start = time.monotonic()
    with pytest.raises(NodeError) as caught:
        transport.run("true", timeout_s=5)
    assert time.monotonic() - start < 3
    assert f"connection refused by 127.0.0.1:{port}" in str(caught.value)
    assert caught.value.node == "b" and "\n" not in str(caught.value)


def test_unknown_host_name_is_reported_as_such(tmp_path: Path) -> None:
    transport = SshTransport(NodeTarget("a", "no-such-node.invalid"), ssh_config=tmp_path / "none")
    with pytest.raises(NodeError, match="cannot resolve host name 'no-such-node.invalid'"):
        transport.run("true", timeout_s=5)


def test_per_command_timeout_ends_the_remote_process(server: Sshd, tmp_path: Path) -> None:
    transport = make_transport(server, tmp_path)
    start = time.monotonic()
    try:
        with pytest.raises(CommandTimeoutError) as caught:
            transport.run("echo $$; exec sleep 30", timeout_s=2)
    finally:
        transport.close()
    assert time.monotonic() - start < 3.5
    assert "timed out after 2s" in str(caught.value)
    pid = int(caught.value.partial.stdout.split()[0])
    for _ in range(20):
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        if state.strip() in ("", "Z"):  # gone, or dead and not yet reaped
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"remote sleep (pid {pid}) still running after the timeout")


def test_dropped_connection_mid_run_is_reported(server: Sshd, tmp_path: Path) -> None:
    transport = make_transport(server, tmp_path)
    transport.connect()
    before = set(server.child_pids())
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            transport.run("sleep 4", timeout_s=5)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    start = time.monotonic()
    worker.start()
    time.sleep(0.5)
    ours = set(server.child_pids())  # our connection's per-session sshd, ended by PID only
    for pid in ours:
        subprocess.run(["kill", "-KILL", str(pid)], check=False)
    worker.join(8)
    elapsed = time.monotonic() - start
    transport.close()
    assert ours, f"no per-connection sshd found (before: {before})"
    assert outcome and isinstance(outcome[0], ConnectionDroppedError), outcome
    assert elapsed < 3  # noticed at once, not at the 5 s deadline
    assert "dropped" in str(outcome[0])


def test_command_killed_by_a_signal_has_no_status_but_is_no_drop(server: Sshd, tmp_path: Path) -> None:
    transport = make_transport(server, tmp_path)
    try:
        killed = transport.run("echo before; kill -9 $$", timeout_s=5)
        assert (killed.stdout, killed.exit_status) == ("before\n", None)
        assert transport.run("echo after", timeout_s=5).stdout == "after\n"  # same connection lives on
    finally:
        transport.close()


def test_ssh_config_host_alias_is_honoured(server: Sshd, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host labnode\n  HostName 127.0.0.1\n  User root\n  Port {server.port}\n  IdentityFile {server.client_key}\n"
    )
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(server.host_key_line())
    target = parse_target("labnode", name="a")
    resolved = resolve_target(target, config)
    assert (resolved.host, resolved.port, resolved.user) == ("127.0.0.1", server.port, "root")
    assert resolved.identity_files == (str(server.client_key),)
    transport = SshTransport(target, known_hosts=known_hosts, ssh_config=config, system_known_hosts=None)
    try:
        assert transport.run("id -un", timeout_s=5).stdout == "root\n"
    finally:
        transport.close()


def test_inspection_script_round_trip_over_ssh(server: Sshd, tmp_path: Path) -> None:
    specs = (
        Spec("hostname", "hostname"),
        Spec("both", "printf 'line 1\\nline 2\\n'; printf 'warn\\n' >&2; exit 4"),
        Spec("no_eol", "printf 'no newline'"),
        Spec("gone", "linkcheck-no-such-tool -x"),
        Spec("slow", "sleep 10"),
    )
    token = new_token()
    script = build_inspection_script(specs, token=token, per_command_timeout_s=1)
    transport = make_transport(server, tmp_path)
    try:
        answer = transport.run("sh -s", timeout_s=20, stdin=script)
    finally:
        transport.close()
    captures, complete = split_script_output("a", answer.stdout, specs, token, per_command_timeout_s=1)
    assert complete
    by_spec = {c.spec: c for c in captures}
    assert by_spec["hostname"].stdout == subprocess.run(["hostname"], capture_output=True, text=True).stdout
    assert (by_spec["both"].stdout, by_spec["both"].stderr, by_spec["both"].exit_status) == (
        "line 1\nline 2\n",
        "warn\n",
        4,
    )
    assert by_spec["no_eol"].stdout == "no newline"
    assert by_spec["gone"].skipped == "tool missing: linkcheck-no-such-tool"
    assert by_spec["slow"].skipped == "timed out after 1s"


def test_parse_target_forms() -> None:
    assert parse_target("spark-b", name="b") == NodeTarget("b", "spark-b")
    assert parse_target("dgx@10.0.0.2:2222", name="a") == NodeTarget("a", "10.0.0.2", "dgx", 2222)
    assert parse_target("root@[fe80::1]:22", name="a") == NodeTarget("a", "fe80::1", "root", 22)
    assert parse_target("localhost", name="a").is_local
    assert not parse_target("localhost:22", name="a").is_local
    assert not parse_target("me@localhost", name="a").is_local
    for bad in ("host:0", "host:99999", "ho st", "a;b@host", "host:x", "[nothex]:22", "-oProxyCommand=x"):
        with pytest.raises(ConfigError):
            parse_target(bad, name="a")


def test_no_password_options() -> None:
    assert not any("pass" in name for name in inspect.signature(SshTransport).parameters)


def test_threads_sharing_a_fresh_transport_make_one_connection(
    server: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import linkcheck.transport.ssh as ssh_module

    opened: list[str] = []
    original = ssh_module.open_tcp
    monkeypatch.setattr(ssh_module, "open_tcp", lambda *a: (opened.append("tcp"), original(*a))[1])
    transport = make_transport(server, tmp_path)
    try:
        results: list[str] = []
        threads = [threading.Thread(target=lambda: results.append(transport.run("echo hi", timeout_s=10).stdout))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == ["hi\n"] * 4 and opened == ["tcp"]
    finally:
        transport.close()


def test_ssh_config_match_exec_is_run_or_refused_in_one_line(tmp_path: Path) -> None:
    # paramiko 3 runs `Match exec` through invoke, an optional package that linkcheck does not install.
    import importlib.util

    config = tmp_path / "ssh_config"
    config.write_text("Match exec true\n  HostName 198.18.7.7\n")
    target = parse_target("labnode", name="a")
    if importlib.util.find_spec("invoke") is not None:
        assert resolve_target(target, config).host == "198.18.7.7"
        return
    with pytest.raises(ConfigError, match=r"Match exec.*invoke") as caught:
        resolve_target(target, config)
    assert caught.value.fix is not None and "pip install invoke" in caught.value.fix


def test_a_slow_client_thread_never_loses_the_connection(server: Sshd, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded client: every message our own thread sends leaves 0.3 s late, as when the thread is descheduled
    between paramiko building a message under the channel's lock and sending it. Meanwhile the command has exited
    and the transport thread has answered sshd's CLOSE. A channel EOF sent then arrives after that CLOSE, and
    OpenSSH ends the whole connection ("ieof packet referred to nonexistent channel"); linkcheck sends none, so
    every command runs and the connection lives on."""
    send = paramiko.Transport._send_user_message  # type: ignore[attr-defined]  # private: where a message leaves

    def late(self: paramiko.Transport, data: paramiko.Message) -> None:
        if threading.current_thread() is not self:  # ours, not the transport thread's answers
            time.sleep(0.3)
        send(self, data)

    monkeypatch.setattr(paramiko.Transport, "_send_user_message", late)
    transport = make_transport(server, tmp_path)
    try:
        for command, stdin, out in (("true", None, ""), ("echo one", None, "one\n"), ("cat", "two\n", "two\n"),
                                    ("exit 3", "unread input\n", ""), ("echo three", None, "three\n")):
            result = transport.run(command, timeout_s=10, stdin=stdin)
            assert result.stdout == out, (command, result)
        assert result.exit_status == 0
    finally:
        transport.close()
