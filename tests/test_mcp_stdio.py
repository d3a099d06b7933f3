"""``toolnexus mcp``: the toolkit over stdio as desktop MCP hosts start a server, against the
official MCP clients (Python and TypeScript) over a real pipe to a real process: list, call, a
failing tool, a remote A2A agent (slow; asking a question, answered through elicitation or
refused clearly), a canceled call, and a host that closes stdin."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

import toolnexus as tn
from toolnexus.protocol.model import TaskState

from .conftest import EXAMPLE_SKILLS
from .helpers import run_cli
from .peers.js_peer import HERE as JS
from .peers.js_peer import need_js_sdk

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOOLS = Path(__file__).parent / "peers" / "mcp_tools.py"
ROOT = Path(__file__).resolve().parents[1]


def command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "toolnexus.cli", "mcp", "--tools", str(TOOLS), *extra]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def agent() -> AsyncIterator[Any]:
    """A remote A2A agent (the demo desk: its report skill asks for approval; "slow N" waits)."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="demo-desk")) as handle:
        yield handle


@contextlib.asynccontextmanager
async def session(*extra: str, elicit: Any = None) -> AsyncIterator[ClientSession]:
    # the host's own environment (the SDK passes only a safe few by default; PYTHONPATH must reach it)
    params = StdioServerParameters(
        command=sys.executable, args=command(*extra)[1:], env=dict(os.environ), cwd=ROOT
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as client:
            await client.initialize()
            yield client


def text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_list_call_a_failing_tool_and_an_unknown_one():
    async with session("--name", "desk-tools") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert {"add", "explode", "nap"} <= set(listed) and "bash" not in listed
        assert listed["add"].input_schema["required"] == ["a", "b"]
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert not added.is_error and text(added) == "5"
        failed = await client.call_tool("explode", {"reason": "boom"})
        assert (
            failed.is_error and "exploded: boom" in text(failed) and "Traceback" not in text(failed)
        )
        refused = await client.call_tool("add", {"a": "two"})
        assert refused.is_error and "b" in text(
            refused
        )  # checked against its schema before it runs
        with pytest.raises(Exception, match="Unknown tool: nope"):
            await client.call_tool("nope", {})


async def test_a_remote_agent_asks_and_the_user_answers_through_elicitation(agent):
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    async with session("--agent", agent.url, elicit=elicit) as client:
        [report] = [t.name for t in (await client.list_tools()).tools if t.name.endswith("_report")]
        done = await client.call_tool(report, {"task": "please approve the budget"})
    assert asked and asked[0].startswith("Publish this report?")
    assert not done.is_error and "Request approved (yes)" in text(done)


async def test_a_client_without_elicitation_gets_a_clear_error(agent):
    async with session("--agent", agent.url) as client:
        [report] = [t.name for t in (await client.list_tools()).tools if t.name.endswith("_report")]
        refused = await client.call_tool(report, {"task": "please approve the budget"})
    assert refused.is_error and "asks: Publish this report?" in text(refused)
    assert "cannot answer questions (it offers no elicitation)" in text(refused)


async def test_a_slow_remote_agent_answers_and_a_canceled_call_cancels_its_remote_task(agent):
    async with session("--agent", agent.url) as client:
        [weather] = [
            t.name for t in (await client.list_tools()).tools if t.name.endswith("_weather")
        ]
        slow = await client.call_tool(weather, {"task": "slow 1 weather in Oslo"})
        assert not slow.is_error and "Oslo" in text(slow)
        with anyio.move_on_after(1.5):  # the host gives up: the SDK sends notifications/cancelled
            await client.call_tool(weather, {"task": "slow 60 weather in Lisbon"})
        async with asyncio.timeout(
            15
        ):  # the remote task the call started is canceled, not left running
            while True:
                tasks = [
                    t for t in (await agent.runner.store.list()).tasks if "slow 60" in t.request
                ]
                if tasks and tasks[0].state is TaskState.CANCELED:
                    break
                await asyncio.sleep(0.05)
        again = await client.call_tool("add", {"a": 1, "b": 1})  # and it keeps serving
        assert text(again) == "2"
        with anyio.move_on_after(1):
            await client.call_tool("nap", {"seconds": 60})
        assert text(await client.call_tool("add", {"a": 2, "b": 2})) == "4"


NOISY = """\
import os, subprocess
print("loading my tools")
os.write(1, b"written to descriptor 1 while loading\\n")
subprocess.run(["echo", "a child's echo while loading"], check=True)

def shout(text: str) -> str:
    \"\"\"Shout.\"\"\"
    os.write(1, b"written to descriptor 1 by a call\\n")
    subprocess.run(["echo", "a child's echo in a call"], check=True)
    return text.upper()
"""


async def test_a_host_that_closes_stdin_ends_the_server_cleanly_and_stdout_is_protocol_only(
    tmp_path,
):
    """A user's tools module that prints, writes to file descriptor 1 and runs a child that
    echoes, as it loads and in a call: the protocol's stream carries the protocol alone, from the
    first byte (issue 49: only ``sys.stdout`` was redirected while loading), the rest goes to
    stderr."""
    noisy = tmp_path / "noisy.py"
    noisy.write_text(NOISY)
    proc = await asyncio.create_subprocess_exec(
        *command("--tools", f"{noisy}:shout"),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "shout", "arguments": {"text": "hi"}},
    }
    for message in (hello, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
        proc.stdin.write((json.dumps(message) + "\n").encode())
    await proc.stdin.drain()
    first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    assert first["result"]["serverInfo"]["name"] == "toolnexus", first
    called = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    assert called["id"] == 2 and "HI" in json.dumps(called["result"]), called
    proc.stdin.close()
    out, err = await asyncio.wait_for(proc.communicate(), 15)
    assert proc.returncode == 0, err.decode()
    assert out == b"" and b"Traceback" not in err
    assert (
        b"serving 4 tool(s) over stdio as toolnexus: add, explode, nap, shout" in err
    )  # what it does: on stderr
    for said in (
        b"loading my tools",
        b"written to descriptor 1 while loading",
        b"a child's echo while loading",
        b"written to descriptor 1 by a call",
        b"a child's echo in a call",
    ):
        assert said in err, said


async def test_the_typescript_client_lists_and_calls():
    need_js_sdk()
    calls = [["add", {"a": 20, "b": 22}], ["explode", {"reason": "from ts"}]]
    run = await asyncio.to_thread(
        subprocess.run,
        ["node", str(JS / "mcp_client.mjs"), json.dumps(calls), *command()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["server"]["name"] == "toolnexus"
    assert {"name": "add", "required": ["a", "b"]} in seen["tools"]
    assert seen["calls"][0] == {"isError": False, "text": "42"}
    assert seen["calls"][1]["isError"] is True and "exploded: from ts" in seen["calls"][1]["text"]


@pytest.mark.parametrize(
    "spec, said",
    [
        ("no_such_module_here:f", "cannot import no_such_module_here: ModuleNotFoundError"),
        (f"{TOOLS}:missing", "has no function 'missing'"),
        ("math", "name the functions (math:FUNCTION), or list them in its __all__"),
        ("/nowhere/tools.py:f", "no Python file at /nowhere/tools.py"),
    ],
)
async def test_a_bad_tools_option_is_a_usage_error_in_one_line(spec, said):
    run = await asyncio.to_thread(run_cli, "mcp", "--tools", spec)
    assert run.returncode == 2 and run.stdout == ""
    assert (
        said in run.stderr
        and "Traceback" not in run.stderr
        and len(run.stderr.strip().splitlines()) == 1
    )


async def test_a_remote_agents_question_reaches_a_handshake_era_client_over_http(agent):
    """In the initialize era /mcp keeps the client's session, so the question goes to it as an
    ``elicitation/create`` request during the call, as over stdio (stateless before: none could)."""
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    tk = await tn.create_toolkit(builtins=False, agents=[tn.Agent(card=agent.url)])
    async with (
        tk,
        await tk.serve(mcp=True) as h,
        Client(h.mcp_url, mode="legacy", elicitation_callback=elicit) as client,
    ):
        assert client.protocol_version == "2025-11-25"
        [report] = [t.name for t in (await client.list_tools()).tools if "report" in t.name]
        done = await client.call_tool(report, {"task": "please approve the budget"})
    assert asked and asked[0].startswith("Publish this report?")
    assert not done.is_error and "Request approved (yes)" in text(done)


async def test_a_remote_agents_question_reaches_2026_clients_as_an_input_request(agent):
    """On 2026-07-28 a server asks by answering the call with ``input_required`` (no standalone
    request): the official client's own driver answers it through its elicitation callback and
    retries, over HTTP (each request on its own) and over stdio;
    a declined question cancels the remote task, and a forged ``requestState`` is refused."""
    asked: list[str] = []
    answer = {"action": "accept", "content": {"answer": "yes"}}

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(**answer)

    tk = await tn.create_toolkit(builtins=False, agents=[tn.Agent(card=agent.url)])
    async with tk, await tk.serve(mcp=True) as h:
        async with Client(h.mcp_url, elicitation_callback=elicit) as client:
            assert client.protocol_version == "2026-07-28"
            [report] = [t.name for t in (await client.list_tools()).tools if "report" in t.name]
            done = await client.call_tool(report, {"task": "please approve the budget"})
            assert asked and asked[0].startswith("Publish this report?")
            assert not done.is_error and "Request approved (yes)" in text(done)
            answer = {"action": "decline"}
            declined = await client.call_tool(report, {"task": "please approve the budget"})
            assert declined.is_error and "declined" in text(declined)
            answer = {"action": "cancel"}
            canceled = await client.call_tool(report, {"task": "please approve the budget"})
            assert canceled.is_error and "the question was canceled" in text(canceled)
            first = await client.session.call_tool(
                report, {"task": "please approve the budget"}, allow_input_required=True
            )
            assert isinstance(first, types.InputRequiredResult) and first.request_state
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await client.session.call_tool(
                    report,
                    {"task": "please approve the budget"},
                    input_responses={
                        "answer": types.ElicitResult(action="accept", content={"answer": "yes"})
                    },
                    request_state="a2a:" + "0" * 32,
                    allow_input_required=True,
                )
        async with Client(h.mcp_url) as client:  # no elicitation offered: told why, as before
            refused = await client.call_tool(report, {"task": "please approve the budget"})
            assert refused.is_error and "offers no elicitation" in text(refused)
    answer = {"action": "accept", "content": {"answer": "yes"}}
    params = StdioServerParameters(
        command=sys.executable,
        args=command("--agent", agent.url)[1:],
        env=dict(os.environ),
        cwd=ROOT,
    )
    asked.clear()
    async with Client(params, elicitation_callback=elicit) as client:
        assert client.protocol_version == "2026-07-28"
        [report] = [t.name for t in (await client.list_tools()).tools if "report" in t.name]
        done = await client.call_tool(report, {"task": "please approve the budget"})
    assert asked and not done.is_error and "Request approved (yes)" in text(done)
