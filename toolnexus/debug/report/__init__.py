"""What a doctor found, as one model that every place shows the same way: the CLI's lines, the
TUI's Doctor tab, the notebook's widget, and JSON for CI (its schema is
``docs/doctor-report.schema.json``, described in the guide).

A :class:`DoctorReport` is a list of :class:`Finding` s about one target (the peer probed, or the
local agent a client was pointed at), each with its severity, the check that made it, where
(``at``: an endpoint or a JSON path), what was found, the exchanges that show it, the clients it
breaks and the fix. Findings arrive one by one while the doctor works: :meth:`DoctorReport.watch`
calls back on each, so a front end shows them as they come. :meth:`DoctorReport.entries` is the
one layout every renderer draws (the same text, cuts and order); each front end only picks the
colours. Every string may come from a peer: it is made printable here (control characters and
ANSI escapes shown, never obeyed) and escaped again by whatever renders it as markup.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...display import printable
from .finding import (
    MARKS,
    SCHEMA,
    SEVERITIES,
    Entry,
    Finding,
    entry,
    entry_lines,
    entry_row,
    markdown_cell,
)

__all__ = [
    "DoctorReport",
    "Finding",
    "Entry",
    "printer",
    "entry_lines",
    "entry_row",
    "SCHEMA",
    "SEVERITIES",
    "MARKS",
]

EVIDENCE_KEPT = 3
"""Evidence lines a finding seen again keeps (:meth:`DoctorReport.note`)."""
TITLES = {
    "a2a": "doctor",
    "a2a-client": "client doctor",
    "mcp": "MCP doctor",
    "audit": "audit",
    "pin": "pin",
    "across": "across",
}
"""The first line of each kind of report."""


Listener = Callable[["DoctorReport"], None]


@dataclass
class DoctorReport:
    """The findings about ``target`` (a peer's URL, or the local agent's for the client doctor);
    ``doctor`` says which doctor made them (``a2a``, ``a2a-client``, ``mcp``); ``done`` is False
    while findings may still come."""

    target: str
    findings: list[Finding] = field(default_factory=list)
    doctor: str = "a2a"
    done: bool = False
    _listeners: list[Listener] = field(default_factory=list, init=False, repr=False, compare=False)

    def watch(self, listener: Listener) -> None:
        """Call ``listener(report)`` after each finding is added, and once when the report is done."""
        self._listeners.append(listener)

    def add(self, finding: Finding) -> Finding:
        self.findings.append(finding)
        self._tell()
        return finding

    def note(self, finding: Finding) -> Finding:
        """Add ``finding``, unless the same one (severity, check, place, message) is there: then
        its evidence joins that one's (up to :data:`EVIDENCE_KEPT` lines), and that one is
        returned. For a doctor that sees the same thing many times (the client doctor)."""
        same = next(
            (
                f
                for f in self.findings
                if (f.severity, f.check, f.at, f.message)
                == (finding.severity, finding.check, finding.at, finding.message)
            ),
            None,
        )
        if same is None:
            return self.add(finding)
        fresh = [e for e in finding.evidence if e not in same.evidence]
        if fresh and len(same.evidence) < EVIDENCE_KEPT:
            same.evidence.extend(fresh[: EVIDENCE_KEPT - len(same.evidence)])
            self._tell()
        return same

    def finish(self) -> None:
        """No more findings will come."""
        self.done = True
        self._tell()

    def _tell(self) -> None:
        for listener in list(self._listeners):
            listener(self)

    def count(self, severity: str) -> int:
        return sum(f.severity == severity for f in self.findings)

    def worst(self) -> str:
        return max((f.severity for f in self.findings), key=SEVERITIES.index, default="ok")

    def failed(self, threshold: str = "error") -> bool:
        """Whether a finding is at least as bad as ``threshold`` (``warning`` or ``error``)."""
        return SEVERITIES.index(self.worst()) >= SEVERITIES.index(threshold)

    @property
    def summary(self) -> str:
        errors, warnings = self.count("error"), self.count("warning")
        if not errors and not warnings:
            return "healthy: every check passed"
        return f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"

    @property
    def title(self) -> str:
        return f"{TITLES.get(self.doctor, f'{self.doctor} doctor')}: {printable(self.target, 300)}"

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON for CI; ``docs/doctor-report.schema.json`` is its schema."""
        return {
            "schema": SCHEMA,
            "doctor": self.doctor,
            "target": self.target,
            "done": self.done,
            "summary": self.summary,
            "worst": self.worst(),
            "counts": {s: self.count(s) for s in SEVERITIES},
            "findings": [f.to_dict() for f in self.findings],
        }

    # -- the one layout, and its renderings ---------------------------------------------------------
    def entries(self) -> list[Entry]:
        """Each finding as every front end shows it (see :class:`Entry`)."""
        return [entry(f) for f in self.findings]

    def text(self) -> str:
        """The report as plain lines: the title, each finding, the verdict."""
        return "\n".join(
            [self.title, *(line for e in self.entries() for line in entry_lines(e)), self.verdict]
        )

    @property
    def verdict(self) -> str:
        return f"verdict: {self.summary}"

    def html(self) -> str:
        """The report as HTML, every peer-supplied string escaped (and its control characters shown)."""
        return (
            f"<h4 style='margin:0'>{html.escape(self.title)}</h4>"
            f"<p><b>{html.escape(self.summary if self.done else 'checking…')}</b></p>"
            "<table class='toolnexus-doctor'><tr><th>severity</th><th>check</th><th>finding</th></tr>"
            + "".join(entry_row(e) for e in self.entries())
            + "</table>"
        )

    def markdown(self) -> str:
        """The report as Markdown, for a CI job's summary (GitHub's ``$GITHUB_STEP_SUMMARY``): the
        title, the verdict, a table of the findings. Every peer-supplied string is HTML-escaped
        (such summaries render HTML) and cannot break out of its cell (``|``, line breaks)."""
        rows = [
            f"### {markdown_cell(self.title)}",
            "",
            f"**{markdown_cell(self.verdict)}**",
            "",
            "| | check | finding |",
            "|---|---|---|",
        ]
        for e in self.entries():
            where = f"<code>{markdown_cell(e.at)}</code>: " if e.at else ""
            details = "".join(
                f"<br><code>{markdown_cell(text)}</code>"
                if label == "evidence"
                else f"<br><i>{label}:</i> {markdown_cell(text)}"
                for label, text in e.details
            )
            rows.append(
                f"| {e.mark} {e.severity} | {markdown_cell(e.check)} | {where}{markdown_cell(e.message)}{details} |"
            )
        return "\n".join(rows) + "\n"

    def page(self) -> str:
        """The report as a whole HTML page (a CI job's attachment): :meth:`html` in a document."""
        return (
            "<!doctype html>\n<html><head><meta charset='utf-8'>"
            f"<title>{html.escape(self.title)}</title>"
            "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:4px;"
            "vertical-align:top}table{border-collapse:collapse}"
            "tr[data-severity=error]{background:#fdd}tr[data-severity=warning]{background:#ffd}"
            "</style></head><body>\n" + self.html() + "\n</body></html>\n"
        )


def printer(write: Callable[[str], None]) -> Listener:
    """A listener that writes the report's lines as they come (the title, each finding as it is
    found, the verdict when done): together, exactly :meth:`DoctorReport.text`."""
    shown = -1  # the findings written so far; -1: not even the title

    def show(report: DoctorReport) -> None:
        nonlocal shown
        if shown < 0:
            write(report.title)
            shown = 0
        for f in report.findings[shown:]:
            for line in entry_lines(entry(f)):
                write(line)
        shown = len(report.findings)
        if report.done:
            write(report.verdict)

    return show
