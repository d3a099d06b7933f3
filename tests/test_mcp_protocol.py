"""What an inspector's session does beyond listing and calling, as the official MCP Inspector does,
against real MCP servers: the official Python SDK's low-level server written for the tests
(``tests/peers/mcp_paged.py``: lists a page at a time, a tool that waits to be cancelled, a log
line at every level) in both eras over stdio, and our own served toolkit on ``/mcp``. Lists read a
page at a time with the server's cursor (and a bounded "all"), a request cancelled in flight (the
server told, and it stopped), the log level asked for in each era's way, ping and its round
trip; the legacy HTTP+SSE transport (2024-11-05), chosen or found after streamable HTTP is
refused, with both servers over it (the high-level ``MCPServer``'s ``sse_app`` and the paged
low-level one)."""

from __future__ import annotations

import asyncio
import sys

import pytest

import toolnexus as tn
from toolnexus.errors import PeerError
from toolnexus.events import EventBus, TrafficEvent
from toolnexus.mcp import MCPSession

from .conftest import EXAMPLE_SKILLS
from .helpers import eventually
from .peers import mcp_peers

pytestmark = pytest.mark.asyncio(loop_scope="module")

PAGED = [sys.executable, "-m", "tests.peers.mcp_paged", "stdio"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_lists_a_page_at_a_time_with_the_servers_cursor(mode):
    async with MCPSession(PAGED, env=mcp_peers.ENV, mode=mode) as s:
        first = await s.page("tools")
        assert [t["name"] for t in first.items] == ["tool1", "tool2", "tool3"]
        assert first.next_cursor == "tools-3"
        second = await s.page("tools", first.next_cursor)
        assert [t["name"] for t in second.items] == ["tool4", "tool5", "tool6"]
        # the rest from a cursor, bounded by a count in whole pages
        some = await s.listing("tools", second.next_cursor, limit=2)
        assert [t["name"] for t in some.items] == ["tool7", "wait", "log"]
        assert some.next_cursor == "tools-9"
        rest = await s.listing("tools", some.next_cursor)
        assert [t["name"] for t in rest.items] == ["cancelled"] and rest.next_cursor is None
        assert len(await s.tools()) == 10  # every page
        assert [p["name"] for p in await s.prompts()] == [f"prompt{i}" for i in range(1, 6)]
        assert len(await s.resources()) == 6  # the last: an MCP App's ui:// resource
        with pytest.raises(PeerError, match="-32602: Invalid cursor: bogus"):
            await s.page("prompts", "bogus")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_call_in_flight_is_cancelled_and_the_server_stops_it(mode):
    bus = EventBus()
    async with MCPSession(PAGED, env=mcp_peers.ENV, mode=mode, bus=bus) as s:
        waiting = asyncio.ensure_future(s.call("wait", {}))
        await eventually(lambda: bool(s.running))
        assert [what for what, _ in s.running.values()] == ["call wait"]
        await asyncio.sleep(0.3)  # the request is on its way to the server
        assert s.cancel() == ["call wait"]
        with pytest.raises(PeerError, match=r"call wait: cancelled, the server was told"):
            await waiting
        assert not s.running
        # the server saw the cancel and stopped the tool; the session goes on
        told = (await s.call("cancelled", {})).output
        assert told == "cancelled 1 times"
        assert any(n.summary == "cancelled: call wait" for n in s.notices)
        assert s.cancel() == []  # nothing in flight
    sent = [e.rpc_method for e in bus.history() if isinstance(e, TrafficEvent)]
    assert "notifications/cancelled" in sent


async def test_a_call_cancelled_over_http_in_each_era_on_our_own_server():
    """Our /mcp, stateless: on 2026-07-28 the session closes the request's stream (that era has
    no client notifications over HTTP) and the tool is stopped; in the handshake era
    notifications/cancelled goes out in a POST of its own, which a stateless server cannot tie
    to the call (no session): the call ends for the user, the tool runs on to its end."""
    started, stopped = asyncio.Event(), []

    @tn.tool
    async def hold() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.append(1)
            raise
        return "never cancelled"

    tk = await tn.create_toolkit(builtins=False, tools=[hold])
    async with await tk.serve(mcp=True) as h:
        for mode, words in (
            ("auto", "closing its answer's stream"),
            ("legacy", "notifications/cancelled"),
        ):
            started.clear()
            bus = EventBus()
            async with MCPSession(h.mcp_url, mode=mode, bus=bus) as s:
                call = asyncio.ensure_future(s.call("hold", {}))
                await asyncio.wait_for(started.wait(), 30)
                assert s.cancel() == ["call hold"]
                with pytest.raises(PeerError, match=words):
                    await call
                assert "hold" in [t["name"] for t in await s.tools()]
                if mode == "auto":
                    await eventually(lambda: stopped == [1])
            sent = [(e.rpc_method, e.status) for e in bus.history() if isinstance(e, TrafficEvent)]
            assert (("notifications/cancelled", 202) in sent) is (mode == "legacy")


async def test_the_log_level_in_each_era():
    for mode in ("legacy", "auto"):
        async with MCPSession(PAGED, env=mcp_peers.ENV, mode=mode) as s:
            assert s.log_level is None
            await s.set_level("error")
            assert s.log_level == "error"
            await s.call("log", {})
            logged = [n.summary for n in s.notices if n.kind == "log"]
            # the handshake era: logging/setLevel, the server filters; 2026-07-28: each request
            # asks in its _meta and the SDK's server sends only those levels
            assert logged == [
                f"{lv}: a {lv} line" for lv in ("error", "critical", "alert", "emergency")
            ]
            with pytest.raises(PeerError, match="no log level 'loud'"):
                await s.set_level("loud")
    async with MCPSession(mcp_peers.stdio("py"), env=mcp_peers.ENV, mode="auto") as s:
        await s.call("slow", {"steps": 1})  # 2026-07-28 without asking: no log line comes
        assert not [n for n in s.notices if n.kind == "log"]
        await s.set_level("info")
        await s.call("slow", {"steps": 1})
        assert [n.summary for n in s.notices if n.kind == "log"] == ["info: slow starts: 1 steps"]
    tk = await tn.create_toolkit(builtins=False)
    async with await tk.serve(mcp=True) as h, MCPSession(h.mcp_url, mode="legacy") as s:
        if "logging" not in s.capabilities:
            with pytest.raises(PeerError, match="declares no logging capability"):
                await s.set_level("info")


async def test_ping_and_its_round_trip():
    async with MCPSession(PAGED, env=mcp_peers.ENV, mode="legacy") as s:
        took = await s.ping()
        assert 0 < took < 30
        assert any(
            n.method == "ping" and n.summary.startswith("ping answered in ") for n in s.notices
        )
    async with MCPSession(PAGED, env=mcp_peers.ENV, mode="auto") as s:
        with pytest.raises(PeerError, match="MCP 2026-07-28 has no ping"):
            await s.ping()


async def test_the_legacy_sse_transport_chosen_or_found():
    with mcp_peers.http_server("paged") as said:
        bus = EventBus()
        async with MCPSession(said["MCP"], transport="sse", bus=bus) as s:
            assert s.transport == "sse" and not s.modern  # the transport carries no other era
            assert (await s.page("tools")).next_cursor == "tools-3"
            assert await s.ping() > 0
            waiting = asyncio.ensure_future(s.call("wait", {}))
            await eventually(lambda: bool(s.running))
            await asyncio.sleep(0.3)
            s.cancel()
            with pytest.raises(PeerError, match="cancelled, the server was told"):
                await waiting
            # the stream ties each POST to the server's session: the tool was stopped
            assert (await s.call("cancelled", {})).output == "cancelled 1 times"
        posted = {e.rpc_method for e in bus.history() if isinstance(e, TrafficEvent)}
        assert {"initialize", "tools/list", "ping", "notifications/cancelled"} <= posted
    with mcp_peers.http_server("py", sse=True) as said:
        async with MCPSession(said["MCP"]) as s:  # auto: streamable HTTP refused, then SSE
            assert s.transport == "sse" and s.server_name == "everything-py"
            assert "over HTTP+SSE (2024-11-05)" in s.notices[-1].summary
            assert (await s.call("add", {"a": 2, "b": 3})).metadata["structured"]["total"] == 5
        with pytest.raises(PeerError, match="HTTP 405"):
            await MCPSession(said["MCP"], transport="http").start()
        root = said["MCP"].removesuffix("/sse") + "/nothing"
        with pytest.raises(PeerError, match="HTTP 404.*; streamable HTTP: HTTP 404"):
            await MCPSession(root).start()
    tk = await tn.create_toolkit(builtins=False)
    async with await tk.serve(mcp=True) as h, MCPSession(h.mcp_url) as s:
        assert s.transport == "http"  # auto, and the server speaks streamable HTTP
    with pytest.raises(tn.ConfigError, match="no MCP transport 'ws'"):
        MCPSession("http://127.0.0.1:9/mcp", transport="ws")


async def test_completion_of_prompt_and_template_arguments():
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with await tk.serve(mcp=True) as h:
        for mode in ("auto", "legacy"):
            async with MCPSession(h.mcp_url, mode=mode) as s:
                assert await s.complete("prompt", "weather", "city", "L") == ["Lisbon", "Lima"]
                assert await s.complete("prompt", "weather", "unit", "") == [
                    "celsius",
                    "fahrenheit",
                ]
                files = await s.complete("template", "skill://weather/{+path}", "path", "ref")
                assert files and all(f.startswith("reference/") for f in files)
    async with MCPSession(PAGED, env=mcp_peers.ENV) as s:  # declares no completions: not asked
        assert "completions" not in s.capabilities
        assert await s.complete("prompt", "prompt1", "x", "a") == []
