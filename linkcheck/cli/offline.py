"""The commands that read what is already on disk and touch no node: `diagnose`, `report`, `verify`, `anonymize`,
`parse` and `advise`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from linkcheck.advise.model import (
    MAX_CONCURRENCY,
    MAX_CONTEXT_TOKENS,
    MAX_GIB,
    MAX_HEADS,
    MAX_KV_KIB_PER_TOKEN,
    MAX_LAYERS,
)
from linkcheck.app.advise import Workload, advice_exit_code, advise_bundle, load_workload
from linkcheck.app.offline import judge_bundle
from linkcheck.app.runs import RunRecord
from linkcheck.bundle.anonymize_saved import anonymize_any_saved
from linkcheck.bundle.verify import verify_bundle
from linkcheck.cli.common import (
    FLAGS,
    BaselineOpt,
    Format,
    OfflineConfigOpt,
    PlaybookOpt,
    PrometheusOpt,
    UnverifiedOpt,
    decimal_in,
    emit,
    finish,
    integer_in,
    offline_config,
    out,
    out_fitted,
    say,
    verdict_of,
    warn_unverified,
)
from linkcheck.errors import ExitCode, UsageError
from linkcheck.parsers import PARSERS
from linkcheck.parsers.parse_file import parse_file, record_lines, record_to_json
from linkcheck.report.advice import advice_html, advice_json, advice_markdown, advice_text
from linkcheck.report.fit import fit
from linkcheck.report.formats import renderer
from linkcheck.report.prometheus import check_textfile_path
from linkcheck.report.safe_text import shown
from linkcheck.report.stdout import write_stdout
from linkcheck.report.writer import check_output_path, is_stdout, write_output


def diagnose(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder written by `linkcheck collect` or a fixture.")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.console,
    playbook: PlaybookOpt = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also show passed findings.")] = False,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", "-c", help="linkcheck.yaml whose playbooks, thresholds and recorded link apply, as in "
        "`check` (default ./linkcheck.yaml when present).")] = None,
    baseline: BaselineOpt = None, prometheus: PrometheusOpt = None, allow_unverified: UnverifiedOpt = False,
    record_run: Annotated[bool, typer.Option("--record", help="Append this diagnosis to the run history "
                                             "(`linkcheck history`) under the bundle's date: the pair's, or each "
                                             "test of a cluster's in its pair's; without it an offline diagnosis "
                                             "records nothing (a bundle already there: never twice).")
                          ] = False,
) -> None:
    """Diagnose a saved bundle offline: both nodes side by side, findings with evidence and fix. A bundle that
    `linkcheck verify` rejects is refused (exit 4) unless --allow-unverified. A cluster's bundle is judged as its
    check judged it (text or JSON)."""
    if prometheus is not None:
        check_textfile_path(prometheus)
    judged = judge_bundle(bundle, playbook, offline_config(config), baseline, allow_unverified=allow_unverified,
                          warn=warn_unverified)
    finish(judged, RunRecord("diagnose", prometheus=prometheus, history=record_run))
    emit(judged, fmt, show_all)
    raise typer.Exit(verdict_of(judged).exit_code)  # the acceptance's, where the bundle holds one


def report(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder written by `linkcheck collect` or a fixture.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="json, junit, markdown, html or prometheus.")] = "json",
    output: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--output", "-o", help="Write the report to this file instead of standard output ('-'): a regular file is "
        "replaced atomically (through a symbolic link, its target), a FIFO or a device written straight.")] = None,
    playbook: PlaybookOpt = None,
    config: OfflineConfigOpt = None,
    allow_unverified: UnverifiedOpt = False,
) -> None:
    """Diagnose a bundle like `diagnose` and write a report: JSON, JUnit XML, Markdown, HTML or Prometheus."""
    target = check_output_path(output) if output is not None and not is_stdout(output) else None
    judged = judge_bundle(bundle, playbook, offline_config(config), allow_unverified=allow_unverified,
                          warn=warn_unverified)
    text = renderer(fmt)(judged)
    decided = verdict_of(judged)
    _write_report(text, target, decided.line)
    raise typer.Exit(decided.exit_code)


def _write_report(text: str, target: Path | None, verdict: str) -> None:
    """A rendered report to `target` or stdout; with --quiet, `verdict` on stderr instead of the body."""
    if target is not None:
        write_output(target, text)
        say(verdict if FLAGS.quiet else f"report written to {target}")
    elif FLAGS.quiet:
        say(verdict)
    else:
        write_stdout(text)


def verify(bundle: Annotated[Path, typer.Argument(help="A saved bundle folder.")]) -> None:
    """Check a bundle against its manifest and SHA256SUMS: exit 0 when intact, 2 naming each changed, added or
    removed file (one line each), 4 when it is not a bundle."""
    result = verify_bundle(bundle)
    if FLAGS.quiet:
        say(result.summary())
    else:
        if result.problems:
            out("\n".join(result.problems))
        out_fitted(result.summary())
    raise typer.Exit(int(ExitCode.PASS if result.ok else ExitCode.FAIL))


def anonymize(
    bundle: Annotated[Path, typer.Argument(help="A saved bundle folder.")],
    out_dir: Annotated[Path, typer.Argument(metavar="OUT", help="Where to write the anonymised copy (absent or "
                                            "empty).")],
) -> None:
    """Write an anonymised copy of a saved bundle: hostnames, users, IPs, MACs, GUIDs and serials replaced; a
    cluster's nodes renamed n1, n2, ... and its record (cluster.json) with the same fakes."""
    anonymize_any_saved(bundle, out_dir, warn=warn_unverified)
    say(f"anonymised bundle saved to {out_dir}")


def parse_help() -> str:
    kinds = "\n".join(f"  {k:<18} {d}" for k, (_, d) in PARSERS.items())
    return f"Parse one raw tool output and print the normalised record.\n\nKINDS:\n\n{kinds}"


def parse(
    kind: Annotated[str, typer.Argument(help="What produced the file (see KINDS).")],
    file: Annotated[Path, typer.Argument(help="The raw output; '-' reads standard input.")],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.console,
) -> None:
    record = parse_file(kind, file)
    # Each value one line, whatever a node wrote into it (a newline, an escape sequence, a lone surrogate).
    if fmt is Format.json:
        out(record_to_json(record))
    else:
        out_fitted("\n".join(shown(line) for line in record_lines(record)))


class AdviceFormat(str, Enum):
    console = "console"
    json = "json"
    markdown = "markdown"
    html = "html"


def advise(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder (best one with latency runs: ib_write_lat per path "
                                           "and the small all_reduce).")],
    model_gib: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--model-gib", parser=decimal_in(-MAX_GIB, MAX_GIB), help="The model's weights in GiB.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--concurrency", parser=integer_in(-MAX_CONCURRENCY, MAX_CONCURRENCY),
        help="Concurrent requests (users, or the batch) to serve.")] = None,
    moe: Annotated[bool, typer.Option("--moe", help="A mixture-of-experts model (default: dense).")] = False,
    context: Annotated[int, typer.Option("--context", parser=integer_in(-MAX_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS),
                                         help="Tokens of context per request (for the KV cache).")] = 0,
    kv_kib_per_token: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--kv-kib-per-token", parser=decimal_in(-MAX_KV_KIB_PER_TOKEN, MAX_KV_KIB_PER_TOKEN),
        help="KV cache per token of context in KiB (default: 128, said to be an estimate).")
    ] = None,
    layers: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--layers", parser=integer_in(-MAX_LAYERS, MAX_LAYERS),
        help="The model's layers: two all-reduces each under tensor parallelism (default: the "
        "published ~100 per decode step).")] = None,
    active_gib: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--active-gib", parser=decimal_in(-MAX_GIB, MAX_GIB),
        help="MoE: the weights one token reads, in GiB (for the decode estimate).")] = None,
    heads: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--heads", parser=integer_in(-MAX_HEADS, MAX_HEADS),
        help="The model's attention heads: over a cluster, tensor parallel across N nodes only where they divide "
        "by N.")] = None,
    workload: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--workload", "-w", help="A workload file (YAML: model_gib, concurrency, moe, context_tokens, "
        "kv_kib_per_token, layers, active_gib, heads) instead of the options.")] = None,
    fmt: Annotated[AdviceFormat, typer.Option("--format", "-f", help="console, json, markdown or html.")
                   ] = AdviceFormat.console,
    playbook: PlaybookOpt = None,
    config: OfflineConfigOpt = None,
) -> None:
    """How to use the pair or the cluster for a workload: residents, one model across the nodes (tensor or
    pipeline parallel) or one node, with the reasons; any finding that degrades a link voids a split and says what
    to fix first. Exit 0 with advice, 1 or 2 when the link must be fixed first (warnings, failures), 4 on bad
    input."""
    given = {"--model-gib": model_gib, "--concurrency": concurrency}
    if workload is not None:
        if any(v is not None for v in given.values()):
            raise UsageError("give the workload either as --workload FILE or as options, not both")
        wanted = load_workload(workload)
    else:
        missing = [name for name, v in given.items() if v is None]
        if missing:
            raise UsageError(f"advise needs {' and '.join(missing)} (or --workload FILE)")
        assert model_gib is not None and concurrency is not None
        wanted = Workload(model_gib, concurrency, moe, context, kv_kib_per_token, layers, active_gib, heads)
    _, advice = advise_bundle(bundle, wanted, playbooks=playbook, config=offline_config(config))
    if FLAGS.quiet:
        say(f"ADVICE: {advice.headline}")
    else:
        render = {AdviceFormat.console: advice_text, AdviceFormat.markdown: advice_markdown,
                  AdviceFormat.html: advice_html, AdviceFormat.json: advice_json}[fmt]
        text = render(advice).rstrip("\n") + "\n"
        write_stdout(fit(text) if fmt is AdviceFormat.console else text)
    raise typer.Exit(int(advice_exit_code(advice)))
