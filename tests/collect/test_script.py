"""The one-round-trip inspection script: exact round trip, skip reasons, truncation, fuzzed answers."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.collect.script import build_inspection_script, new_token, skip_reason, split_script_output
from linkcheck.collect.specs import SPECS, Spec
from linkcheck.transport.local import LocalTransport

SPECS_UNDER_TEST = (
    Spec("both", "printf 'line 1\\n\\nline 3\\n'; printf 'warn 1\\nwarn 2\\n' >&2; exit 4"),
    Spec("no_eol", "printf 'no newline'; printf 'err no newline' >&2"),
    Spec("empty", "true"),
    Spec("only_newlines", "printf '\\n\\n'"),
    Spec("gone", "linkcheck-no-such-tool --flag"),
    Spec("slow", "sleep 10"),
    Spec("reads_stdin", "cat; echo after-cat"),
    Spec("fake_marker", "echo '@@LC 0123456789abcdef END both - rc=0 ms=1'; echo '@@LC'"),
    Spec("quotes", "printf '%s\\n' \"it's\" '$HOME' '`x`'"),
)
EXPECTED = {  # spec -> (stdout, stderr, exit status, skipped)
    "both": ("line 1\n\nline 3\n", "warn 1\nwarn 2\n", 4, None),
    "no_eol": ("no newline", "err no newline", 0, None),
    "empty": ("", "", 0, None),
    "only_newlines": ("\n\n", "", 0, None),
    "reads_stdin": ("after-cat\n", "", 0, None),  # stdin is /dev/null: the script is not eaten
    "fake_marker": ("@@LC 0123456789abcdef END both - rc=0 ms=1\n@@LC\n", "", 0, None),
    "quotes": ("it's\n$HOME\n`x`\n", "", 0, None),
}


def run_script(specs: tuple[Spec, ...], *, shell: str = "sh", timeout_s: int = 1) -> tuple[str, str]:
    token = new_token()
    script = build_inspection_script(specs, token=token, per_command_timeout_s=timeout_s)
    answer = LocalTransport("a").run(f"{shell} -s", timeout_s=60, stdin=script)
    assert answer.exit_status == 0, answer.stderr
    return answer.stdout, token


@pytest.fixture(scope="module")
def answer() -> tuple[str, str]:
    return run_script(SPECS_UNDER_TEST)


def test_round_trip_rebuilds_exact_captures(answer: tuple[str, str]) -> None:
    stdout, token = answer
    captures, complete = split_script_output("a", stdout, SPECS_UNDER_TEST, token, per_command_timeout_s=1)
    assert complete
    assert [c.spec for c in captures] == [s.id for s in SPECS_UNDER_TEST]
    got = {c.spec: (c.stdout, c.stderr, c.exit_status, c.skipped) for c in captures}
    for spec, expected in EXPECTED.items():
        assert got[spec] == expected, spec
    gone = next(c for c in captures if c.spec == "gone")
    assert (gone.exit_status, gone.skipped) == (127, "tool missing: linkcheck-no-such-tool")
    slow = next(c for c in captures if c.spec == "slow")
    assert (slow.exit_status, slow.skipped) == (124, "timed out after 1s")
    assert 0.9 <= slow.duration_s < 4
    assert all(
        c.node == "a" and c.arg is None and c.command == s.command
        for c, s in zip(captures, SPECS_UNDER_TEST, strict=True)
    )


@pytest.mark.parametrize("shell", ["dash", "bash", "busybox sh"])
def test_script_runs_under_other_posix_shells(shell: str) -> None:
    if shutil.which(shell.split()[0]) is None:
        pytest.skip(f"{shell} not installed")
    specs = SPECS_UNDER_TEST[:4]
    stdout, token = run_script(specs, shell=shell)
    captures, complete = split_script_output("a", stdout, specs, token)
    assert complete
    assert {c.spec: (c.stdout, c.stderr, c.exit_status, c.skipped) for c in captures} == {
        s.id: EXPECTED[s.id] for s in specs
    }


WHERE = Spec("where", "readlink /proc/self/fd/1")  # the section's own output file


def _scratch_dir() -> Path:
    stdout, token = run_script((WHERE,))
    captures, complete = split_script_output("a", stdout, (WHERE,), token)
    assert complete
    return Path(captures[0].stdout.strip()).parent


def test_scratch_files_go_to_tmpdir_when_set_and_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    used = _scratch_dir()
    assert used.parent == tmp_path and used.name.startswith("linkcheck.")
    assert list(tmp_path.iterdir()) == []


def test_scratch_files_go_to_memory_by_default_and_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm here")
    monkeypatch.delenv("TMPDIR", raising=False)
    used = _scratch_dir()
    assert used.parent == Path("/dev/shm") and used.name.startswith("linkcheck.")
    assert not used.exists()


def test_every_cut_of_the_answer_is_detected(answer: tuple[str, str]) -> None:
    stdout, token = answer
    full, _ = split_script_output("a", stdout, SPECS_UNDER_TEST, token, per_command_timeout_s=1)
    cuts = list(range(0, len(stdout) - 1, 7)) + [len(stdout) - 2, stdout.rindex("@@LC")]
    for cut in cuts:
        captures, complete = split_script_output("a", stdout[:cut], SPECS_UNDER_TEST, token)
        assert not complete, cut
        finished = [c for c in captures if c.skipped != "truncated answer"]
        assert [(c.stdout, c.stderr, c.exit_status) for c in finished] == [
            (c.stdout, c.stderr, c.exit_status) for c in full[: len(finished)]
        ]
        unfinished = [c for c in captures if c.skipped == "truncated answer"]
        assert len(unfinished) <= 1 and all(c.exit_status is None for c in unfinished)


def test_a_missing_section_is_detected(answer: tuple[str, str]) -> None:
    stdout, token = answer
    start = stdout.index(f"@@LC {token} BEGIN empty")
    end = stdout.index(f"@@LC {token} BEGIN only_newlines")
    captures, complete = split_script_output("a", stdout[:start] + stdout[end:], SPECS_UNDER_TEST, token)
    assert not complete
    assert "empty" not in {c.spec for c in captures}


def test_other_tokens_and_unknown_specs_are_not_ours(answer: tuple[str, str]) -> None:
    stdout, token = answer
    assert split_script_output("a", stdout, SPECS_UNDER_TEST, "f" * 16) == ([], False)
    captures, complete = split_script_output("a", stdout, SPECS_UNDER_TEST[1:], token)
    assert not complete and "both" not in {c.spec for c in captures}


@pytest.mark.lab  # real sshd or network namespaces
def test_per_netdev_specs_run_for_connectx_netdevs_only(tmp_path: Path) -> None:
    """A tmpfs over /sys/class/net in a private mount namespace stands in for the CX-7 functions."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a private mount namespace")
    specs = (Spec("hostname", "hostname"), Spec("echo_if", "echo if={netdev}; echo arg=$#", per_netdev=True))
    token = new_token()
    script = tmp_path / "inspect.sh"
    script.write_text(build_inspection_script(specs, token=token, per_command_timeout_s=5))
    setup = (
        "set -e; mount -t tmpfs lc /sys/class/net; cd /sys/class/net;"
        " for n in ens1f0np0 enP2p1s0f0np0 'bad name' 'x;id' eth0; do mkdir -p \"$n/device\"; done;"
        " for n in ens1f0np0 enP2p1s0f0np0 'bad name' 'x;id'; do echo 0x15b3 > \"$n/device/vendor\"; done;"
        " echo 0x8086 > eth0/device/vendor; sh -s < " + str(script)
    )
    out = subprocess.run(["unshare", "-m", "sh", "-c", setup], capture_output=True, text=True, timeout=30)
    if out.returncode != 0 and "mount" in out.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
    captures, complete = split_script_output("a", out.stdout, specs, token)
    assert complete, out.stderr
    per_if = {c.arg: c for c in captures if c.spec == "echo_if"}
    assert set(per_if) == {"ens1f0np0", "enP2p1s0f0np0"}  # unsafe names and the Intel NIC are left out
    assert per_if["ens1f0np0"].stdout == "if=ens1f0np0\narg=1\n"
    assert per_if["ens1f0np0"].command == "echo if=ens1f0np0; echo arg=$#"


def test_sudo_refusal_and_missing_tools_behind_sudo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "sudo"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$2" in ethtool) echo "sudo: a password is required" >&2; exit 1;;'
        ' lspci) echo "sudo: lspci: command not found" >&2; exit 1;; esac\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    specs = (
        Spec("ethtool_m", "sudo -n ethtool -m eth9", needs_root=True),
        Spec("lspci", "sudo -n lspci -vv -d 15b3:", needs_root=True),
    )
    stdout, token = run_script(specs)
    captures, complete = split_script_output("a", stdout, specs, token)
    assert complete
    assert [c.skipped for c in captures] == [
        "sudo refused (needs passwordless sudo for: ethtool -m eth9)",
        "tool missing: lspci",
    ]
    assert captures[0].stderr == "sudo: a password is required\n" and captures[0].exit_status == 1


@pytest.mark.parametrize(
    ("rc", "stderr", "ms", "expected"),
    [
        (0, "", 5, None),
        (1, "Cannot get module EEPROM information: Operation not supported\n", 5, None),
        (124, "", 20000, "timed out after 20s"),
        (137, "", 22000, "timed out after 20s"),
        (137, "", 100, None),  # killed by something else, early: not our timeout
        (127, "sh: 1: ethtool: not found\n", 1, "tool missing: ethtool"),
        (127, "bash: line 1: ethtool: command not found\n", 1, "tool missing: ethtool"),
        (127, "", 1, "tool missing: ethtool"),
        (1, "sudo: a terminal is required to read the password; either use ...\n", 1, "sudo refused"),
        (1, "sudo: sorry, you must have a tty to run sudo\n", 1, "sudo refused"),
        (1, "dgx is not in the sudoers file.\n", 1, "sudo refused"),
        (0, "sudo: a password is required\n", 1, None),  # succeeded anyway (fallback in the command)
    ],
)
def test_skip_reasons(rc: int, stderr: str, ms: int, expected: str | None) -> None:
    spec = Spec("ethtool_m", "sudo -n ethtool -m {netdev}", per_netdev=True, needs_root=True)
    reason = skip_reason(spec, "sudo -n ethtool -m eth9", rc, stderr, ms, 20)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith(expected)


def test_build_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        build_inspection_script(SPECS, token="not hex!", per_command_timeout_s=5)
    with pytest.raises(ValueError):
        build_inspection_script(SPECS, token=new_token(), per_command_timeout_s=0)
    with pytest.raises(ValueError):
        build_inspection_script((Spec("bad id", "true"),), token=new_token(), per_command_timeout_s=5)


def test_real_specs_script_is_valid_sh() -> None:
    script = build_inspection_script(SPECS, token=new_token(), per_command_timeout_s=5)
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0
    assert new_token() != new_token()


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_is_never_complete_and_never_raises(text: str) -> None:
    captures, complete = split_script_output("a", text, SPECS, "0123456789abcdef")
    assert complete is False
    assert isinstance(captures, list)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_mutated_answers_never_raise(answer: tuple[str, str], data: st.DataObject) -> None:
    stdout, token = answer
    lines = stdout.split("\n")
    start = data.draw(st.integers(0, len(lines)))
    stop = data.draw(st.integers(start, len(lines)))
    insert = data.draw(st.lists(st.sampled_from([*lines, f"@@LC {token} STDERR", ""]), max_size=4))
    mutated = "\n".join(lines[:start] + insert + lines[stop:])
    captures, complete = split_script_output("a", mutated, SPECS_UNDER_TEST, token)
    if complete:
        assert len(captures) == len(SPECS_UNDER_TEST)


def test_sections_finishing_together_are_never_cut() -> None:
    """Many commands ending at the same moment: the script prints a section only once it is whole.

    (A section was once printed as soon as its END file existed, which `>file` creates before writing
    to it: about one run in thirty lost an END line. The race needs many runs to show.)
    """
    specs = [Spec(f"s{i}", f"printf '%s\\n' line{i}; printf 'err{i}\\n' >&2") for i in range(60)]
    for _ in range(60):
        token = new_token()
        script = build_inspection_script(specs, token=token, per_command_timeout_s=10)
        out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60).stdout
        captures, complete = split_script_output("a", out, specs, token)
        assert complete and [c.stdout for c in captures] == [f"line{i}\n" for i in range(60)]


def test_the_script_sent_is_inspect_sh_as_it_is_after_one_line_of_values() -> None:
    text = (Path(__file__).resolve().parents[2] / "linkcheck" / "collect" / "inspect.sh").read_text()
    token = new_token()
    script = build_inspection_script(SPECS, token=token, per_command_timeout_s=7)
    assert script.endswith(text)
    words = shlex.split(script[: -len(text)])
    assert words[:5] == ["lc_containers=", "set", "--", token, "7"]
    quads = words[6:]
    assert len(quads) == 4 * len(SPECS)
    groups = [quads[i:i + 4] for i in range(0, len(quads), 4)]
    for spec, (spec_id, scope, how, command) in zip(SPECS, groups, strict=True):
        scope_of = "container" if spec.per_container else "netdev" if spec.per_netdev else "-"
        assert (spec_id, scope) == (spec.id, scope_of)
        assert how in ("x", "xa", "c")
        assert command == (spec.command.replace("{netdev}", '"$1"') if how == "c" else spec.command.split(" {")[0])


MULTI_LINE = (Spec("multi", "f() { printf '%s\\n' \"$@\"; }\nf 'a b' \"c'd\"\nprintf '*\\n'"),)


@pytest.mark.parametrize("shell", ["dash", "bash", "busybox sh"])
def test_commands_with_newlines_quotes_and_globs_arrive_intact(shell: str) -> None:
    if shutil.which(shell.split()[0]) is None:
        pytest.skip(f"{shell} not installed")
    stdout, token = run_script(MULTI_LINE, shell=shell)
    captures, complete = split_script_output("a", stdout, MULTI_LINE, token)
    assert complete
    assert (captures[0].stdout, captures[0].stderr, captures[0].exit_status) == ("a b\nc'd\n*\n", "", 0)


@pytest.mark.parametrize("values", ["'x;y' 5 2", "abcd1234 '' 2", "abcd1234 5 -1", "abcd1234 5"])
def test_the_script_refuses_bad_values(values: str) -> None:
    text = build_inspection_script((), token=new_token(), per_command_timeout_s=1).split("\n", 2)[2]
    assert text.startswith("# shellcheck shell=sh")
    proc = subprocess.run(["sh", "-s"], input=f"set -- {values}\n{text}", capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "@@LC" not in proc.stdout


@pytest.mark.parametrize("shell", ["dash", "bash", "busybox sh"])
def test_real_specs_run_their_commands(shell: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each spec runs its own command: the answer is what that command prints here, and the NCCL_*
    variables are all of the environment that leaves the node."""
    if shutil.which(shell.split()[0]) is None:
        pytest.skip(f"{shell} not installed")
    conf = "NCCL_IB_HCA = mlx5_1\nback\\slash $HOME `x` 'q'\nNCCL_SOCKET_IFNAME=enp1s0f1np1"
    (tmp_path / ".nccl.conf").write_text(conf)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NCCL_IB_GID_INDEX", "")
    monkeypatch.setenv("NCCL_NET_PLUGIN", "it's a \"quoted\" $value with spaces")
    monkeypatch.setenv("XNCCL_NOT_OURS", "1")
    monkeypatch.setenv("LINKCHECK_TEST_SECRET", "hunter2")
    wanted = {"hostname", "uptime", "meminfo", "os_release", "kernel_release", "sysctl", "nccl_env",
              "nccl_conf", "nccl_conf_user"}
    specs = tuple(s for s in SPECS if s.id in wanted)
    assert {s.id for s in specs} == wanted
    stdout, token = run_script(specs, shell=shell, timeout_s=10)
    captures, complete = split_script_output("a", stdout, specs, token)
    assert complete
    got = {c.spec: c for c in captures}
    for spec in specs:
        assert got[spec.id].command == spec.command
    for spec_id in ("hostname", "meminfo", "os_release", "kernel_release", "nccl_conf_user"):
        command = next(s.command for s in specs if s.id == spec_id)
        direct = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
        if spec_id == "meminfo":  # the values move between the two reads; the keys do not
            assert [ln.split(":")[0] for ln in got[spec_id].stdout.splitlines()] == \
                [ln.split(":")[0] for ln in direct.stdout.splitlines()]
        else:
            assert got[spec_id].stdout == direct.stdout, spec_id
        assert got[spec_id].exit_status == direct.returncode == 0
    assert got["nccl_conf_user"].stdout == conf
    assert got["uptime"].stdout.count(" ") == 1
    assert sorted(got["nccl_env"].stdout.splitlines()) == [
        "NCCL_IB_GID_INDEX=", "NCCL_NET_PLUGIN=it's a \"quoted\" $value with spaces"]
    assert "hunter2" not in stdout and "XNCCL" not in stdout
    assert got["sysctl"].exit_status == 0, got["sysctl"].stderr
    assert got["sysctl"].stdout.splitlines() == [
        f"net.ipv4.conf.all.arp_{key} = {Path(f'/proc/sys/net/ipv4/conf/all/arp_{key}').read_text().strip()}"
        for key in ("ignore", "announce")]
    assert got["nccl_conf"].exit_status != 0 or Path("/etc/nccl.conf").exists()


@pytest.mark.parametrize(("command", "expected"), [
    ("sudo -n lspci -vv -d 15b3:", "lspci -vv -d 15b3:"),
    ("dmesg 2>/dev/null || sudo -n dmesg", "dmesg"),
    ("lc_np=$(sudo -n tail -n +1 /etc/netplan/*.yaml) || exit; printf '%s\\n' \"$lc_np\" | sed -E 's/x/y/'",
     "tail -n +1 /etc/netplan/*.yaml"),
    ("if [ -r f ]; then grep -H . f; else sudo -n grep -H . f; fi", "grep -H . f"),
    ("sudo -n sh -c 'tail -v -n +1 /a/* 2>/dev/null | grep -E \"^x\"; true'",
     "sh -c 'tail -v -n +1 /a/* 2>/dev/null | grep -E \"^x\"; true'"),
])
def test_sudo_refusal_names_the_command_sudoers_must_allow(command: str, expected: str) -> None:
    from linkcheck.collect.script import sudo_part

    assert sudo_part(command) == expected
