"""Text a node sends is data in every medium: a lone surrogate (JSON's `\\udc80`), a newline, a carriage return, a
terminal escape or a bidi override in LLDP data reaches the console, JSON, Markdown, HTML, JUnit XML and Prometheus
escaped for that medium: the report is written (never "cannot write the report", exit 74), each line stays one
line, and no raw control reaches the terminal. A repair step's command stays one printed line whatever it holds."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.parsers.lldp import parse_lldpctl_json
from linkcheck.parsers.parse_file import record_lines
from linkcheck.report.safe_text import shown
from tests.adversarial.adversarial_helpers import RAW_CONTROL, manifest, reseal, run
from tests.cluster.cluster_checks import saved_bundle

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "lldp" / "real"
HOSTILE = ["spark\udc80b", "sp\ud800", "a\nb", "a\rb", "\x1b]2;owned\x07", "\x1b[31mred", "x\u202ey", "\x9b2J",
           "<script>alert(1)</script>", "]]><x/>", "name{label=\"x\"} 1\n# TYPE"]
NODE_TEXT = st.text(st.characters(codec=None, exclude_categories=("Cn",)), min_size=1, max_size=30) | \
    st.sampled_from(HOSTILE)


def _lldp_json(system_name: str, port_descr: str) -> str:
    """lldpctl -f json of lldpd's own test output, with the neighbour's names put in (JSON escapes, as lldpd writes
    a byte it cannot print)."""
    doc: dict[str, Any] = json.loads((SAMPLES / "json_lldpd_integration_neighbors.json").read_text(encoding="utf-8"))
    body = doc["lldp"]["interface"]["eth0"]
    body["chassis"] = {system_name: body["chassis"]["ns-2.example.com"]}
    body["port"]["descr"] = port_descr
    doc["lldp"]["interface"] = {"enp1s0f0np0": body}
    return json.dumps(doc)  # ensure_ascii: a lone surrogate travels as `\udc80`, as in lldpctl's output


def _with_lldp(bundle: Path, node: str, text: str) -> None:
    """The node's lldp capture replaced by `text` (exit 0), the bundle sealed again so that it verifies."""
    data = manifest(bundle)
    captures = data["captures"]
    assert isinstance(captures, list)
    entry = next(c for c in captures if c["node"] == node and c["spec"] == "lldp")
    stdout = entry["stdout"] or f"{node}/lldp.stdout"
    (bundle / stdout).write_bytes(text.encode("utf-8"))
    entry.update(stdout=stdout, stderr=None, exit_status=0)
    files = data["files"]
    assert isinstance(files, dict)
    if files.pop(f"{node}/lldp.stderr", None) is not None:
        (bundle / node / "lldp.stderr").unlink()
    files[stdout] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    reseal(bundle, data)


@pytest.fixture(scope="module")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = saved_bundle(tmp_path_factory.mktemp("lldp") / "ring")
    _with_lldp(bundle, "a", _lldp_json("evil\udc80\n\x1b]2;t\x07<b>x</b>\ud800", "p\udcff\r\n\u202eq"))
    assert run("verify", str(bundle)).returncode == 0
    return bundle


def _no_raw(text: str) -> None:
    for char in RAW_CONTROL:
        assert char not in text, (char, text[:300])
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@pytest.mark.parametrize("fmt", ["console", "json", "markdown", "html", "junit", "prometheus"])
def test_lldp_text_with_surrogates_and_controls_is_written_in_every_format(hostile_bundle: Path, fmt: str) -> None:
    args = ["diagnose", str(hostile_bundle)] if fmt == "console" else ["report", str(hostile_bundle), "-f", fmt]
    # In process, stdout encodes strictly as UTF-8: text that cannot be encoded fails the run (exit 70), never
    # reaching the stream.
    proc = run(*args, timeout=120)
    assert proc.returncode not in (70, 74), proc.stderr[-500:]
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    _no_raw(out if fmt != "console" else out.replace("\r", ""))
    if fmt == "html":
        assert "<b>x</b>" not in out  # markup from a node is text on the page
    if fmt == "console":  # the neighbour's name and port stay on the line that names them
        named = [line for line in out.splitlines() if "evil" in line]
        assert named and all("port p" in line for line in named), named
    if fmt == "json":
        json.loads(out)
    elif fmt == "junit":
        ET.fromstring(out)
    elif fmt == "prometheus":
        list(text_string_to_metric_families(out))


def test_parse_lldp_prints_a_lone_surrogate_as_text(tmp_path: Path) -> None:
    path = tmp_path / "lldp.json"
    path.write_text(_lldp_json("ns\udcff\n", "eth1\udc80\n\x1b[31mX\ud800"), encoding="utf-8")
    for fmt in ("console", "json"):
        proc = run("parse", "lldp", str(path), "-f", fmt)
        assert proc.returncode == 0, proc.stderr
        _no_raw(proc.stdout)
        if fmt == "console":
            assert all(line.count(": ") >= 1 for line in proc.stdout.splitlines())  # no value broken into lines
            assert "eth1\\udc80\\n\\x1b[31mX\\ud800" in proc.stdout


@given(NODE_TEXT, NODE_TEXT)
@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
def test_any_neighbour_text_is_one_line_per_value_and_encodable(name: str, descr: str) -> None:
    record = parse_lldpctl_json(_lldp_json(name, descr))
    lines = [shown(line) for line in record_lines(record)]
    text = "\n".join(lines)
    text.encode("utf-8")  # strict
    assert len(lines) == len(record_lines(record))
    _no_raw(text)


@given(NODE_TEXT)
@settings(max_examples=80)
def test_shown_is_one_line_encodable_and_idempotent(value: str) -> None:
    once = shown(value)
    assert "\n" not in once and shown(once) == once
    once.encode("utf-8")
    _no_raw(once)


def test_a_repair_steps_lines_stay_one_line_each() -> None:
    from linkcheck.repair.model import Step
    from linkcheck.report.repair import step_lines, step_title

    step = Step(node="a\nb", finding="X\r\x1b[2J", runtime=("nmcli con mod 'eth\nrm -rf /' mtu 9000",),
                persistent=None, verify=("ip link show 'p\ud800'",), touches=("interface:eth\n0",))
    lines = [step_title(1, step), *step_lines(step)]
    for line in lines:
        assert "\n" not in line and "\r" not in line
        line.encode("utf-8")
    assert any("'eth\\nrm -rf /'" in line for line in lines)
