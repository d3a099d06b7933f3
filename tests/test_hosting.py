"""The workspace of hosted servers that the TUI and the notebook drive."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import httpx
import pytest

import toolnexus as tn
from toolnexus.hosting import HostedServer, ServerSpec, Workspace, demo_spec

from .helpers import ROOT
from .serve.wire import rpc, v03_message


async def test_start_serve_stop_restart():
    ws = Workspace()
    server = await ws.start(demo_spec())
    try:
        assert server.state == "running" and server.url.startswith("http://127.0.0.1:")
        assert server.skills() == ["greet", "report", "weather"]
        assert "skill" in server.mcp_tools() and "bash" not in server.mcp_tools()
        async with httpx.AsyncClient() as http:
            r = await rpc(http, server.url, "message/send", {"message": v03_message("hello")})
        assert r["result"]["status"]["state"] == "completed"
        tasks = await ws.tasks()
        assert [t.request for t in tasks] == ["hello"]
        kinds = {type(e).__name__ for e in ws.events.history()}
        assert {"ServerEvent", "TaskEvent"} <= kinds
        old_url = server.url
        with pytest.raises(tn.ConfigError, match="already running"):
            await ws.start(demo_spec())
        await ws.stop("demo-desk")
        assert ws.get("demo-desk").state == "stopped" and ws.get("demo-desk").url == ""
        again = await ws.restart("demo-desk")
        assert again.state == "running" and again.url and old_url
    finally:
        await ws.close()
    assert ws.running() == []


@pytest.mark.parametrize(
    "spec, needle",
    [
        (ServerSpec(name="x", skills=["/no/such/folder"]), "skills folder not found"),
        (ServerSpec(name="x", a2a=False, mcp=False), "choose at least one profile"),
        (ServerSpec(name="x", model="gpt4"), "model must be demo"),
        (
            ServerSpec(name="x", model="openai:gpt-x", api_key_env="TN_TEST_NOT_SET"),
            "TN_TEST_NOT_SET is not set",
        ),
        (
            ServerSpec(name="x", auth_token_env="TN_TEST_NOT_SET_EITHER"),
            "TN_TEST_NOT_SET_EITHER is not set",
        ),
    ],
)
async def test_start_failures_are_recorded_and_isolated(spec, needle):
    ws = Workspace()
    await ws.start(demo_spec())
    try:
        with pytest.raises(tn.ConfigError, match=needle):
            await ws.start(spec)
        assert ws.get("x").state == "failed" and needle in ws.get("x").error
        assert ws.get("demo-desk").state == "running"
    finally:
        await ws.close()


async def test_port_in_use():
    ws = Workspace()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(OSError):
            await ws.start(ServerSpec(name="busy", port=s.getsockname()[1]))
    assert ws.get("busy").state == "failed" and ws.get("busy").error.startswith("cannot listen")
    with pytest.raises(tn.ConfigError, match="no server named 'nope'"):
        ws.get("nope")


async def test_warnings_and_auth(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cret")
    ws = Workspace()
    try:
        risky = await ws.start(
            ServerSpec(name="risky", mcp=True, builtins=True, mcp_tools=["bash", "read"])
        )
        assert risky.warnings() == ["exposes `bash` over MCP without auth"]
        safe = await ws.start(ServerSpec(name="safe", mcp=True, auth_token_env="TN_TEST_TOKEN"))
        assert safe.warnings() == [] and safe.auth
        async with httpx.AsyncClient() as http:
            assert (await http.post(safe.url + "/", json={})).status_code == 401
            assert (await http.post(safe.url + "/mcp", json={})).status_code == 401
        mcp_only = await ws.start(
            ServerSpec(name="mcp-only", a2a=False, mcp=True, auth_token_env="TN_TEST_TOKEN")
        )
        async with httpx.AsyncClient() as http:
            assert (await http.post(mcp_only.url + "/mcp", json={})).status_code == 401
        assert "s3cret" not in repr(ws.get("safe").spec)
        assert ServerSpec(host="0.0.0.0").profiles == ["A2A"]
        wide = HostedServer(
            ServerSpec(name="wide", host="0.0.0.0")
        )  # judged from the spec, never bound here
        assert wide.warnings() == ["binds 0.0.0.0, beyond this machine, without auth"]
    finally:
        await ws.close()


_START_AT_ONCE = """
import asyncio
from toolnexus.hosting import ServerSpec, Workspace, demo_spec

async def main():
    ws = Workspace(thread=True)
    specs = [ServerSpec(name=f"s{i}", skills=demo_spec().skills, mcp=True) for i in range(4)]
    try:
        started = await asyncio.gather(*(ws.start(s) for s in specs), return_exceptions=True)
    finally:
        await ws.close()
    failed = [f"{type(e).__name__}: {e}" for e in started if isinstance(e, BaseException)]
    print("\\n".join(failed) or "all running")

asyncio.run(main())
"""


def test_several_servers_start_at_once_in_a_fresh_process():
    """Issue 61 item 1: saved servers starting together at launch, each importing the MCP server
    lazily off the caller's loop, one of them handed the module half-built ('partially initialized
    module ... has no attribute MCPProfile'), 5 launches in 6. The first import only happens once
    per process, so each round is a fresh interpreter: four rounds of four servers at once."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rounds = [
        subprocess.Popen(
            [sys.executable, "-c", _START_AT_ONCE],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(4)
    ]
    said = [p.communicate(timeout=120)[0].strip() for p in rounds]
    assert said == ["all running"] * 4
