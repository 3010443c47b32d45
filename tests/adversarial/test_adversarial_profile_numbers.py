"""Numbers in profiles and YAML files that no threshold is: infinities, NaN, 1e400, integers of thousands of digits,
in every numeric place of every shipped profile. `profiles validate`, `profiles show` and `accept` refuse each in
one line naming file:line (exit 4) before any node is reached; none ends in an internal error. And a baseline store
entry that is a folder is named, never written through or over."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from linkcheck.accept.profile import parse_profile
from linkcheck.errors import LinkcheckError
from tests.adversarial.adversarial_helpers import HEALTHY, one_line_error, run

PROFILES = sorted((Path(__file__).resolve().parents[2] / "linkcheck" / "profiles").glob("*.yaml"))
HOSTILE = [".inf", "-.inf", ".nan", "1.0e400", "-1.0e400", "1e400", "9" * 5000, "-" + "9" * 5000, "9" * 64,
           "0x" + "f" * 5000, "1:" * 2000 + "1", "1_" * 100 + "1", "[1]", "{a: 1}", "true", "~", "'3'"]
NUMERIC = re.compile(r"\b(repetitions|duration_s|size_bytes|qps|max_bytes|value): (-?[0-9][0-9.]*|true)")


def _places(text: str) -> list[tuple[int, str, str]]:
    """(line index, key, value) of every numeric setting in a profile."""
    return [(i, m.group(1), m.group(2)) for i, line in enumerate(text.splitlines()) for m in NUMERIC.finditer(line)]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_every_numeric_place_of_every_profile_refuses_hostile_numbers(profile: Path) -> None:
    text = profile.read_text(encoding="utf-8")
    places = _places(text)
    assert len(places) >= 8
    for index, key, old in places:
        for value in HOSTILE:
            lines = text.splitlines()
            lines[index] = lines[index].replace(f"{key}: {old}", f"{key}: {value}", 1)
            try:
                parse_profile("\n".join(lines) + "\n", "site.yaml")
            except LinkcheckError as exc:
                message = str(exc)
                assert message.startswith("site.yaml:"), message[:200]
                assert "\n" not in message
            # a value that is still a valid threshold (a 64-digit fail_above) may be accepted: no crash is the rule


@pytest.mark.parametrize("value", [".inf", "1.0e400", "9" * 5000, "-.inf"])
@pytest.mark.parametrize("command", ["validate", "show", "accept"])
def test_the_commands_refuse_in_one_line_before_any_node(tmp_path: Path, value: str, command: str) -> None:
    text = PROFILES[0].read_text(encoding="utf-8").replace("repetitions: 3", f"repetitions: {value}", 1)
    text = text.replace("value: 0\n", f"value: {value}\n", 1)
    site = tmp_path / "site.yaml"
    site.write_text(text, encoding="utf-8")
    args = ["profiles", command, str(site)] if command != "accept" else \
        ["accept", "--profile", str(site), "--node", "a=198.18.0.1", "--node", "b=198.18.0.2"]
    line = one_line_error(run(*args, timeout=60), 4, "site.yaml:")
    assert len(line) < 400


@pytest.mark.parametrize("value", [".inf", ".nan", "9" * 5000, "1.0e400"])
def test_a_threshold_override_in_linkcheck_yaml_is_refused_in_one_line(tmp_path: Path, value: str) -> None:
    config = tmp_path / "linkcheck.yaml"
    config.write_text(f"version: 1\nthresholds:\n  NCCL_BUSBW_LOW:\n    min_busbw_gbs: {value}\n", encoding="utf-8")
    one_line_error(run("diagnose", str(HEALTHY), "-c", str(config)), 4, "linkcheck.yaml:4")


@pytest.mark.parametrize("value", ["9" * 5000, "1:" * 3000 + "1"])
def test_a_huge_number_anywhere_in_linkcheck_yaml_is_one_line(tmp_path: Path, value: str) -> None:
    config = tmp_path / "linkcheck.yaml"
    config.write_text(f"version: 1\nssh:\n  command_timeout_s: {value}\n", encoding="utf-8")
    one_line_error(run("diagnose", str(HEALTHY), "-c", str(config)), 4, "linkcheck.yaml:3")


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_baseline_save_force_over_an_entry_that_is_no_file_names_it(tmp_path: Path, kind: str) -> None:
    import os

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    assert run("baseline", "save", "one", str(HEALTHY), env=env).returncode == 0
    (entry,) = (tmp_path / "data").rglob("one.json")
    entry.unlink()
    if kind == "folder":
        entry.mkdir()
        (entry / "keep").write_text("mine", encoding="utf-8")
    else:
        os.mkfifo(entry)
    line = one_line_error(run("baseline", "save", "one", str(HEALTHY), "--force", env=env, timeout=30), 4, str(entry))
    assert "not a baseline file" in line
    if kind == "folder":
        assert (entry / "keep").read_text(encoding="utf-8") == "mine"
    else:
        assert entry.is_fifo()
