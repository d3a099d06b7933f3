"""``toolnexus doctor --mcp``: what it finds in real MCP servers. A server written to be wrong
(tests/peers/mcp_quirks.py, the official Python SDK's lowlevel server over stdio) is found wrong in
each way, at its place; our own /mcp is healthy; the SDK servers written for the tests are judged
on what they really do (an unknown tool answered as a tool error; the TypeScript one, run without
an allowed-origins list, answers a foreign Origin); a server behind OAuth leads to its
authorization server; a token is checked; the JSON follows the published schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema_rs

import toolnexus as tn
from toolnexus.cli import main
from toolnexus.debug.mcp_doctor import mcp_doctor
from toolnexus.debug.report import DoctorReport

from .peers import mcp_peers

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "doctor-report.schema.json"
QUIRKS = [sys.executable, "-m", "tests.peers.mcp_quirks"]


def found(report: DoctorReport, check: str, severity: str, words: str, at: str | None = None):
    """The one finding of ``check`` at ``severity`` whose message has ``words`` (and ``at``)."""
    hits = [
        f
        for f in report.findings
        if f.check == check
        and f.severity == severity
        and words in f.message
        and (at is None or f.at == at)
    ]
    assert len(hits) == 1, (check, severity, words, report.text())
    return hits[0]


async def test_a_server_wrong_in_every_way_is_found_wrong_at_each_place():
    report = await mcp_doctor(QUIRKS, env=mcp_peers.ENV, call=True)
    assert report.doctor == "mcp" and report.done and report.failed("error")
    found(report, "negotiation", "ok", "quirks 0.0.1 speaks MCP 2026-07-28")
    found(report, "negotiation", "ok", "the handshake era too")
    found(report, "capabilities", "error", "declares prompts but prompts/list fails: -32603")
    schema = found(
        report, "tools", "error", "not a valid JSON Schema", "tools[broken_schema].inputSchema"
    )
    assert "properties/x/type" in schema.message
    found(report, "tools", "warning", "is not 1 to 128", "tools[bad name!]")
    found(report, "tools", "warning", "runs without its required n", "tools[lenient]")
    found(report, "tools", "ok", 'lenient {"n": 3}: answered', "tools[lenient]")  # from its default
    liar = found(
        report,
        "tools",
        "error",
        "does not match its output schema",
        "tools[liar].structuredContent",
    )
    assert (
        "'three' is not of type 'integer'" in liar.message and '"total":"three"' in liar.evidence[0]
    )
    found(
        report, "errors", "warning", "an unknown tool is answered with a tool error", "tools/call"
    )
    stray = found(report, "stdout", "error", "1 line that is not JSON-RPC")
    assert stray.evidence == ["stdout: hello from a stray print"]
    # without --call nothing is called: the read-only ones are counted, none run
    quiet = await mcp_doctor(QUIRKS, env=mcp_peers.ENV)
    found(quiet, "tools", "info", "no tool was called (2 are annotated read-only")
    assert not any("lenient" in f.at for f in quiet.findings)


async def test_our_own_mcp_is_healthy_and_its_token_is_checked():
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(lambda a, b: a + b, name="add")])
    async with await tk.serve(mcp=True) as h:
        report = await mcp_doctor(h.mcp_url)
        assert not report.failed("warning"), report.text()
        found(
            report, "negotiation", "ok", "an initialize asking for an unknown version is answered"
        )
        found(report, "errors", "ok", "an unknown tool: protocol error -32602")
        found(report, "origin", "ok", "refused (403)")
        found(report, "auth", "info", "answers without any credentials")
    locked = tn.MCPServeConfig(auth=tn.Auth.bearer("doctor-s3cret-token"))
    async with await tk.serve(mcp=locked) as h:
        refused = await mcp_doctor(h.mcp_url)
        found(refused, "connect", "error", "HTTP 401: authentication required")
        allowed = await mcp_doctor(
            h.mcp_url, headers={"Authorization": "Bearer doctor-s3cret-token"}
        )
        found(allowed, "auth", "ok", "a wrong token is refused (403)")
        assert "doctor-s3cret-token" not in json.dumps(allowed.to_dict())


async def test_the_sdk_servers_are_judged_on_what_they_do():
    with mcp_peers.http_server("ts") as said:
        report = await mcp_doctor(said["MCP"], call=True)
    found(report, "negotiation", "info", "no 2026-07-28")
    found(
        report, "capabilities", "ok", "resources.subscribe: subscribed to note://greeting and back"
    )
    found(report, "capabilities", "ok", "logging/setLevel answered")
    found(report, "tools", "ok", "structured content matches the output schema", "tools[add]")
    origin = found(report, "origin", "error", "Origin http://evil.example is answered 200")
    assert origin.evidence and origin.fix.startswith("refuse requests whose Origin")
    found(report, "errors", "warning", "an unknown tool is answered with a tool error")
    python = await mcp_doctor(mcp_peers.stdio("py"), env=mcp_peers.ENV)
    found(python, "negotiation", "ok", "the handshake era too")
    found(python, "errors", "warning", "an unknown prompt is answered with -32603")
    found(python, "stdout", "ok", "JSON-RPC messages only")


async def test_a_server_behind_oauth_leads_to_its_authorization_server():
    with mcp_peers.http_server("py", oauth=True) as said:
        report = await mcp_doctor(said["MCP"])
    found(report, "connect", "error", "HTTP 401")
    found(report, "auth", "ok", f"a 401 leads to {said['AS']}")
    assert not [f for f in report.findings if f.check == "auth" and f.severity != "ok"]


def test_the_command_prints_as_it_finds_exits_1_and_its_json_follows_the_schema(capsys):
    command = " ".join(["PYTHONPATH=" + mcp_peers.ENV["PYTHONPATH"], *QUIRKS])
    code = main(["doctor", "--mcp", command, "--call"])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("MCP doctor: stdio: ") and "verdict: 4 errors" in out
    code = main(["doctor", "--mcp", command, "--json"])
    data = json.loads(capsys.readouterr().out)
    validator = jsonschema_rs.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    assert code == 1 and validator.is_valid(data) and data["doctor"] == "mcp"
    assert main(["doctor", "--mcp", "PYTHONPATH=x"]) == 2  # a usage error, in one line
    assert capsys.readouterr().err == "toolnexus: doctor --mcp: no command to run\n"
