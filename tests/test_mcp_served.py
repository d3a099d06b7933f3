"""What the served toolkit is over MCP beside its tools: each skill a prompt, each file of its
folder a read-only resource (confined, bounded), changes announced, and a slow tool's progress;
against the official MCP clients (Python in both eras it speaks, TypeScript) over /mcp and over
stdio, and our own MCP client passing a remote tool's progress on."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)

import toolnexus as tn
from toolnexus.http.server import ConnectionShare
from toolnexus.skills import MAX_FILE_BYTES

from .conftest import EXAMPLE_SKILLS, ROOT
from .helpers import MCP_INIT, Served
from .peers.js_peer import HERE as JS
from .peers.js_peer import need_js_sdk
from .peers.mcp_changing import count

UNITS = "skill://weather/reference/units.md"


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    """The example skills, and in weather's folder: a binary file, a hidden one, a symlink out of
    the folder, and a file past the read limit."""
    root = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, root)
    weather = root / "weather"
    (weather / "assets").mkdir()
    (weather / "assets" / "logo.bin").write_bytes(bytes(range(256)))
    (weather / ".env").write_text("TOKEN=sekrit\n")
    (tmp_path / "outside.txt").write_text("not a skill file\n")
    (weather / "reference" / "outside.txt").symlink_to(tmp_path / "outside.txt")
    with (weather / "big.txt").open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    return root


class Heard(list[tuple[float, "float | None", "str | None"]]):
    """What an official client's ``progress_callback`` (this object) heard."""

    async def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.append((done, total, message))


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_skills_are_prompts_and_their_files_resources(skills: Path, mode: str):
    calls: list[dict] = []
    tk = await tn.create_toolkit(skills, builtins=False)
    async with (
        await tk.serve(mcp=True, on_call=calls.append) as h,
        Client(h.mcp_url, mode=mode) as c,
    ):
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        caps = c.server_capabilities
        assert caps.prompts is not None and caps.resources is not None
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert sorted(prompts) == ["greet", "report", "weather"]
        assert [(a.name, a.required) for a in prompts["weather"].arguments or []] == [
            ("city", True),
            ("unit", False),
        ]
        got = await c.get_prompt("weather", {"city": "Oslo"})
        [message] = got.messages
        assert message.role == "user" and isinstance(message.content, types.TextContent)
        assert message.content.text.startswith("# Weather report")
        assert "- city: Oslo" in message.content.text and "skill://weather/" in message.content.text
        for args, needle in [
            ({}, "needs the argument 'city'"),
            ({"city": "Oslo", "colour": "red"}, "takes no argument 'colour'"),
        ]:
            with pytest.raises(MCPError, match=needle) as info:
                await c.get_prompt("weather", args)
            assert info.value.error.code == types.INVALID_PARAMS
        with pytest.raises(MCPError, match="Unknown prompt: nope"):
            await c.get_prompt("nope")

        listed = {r.uri: r for r in (await c.list_resources()).resources}
        assert sorted(listed) == [
            "skill://greet/SKILL.md",
            "skill://report/SKILL.md",
            "skill://weather/SKILL.md",
            "skill://weather/assets/logo.bin",
            "skill://weather/big.txt",
            "skill://weather/reference/climate.csv",
            "skill://weather/reference/units.md",
            "skill://weather/scripts/forecast.py",
        ]  # no .env, no symlink out of the folder
        assert (
            listed[UNITS].mime_type == "text/markdown"
            and listed[UNITS].size == (skills / "weather" / "reference" / "units.md").stat().st_size
        )
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        assert "skill://weather/{+path}" in templates

        [units] = (await c.read_resource(UNITS)).contents
        assert isinstance(units, types.TextResourceContents) and units.mime_type == "text/markdown"
        assert units.text == (skills / "weather" / "reference" / "units.md").read_text()
        [logo] = (await c.read_resource("skill://weather/assets/logo.bin")).contents
        assert isinstance(logo, types.BlobResourceContents)
        assert base64.b64decode(logo.blob) == bytes(range(256))
        for uri, needle in [
            ("skill://weather/../greet/SKILL.md", "has no file"),
            ("skill://weather/reference/outside.txt", "has no file"),
            ("skill://weather/.env", "has no file"),
            ("skill://weather/%2e%2e/%2e%2e/outside.txt", "has no file"),
            ("skill://weather/reference", "has no file"),
            ("skill://nope/SKILL.md", "Unknown resource"),
            ("file:///etc/passwd", "Unknown resource"),
            ("skill://weather/big.txt", "larger than"),
        ]:
            with pytest.raises(MCPError, match=needle) as info:
                await c.read_resource(uri)
            assert info.value.error.code == types.INVALID_PARAMS, uri
        assert (await c.call_tool("skill", {"name": "greet"})).content  # tools as before
    assert [(c["method"], c["name"], c["is_error"]) for c in calls[:2]] == [
        ("prompts/get", "weather", False),
        ("prompts/get", "weather", True),
    ]
    reads = [c for c in calls if c["method"] == "resources/read"]
    assert reads[0]["name"] == UNITS and reads[0]["output"].startswith("text/markdown, ")
    assert reads[0]["source"] == "skill" and not reads[0]["is_error"]
    assert sum(c["is_error"] for c in reads) == 8
    assert [e.method for e in h.events.history() if isinstance(e, tn.ToolCallEvent)][-1] == (
        "tools/call"
    )


async def test_skills_can_be_left_out():
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with (
        await tk.serve(mcp=tn.MCPServeConfig(skills=False)) as h,
        Client(h.mcp_url) as c,
    ):
        assert c.server_capabilities.prompts is None and c.server_capabilities.resources is None
        with pytest.raises(MCPError):
            await c.list_prompts()


async def test_a_listener_over_http_is_told_of_changes(skills: Path):
    tk = await tn.create_toolkit(skills, builtins=False)
    h = await tk.serve(mcp=True)
    try:
        async with Client(h.mcp_url) as c:
            caps = c.server_capabilities
            assert caps.tools and caps.tools.list_changed and caps.resources.subscribe
            async with c.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=[UNITS, "skill://greet/SKILL.md"],
            ) as sub:

                def shout(text: str) -> str:
                    """Shout."""
                    return text.upper()

                assert [t.name for t in tk.add_tool(shout)] == ["shout"]
                (skills / "weather" / "reference" / "units.md").write_text("Kelvin only.\n")
                shutil.rmtree(skills / "report")
                tk.reload_skills()
                seen = []
                async with asyncio.timeout(10):
                    async for event in sub:
                        seen.append(event)
                        if len(seen) == 4:
                            break
                assert seen == [
                    ToolsListChanged(),
                    PromptsListChanged(),
                    ResourcesListChanged(),
                    ResourceUpdated(uri=UNITS),
                ]  # greet's file did not change: no update for it
                assert "shout" in [t.name for t in (await c.list_tools()).tools]
                assert [p.name for p in (await c.list_prompts()).prompts] == ["greet", "weather"]
                [units] = (await c.read_resource(UNITS)).contents
                assert (
                    isinstance(units, types.TextResourceContents) and units.text == "Kelvin only.\n"
                )
                async with asyncio.timeout(30):  # a listen stream does not hold the server's stop
                    await h.stop()
    finally:
        await h.stop()


async def test_progress_of_a_slow_tool_over_http_in_both_eras():
    tk = await tn.create_toolkit(builtins=False, tools=[count])
    async with await tk.serve(mcp=True) as h:
        for mode in ("auto", "legacy"):
            heard = Heard()
            async with Client(h.mcp_url, mode=mode) as c:
                r = await c.call_tool("count", {"n": 3}, progress_callback=heard)
                assert text_of(r) == "counted to 3"
                assert heard == [(1, 3, "counted 1"), (2, 3, "counted 2"), (3, 3, "counted 3")]
                assert text_of(await c.call_tool("count", {"n": 1})) == "counted to 1"


async def test_our_mcp_client_passes_a_remote_tools_progress_on():
    """A serves ``count``; B loads A over MCP and serves it again: the official client calling B
    hears A's progress, through our client and our server."""
    a_kit = await tn.create_toolkit(builtins=False, tools=[count])
    async with await a_kit.serve(mcp=True) as a:
        b_kit = await tn.create_toolkit(builtins=False, mcp_servers={"a": {"url": a.mcp_url}})
        async with b_kit, await b_kit.serve(mcp=True) as b, Client(b.mcp_url) as c:
            heard: list[tn.Progress] = []

            async def direct(p: tn.Progress) -> None:
                heard.append(p)

            r = await b_kit.execute("a_count", {"n": 2}, tn.ToolContext(on_progress=direct))
            assert r.output == "counted to 2"
            assert heard == [tn.Progress(1, 2, "counted 1"), tn.Progress(2, 2, "counted 2")]
            relayed = Heard()
            r = await c.call_tool("a_count", {"n": 2}, progress_callback=relayed)
            assert text_of(r) == "counted to 2"
            assert relayed == [(1, 2, "counted 1"), (2, 2, "counted 2")]
            relayed.clear()
            r = await tn.mcp.call_remote_tool(a.mcp_url, "count", {"n": 2}, progress=direct)
            assert r.output == "counted to 2" and heard[-1] == tn.Progress(2, 2, "counted 2")


async def test_progress_is_bounded_and_never_fails_the_call():
    @tn.tool
    async def chatty(ctx: tn.ToolContext) -> str:
        """Report a long text many times at once."""
        for i in range(50):
            await ctx.progress(message="word " * (1000 + i))
        return "said"

    async def broken(p: tn.Progress) -> None:
        raise RuntimeError("listener broke")

    assert (await chatty.execute({}, tn.ToolContext(on_progress=broken))).output == "said"
    tk = await tn.create_toolkit(builtins=False, tools=[chatty])
    heard = Heard()
    async with await tk.serve(mcp=True) as h, Client(h.mcp_url) as c:
        assert text_of(await c.call_tool("chatty", {}, progress_callback=heard)) == "said"
    assert len(heard) == 1  # fifty reports at once: one went, the others came too soon after it
    done, total, message = heard[0]
    assert (done, total) == (1, None) and message is not None
    assert len(message) == 2000 and message.startswith("\u2026") and message.endswith("word ")


# -- over stdio ---------------------------------------------------------------------------------


def changing(skills: Path) -> StdioServerParameters:
    """tests/peers/mcp_changing.py: a toolkit over stdio whose tools change it."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.peers.mcp_changing", str(skills)],
        env=dict(os.environ),
        cwd=ROOT,
    )


async def test_stdio_handshake_era_client_is_told_of_changes_and_updates(skills: Path):
    heard: list[Any] = []
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and not isinstance(
            message, types.ProgressNotification
        ):
            heard.append(message)
            if isinstance(message, types.ResourceUpdatedNotification):
                changed.set()

    async with stdio_client(changing(skills)) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as s:
            init = await s.initialize()
            caps = init.capabilities
            assert caps.tools and caps.tools.list_changed
            assert caps.prompts and caps.prompts.list_changed
            assert caps.resources and caps.resources.subscribe and caps.resources.list_changed
            assert [p.name for p in (await s.list_prompts()).prompts] == [
                "greet",
                "report",
                "weather",
            ]
            [units] = (await s.read_resource(UNITS)).contents
            assert isinstance(units, types.TextResourceContents) and "Units" in units.text
            with pytest.warns(MCPDeprecationWarning):  # removed in 2026-07-28; this is 2025-11-25
                await s.subscribe_resource(UNITS)
            progress = Heard()
            r = await s.call_tool("count", {"n": 2}, progress_callback=progress)
            assert text_of(r) == "counted to 2"
            assert progress == [(1, 2, "counted 1"), (2, 2, "counted 2")]
            assert text_of(await s.call_tool("grow", {})) == "grown"
            (skills / "weather" / "reference" / "units.md").write_text("Kelvin only.\n")
            await s.call_tool("reload", {})
            async with asyncio.timeout(10):
                await changed.wait()
            assert "grown" in [t.name for t in (await s.list_tools()).tools]
    assert [type(n.root if hasattr(n, "root") else n).__name__ for n in heard] == [
        "ToolListChangedNotification",
        "PromptListChangedNotification",
        "ResourceListChangedNotification",
        "ResourceUpdatedNotification",
    ]


async def test_stdio_2026_client_listens_for_changes(skills: Path):
    async with Client(changing(skills)) as c:
        assert c.protocol_version == "2026-07-28"
        async with c.listen(tools_list_changed=True, resource_subscriptions=[UNITS]) as sub:
            await c.call_tool("grow", {})
            (skills / "weather" / "reference" / "units.md").write_text("Kelvin only.\n")
            await c.call_tool("reload", {})
            seen = []
            async with asyncio.timeout(10):
                async for event in sub:
                    seen.append(event)
                    if len(seen) == 2:
                        break
        assert seen == [ToolsListChanged(), ResourceUpdated(uri=UNITS)]  # only what it asked for
        heard = Heard()
        await c.call_tool("count", {"n": 2}, progress_callback=heard)
        assert [done for done, _, _ in heard] == [1, 2]


# -- the TypeScript SDK's client ------------------------------------------------------------------


async def inspect_with_ts(plan: dict[str, Any], *target: str) -> dict[str, Any]:
    """tests/peers/js/mcp_inspect.mjs: what the official TypeScript client saw."""
    need_js_sdk()
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(JS / "mcp_inspect.mjs"),
        json.dumps(plan),
        *target,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        async with asyncio.timeout(60):
            out, err = await proc.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert proc.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


PLAN = {
    "prompt": ["weather", {"city": "Oslo", "unit": "fahrenheit"}],
    "badPrompt": ["weather", {}],
    "read": UNITS,
    "badRead": "skill://weather/../../outside.txt",
    "call": ["count", {"n": 2}],
}


def check_ts(seen: dict[str, Any], skills: Path) -> None:
    assert [p["name"] for p in seen["prompts"]] == ["greet", "report", "weather"]
    assert seen["prompts"][2]["arguments"][0] == {
        "name": "city",
        "description": "The city to report on",
        "required": True,
    }
    [message] = seen["prompt"]["messages"]
    assert "- city: Oslo\n- unit: fahrenheit" in message["content"]["text"]
    assert seen["badPrompt"]["code"] == -32602 and "city" in seen["badPrompt"]["error"]
    uris = [r["uri"] for r in seen["resources"]]
    assert UNITS in uris and not any(".env" in u or "outside" in u for u in uris)
    assert {"name": "weather files", "uriTemplate": "skill://weather/{+path}"}.items() <= next(
        t for t in seen["templates"] if t["name"] == "weather files"
    ).items()
    [units] = seen["read"]["contents"]
    assert units["mimeType"] == "text/markdown"
    assert units["text"] == (skills / "weather" / "reference" / "units.md").read_text()
    assert seen["badRead"]["code"] == -32602
    assert seen["call"]["content"][0]["text"] == "counted to 2"
    assert [(p["progress"], p["total"], p["message"]) for p in seen["progress"]] == [
        (1, 2, "counted 1"),
        (2, 2, "counted 2"),
    ]


async def test_typescript_client_over_http_is_told_of_a_skill_added_on_disk(skills: Path):
    """The official TypeScript client (the handshake era) over /mcp: its session's GET stream
    hears a skill folder written by hand, and the prompts listed again have the new one."""
    plan = {
        **PLAN,
        "subscribe": "skill://weather/assets/logo.bin",
        "write": [
            [str(skills / "guide" / "SKILL.md"), GUIDE],
            [str(skills / "weather" / "assets" / "logo.bin"), "a new logo"],
        ],
        "expect": 3,
    }
    tk = await tn.create_toolkit(skills, builtins=False, tools=[count])
    async with await tk.serve(mcp=True) as h:
        seen = await inspect_with_ts(plan, h.mcp_url)
    check_ts(seen, skills)
    caps = seen["capabilities"]
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert {n["method"] for n in seen["notifications"]} >= {
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
    assert "guide" in [p["name"] for p in seen["after"]]


async def test_typescript_client_over_stdio_is_told_of_changes(skills: Path):
    plan = {
        **PLAN,
        "subscribe": UNITS,
        "change": [["grow", {}], ["reload", {"touch": "weather/reference/units.md"}]],
        "expect": 4,
    }
    seen = await inspect_with_ts(
        plan, sys.executable, "-m", "tests.peers.mcp_changing", str(skills)
    )
    assert (skills / "weather" / "reference" / "units.md").read_text().endswith("touched\n")
    assert seen["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert [n["method"] for n in seen["notifications"]] == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ]
    assert seen["notifications"][3]["params"] == {"uri": UNITS}


# -- a skills folder that changes on disk, and completions ----------------------------------------

GUIDE = """---
name: guide
description: A skill added while the server runs.
arguments:
  - name: topic
    values: [tides, trains, tea]
---
Explain ${topic}.
"""


def toolnexus_mcp(skills: Path) -> StdioServerParameters:
    """The real ``toolnexus mcp`` command, as a desktop host starts it."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus.cli", "mcp", "--skills", str(skills)],
        env=dict(os.environ),
        cwd=ROOT,
    )


@contextlib.asynccontextmanager
async def handshake_client(
    skills: Path, carrier: str, on_message: Any
) -> AsyncIterator[ClientSession]:
    """The official Python client in the initialize era: of the real ``toolnexus mcp`` (stdio),
    or of ``/mcp`` over streamable HTTP (its session's GET stream hears the server)."""
    async with contextlib.AsyncExitStack() as stack:
        if carrier == "stdio":
            read, write = await stack.enter_async_context(stdio_client(toolnexus_mcp(skills)))
        else:
            tk = await tn.create_toolkit(skills, builtins=False)
            h = await stack.enter_async_context(await tk.serve(mcp=True))
            read, write, *_ = await stack.enter_async_context(streamable_http_client(h.mcp_url))
        yield await stack.enter_async_context(
            ClientSession(read, write, message_handler=on_message)
        )


@pytest.mark.parametrize("carrier", ["stdio", "http"])
async def test_a_handshake_era_client_hears_a_skill_added_or_edited_on_disk(
    skills: Path, carrier: str
):
    """No reload_skills(): a folder added and a file edited by hand reach the handshake-era
    client as list-changed and updated notifications, and the new skill is served; its
    capabilities said so (over HTTP they said listChanged false before /mcp kept sessions)."""
    heard: list[str] = []
    updated = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            heard.append(type(message).__name__)
            if isinstance(message, types.ResourceUpdatedNotification):
                updated.set()

    async with handshake_client(skills, carrier, on_message) as s:
        caps = (await s.initialize()).capabilities
        assert caps.tools and caps.tools.list_changed
        assert caps.prompts and caps.prompts.list_changed
        assert caps.resources and caps.resources.list_changed and caps.resources.subscribe
        assert "guide" not in [p.name for p in (await s.list_prompts()).prompts]
        with pytest.warns(MCPDeprecationWarning):
            await s.subscribe_resource(UNITS)
        (skills / "guide").mkdir()
        (skills / "guide" / "SKILL.md").write_text(GUIDE)
        (skills / "weather" / "reference" / "units.md").write_text("Kelvin only.\n")
        async with asyncio.timeout(20):
            await updated.wait()
        assert "PromptListChangedNotification" in heard
        assert "ResourceListChangedNotification" in heard
        assert "guide" in [p.name for p in (await s.list_prompts()).prompts]
        got = await s.get_prompt("guide", {"topic": "tea"})
        assert isinstance(c := got.messages[0].content, types.TextContent)
        assert c.text.startswith("Explain tea.")
        [units] = (await s.read_resource(UNITS)).contents
        assert isinstance(units, types.TextResourceContents) and units.text == "Kelvin only.\n"
        done = await s.complete(
            types.PromptReference(name="guide"), {"name": "topic", "value": "t"}
        )
        assert done.completion.values == ["tides", "trains", "tea"]


async def test_a_listener_over_http_hears_a_skill_added_on_disk(skills: Path):
    tk = await tn.create_toolkit(skills, builtins=False)
    async with await tk.serve(mcp=True) as h, Client(h.mcp_url) as c:
        async with c.listen(prompts_list_changed=True) as sub:
            (skills / "guide").mkdir()
            (skills / "guide" / "SKILL.md").write_text(GUIDE)
            async with asyncio.timeout(20):
                assert await anext(aiter(sub)) == PromptsListChanged()
        assert "guide" in [p.name for p in (await c.list_prompts()).prompts]
        assert "guide" in [s.name for s in tk.skills()]


async def test_an_http_session_is_ended_by_delete(skills: Path):
    """Initialize gives a session id; DELETE ends that session, and the id is then unknown."""
    accept = {"accept": "application/json, text/event-stream"}
    tk = await tn.create_toolkit(skills, builtins=False)
    async with await tk.serve(mcp=True) as h, httpx.AsyncClient(timeout=10) as http:
        opened = await http.post(h.mcp_url, json=MCP_INIT, headers=accept)
        assert opened.status_code == 200
        sid = {"mcp-session-id": opened.headers["mcp-session-id"], **accept}
        assert (await http.delete(h.mcp_url, headers=sid)).status_code == 200
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert (await http.post(h.mcp_url, json=ping, headers=sid)).status_code == 404


async def test_behind_workers_mcp_keeps_no_session_and_says_so(skills: Path):
    """A worker of serve --workers (a ConnectionShare) cannot keep a session (the next request may
    reach another process): every request is served on its own, and the initialize era is told
    listChanged false, the truth there."""
    fd = ConnectionShare.made(2)
    tk = await tn.create_toolkit(skills, builtins=False)
    share = ConnectionShare(fd, 0, 100)
    async with await tk.serve(mcp=True, max_connections=share) as h:
        async with Client(h.mcp_url, mode="legacy") as c:
            caps = c.server_capabilities
            assert caps.prompts and not caps.prompts.list_changed
            assert caps.resources and not caps.resources.list_changed
            assert "weather" in [p.name for p in (await c.list_prompts()).prompts]
        async with httpx.AsyncClient(timeout=10) as http:
            accept = {"accept": "application/json, text/event-stream"}
            opened = await http.post(h.mcp_url, json=MCP_INIT, headers=accept)
            assert opened.status_code == 200 and "mcp-session-id" not in opened.headers
    os.close(fd)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_completions_of_a_skill_prompts_arguments_and_its_files(skills: Path, mode: str):
    """The weather skill's city from its own climate table, its unit from its values, and the
    files of its folder for its template's path; over HTTP in both eras."""
    tk = await tn.create_toolkit(skills, builtins=False)
    weather = types.PromptReference(name="weather")
    async with await tk.serve(mcp=True) as h, Client(h.mcp_url, mode=mode) as c:
        assert c.server_capabilities.completions is not None
        every = await c.complete(weather, {"name": "city", "value": ""})
        assert every.completion.values == ["Oslo", "Lisbon", "Nairobi", "Tokyo", "Lima"]
        assert every.completion.total == 5 and not every.completion.has_more
        some = await c.complete(weather, {"name": "city", "value": "l"})
        assert some.completion.values == ["Lisbon", "Lima"]
        unit = await c.complete(weather, {"name": "unit", "value": "F"})
        assert unit.completion.values == ["fahrenheit"]
        assert (await c.complete(weather, {"name": "nope", "value": ""})).completion.values == []
        nothing = types.PromptReference(name="no-such-skill")
        assert (await c.complete(nothing, {"name": "city", "value": ""})).completion.values == []
        files = types.ResourceTemplateReference(uri="skill://weather/{+path}")
        found = await c.complete(files, {"name": "path", "value": "reference/"})
        assert "reference/units.md" in found.completion.values
        assert all(v.startswith("reference/") for v in found.completion.values)
        assert not any("outside" in v for v in found.completion.values)  # the symlink out


async def test_typescript_client_completes_and_hears_a_skill_added_on_disk(skills: Path):
    """The official TypeScript client against the real toolnexus mcp: the weather skill's city
    completed from its table, then a skill folder written by hand announced without a reload."""
    plan = {
        "complete": [
            [{"type": "ref/prompt", "name": "weather"}, {"name": "city", "value": "l"}],
            [
                {"type": "ref/resource", "uri": "skill://weather/{+path}"},
                {"name": "path", "value": "ref"},
            ],
        ],
        "subscribe": UNITS,
        "write": [
            [str(skills / "guide" / "SKILL.md"), GUIDE],
            [str(skills / "weather" / "reference" / "units.md"), "Kelvin only.\n"],
        ],
        "expect": 3,
    }
    params = toolnexus_mcp(skills)
    seen = await inspect_with_ts(plan, params.command, *params.args)
    assert seen["capabilities"]["completions"] == {}
    city, path = seen["complete"]
    assert city["completion"]["values"] == ["Lisbon", "Lima"]
    assert "reference/units.md" in path["completion"]["values"]
    assert {n["method"] for n in seen["notifications"]} >= {
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }


SLOW_TOOL = """
import asyncio, os, pathlib

__all__ = ["slow"]
MARKS = pathlib.Path(os.environ["MARKS"])


async def slow(seconds: float = 600) -> str:
    \"\"\"Wait a while, leaving a mark of how it ended.\"\"\"
    (MARKS / "started").write_text("")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        (MARKS / "cancelled").write_text("")
        raise
    return "done"
"""


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_client_that_cancels_a_call_stops_the_tool_over_one_process_mcp(
    tmp_path: Path, era: str
):
    """``toolnexus serve --mcp`` (one process) and the official Python client: a call abandoned
    by the client reaches the running tool. In the initialize era the client sends
    ``notifications/cancelled`` on its session; on 2026-07-28 (no notifications from the
    client) it closes the call's stream. Either way the tool is cancelled where it waits (an
    ``async`` tool; a blocking one runs on in its thread, as Python cannot stop a thread)."""
    tools, marks = tmp_path / "slow_tools.py", tmp_path / "marks"
    tools.write_text(SLOW_TOOL)
    marks.mkdir()
    async with (
        Served("--tools", str(tools), "--mcp", "--port", "0", env={"MARKS": str(marks)}) as served,
        contextlib.AsyncExitStack() as stack,
    ):
        [mcp] = await served.until(lambda lines: served.events("mcp"))
        if era == "legacy":
            read, write, *_ = await stack.enter_async_context(streamable_http_client(mcp["url"]))
            client: Any = await stack.enter_async_context(ClientSession(read, write))
            await client.initialize()
        else:
            client = await stack.enter_async_context(Client(mcp["url"]))
            assert client.protocol_version == "2026-07-28"
        call = asyncio.ensure_future(client.call_tool("slow", {}))
        await served.until(lambda _: (marks / "started").exists())
        call.cancel()  # the client abandons the call, and tells the server its way
        await served.until(lambda _: (marks / "cancelled").exists())
        with pytest.raises(asyncio.CancelledError):
            await call
