"""Text a bundle carries (its acceptance record, its nodes' interface names) in every report format: never markup,
a tag, a link, mathtext, a raw control character or a way out of a printed command; the HTML page's finding boxes
stay balanced whatever the findings' `explained_by` ids say."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.app.offline import Outcome, diagnose_bundle, diagnose_facts
from linkcheck.bundle.acceptance import add_files
from linkcheck.bundle.verify import verify_bundle
from linkcheck.model import Finding, Severity, Status
from linkcheck.report.formats import FORMATS
from linkcheck.report.html import finding_boxes
from linkcheck.report.html_plots import have_matplotlib
from tests.adversarial.adversarial_helpers import ROOT, assert_no_raw_controls
from tests.conftest import InProcessCli

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = ('\x1b]2;owned\x07[/][bold]<script>alert(1)</script>"\\\n\u202e=cmd|x $\\frac{$ '
           "[x](http://evil.example) <http://evil.example> &amp; ")
KEEP = {"schema", "verdict", "status", "on_miss", "sha256"}  # values the model fixes: a forged one is refused


def _hostile(value: Any, key: str | None = None) -> Any:
    """Every free text of an acceptance record wrapped in HOSTILE."""
    if isinstance(value, dict):
        return {k: _hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_hostile(v, key) for v in value]
    if isinstance(value, str) and key not in KEEP:
        return HOSTILE + value + HOSTILE
    return value


def _accept_bundle(tmp_path: Path, edit: Any) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "accept-fail", bundle)
    doc = json.loads((bundle / "acceptance.json").read_text(encoding="utf-8"))
    add_files(bundle, {"acceptance.json": json.dumps(edit(doc), indent=1)})  # re-signed: the bundle verifies
    assert verify_bundle(bundle).ok
    return bundle


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a" and all(k == "href" and (v or "").startswith("#") for k, v in attrs):
            return  # the report's own in-page link (a threshold's source under its table); node text makes none
        self.tags.append(tag)
        if tag == "div":
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "div":
            assert self.stack, "a </div> closes nothing"
            self.stack.pop()


def _check_format(name: str, text: str) -> None:
    assert not RAW.search(text), (name, RAW.findall(text)[:5])
    if name == "junit":
        ET.fromstring(text)
    elif name == "prometheus":
        assert list(text_string_to_metric_families(text))
    elif name == "html":
        tags = _Tags()
        tags.feed(text)
        assert "script" not in tags.tags and "a" not in tags.tags and not tags.stack
    elif name == "markdown":  # as a Markdown renderer reads it: escaped, so no tag, link or image
        # The report's own in-page links (a threshold citing its source under the table) aside; node text makes none.
        html = re.sub(r'<a href="#[a-z0-9-]+">', "", MarkdownIt("commonmark").render(text))
        assert "<script" not in html and "<a " not in html and "<img" not in html and "<b>" not in html


@pytest.mark.parametrize("fmt", ["console", *FORMATS])
def test_acceptance_record_text_is_data_in_every_format(tmp_path: Path, cli: InProcessCli, fmt: str) -> None:
    bundle = _accept_bundle(tmp_path, _hostile)
    args = ("diagnose", str(bundle)) if fmt == "console" else ("report", str(bundle), "-f", fmt)
    proc = cli(*args, env={"COLUMNS": "120"})
    assert proc.returncode == 2, proc.stderr  # the diagnosis's exit code: the record is shown, not refused
    assert "internal error" not in proc.stderr and "not shown" not in proc.stderr + proc.stdout
    assert_no_raw_controls(proc.stdout + proc.stderr)
    if fmt != "console":
        _check_format(fmt, proc.stdout)


@pytest.mark.skipif(not have_matplotlib(), reason="plots need matplotlib")
@pytest.mark.parametrize("name", ["$\\frac{$", "$x^{2}$", "a$b", "\x1b]2;owned\x07", "\u202eevil"])
def test_a_profile_name_in_the_plot_legend_is_text(tmp_path: Path, cli: InProcessCli, name: str) -> None:
    def named(doc: dict[str, Any]) -> dict[str, Any]:
        return {**doc, "profile": {**doc["profile"], "name": name}}

    proc = cli("report", str(_accept_bundle(tmp_path, named)), "-f", "html")
    assert proc.returncode == 2, proc.stderr  # no mathtext parse error, no internal error
    assert not RAW.search(proc.stdout)
    assert "Glyph" not in proc.stderr  # a control character reached no font


def _swap(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, tuple):
        return tuple(_swap(v, old, new) for v in value)
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    if isinstance(value, dict):
        return {_swap(k, old, new): _swap(v, old, new) for k, v in value.items()}
    if isinstance(value, msgspec.Struct):
        return replace(value, **{f: _swap(getattr(value, f), old, new) for f in value.__struct_fields__})
    return value


NETDEVS = ["x'; touch /tmp/pwned; echo '", "$(reboot)", "`id`", "a b", "-rf", "x\ny", '"; id; "', "\x1b]2;t\x07",
           "[/]", "<b>x</b>"]


def _renamed(netdev: str) -> Outcome:
    """mtu-mismatch with one interface renamed everywhere the facts name it: its MTU fix names it."""
    outcome = diagnose_bundle(ROOT / "fixtures" / "mtu-mismatch")
    link = _swap(outcome.link, "enP2p1s0f1np1", netdev)
    return diagnose_facts(outcome.bundle, link, list(outcome.rules))


@pytest.mark.parametrize("netdev", NETDEVS)
def test_a_hostile_interface_name_is_one_shell_word_in_every_fix_block(netdev: str) -> None:
    outcome = _renamed(netdev)
    mtu = next(f for f in outcome.diagnosis.findings if f.rule_id == "MTU_MISMATCH")
    assert any(shlex.quote(netdev) in line for line in mtu.fix), mtu.fix
    for name, render in FORMATS.items():
        text = render(outcome)
        _check_format(name, text)
    markdown = FORMATS["markdown"](outcome)
    # Fenced sh blocks, at the margin or indented under a list item (the summary's), closed at their own indent.
    blocks = [block for _, _, block in re.findall(r"^( *)(`{3,})sh\n(.*?)\n\1\2$", markdown, re.S | re.M)]
    assert blocks
    lines = (ln.strip() for block in blocks for ln in block.splitlines())
    for line in (ln for ln in lines if not ln.startswith("#")):
        words = shlex.split(line.split("  # ")[0])  # every command line is whole shell words
        assert "touch" not in words and "reboot" not in words and "id" not in words, line


_IDS = st.sampled_from(["A:x", "B:x", "C:y", "A:<div>", "B:</div>", "C:\"'><", "D:a:b", "E:"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_IDS, st.one_of(st.none(), _IDS, st.text(max_size=8))), max_size=8))
def test_finding_boxes_stay_balanced_whatever_explains_what(pairs: list[tuple[str, str | None]]) -> None:
    findings = []
    for finding_id, cause in pairs:
        rule, _, subject = finding_id.partition(":")
        findings.append(Finding(rule, Status.FAIL, Severity.ERROR, subject, "t", "m", fix=("ip link show",),
                                explained_by=cause))
    page = finding_boxes(findings)
    tags = _Tags()
    tags.feed(f"<div>{page}</div>")
    assert tags.stack == [], page
    assert page.count('<div class="finding') == len(findings)  # each finding once, none lost in a circle
    assert "<script" not in page and "</div>\"" not in page


@pytest.mark.skipif(not have_matplotlib(), reason="plots need matplotlib")
def test_history_runs_of_any_date_and_verdict_leave_the_page_whole(tmp_path: Path, cli: InProcessCli) -> None:
    env: dict[str, str | None] = {"XDG_DATA_HOME": str(tmp_path / "data")}
    healthy = str(ROOT / "fixtures" / "healthy")
    assert cli("diagnose", healthy, "--baseline", str(ROOT / "fixtures" / "drift-cable-swap" / "baseline.json"),
               "--record", env=env).returncode == 0  # the pair's history: one real run
    [path] = (tmp_path / "data" / "linkcheck" / "history").glob("*.jsonl")
    record = json.loads(path.read_text(encoding="utf-8"))
    odd = [{**record, "time": when, "bundle_created": when, "verdict": verdict, "nccl_busbw_gbs": 0,
            "concurrent_total_gbps": {"a->b": 1e14}}
           for when, verdict in (("0001-01-01T00:00:00+00:00", "\x1b]2;x\x07$\\frac{$"),
                                 ("9999-12-31T23:59:59+00:00", "[/]"), ("2026-01-01T00:00:00+14:00", "<script>"))]
    path.write_text(path.read_text(encoding="utf-8") + "".join(json.dumps(r) + "\n" for r in odd), encoding="utf-8")
    proc = cli("report", healthy, "-f", "html", env=env)
    assert proc.returncode == 0, proc.stderr  # no date past matplotlib's years, no mathtext: no internal error
    assert "This pair over time" in proc.stdout
    _check_format("html", proc.stdout)
