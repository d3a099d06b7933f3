"""The doctor's report, one model in every place: the JSON follows the schema the docs publish (and
the schema refuses what does not), the command prints each finding as it is found and exits 1 on
errors, and the report is told of every finding as it comes. The TUI's Doctor tab and the
notebook's widget are held to the same lines in tests/tui and tests/notebook."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from pathlib import Path

import jsonschema_rs
import pytest

import toolnexus as tn
from toolnexus import doctor
from toolnexus.cli import main
from toolnexus.debug.report import SCHEMA, DoctorReport, Finding, printer

from .conftest import EXAMPLE_SKILLS
from .test_doctor import broken_peer

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "doctor-report.schema.json"
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _validator() -> jsonschema_rs.Validator:
    return jsonschema_rs.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


async def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = await asyncio.to_thread(main, ["doctor", *argv])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("defect", ["none", "no-card", "bare-task", "ansi-name", "undeclared-auth"])
async def test_the_json_report_follows_its_documented_schema(capsys, defect):
    async with broken_peer(defect) as url:
        code, out = await _cli(capsys, url, "--send", "--json")
    data = json.loads(out)
    errors = [e.message for e in _validator().iter_errors(data)]
    assert not errors, errors
    assert data["schema"] == SCHEMA and data["doctor"] == "a2a" and data["done"] is True
    assert sum(data["counts"].values()) == len(data["findings"])
    assert code == (1 if data["counts"]["error"] else 0)  # exit 1 on errors
    assert (defect in ("no-card", "undeclared-auth")) == bool(data["counts"]["error"])


def test_the_schema_refuses_what_is_not_a_report():
    """The schema is no formality: each of these departures from a report is refused."""
    good = DoctorReport(
        "http://peer", [Finding("warning", "card", "m", ["e"], ["a2a-sdk 1.x"], "f", "$.url")]
    )
    good.finish()
    valid = good.to_dict()
    assert _validator().is_valid(valid)
    for change in (
        lambda d: d.pop("schema"),
        lambda d: d.update(schema="toolnexus.doctor-report/2"),
        lambda d: d["findings"][0].pop("at"),
        lambda d: d["findings"][0].update(severity="fatal"),
        lambda d: d["counts"].pop("error"),
        lambda d: d.update(findings={}),
    ):
        broken = copy.deepcopy(valid)
        change(broken)
        assert not _validator().is_valid(broken), broken


async def test_each_finding_is_told_as_it_comes_and_the_command_prints_the_same_text(capsys):
    seen: list[tuple[int, bool]] = []
    async with broken_peer("wrong-not-found") as url:
        report = await doctor(url, on_finding=lambda r: seen.append((len(r.findings), r.done)))
        code, printed = await _cli(capsys, url)
    n = len(report.findings)
    assert seen == [(i, False) for i in range(1, n + 1)] + [(n, True)]
    # what the command printed, line by line as found, is the report's text (ids differ per run)
    assert _ID.sub("ID", printed.rstrip("\n")) == _ID.sub("ID", report.text())
    assert code == 0 and printed.splitlines()[-1] == "verdict: 0 errors, 2 warnings"


async def test_the_printer_writes_each_finding_before_the_next_is_found():
    lines: list[str] = []
    report = DoctorReport("http://peer")
    report.watch(printer(lines.append))
    report.add(Finding("ok", "card", "found"))
    assert lines == ["doctor: http://peer", "  ✔ card: found"]
    report.add(Finding("error", "JSONRPC 1.x", "no answer", ["POST / -> 404"], at="http://peer/"))
    assert lines[2:] == [
        "  ✘ JSONRPC 1.x at http://peer/: no answer",
        "      evidence: POST / -> 404",
    ]
    report.finish()
    assert lines[-1] == "verdict: 1 error, 0 warnings" and "\n".join(lines) == report.text()


def test_a_finding_of_no_known_severity_is_refused():
    with pytest.raises(ValueError, match="severity must be one of"):
        Finding("fatal", "card", "m")


async def test_the_report_as_markdown_and_as_an_html_page_for_ci(capsys):
    """``--format md`` (a CI job's summary) and ``--format html`` (an attachment): the same
    findings and verdict as the text, and a peer's hostile name (markup, a table's ``|``, a line
    break) shown as text, never as markup or a broken table."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    name = "<script>alert(1)</script> | ```\nnext"
    a2a = tn.A2AConfig(name=name, description="d")
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        _, text = await _cli(capsys, handle.url)
        code_md, md = await _cli(capsys, handle.url, "--format", "md")
        code_html, page = await _cli(capsys, handle.url, "--format", "html")
    verdict = text.strip().splitlines()[-1]
    assert code_md == code_html == 0 and verdict.startswith("verdict: ")
    lines = md.splitlines()
    assert lines[0].startswith("### doctor: ") and f"**{verdict}**" in lines
    rows = [line for line in lines if line.startswith("| ")]
    assert rows[0] == "| | check | finding |" and len(rows) == 1 + text.count("\n  ") - sum(
        line.startswith("      ") for line in text.splitlines()
    ), (md, text)
    assert all(row.count(" | ") == 2 for row in rows[1:]), md  # no cell broke out
    assert "<script>" not in md and "&lt;script&gt;" in md and "```" not in md
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count("<tr data-severity=") == len(rows) - 1
