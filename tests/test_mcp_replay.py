"""An MCP session recorded into a cassette and replayed: served as an MCP server (over HTTP on
/mcp and over stdio) to the official MCP clients (Python and TypeScript), and diffed against live
servers. The sessions are recorded from the test servers written on the official SDKs
(tests/peers/mcp_everything.py in both eras, tests/peers/js/mcp_server.mjs) over HTTP and stdio."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from toolnexus.debug.cassette import CassetteWriter, load
from toolnexus.debug.mcp_replay import MCPReplay, MCPTape, mcp_diff
from toolnexus.mcp import MCPSession

from .helpers import ROOT, arun_cli
from .peers import mcp_peers
from .test_mcp_served import inspect_with_ts
from .test_mcp_session import User, session

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def py_http() -> Iterator[str]:
    with mcp_peers.http_server("py") as said:
        yield said["MCP"]


@pytest.fixture(scope="module")
def ts_http() -> Iterator[str]:
    with mcp_peers.http_server("ts") as said:
        yield said["MCP"]


TS_PLAN = {
    "prompt": ["review", {"code": "x = 1"}],
    "read": "note://logo",
    "call": ["slow", {"steps": 2}],
}


async def flow(s: MCPSession, sdk: str) -> list[Any]:
    """What an inspector does with the test server: every list, a blob read, a prompt filled in,
    a structured result, progress and a log line, and (Python SDK) elicitation, sampling, roots."""
    seen: list[Any] = [
        sorted(t["name"] for t in await s.tools()),
        sorted(r["uri"] for r in await s.resources()),
        [t["uri_template"] for t in await s.templates()],
        [p["name"] for p in await s.prompts()],
        [(c.mime, c.data) for c in await s.read("note://logo")],
        await s.prompt("review", {"code": "x = 1"}),
    ]
    calls = [("add", {"a": 2, "b": 3}), ("slow", {"steps": 2})]
    if sdk == "py":
        calls += [("greet", {}), ("haiku", {"topic": "sea"}), ("where", {})]
    for name, args in calls:
        result = await s.call(name, args)
        seen.append((name, result.output, result.is_error, result.metadata.get("structured")))
    return seen


def heard(s: MCPSession) -> list[str]:
    """What the server told and asked, as the session's notices say it (the session's own left out)."""
    return [
        n.summary
        for n in s.notices
        if (n.kind != "session" or "listening" in n.summary)
        and (n.kind != "log" or s.server_name.endswith("-py"))  # the TypeScript server logs on
        # its GET stream, heard whenever that stream comes round to it
    ]


RECORDINGS = {  # name: (sdk, carrier, mode)
    "py-http-legacy": ("py", "http", "legacy"),
    "py-http-modern": ("py", "http", "auto"),
    "py-stdio-legacy": ("py", "stdio", "legacy"),
    "py-stdio-modern": ("py", "stdio", "auto"),
    "ts-http": ("ts", "http", "auto"),
    "ts-stdio": ("ts", "stdio", "auto"),
}


@pytest.fixture(scope="module")
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``recorded(name)``: the cassette of that session (recorded once), what the inspector saw
    and what it heard."""
    done: dict[str, tuple[Path, list[Any], list[str], str]] = {}

    async def record(name: str) -> tuple[Path, list[Any], list[str], str]:
        if name not in done:
            sdk, carrier, mode = RECORDINGS[name]
            target = (
                mcp_peers.stdio(sdk)
                if carrier == "stdio"
                else request.getfixturevalue(f"{sdk}_http")
            )
            path = tmp_path_factory.mktemp("mcp") / f"{name}.jsonl"
            with CassetteWriter(path) as cassette:
                async with session(target, User(), mode=mode, record=cassette) as s:
                    seen = await flow(s, sdk)
                    done[name] = (path, seen, heard(s), s.protocol_version)
        return done[name]

    return record


SLOW_CLI = 90.0
"""Seconds a CLI run that opens MCP sessions may take under load (the SDK's first tool call with an
output schema takes about 5 s on its own)."""
REPLAY_STDIO = [sys.executable, "-m", "toolnexus.cli", "replay"]


@pytest.mark.parametrize(
    "name, served",
    [
        ("py-http-legacy", "http"),
        ("py-http-modern", "http"),
        ("py-stdio-legacy", "stdio"),
        ("py-stdio-modern", "stdio"),
        ("py-stdio-modern", "http"),  # a stdio session served over HTTP
        ("ts-http", "http"),
        ("ts-stdio", "stdio"),
    ],
)
async def test_a_recorded_session_replays_to_the_python_sdk_client_as_it_went(
    name, served, recorded
):
    path, seen, said, version = await recorded(name)
    sdk = name.split("-")[0]
    replay = MCPReplay(path)
    if served == "http":
        target: str | list[str] = await replay.start()
        assert target.endswith("/mcp")
    else:
        target = [*REPLAY_STDIO, str(path), "--stdio"]
    try:
        _, _, mode = RECORDINGS[name]
        async with session(target, User(), mode=mode) as s:
            assert s.protocol_version == version
            assert s.server_name == f"everything-{sdk}"
            assert (
                await flow(s, sdk) == seen
            )  # every answer, the blob's bytes, the structured results
            assert heard(s) == said  # progress, the log line, the questions, the listen stream
    finally:
        await replay.stop()
    assert replay.misses == []


async def test_the_official_python_client_reads_a_replay_and_a_request_not_recorded_is_named(
    recorded,
):
    path, *_ = await recorded("py-http-legacy")
    async with MCPReplay(path) as replay:
        async with Client(replay.url, mode="legacy") as client:
            assert client.server_info.name == "everything-py"
            assert {t.name for t in (await client.list_tools()).tools} >= {"add", "slow"}
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"total": 5, "terms": [2, 3]}
            with warnings.catch_warnings():  # the SDK warns of ping's end in 2026-07-28
                warnings.simplefilter("ignore")
                await client.send_ping()  # answered though never recorded
            with pytest.raises(Exception, match="no recorded MCP request matches tools/call add"):
                await client.call_tool("add", {"a": 40, "b": 2})  # other arguments: not recorded
    assert replay.misses == ["tools/call add"]


@pytest.mark.parametrize("name", ["ts-http", "py-http-legacy"])
async def test_the_typescript_sdk_client_sees_the_replay_as_it_saw_the_server(
    name, recorded, request
):
    """What the official TypeScript client sees of a replay, over HTTP and over stdio, is what it
    sees of the live server it was recorded from."""
    path, *_ = await recorded(name)
    live = await inspect_with_ts(TS_PLAN, request.getfixturevalue(f"{name[:2]}_http"))
    async with MCPReplay(path) as replay:
        over_http = await inspect_with_ts(TS_PLAN, replay.url)
    over_stdio = await inspect_with_ts(TS_PLAN, *REPLAY_STDIO, str(path), "--stdio")
    assert live["call"]["content"] == [{"type": "text", "text": "done in 2 steps"}]
    assert [p["progress"] for p in live["progress"]] == [1, 2]
    assert over_http == live
    assert over_stdio == live


async def test_a_diff_against_the_same_server_finds_nothing_and_against_another_names_each_change(
    recorded, py_http, ts_http
):
    path, *_ = await recorded("py-stdio-legacy")
    same = await mcp_diff(path, py_http)  # recorded over stdio, asked again over HTTP
    assert same.ok, same.text()
    assert same.exchanges == 12
    changed = await mcp_diff(path, ts_http)
    found = {(d.operation, d.what, d.path): (d.recorded, d.live) for d in changed.differences}
    assert found[("initialize", "server", "name")] == ("everything-py", "everything-ts")
    assert found[("tools/list", "schema", "add.inputSchema.properties.a.title")] == (
        '"A"',
        "absent",
    )
    assert found[("tools/call slow", "shape", "structuredContent")] == ("present", "missing")
    assert not changed.ok and "difference(s)" in changed.text()


async def test_the_cli_replays_over_http_and_diffs_with_exit_codes(recorded, py_http, ts_http):
    path, *_ = await recorded("py-http-modern")
    code, out, err = await arun_cli(
        "replay", str(path), "--against", py_http, "--json", timeout=SLOW_CLI
    )
    assert code == 0, err
    assert json.loads(out)["ok"] is True
    code, out, _ = await arun_cli("replay", str(path), "--against", ts_http, timeout=SLOW_CLI)
    assert code == 1
    assert "tools/list: schema at add.inputSchema" in out
    command = " ".join(mcp_peers.TS_STDIO)  # a live server started from a command line
    code, out, _ = await arun_cli(
        "replay", str(path), "--against", command, "--json", cwd=ROOT, timeout=SLOW_CLI
    )
    assert code == 1 and json.loads(out)["differences"]


async def test_a_hostile_cassette_gets_only_the_headers_a_replay_needs(tmp_path):
    """An initialize answer recorded with a cookie, CORS, a refresh, a location, an HTML type and
    a session id of its own: the replay serves its JSON with none of them, and a session id it
    made itself."""
    hostile = {
        "set-cookie": "sid=stolen; Path=/",
        "access-control-allow-origin": "*",
        "access-control-allow-credentials": "true",
        "refresh": "0; url=https://evil.example/",
        "location": "https://evil.example/",
        "content-type": "text/html",
        "mcp-session-id": "chosen-by-the-cassette",
    }
    answer = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "<script>alert(1)</script>", "version": "1"},
        },
    }
    line = {
        "seq": 1,
        "direction": "out",
        "method": "POST",
        "url": "http://127.0.0.1:9/mcp",
        "rpc_method": "initialize",
        "request": {
            "headers": {},
            "json": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        },
        "response": {"status": 200, "headers": hostile, "json": answer},
    }
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps({"toolnexus_cassette": 1}) + "\n" + json.dumps(line) + "\n")
    async with MCPReplay(path) as replay:
        async with httpx.AsyncClient() as http:
            r = await http.post(
                replay.url,
                json={"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}},
                headers={"accept": "application/json, text/event-stream"},
            )
            foreign = await http.post(
                replay.url,
                json={"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {}},
                headers={"origin": "https://evil.example"},
            )
    assert r.status_code == 200 and r.json() == {**answer, "id": 7}
    assert r.headers["content-type"] == "application/json"
    assert r.headers["x-content-type-options"] == "nosniff"
    for name in (
        "set-cookie",
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "refresh",
        "location",
    ):
        assert name not in r.headers
    assert r.headers["mcp-session-id"] not in ("chosen-by-the-cassette", "***")
    assert foreign.status_code == 403  # the Host/Origin guard of everything served


async def test_doctor_records_its_session_and_the_fixtures_replay_and_verify_it(
    tmp_path, mcp_replay, mcp_verify
):
    path = tmp_path / "doctor.jsonl"
    command = " ".join(mcp_peers.PY_STDIO)
    code, out, err = await arun_cli(
        "doctor", "--mcp", command, "--record", str(path), cwd=ROOT, timeout=SLOW_CLI
    )
    assert code == 0, out + err
    tape = MCPTape.read(load(path))
    asked = [c.operation for c in tape.calls]
    assert asked[0] == "server/discover" and "tools/list" in asked
    replay = mcp_replay(path)
    async with MCPSession(replay.url) as s:
        assert sorted(t["name"] for t in await s.tools()) == [
            "add",
            "fail",
            "greet",
            "haiku",
            "slow",
            "touch",
            "where",
        ]
    await mcp_verify.check(path, list(mcp_peers.PY_STDIO), env=mcp_peers.ENV)
    code, _, err = await arun_cli("doctor", "http://127.0.0.1:9/", "--record", str(path))
    assert code == 2 and "add --mcp" in err
