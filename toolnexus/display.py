"""Showing what peers send, safely: HTML for notebooks, and printable text for terminals.

Plain functions that build escaped HTML strings (every piece of user text goes through
``html.escape``); the model classes call them from ``_repr_html_``. Nothing here imports IPython.
:func:`printable` makes any text safe for a terminal (the CLI and the TUI): control characters,
ANSI escapes and bidi overrides become visible symbols, never instructions to the terminal.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .errors import MissingExtra

if TYPE_CHECKING:
    from .llm import RunResult
    from .protocol.card import AgentCard, CardReport
    from .protocol.model import Task

__all__ = ["task_html", "tasks_html", "card_html", "run_html", "STATE_COLORS", "to_dataframe", "printable", "plural",
           "error_html"]

# C0 controls (but newline and tab) become their Control Pictures (ESC shows as ␛), DEL as ␡, and C1
# controls and bidi overrides as U+FFFD: one character for one, so styled spans keep their places.
_UNPRINTABLE = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}
_UNPRINTABLE.update({0x7F: 0x2421, **{c: 0xFFFD for c in range(0x80, 0xA0)},
                     **{c: 0xFFFD for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}})


def printable(value: Any, limit: int | None = None) -> str:
    """``value`` as text a terminal shows as it is: control characters (ANSI escapes included) and
    bidi overrides replaced one for one by visible symbols; past ``limit`` characters cut, saying
    how many more there were."""
    text = str(value).translate(_UNPRINTABLE)
    if limit is not None and len(text) > limit:
        return text[:limit] + f"… [{len(text) - limit:,} more characters]"
    return text

# JupyterLab's theme variables (light and dark themes each set them), with a fallback for other hosts
_OK, _WARN, _ERR, _MUTED = ("var(--jp-success-color1, #2a2)", "var(--jp-warn-color1, #c90)",
                            "var(--jp-error-color1, #d33)", "var(--jp-ui-font-color2, #777)")
STATE_COLORS = {"submitted": _MUTED, "working": _WARN, "input-required": "var(--jp-brand-color1, #a3c)",
                "auth-required": "var(--jp-brand-color1, #a3c)", "completed": _OK, "failed": _ERR,
                "canceled": _MUTED, "rejected": _ERR, "unknown": _MUTED}
_SYMBOL = {"submitted": "·", "working": "⟳", "input-required": "?", "auth-required": "?", "completed": "✔",
           "failed": "✘", "canceled": "⊘", "rejected": "✘", "unknown": "·"}


def e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def plural(n: int, noun: str) -> str:
    """``1 message``, ``2 messages``, ``1 tool call``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def error_html(text: str) -> str:
    """A one-line failure, in the theme's error colour."""
    return f"<span class='toolnexus-error' style='color:{_ERR}'>✘ {e(text)}</span>"


def badge(state: str) -> str:
    color = STATE_COLORS.get(state, _MUTED)
    return (f'<span style="color:{color};font-weight:bold" data-state="{e(state)}">'
            f"{_SYMBOL.get(state, '·')} {e(state)}</span>")


def task_html(task: Task) -> str:
    state = task.state.value
    rows = [f"<b>task</b> <code>{e(task.id)}</code> {badge(state)}",
            f"<b>context</b> <code>{e(task.context_id)}</code>"]
    if task.skill:
        rows.append(f"<b>skill</b> {e(task.skill)}")
    if task.status.message is not None:
        rows.append(f"<b>status</b> {e(task.status.message.text)}")
    if task.reply and task.state.value == "completed":
        rows.append(f"<b>reply</b> <pre style='white-space:pre-wrap;margin:0'>{e(task.reply.strip())}</pre>")
    history = "".join(f"<tr><td>{e(m.role)}</td><td style='text-align:left'>{e(m.text)}</td></tr>" for m in task.history)
    if history:
        rows.append(f"<details><summary>{plural(len(task.history), 'message')}</summary><table>{history}</table>"
                    "</details>")
    # block rows, no <br> after the reply's <pre>: nothing trails the reply but the history
    return "<div class='toolnexus-task'>" + "".join(f"<div>{r}</div>" for r in rows) + "</div>"


def tasks_html(tasks: Iterable[Task], server: str | None = None) -> str:
    body = []
    for t in tasks:
        body.append(f"<tr><td>{badge(t.state.value)}</td><td><code>{e(t.id[:8])}…</code></td>"
                    f"<td>{e(t.skill or '—')}</td><td><code>{e(t.context_id[:8])}…</code></td>"
                    f"<td style='text-align:left'>{e(t.request[:80])}</td></tr>")
    head = f"<caption>{e(server)}</caption>" if server else ""
    return ("<table class='toolnexus-tasks'>" + head + "<tr><th>state</th><th>task</th><th>skill</th>"
            "<th>context</th><th>request</th></tr>" + "".join(body) + "</table>")


def card_html(card: AgentCard, report: CardReport | None = None) -> str:
    raw = card.raw
    parts = [f"<h4 style='margin:0'>{e(card.name)} <small>{e(card.version)}</small></h4>"]
    if card.description:
        parts.append(f"<p>{e(card.description)}</p>")
    dialect, endpoint, reason = card.choose()
    parts.append(f"<p><b>endpoint</b> <code>{e(endpoint)}</code> — speaks {e(dialect)} ({e(reason)}); "
                 f"streaming {'yes' if card.streaming else 'no'}</p>")
    if isinstance(raw.get("provider"), dict):
        parts.append(f"<p><b>provider</b> {e(raw['provider'].get('organization', ''))}</p>")
    skills = "".join(
        f"<tr><td><code>{e(s.get('id'))}</code></td><td style='text-align:left'>{e(s.get('description', ''))}</td>"
        f"<td>{e(', '.join(map(str, s.get('tags') or [])))}</td></tr>" for s in card.skills)
    parts.append(f"<table><tr><th>skill</th><th>description</th><th>tags</th></tr>{skills}</table>")
    if report is not None:
        parts.append(f"<p><b>verdict</b> {e(report.summary)}</p><ul>")
        parts += [f"<li>{e(line)}: {e(what)}</li>" for line, what in report.verdict.items()]
        parts.append("</ul>")
        if report.diagnostics:
            colors = {"error": _ERR, "warning": _WARN, "info": _MUTED}
            parts.append("<table><tr><th>level</th><th>path</th><th>message</th></tr>" + "".join(
                f"<tr><td style='color:{colors.get(d.level, _MUTED)}'>{e(d.level)}</td><td><code>{e(d.path)}</code>"
                f"</td><td style='text-align:left'>{e(d.message)}</td></tr>" for d in report.diagnostics) + "</table>")
    parts.append(f"<details><summary>raw card</summary><pre>{e(json.dumps(raw, indent=2))}</pre></details>")
    return "<div class='toolnexus-card'>" + "".join(parts) + "</div>"


def run_html(result: RunResult) -> str:
    u = result.usage
    calls = "".join(f"<tr><td>{e(c['name'])}</td><td><code>{e(json.dumps(c['args']))}</code></td>"
                    f"<td style='text-align:left'>{e(str(c['output'])[:200])}</td></tr>" for c in result.tool_calls)
    return (f"<div class='toolnexus-run'><b>{e(result.status)}</b> {e(result.model)} · {plural(result.turns, 'turn')} · "
            f"{plural(u.total_tokens, 'token')} ({u.prompt_tokens} in, {u.completion_tokens} out) · "
            f"{plural(result.tool_call_count, 'tool call')}"
            f"<pre style='white-space:pre-wrap'>{e(result.text.strip())}</pre>"
            + (f"<table><tr><th>tool</th><th>args</th><th>output</th></tr>{calls}</table>" if calls else "")
            + "</div>")


def to_dataframe(rows: list[dict[str, Any]]) -> Any:
    """A pandas DataFrame of ``rows`` (pandas is optional: a clear error when it is missing)."""
    try:
        import pandas as pd
    except ImportError:
        raise MissingExtra("to_dataframe() needs pandas: pip install 'toolnexus[notebook]' (or pandas)") from None
    return pd.DataFrame(rows)
