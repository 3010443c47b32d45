"""Every example command in README.md and docs/*.md that works offline runs over the shipped fixtures and exits as
documented (README's exit codes: a bundle's one verdict, 0 for what only lists or shows). A command that contacts
the nodes, or one that names a placeholder (BUNDLE, FILE, <timestamp>, [OPTIONS]) or a fragment of a command, is
skipped with the reason. The commands of one document run in its order in one folder, so that a file an example
writes (`> site.yaml`) is there for the next that reads it."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
import yaml

from linkcheck.cli import app
from tests.conftest import InProcessCli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^([ \t]*)```[a-z]*\n(.*?)^\1```", re.M | re.S)
INLINE = re.compile(r"`([^`\n]*linkcheck [^`\n]+)`")
# The commands that reach the nodes over SSH or install on this machine: never run by a test of the docs.
LIVE = {"init", "check", "accept", "collect", "bench", "service"}
# The offline commands that need a bundle or a file: named without one, the text names the command, not an example.
NEEDS_ARGUMENT = {"diagnose", "report", "verify", "anonymize", "advise", "parse", "topology", "playbooks show",
                  "profiles show", "profiles validate", "baseline show"}
GROUPS = {"playbooks", "profiles", "baseline"}
FLAGS = {"--all", "--debug", "-q", "--quiet", "--yaml", "--trend", "--allow-unverified"}  # options without a value
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(\.\.\.)?$|[<>\[\]]|\.\.\.|^X$")
VERDICT_EXIT = {"pass": 0, "warn": 1, "fail": 2, "inconclusive": 3}
ACCEPTANCE_EXIT = {"PASS": 0, "DEGRADED": 1, "FAIL": 2, "INCONCLUSIVE": 3}


@dataclass
class Example:
    doc: str
    line: str
    args: list[str]
    stdout_to: str | None  # `> FILE`


def examples(doc: Path) -> list[Example]:
    """The `linkcheck ...` commands of a document, in its order: each line of a fenced block and each inline code
    span, split at `&&` and `;`, its trailing `# comment` dropped, `$ ` and `.venv/bin/` taken off."""
    text = doc.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = [(m.start(), line) for m in FENCE.finditer(text) for line in m.group(2).splitlines()]
    found += [(m.start(), m.group(1)) for m in INLINE.finditer(text)]
    out, seen = [], set()
    for _, line in sorted(found, key=lambda item: item[0]):
        line = re.sub(r"\s+#\s.*$", "", line)
        for part in re.split(r"&&|;", line):
            part = part.strip().removeprefix("$ ").removeprefix(".venv/bin/")
            if not re.match(r"linkcheck [a-z]", part) or part in seen:
                continue
            seen.add(part)
            try:
                words = shlex.split(part)[1:]
            except ValueError:
                continue  # prose with a quote in it, not a command
            target = None
            if ">" in words:
                at = words.index(">")
                words, target = words[:at], (words[at + 1] if at + 1 < len(words) else None)
            out.append(Example(doc.name, part, words, target))
    return out


def _why_not_run(example: Example, known: set[str], folder: Path) -> str | None:
    words = example.args
    if not words or words[0] not in known:
        return "prose that starts with the word linkcheck, not a command"
    if words[0] in LIVE or any(w in ("--node", "-n", "--hostfile", "--inventory", "-i") for w in words):
        return "contacts the nodes"
    if words[0] == "baseline" and words[1:2] in (["save"], ["delete"]):
        return "changes this user's baselines"
    if any(PLACEHOLDER.search(w) for w in words):
        return "names a placeholder for the reader's own"
    name, rest = (" ".join(words[:2]), words[2:]) if words[0] in GROUPS else (words[0], words[1:])
    positional = [w for before, w in zip(rest, rest[1:], strict=False) if not w.startswith("-")
                  and not (before.startswith("-") and before not in FLAGS)]
    positional += rest[:1] if rest and not rest[0].startswith("-") else []
    if name == "fix" and not positional:
        return "contacts the nodes (without a bundle, fix plans live)"
    if name in NEEDS_ARGUMENT and not positional:
        return "names the command, without the argument it needs"
    for w in words[1:]:
        if w.endswith((".yaml", ".json", ".txt")) and not (folder / w).exists() and not (ROOT / w).exists() \
                and not _is_output(words, w):
            return f"reads the reader's own {w}"
    return None


def _is_output(words: list[str], word: str) -> bool:
    at = words.index(word)
    return at > 0 and words[at - 1] in ("-o", "--output")


def _expected_exit(words: list[str]) -> int:
    """As documented: a bundle's diagnosis or report exits with its one verdict (README's exit codes, docs/reports.md
    One verdict per bundle), read from the fixture's expected.yaml; `topology` with the cluster's (docs/cluster.md);
    a listing, a show, a validation of a valid file, a verification of an intact bundle, 0."""
    fixture = next((ROOT / w for w in words if w.startswith("fixtures/")), None)
    if words[0] in ("diagnose", "report", "topology") and fixture is not None:
        expected = yaml.safe_load((fixture / "expected.yaml").read_text(encoding="utf-8"))
        accepted = expected.get("acceptance")
        if isinstance(accepted, dict) and words[0] != "topology":
            return ACCEPTANCE_EXIT[accepted["verdict"]]
        return VERDICT_EXIT[expected["verdict"]]
    return 0


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_offline_example_exits_as_documented(doc: Path, cli: InProcessCli, tmp_path: Path) -> None:
    known = set(getattr(typer.main.get_command(app), "commands", None) or {})
    assert {"diagnose", "report", "check"} <= known
    ran, skipped = [], []
    for example in examples(doc):
        why = _why_not_run(example, known, tmp_path)
        if why is not None:
            skipped.append(f"{example.line}: {why}")
            continue
        # Read from the checkout (fixtures/...), write into this test's folder (-o FILE, > FILE).
        args = [str(tmp_path / w) if _is_output(example.args, w) or (tmp_path / w).exists() else w
                for w in example.args]
        result = cli(*args, cwd=ROOT)
        if example.stdout_to:
            (tmp_path / example.stdout_to).write_text(result.stdout, encoding="utf-8")
        want = _expected_exit(example.args)
        assert result.returncode == want, f"{doc.name}: `{example.line}` exited {result.returncode}, documented " \
                                         f"{want}: {result.stderr[-500:]}"
        ran.append(example.line)
    if not ran:
        pytest.skip(f"{doc.name}: no offline example; " + "; ".join(skipped[:5]))


def test_the_quick_start_and_the_cluster_examples_are_among_those_run() -> None:
    """The extraction finds the examples a reader tries first (a fenced line after `&&`, a `# comment` dropped, a
    `> FILE`), so that a change to it cannot quietly leave them out."""
    lines = {e.line: e for doc in DOCS for e in examples(doc)}
    assert "linkcheck diagnose fixtures/healthy" in lines  # README's quick start, after `&& .venv/bin/`
    assert {"linkcheck topology fixtures/cluster-ring3-healthy",
            "linkcheck diagnose fixtures/cluster-ring3-hotplug --all",
            "linkcheck report fixtures/cluster-switch4-slow-node -f html -o switch4.html"} <= set(lines)
    shown = lines["linkcheck profiles show dgx-spark-pair --yaml > site.yaml"]
    assert shown.stdout_to == "site.yaml" and shown.args == ["profiles", "show", "dgx-spark-pair", "--yaml"]
    assert _expected_exit(["diagnose", "fixtures/cluster-ring3-hotplug", "--all"]) == 2
    assert _expected_exit(["report", "fixtures/accept-pass", "-f", "html"]) == 0
