"""The documentation agrees with the CLI: every command documented, every documented option real, links resolve.

docs/commands.md has one heading per command (`## \\`linkcheck check\\``, `### \\`linkcheck bench rdma\\``); an
option written under such a heading belongs to that command, unless it sits in a code span that names another
command (`linkcheck bench rdma --duration S`), or in one that starts with another program (`ethtool --show-fec`).
Options under the other headings (global options, live options) must exist on some command.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import typer.main

from linkcheck.cli import app

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COMMANDS_MD = DOCS / "commands.md"
HEALTHY = ROOT / "fixtures" / "healthy"

# The commands CI runs from the README's quick start; they must stay exactly as they are.
QUICK_START = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/linkcheck diagnose fixtures/healthy",
    "bash scripts/test.sh",
)

OPTION_RE = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
COMMAND_HEADING_RE = re.compile(r"^`?linkcheck((?: [a-z][a-z0-9-]*)*)`?$")
CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
LINK_RE = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


# --- the CLI as click sees it -------------------------------------------------------------------------------


def _walk(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
        yield from _walk(sub, (*path, name))


ROOT_COMMAND = typer.main.get_command(app)
COMMANDS: dict[tuple[str, ...], Any] = dict(_walk(ROOT_COMMAND, ()))


def _long_options(cmd: Any) -> set[str]:
    names = {"--help"}
    for param in cmd.params:
        if param.param_type_name == "option":
            names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return names


def _option(cmd: Any, name: str) -> Any | None:
    return next((p for p in cmd.params if p.param_type_name == "option" and name in p.opts), None)


GLOBAL_OPTIONS = _long_options(ROOT_COMMAND)  # `--debug` and `--quiet` are also taken after the command
ANY_OPTION = set().union(*(_long_options(c) for c in COMMANDS.values()))


# --- docs/commands.md, cut into sections ----------------------------------------------------------------------


@dataclass
class Section:
    title: str
    command: tuple[str, ...] | None  # None: not a command's section
    first_line: int
    lines: list[str] = field(default_factory=list)


def _sections(text: str) -> list[Section]:
    sections = [Section("(top)", None, 1)]
    in_block = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            in_block = not in_block
        heading = None if in_block else HEADING_RE.match(line)
        if heading and len(heading.group(1)) >= 2:
            title = heading.group(2)
            found = COMMAND_HEADING_RE.match(title)
            command = tuple(found.group(1).split()) if found else None
            sections.append(Section(title, command, number))
        else:
            sections[-1].lines.append(line)
    return sections


def _longest_command(words: list[str]) -> tuple[str, ...] | None:
    """The command a code span such as `linkcheck bench rdma --duration S` names, or None."""
    path: tuple[str, ...] = ()
    for word in words:
        if (*path, word) not in COMMANDS:
            break
        path = (*path, word)
    return path


def _options_by_command(section: Section) -> Iterator[tuple[tuple[str, ...] | None, str, str]]:
    """(command the option belongs to, option, the line) for each --option written in a section."""
    for line in section.lines:
        rest = line
        for span in CODE_SPAN_RE.finditer(line):
            words = span.group(2).split()
            rest = rest.replace(span.group(0), " ", 1)
            if not words or not OPTION_RE.search(span.group(2)):
                continue
            if words[0] == "linkcheck":
                owner: tuple[str, ...] | None = _longest_command(words[1:])
            elif words[0].startswith("-"):
                owner = section.command
            else:
                continue  # another program's flags (`ethtool --show-fec`, `ssh-keyscan ...`)
            for option in OPTION_RE.findall(span.group(2)):
                yield owner, option, line
        for option in OPTION_RE.findall(rest):
            yield section.command, option, line


SECTIONS = _sections(COMMANDS_MD.read_text(encoding="utf-8"))


def _section_of(command: tuple[str, ...]) -> Section:
    found = [s for s in SECTIONS if s.command == command]
    assert found, f"docs/commands.md has no heading `linkcheck {' '.join(command)}`"
    return found[0]


# --- (a) every command documented -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [c for c in COMMANDS if c], ids=" ".join)
def test_every_command_has_a_section(command: tuple[str, ...]) -> None:
    section = _section_of(command)
    assert any(line.strip() for line in section.lines), f"the section of `linkcheck {' '.join(command)}` is empty"


@pytest.mark.parametrize("command", [c for c in COMMANDS if c], ids=" ".join)
def test_every_option_of_a_command_is_documented_in_its_section(command: tuple[str, ...]) -> None:
    documented = {option for owner, option, _ in _options_by_command(_section_of(command)) if owner == command}
    missing = _long_options(COMMANDS[command]) - {"--help"} - documented
    assert not missing, f"`linkcheck {' '.join(command)}`: {sorted(missing)} not in its docs/commands.md section"


def test_global_options_documented() -> None:
    text = COMMANDS_MD.read_text(encoding="utf-8")
    missing = {o for o in GLOBAL_OPTIONS if o not in OPTION_RE.findall(text)}
    assert not missing, f"global options missing from docs/commands.md: {sorted(missing)}"


def test_no_section_names_an_unknown_command() -> None:
    unknown = [s.title for s in SECTIONS if s.command is not None and s.command not in COMMANDS]
    assert not unknown, f"docs/commands.md documents commands the CLI lacks: {unknown}"


# --- (b) every documented option exists where it is documented ------------------------------------------------


def test_documented_options_exist_on_their_command() -> None:
    wrong = []
    for section in SECTIONS:
        for owner, option, line in _options_by_command(section):
            if owner is None:
                ok = option in ANY_OPTION
            else:
                ok = option in _long_options(COMMANDS[owner]) or option in GLOBAL_OPTIONS
            if not ok:
                where = f"`linkcheck {' '.join(owner)}`" if owner is not None else "any command"
                wrong.append(f"{option} (not an option of {where}): {line.strip()[:100]}")
    assert not wrong, "docs/commands.md:\n" + "\n".join(wrong)


@pytest.mark.parametrize("doc", sorted(p.name for p in DOCS.glob("*.md")) + ["README.md"])
def test_options_in_command_lines_exist(doc: str) -> None:
    """In every doc, a code span or block line `linkcheck CMD ... --opt` names a real option of CMD."""
    path = README if doc == "README.md" else DOCS / doc
    wrong = []
    for line in path.read_text(encoding="utf-8").splitlines():
        spans = [m.group(2) for m in CODE_SPAN_RE.finditer(line)] or line.split(" | ")
        for span in spans:
            for match in re.finditer(r"(?:^|[\s(|])linkcheck((?: [a-z][a-z0-9-]*)+)(.*)", span):
                owner = _longest_command(match.group(1).split())
                if owner is None or owner not in COMMANDS:
                    continue
                for option in OPTION_RE.findall(match.group(2)):
                    if option not in _long_options(COMMANDS[owner]) | GLOBAL_OPTIONS:
                        wrong.append(f"{option} is no option of `linkcheck {' '.join(owner)}`: {line.strip()[:100]}")
    assert not wrong, f"{doc}:\n" + "\n".join(wrong)


# --- (c) the README is short, and every relative link resolves ------------------------------------------------


def test_readme_is_under_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < 200


@pytest.mark.parametrize("command", QUICK_START)
def test_readme_keeps_the_quick_start_commands(command: str) -> None:
    lines = [line.strip() for line in README.read_text(encoding="utf-8").splitlines()]
    assert command in lines


def _slug(title: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_block = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_block = not in_block
        heading = None if in_block else HEADING_RE.match(line)
        if heading:
            slug = _slug(heading.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


LINKED_DOCS = [README, *sorted(DOCS.glob("*.md")), ROOT / "benchmarks" / "README.md",
               ROOT / "tests" / "lab" / "README.md"]


@pytest.mark.parametrize("doc", LINKED_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in LINK_RE.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{doc.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_readme_links_into_every_doc() -> None:
    readme = README.read_text(encoding="utf-8")
    unlinked = [p.name for p in DOCS.glob("*.md") if f"docs/{p.name}" not in readme]
    assert not unlinked, f"README.md does not link {unlinked}"


# --- (d) every --format value is documented -------------------------------------------------------------------


def _help_values(text: str) -> set[str]:
    """The names a help text lists: 'json, junit, markdown or html (the names in ...)' -> {json, ...}."""
    listed = re.sub(r"\(.*?\)", "", text).split(".")[0]
    words = re.split(r",\s*|\s+or\s+|\s+and\s+", listed)
    return {w.strip() for w in words if re.fullmatch(r"[a-z][a-z0-9_-]*", w.strip())}


def _format_values(cmd: Any) -> set[str]:
    option = _option(cmd, "--format")
    assert option is not None
    choices = getattr(option.type, "choices", None)
    return {str(c) for c in choices} if choices else _help_values(option.help or "")


FORMAT_COMMANDS = [c for c, cmd in COMMANDS.items() if c and _option(cmd, "--format") is not None]


def test_format_commands_found() -> None:
    assert {("diagnose",), ("report",), ("check",)} <= set(FORMAT_COMMANDS)
    assert {"json", "junit", "markdown", "html"} <= _format_values(COMMANDS[("report",)])


@pytest.mark.parametrize("command", FORMAT_COMMANDS, ids=" ".join)
def test_format_values_documented(command: tuple[str, ...]) -> None:
    text = "\n".join(_section_of(command).lines)
    missing = {v for v in _format_values(COMMANDS[command]) if f"`{v}`" not in text and f"{v}\\|" not in text
               and f"|{v}`" not in text}
    name = " ".join(command)
    assert not missing, f"`linkcheck {name} --format`: {sorted(missing)} not in its docs/commands.md section"


def test_report_formats_the_cli_accepts_are_documented(cli: InProcessCli, tmp_path: Path) -> None:
    """An unknown format is refused with the list of known ones: each must be in commands.md and reports.md."""
    proc = cli("report", str(HEALTHY), "-f", "no-such-format", cwd=tmp_path, timeout=60)
    assert proc.returncode == 4, proc.stderr
    listed = re.search(r"one of:?\s*(.+)$", proc.stderr.strip(), re.MULTILINE)
    assert listed, f"the refusal no longer lists the formats: {proc.stderr!r}"
    names = {n.strip(" .`'") for n in re.split(r",\s*|\s+or\s+", listed.group(1))} - {""}
    assert {"json", "html"} <= names
    section = "\n".join(_section_of(("report",)).lines)
    reports = (DOCS / "reports.md").read_text(encoding="utf-8")
    missing = sorted(n for n in names if f"`{n}`" not in section or f"`{n}`" not in reports)
    assert not missing, f"report formats not documented in commands.md and reports.md: {missing}"


# --- the exit codes stay a contract ---------------------------------------------------------------------------


def test_readme_keeps_the_exit_code_table() -> None:
    readme = README.read_text(encoding="utf-8")
    codes = re.findall(r"^\| (\d+) \|", readme, re.MULTILINE)
    assert codes == ["0", "1", "2", "3", "4", "70", "74", "130"]


# --- the rules ------------------------------------------------------------------------------------------------


def test_every_built_in_rule_is_documented() -> None:
    from typer.testing import CliRunner

    listed = CliRunner().invoke(app, ["playbooks", "list"])
    assert listed.exit_code == 0, listed.output
    ids = set(re.findall(r"^([A-Z][A-Z0-9_]+)\s", listed.output, re.MULTILINE))
    assert len(ids) >= 20, listed.output
    rules = (DOCS / "rules.md").read_text(encoding="utf-8")
    missing = sorted(i for i in ids if f"| `{i}` |" not in rules)
    assert not missing, f"rules missing from the table in docs/rules.md: {missing}"
