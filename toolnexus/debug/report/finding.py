"""One finding (:class:`Finding`), and the one layout every front end draws it in (:class:`Entry`:
made printable and cut to size; the CLI's lines, the notebook's row, a Markdown cell)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from ...display import printable

SCHEMA = "toolnexus.doctor-report/1"
"""The JSON report's ``schema``: its name and version (a change that removes or renames a field
gets a new version; new optional fields do not)."""
SEVERITIES = ("ok", "info", "warning", "error")
"""From best to worst: passed, said for information, breaks some clients, wrong."""
MARKS = {"ok": "✔", "info": "·", "warning": "!", "error": "✘"}
MESSAGE_SHOWN = 400
"""Characters of a finding's message shown (the JSON keeps it whole)."""
EVIDENCE_SHOWN = 700
"""Characters of one evidence line shown (the JSON keeps it whole)."""


@dataclass
class Finding:
    """One thing the doctor found: how bad, which check, what, the exchanges that show it, who it
    breaks, the fix, and where (an endpoint URL or a JSON path; empty when the check names it)."""

    severity: str
    check: str
    message: str
    evidence: list[str] = field(default_factory=list)
    breaks: list[str] = field(default_factory=list)
    fix: str = ""
    at: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(
                f"severity must be one of {', '.join(SEVERITIES)}, not {self.severity!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "check": self.check,
            "at": self.at,
            "message": self.message,
            "evidence": list(self.evidence),
            "breaks": list(self.breaks),
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Entry:
    """One finding as every renderer shows it: made printable and cut to size. ``details`` are
    ``(label, text)`` pairs in order: each evidence line, then whom it breaks, then the fix."""

    severity: str
    mark: str
    check: str
    at: str
    message: str
    details: tuple[tuple[str, str], ...]

    @property
    def head(self) -> str:
        """``check at where: message``, the finding's first line."""
        return f"{self.check}{f' at {self.at}' if self.at else ''}: {self.message}"


def markdown_cell(text: str) -> str:
    """Peer text in a Markdown table cell: HTML-escaped, ``|`` and line breaks made harmless."""
    return html.escape(text).replace("|", "&#124;").replace("\n", "<br>").replace("`", "&#96;")


def entry(f: Finding) -> Entry:
    details = [("evidence", printable(x, EVIDENCE_SHOWN)) for x in f.evidence]
    if f.breaks:
        details.append(("breaks", printable(", ".join(f.breaks))))
    if f.fix:
        details.append(("fix", printable(f.fix)))
    return Entry(
        f.severity,
        MARKS[f.severity],
        printable(f.check, 200),
        printable(f.at, 300),
        printable(f.message, MESSAGE_SHOWN),
        tuple(details),
    )


def entry_lines(e: Entry) -> list[str]:
    """One entry as the CLI prints it (the TUI draws the same lines in colour)."""
    return [f"  {e.mark} {e.head}", *(f"      {label}: {text}" for label, text in e.details)]


def entry_row(e: Entry) -> str:
    """One entry as a row of the notebook's table."""
    h = html.escape
    where = f"<code>{h(e.at)}</code>: " if e.at else ""
    details = "".join(
        f"<br><code>{h(text)}</code>" if label == "evidence" else f"<br><i>{label}:</i> {h(text)}"
        for label, text in e.details
    )
    return (
        f"<tr data-severity='{e.severity}'><td style='white-space:nowrap'>{e.mark} {e.severity}</td>"
        f"<td style='white-space:nowrap'>{h(e.check)}</td><td style='text-align:left'>{where}{h(e.message)}{details}</td></tr>"
    )
