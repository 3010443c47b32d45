"""linkcheck.yaml is read into its model: every refusal names file:line, what is wrong and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.config import load_config
from linkcheck.errors import ConfigError
from linkcheck.schema import json_line


@pytest.mark.parametrize(("body", "line", "needle"), [
    ("version: 1\nnodes:\n  a: x\n  c: y\n", 4, "unknown key 'c' under 'nodes' (expected: a, b)"),
    ("nodes: {a: null}\n", 1, "'nodes.a' is None (expected: [user@]host[:port]"),
    ("link:\n  paths:\n    - {a: x, b: y, q: 1}\n", 3,
     "unknown key 'q' under 'link.paths[0]' (expected: a, b, subnet)"),
    ("ssh:\n  known_hosts: ~/kh\n  command_timeout_s: 1.0e+300\n", 3, "'ssh.command_timeout_s' is 1e+300"),
    ("playbooks: [a.yaml, 3]\n", 1, "'playbooks[1]' is 3 (expected: a file or folder path)"),
    ("nodes:\n  a:\n    identity_file: k\n", 2, "'nodes.a.target' is missing"),
])
def test_refusals_name_the_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    path = tmp_path / "linkcheck.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.line == line
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_good_file_keeps_its_thresholds_lines(tmp_path: Path) -> None:
    path = tmp_path / "linkcheck.yaml"
    path.write_text("nodes: {a: u@h1, b: {target: u@h2:2222, identity_file: k}}\nssh: {command_timeout_s: 5}\n"
                    "link: {cage: none, paths: [{a: x, b: y}]}\nthresholds:\n  R: {t: 1}\n")
    config = load_config(path)
    assert config.nodes["b"].port == 2222 and config.ssh.command_timeout_s == 5
    assert config.expected_link is not None and config.expected_link.cage is None
    assert config.thresholds["R"].key_lines["t"] == 5  # type: ignore[attr-defined]


def test_json_line_finds_a_key_and_an_item() -> None:
    text = '{\n "a": 1,\n "b": {"x": [1,\n   2, {"q": 3}]},\n "c": {\n  "d": 5\n }\n}'
    assert json_line(text, ("b", "x", 2, "q")) == 4
    assert json_line(text, ("c", "d")) == 6
    assert json_line(text, ("c", "z")) is None
