"""`linkcheck advise`: each output format, the workload file, and every class of bad input as one line, exit 4."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.conftest import CliResult, InProcessCli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HEALTHY = str(FIXTURES / "healthy-latency")


def one_line(result: CliResult, code: int, needle: str) -> None:
    assert result.returncode == code, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.stderr, result.stderr


def test_console_advice_with_labelled_figures(cli: InProcessCli) -> None:
    r = cli("advise", HEALTHY, "--model-gib", "60", "--concurrency", "64", env={"COLUMNS": "300"})  # no wrap
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ADVICE: two residents\n")
    assert "ib_write_lat 48 KiB on enp1s0f1np1<->enp1s0f1np1: 8.8 us [measured: this bundle" in r.stdout
    assert "170 tok/s (published)" in r.stdout


def test_json_is_the_advice_as_data(cli: InProcessCli) -> None:
    r = cli("advise", HEALTHY, "--model-gib", "180", "--concurrency", "128", "--moe", "-f", "json")
    data = json.loads(r.stdout)
    assert (data["choice"], data["headline"]) == ("pipeline-parallel", "one model across both, pipeline parallel")
    assert data["workload"]["moe"] is True and {f["kind"] for f in data["figures"]} <= {
        "measured", "published", "estimate", "given"}


@pytest.mark.parametrize("fmt,head,row", [
    ("markdown", "**ADVICE: one model across both, tensor parallel**", "| all_reduce 64 KiB | 68 us | measured |"),
    ("html", "<strong>ADVICE: one model across both, tensor parallel</strong>",
     "<td>all_reduce 64 KiB</td><td>68 us</td><td>measured</td>")])
def test_markdown_and_html(cli: InProcessCli, fmt: str, head: str, row: str) -> None:
    r = cli("advise", HEALTHY, "--model-gib", "180", "--concurrency", "1", "-f", fmt)
    assert r.returncode == 0 and head in r.stdout and row in r.stdout


def test_hotplug_says_fix_first_and_exits_2(cli: InProcessCli) -> None:
    r = cli("advise", str(FIXTURES / "hotplug-degraded"), "--model-gib", "180", "--concurrency", "1")
    assert r.returncode == 2
    assert r.stdout.splitlines()[:3] == ["ADVICE: fix the link first",
                                          "once the link is healthy: one model across both, tensor parallel",
                                          "until then: nothing: the model needs both nodes"]
    assert "fix first: LINK_HOTPLUG_DEGRADED" in r.stdout


def test_workload_file(cli: InProcessCli, tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("model_gib: 60\nconcurrency: 64\ncontext_tokens: 1024\n")
    r = cli("advise", HEALTHY, "--workload", str(path))
    assert r.returncode == 0 and r.stdout.startswith("ADVICE: two residents")
    path.write_text("model_gib: 60\nconcurrency: 16\nusers: 3\n")
    one_line(cli("advise", HEALTHY, "-w", str(path)), 4, f"{path}:3")


def test_quiet_prints_only_the_advice_line(cli: InProcessCli) -> None:
    r = cli("advise", HEALTHY, "--model-gib", "60", "--concurrency", "64", "-q")
    assert r.stdout == "" and r.stderr.strip() == "ADVICE: two residents"


@pytest.mark.parametrize("args,needle", [
    (["--model-gib", "-1", "--concurrency", "4"], "model-gib must be a finite number above 0, got -1"),
    (["--model-gib", "nan", "--concurrency", "4"], "got nan"),
    (["--model-gib", "inf", "--concurrency", "4"], "got inf"),
    (["--model-gib", "10", "--concurrency", "0"], "concurrency must be at least 1"),
    (["--model-gib", "10"], "advise needs --concurrency"),
    (["--model-gib", "ten", "--concurrency", "1"], "'ten' is not a valid float"),
    (["--model-gib", "10", "--concurrency", "1", "--context", "-3"], "context must be 0 or more"),
])
def test_bad_numbers(cli: InProcessCli, args: list[str], needle: str) -> None:
    one_line(cli("advise", HEALTHY, *args), 4, needle)


def test_missing_bundle(cli: InProcessCli, tmp_path: Path) -> None:
    one_line(cli("advise", str(tmp_path / "nope"), "--model-gib", "10", "--concurrency", "1"), 4, "no such bundle")


def test_bundle_that_fails_verify_is_refused(cli: InProcessCli, tmp_path: Path) -> None:
    copy = tmp_path / "b"
    shutil.copytree(FIXTURES / "healthy-latency", copy)
    victim = next(p for p in sorted(copy.rglob("*")) if p.is_file() and "ib_write_lat" in p.name)
    victim.write_text(victim.read_text() + " 2  1000  0.10  0.10  0.10\n")
    r = cli("advise", str(copy), "--model-gib", "10", "--concurrency", "1")
    one_line(r, 4, "changed")
    assert r.stdout == ""
