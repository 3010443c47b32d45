"""The advice as people read it (console and Markdown text, an HTML page) and as data (JSON).

Node text (subjects, messages from the findings) is data: console text goes through `shown`, HTML through
escaping, Markdown through the report's own cell escaping."""

from __future__ import annotations

import html
from typing import Any

from linkcheck.advise.model import Advice, Figure, headline
from linkcheck.records import plain
from linkcheck.report.html import html_page
from linkcheck.report.safe_text import shown
from linkcheck.strict_json import dumps
from linkcheck.values import plain_number


def figure_value(f: Figure) -> str:
    unit = f.unit if f.unit in ("x", "%", "") else f" {f.unit}"
    return f"{plain_number(round(f.value, 2))}{unit}"


def _lines(advice: Advice) -> list[tuple[str, str]]:
    """(kind, text) lines shared by the text formats: head, reason, fix, note."""
    out = [("head", f"ADVICE: {advice.headline}")]
    if advice.choice == "fix-link-first":
        if advice.once_fixed:
            out.append(("head", f"once the link is healthy: {headline(advice.once_fixed, advice.nodes)}"))
        needs = "both nodes" if advice.nodes == 2 else "several nodes"
        out.append(("head", "until then: " + (headline(advice.interim, advice.nodes) + " (nothing crosses the link)"
                                              if advice.interim else f"nothing: the model needs {needs}")))
    w = advice.workload
    out.append(("head", f"workload: {plain_number(w.model_gib)} GiB of weights, {'MoE' if w.moe else 'dense'}, "
                        f"{w.concurrency} concurrent request(s), "
                        + (f"{w.context_tokens} tokens of context each" if w.context_tokens else "no context given")))
    if advice.nodes != 2:
        out.append(("head", f"nodes: {advice.nodes}"))
    out.append(("head", f"link: {advice.link_state}; latency "
                        f"{'measured' if advice.latency_measured else 'not measured'}"))
    out += [("reason", r) for r in advice.reasons]
    out += [("fix", f"{f.rule_id} ({f.subject}, {f.status}): {f.message}" + (f" -> {f.fix}" if f.fix else ""))
            for f in advice.fix_first]
    out += [("note", n) for n in advice.notes]
    return out


def advice_text(advice: Advice) -> str:
    lead = {"head": "", "reason": "  - ", "fix": "  fix first: ", "note": "  note: "}
    body = [shown(lead[kind] + text) for kind, text in _lines(advice)]
    body.append("figures (measured: this bundle; published: the source; estimate: how; given: your input):")
    body += [shown(f"  {f.name}: {figure_value(f)} [{f.kind}: {f.source}]") for f in advice.figures]
    return "\n".join(body)


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("`", "\\`").replace("\n", " ")


def advice_markdown(advice: Advice) -> str:
    lead = {"head": "", "reason": "- ", "fix": "- fix first: ", "note": "- note: "}
    out = ["## Advice", ""]
    for kind, text in _lines(advice):
        out.append(("**" + _md(text) + "**  ") if kind == "head" and text.startswith("ADVICE") else
                   lead[kind] + _md(text) + ("  " if kind == "head" else ""))
    out += ["", "| figure | value | kind | source |", "| --- | --- | --- | --- |"]
    out += [f"| {_md(f.name)} | {_md(figure_value(f))} | {f.kind} | {_md(f.source)} |" for f in advice.figures]
    return "\n".join(out) + "\n"


def advice_html(advice: Advice) -> str:
    """The advice as one page in the report's frame and style (report/html.py)."""
    title = "linkcheck advice" + (f" for {advice.nodes} nodes" if advice.nodes != 2 else "")
    return html_page(f"{title}: {advice.headline}", f"<h1>{html.escape(title)}</h1>\n" + _advice_section(advice))


def _advice_section(advice: Advice) -> str:
    e = html.escape
    items: dict[str, list[str]] = {"reason": [], "fix": [], "note": []}
    heads: list[str] = []
    for kind, text in _lines(advice):
        (heads if kind == "head" else items[kind]).append(e(text))
    out = ['<section class="advice"><h2>Advice</h2>', f"<p><strong>{heads[0]}</strong></p>"]
    out += [f"<p>{h}</p>" for h in heads[1:]]
    for kind, title in (("fix", "Fix first"), ("reason", "Why"), ("note", "Notes")):
        if items[kind]:
            out.append(f"<h3>{title}</h3><ul>" + "".join(f"<li>{t}</li>" for t in items[kind]) + "</ul>")
    rows = "".join(f"<tr><td>{e(f.name)}</td><td>{e(figure_value(f))}</td><td>{e(f.kind)}</td><td>{e(f.source)}</td>"
                   "</tr>" for f in advice.figures)
    out.append("<table><thead><tr><th>figure</th><th>value</th><th>kind</th><th>source</th></tr></thead>"
               f"<tbody>{rows}</tbody></table></section>")
    return "\n".join(out) + "\n"


def advice_data(advice: Advice) -> dict[str, Any]:
    data: dict[str, Any] = plain(advice)
    data["kinds"] = {"measured": "this bundle", "published": "a public source, named", "estimate":
                     "computed by linkcheck, how is named", "given": "the workload you gave"}
    return data


def advice_json(advice: Advice) -> str:
    return dumps(advice_data(advice), indent=2)
