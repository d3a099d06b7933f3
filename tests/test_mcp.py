"""MCP both ways with the official SDK: the served toolkit at /mcp, and MCP servers as toolkit tools."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import toolnexus as tn

from .conftest import EXAMPLE_SKILLS, ROOT
from .helpers import MCP_INIT
from .peers import mcp_peers

NOTES = [sys.executable, str(ROOT / "examples" / "mcp" / "notes_server.py")]
cancelled = asyncio.Event()


@tn.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tn.tool
def explode() -> str:
    """Always raises."""
    raise RuntimeError("the tool blew up")


@tn.tool
async def wait(seconds: float) -> str:
    """Wait, then answer."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    return "waited"


async def served(**options):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, tools=[add, explode, wait])
    return await tk.serve(**options)


async def test_initialize_list_and_call():
    calls: list[dict] = []
    async with (
        await served(mcp=tn.MCPServeConfig(name="gw", version="9.9"), on_call=calls.append) as h,
        Client(h.mcp_url) as client,
    ):
        assert (client.server_info.name, client.server_info.version) == ("gw", "9.9")
        assert client.server_capabilities.tools is not None
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(listed) == [
            "add",
            "explode",
            "glob",
            "grep",
            "read",
            "skill",
            "wait",
        ]  # no bash/write/edit
        assert listed["add"].description == "Add two integers."
        assert listed["add"].input_schema == add.input_schema
        r = await client.call_tool("add", {"a": 2, "b": 40})
        assert [c.text for c in r.content] == ["42"] and not r.is_error
        r = await client.call_tool("explode", {})
        assert r.is_error and r.content[0].text == "the tool blew up"
        r = await client.call_tool("add", {"a": 2, "b": "x"})
        assert (
            r.is_error
            and r.content[0].text == "add: invalid argument 'b': 'x' is not of type 'integer'"
        )
        r = await client.call_tool("skill", {"name": "weather"})
        assert r.content[0].text.startswith('<skill_content name="weather">')
        with pytest.raises(MCPError) as info:
            await client.call_tool("bash", {"command": "id"})
        assert info.value.error.code == -32602 and "Unknown tool: bash" in info.value.error.message
        await asyncio.sleep(0.05)
        events = [e for e in h.events.history() if isinstance(e, tn.ToolCallEvent)]
    assert [(c["name"], c["is_error"]) for c in calls] == [
        ("add", False),
        ("explode", True),
        ("add", True),
        ("skill", False),
    ]
    assert (
        calls[0]["args"] == {"a": 2, "b": 40}
        and calls[0]["output"] == "42"
        and calls[0]["source"] == "function"
    )
    assert calls[0]["ms"] >= 0
    assert [e.name for e in events] == ["add", "explode", "add", "skill"]


async def test_filter_names_tools_including_command_ones(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING):
        async with (
            await served(mcp=tn.MCPServeConfig(tools=["add", "bash", "nonexistent"])) as h,
            Client(h.mcp_url) as client,
        ):
            names = sorted(t.name for t in (await client.list_tools()).tools)
            r = await client.call_tool("bash", {"command": "echo named"})
    assert names == ["add", "bash"]
    assert r.content[0].text == "named\n"
    assert "nonexistent" in caplog.text


async def test_client_cancellation_cancels_the_tool():
    cancelled.clear()
    async with await served(mcp=True) as h, Client(h.mcp_url) as client:
        call = asyncio.ensure_future(client.call_tool("wait", {"seconds": 30}))
        await asyncio.sleep(0.5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(cancelled.wait(), 5)
        r = await client.call_tool("add", {"a": 1, "b": 1})  # still serving
        assert r.content[0].text == "2"


async def test_foreign_origin_and_host_are_refused():
    async with await served(mcp=True) as h, httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        evil = await http.post(
            h.mcp_url, json=body, headers={**headers, "origin": "http://evil.example"}
        )
        assert evil.status_code == 403
        rebound = await http.post(
            h.mcp_url, json=body, headers={**headers, "host": f"evil.example:{h.port}"}
        )
        assert rebound.status_code in (403, 421)
        # a handshake-era request needs the session initialize opens (else 400)
        local = await http.post(h.mcp_url, json=MCP_INIT, headers={**headers, "origin": h.url})
        assert local.status_code == 200


async def test_auth_applies_to_mcp_and_profiles_are_independent():
    async with (
        await served(mcp=True, a2a=tn.A2AConfig(auth=tn.Auth.bearer("tok"))) as h,
        httpx.AsyncClient() as http,
    ):
        assert (await http.post(h.mcp_url, json={})).status_code == 401
        assert (
            await http.post(h.mcp_url, json={}, headers={"authorization": "Bearer bad"})
        ).status_code == 403
        assert (await http.get(h.card_url)).status_code == 200
    async with await served(mcp=True) as h, httpx.AsyncClient() as http:
        assert (await http.get(h.card_url)).status_code == 404  # only MCP: every A2A path 404s
        assert (
            await http.post(h.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get"})
        ).status_code == 404
    async with await served(a2a=tn.A2AConfig()) as h, httpx.AsyncClient() as http:
        assert (await http.post(h.mcp_url, json={})).status_code == 404  # no mcp: no /mcp


async def test_a_raising_on_call_never_affects_the_call():
    def boom(ev):
        raise RuntimeError("hook broke")

    async with await served(mcp=True, on_call=boom) as h, Client(h.mcp_url) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"


async def test_gateway_round_trip():
    """A serves add over MCP; B loads A as an MCP server and serves its own MCP profile."""
    async with await served(mcp=True, a2a=tn.A2AConfig(auth=tn.Auth.bearer("sekrit"))) as a:
        os.environ["TN_TEST_GATEWAY_TOKEN"] = "sekrit"
        try:
            b_kit = await tn.create_toolkit(
                builtins=False,
                config={
                    "mcpServers": {
                        "desk a": {
                            "url": a.mcp_url,
                            "headers": {"Authorization": "Bearer ${TN_TEST_GATEWAY_TOKEN}"},
                        }
                    }
                },
            )
        finally:
            del os.environ["TN_TEST_GATEWAY_TOKEN"]
        assert b_kit.mcp_status()["desk a"]["status"] == "connected"
        async with b_kit, await b_kit.serve(mcp=True) as b, Client(b.mcp_url) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "desk_a_add" in names and "desk_a_skill" in names
            assert b_kit.get("desk_a_add").source == "mcp"
            r = await client.call_tool("desk_a_add", {"a": 20, "b": 22})
            assert r.content[0].text == "42"
            r = await client.call_tool("desk_a_explode", {})
            assert r.is_error and r.content[0].text == "the tool blew up"
        assert "sekrit" not in repr(
            tn.mcp.parse_servers({"x": {"url": "u", "headers": {"h": "sekrit"}}})
        )


async def test_stdio_server_as_a_source():
    tk = await tn.create_toolkit(
        builtins=False,
        mcp_servers={
            "notes": {"command": NOTES[0], "args": NOTES[1:]},
            "broken": {"command": "/no/such/program"},
            "off": {"command": "whatever", "enabled": False},
            "off2": {"url": "http://127.0.0.1:1/mcp", "disabled": True},
        },
    )
    async with tk:
        status = tk.mcp_status()
        assert status["notes"]["status"] == "connected"
        assert (
            status["broken"]["status"] == "failed" and "No such file" in status["broken"]["reason"]
        )
        assert status["off"]["status"] == "disabled" and status["off2"]["status"] == "disabled"
        assert [t.name for t in tk.tools()][:3] == [
            "notes_add",
            "notes_shout",
            "notes_stats",
        ]  # MCP tools first
        assert (await tk.execute("notes_add", {"a": 1, "b": 2})).output == "3"
        assert (await tk.execute("notes_shout", {"text": "hi"})).output == "HI"
        assert (
            await tk.execute("notes_stats", {"text": "a b c"})
        ).output == '{"words": 3, "chars": 5}'
        r = await tk.execute("notes_fail", {"reason": "no luck"})
        assert r.is_error and "no luck" in r.output
        pid = int((await tk.execute("notes_pid", {})).output)
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            await asyncio.sleep(0.1)


async def test_a_server_killed_mid_session_fails_calls_without_hanging():
    tk = await tn.create_toolkit(
        builtins=False, mcp_servers={"notes": {"command": NOTES[0], "args": NOTES[1:]}}
    )
    async with tk:
        pid = int((await tk.execute("notes_pid", {})).output)
        pending = asyncio.ensure_future(tk.execute("notes_sleep", {"seconds": 30}))
        await asyncio.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        r = await asyncio.wait_for(pending, 10)
        assert time.monotonic() - t0 < 5
        assert r.is_error and "notes" in r.output and "stopped" in r.output
        assert tk.mcp_status()["notes"]["status"] == "failed"
        r = await asyncio.wait_for(tk.execute("notes_add", {"a": 1, "b": 1}), 5)
        assert r.is_error and r.output.startswith("MCP server notes is failed")


def test_config_errors_are_clear():
    for block, needle in [
        ([], "must be an object"),
        ({"x": {}}, "needs a url or a command"),
        ({"x": {"command": "c", "args": "a b"}}, "args must be a list"),
        ({"x": {"url": "u", "timeout": 0}}, "timeout must be a positive"),
    ]:
        with pytest.raises(tn.ConfigError, match=needle):
            tn.mcp.parse_servers(block)


def test_the_servers_files_of_desktop_hosts_and_the_inspector_are_read_and_written_back():
    """Issue 60 item 1 g: Claude Desktop's and Cursor's ``mcpServers``, VS Code's ``servers``, the
    official MCP Inspector's exports (its "Servers File" and "Server Entry", v1, and its v2
    ``mcp.json`` fields), ``${ENV}`` references kept as written; written back, read the same."""
    claude = {
        "mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server-fs", "/tmp"], "env": {"A": "${B}"}},
            "far": {"url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${T}"}},
        }
    }
    vscode = {
        "inputs": [{"id": "k", "type": "promptString"}],
        "servers": {"gh": {"type": "http", "url": "https://gh.test/mcp"}},
    }
    inspector_file = {
        "mcpServers": {"default-server": {"type": "sse", "url": "http://h/sse", "note": "..."}}
    }
    inspector_entry = {"command": "uvx", "args": ["srv"], "env": {}}
    inspector_v2 = {
        "mcpServers": {
            "v2": {
                "type": "streamable-http",
                "url": "http://h/mcp",
                "protocolEra": "modern",
                "oauth": {"clientId": "cli-1"},
            }
        }
    }
    fs, far = tn.mcp.read_servers(json.dumps(claude))
    assert (fs.command, fs.args, fs.env, fs.cwd) == (
        "npx",
        ["-y", "server-fs", "/tmp"],
        {"A": "${B}"},
        None,
    )
    assert (far.url, far.headers, far.transport) == (
        "https://x.test/mcp",
        {"Authorization": "Bearer ${T}"},
        "auto",
    )
    [gh] = tn.mcp.read_servers(json.dumps(vscode))
    assert (gh.name, gh.transport) == ("gh", "http")
    [sse] = tn.mcp.read_servers(json.dumps(inspector_file))
    assert (sse.name, sse.url, sse.transport) == ("default-server", "http://h/sse", "sse")
    [entry] = tn.mcp.read_servers(json.dumps(inspector_entry), name="mine")
    assert (entry.name, entry.command, entry.args) == ("mine", "uvx", ["srv"])
    [v2] = tn.mcp.read_servers(json.dumps(inspector_v2))
    assert (v2.transport, v2.era, v2.client_id) == ("http", "modern", "cli-1")
    every = [fs, far, gh, sse, entry, v2]
    written = tn.mcp.servers_file(every)
    assert tn.mcp.read_servers(json.dumps(written)) == every
    assert written["mcpServers"]["default-server"] == {"type": "sse", "url": "http://h/sse"}
    for text, needle in [
        ("[]", "a JSON object"),
        ("{", "not JSON"),
        (json.dumps({"mcpServers": {"x": {"type": "websocket", "url": "u"}}}), "type must be"),
        (json.dumps({"mcpServers": {"x": {"url": "u", "protocolEra": "old"}}}), "protocolEra"),
        (json.dumps({"mcpServers": {"x": {"command": "c", "env": []}}}), "env must be"),
        (json.dumps({"mcpServers": {"": {"url": "u"}}}), "1 to 100"),
    ]:
        with pytest.raises(tn.ConfigError, match=needle):
            tn.mcp.read_servers(text)


async def test_a_server_entry_of_type_sse_is_reached_over_the_legacy_transport():
    """A desktop host's ``"type": "sse"`` entry (a server that speaks only the HTTP+SSE transport
    of 2024-11-05): the toolkit's tools come over it, where streamable HTTP is refused."""
    with mcp_peers.http_server("py", sse=True) as said:
        tk = await tn.create_toolkit(
            builtins=False,
            mcp_servers={
                "legacy": {"type": "sse", "url": said["MCP"]},
                "streamable": {"url": said["MCP"]},
            },
        )
        async with tk:
            status = tk.mcp_status()
            assert status["legacy"]["status"] == "connected", status["legacy"]
            assert status["streamable"]["status"] == "failed"
            r = await tk.execute("legacy_add", {"a": 2, "b": 3})
            assert not r.is_error and '"total": 5' in r.output
