"""Issue 59 item 8: hostile MCP cassettes replayed (``toolnexus replay``), over HTTP and over
stdio: a cassette is a file someone else may have written. Odd shapes (ids that are objects,
frames that are not a list, statuses no HTTP answer may carry, JSON nested a thousand levels), huge
frames and a frame that tries to end its SSE event early are served as data or refused in words;
the replay never crashes, never writes a traceback, and keeps serving. (Its headers: see
tests/test_mcp_replay.py.) A replay used to fail to load on an object id (TypeError), answer a
recorded 101 as a protocol switch, 304 without the answer and 999 not at all (a traceback), and
a thousand levels with a 500 (RecursionError)."""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
import pytest

from toolnexus.debug.mcp_replay import MCPReplay
from toolnexus.debug.replay import MAX_DEPTH

from ..helpers import ROOT

pytestmark = pytest.mark.asyncio(loop_scope="module")

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
READY = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "hostile", "version": "1"},
    },
}
HUGE = "x" * 5_000_000
ESCAPE = 'a\n\ndata: {"injected": 1}\n\nevent: x\r\n'


DEEP = "deep: written in by hand"
"""Where a cassette holds JSON nested 900 levels (Python's own encoder cannot write it)."""


def deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def call(rpc_id: int, name: str) -> dict:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": name}}


def result(rpc_id: int, value: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rpc_id, "result": value}


CASES = {  # tool name: (its recorded answer, how: a status or frames)
    "status 101": (result(2, {"ok": 101}), 101),
    "status 304": (result(3, {"ok": 304}), 304),
    "status 999": (result(4, {"ok": 999}), 999),
    "object id": (
        result(5, {"ok": "asked"}),
        [{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}],
    ),
    "deep answer": (result(6, {"a": DEEP}), 200),
    "huge": (result(7, {"content": [{"type": "text", "text": HUGE}]}), 200),
    "escape": (
        result(9, {"ok": "escaped"}),
        [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": ESCAPE}}],
    ),
    "deep notice": (
        result(10, {"ok": "kept"}),
        [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"a": DEEP}}],
    ),
}


def http_line(seq: int, sent: dict, answer: dict, how: int | list, rpc: str = "tools/call"):
    response: dict = {"status": how if isinstance(how, int) else 200, "headers": {}}
    if isinstance(how, list):
        response["frames"] = [*how, answer]
    else:
        response["json"] = answer
    return {
        "seq": seq,
        "direction": "out",
        "method": "POST",
        "url": "http://127.0.0.1:9/mcp",
        "rpc_method": rpc,
        "request": {"headers": {}, "json": sent},
        "response": response,
    }


def stdio_line(at: int, sent: dict | None, got: dict | None, took: float = 0.0) -> dict:
    """One stdio exchange as MCPSession records it: a request of the client with its answer
    (ended ``at`` seconds in, after ``took``), or a message of the server's alone."""
    line: dict = {
        "seq": at,
        "direction": "out",
        "method": "STDIO",
        "url": "stdio: hostile",
        "rpc_method": (sent or got or {}).get("method"),
        "request": {"headers": {}},
        "response": {"headers": {}},
        "time": f"2026-01-01T00:{at // 60:02d}:{at % 60:02d}Z",
        "ms": took * 1000,
    }
    if sent is not None:
        line["request"]["json"] = sent
    if got is not None:
        line["response"]["json"] = got
    return line


def write(path, lines: list[dict]) -> None:
    nested = '{"a":' * 900 + "{}" + "}" * 900
    text = "\n".join(json.dumps(x) for x in [{"toolnexus_cassette": 1}, *lines]) + "\n"
    path.write_text(text.replace(json.dumps(DEEP), nested))


def odd_frames_line(seq: int) -> dict:
    """frames that are not a list: a call with nothing recorded for it."""
    line = http_line(seq, call(seq, "frames not a list"), result(seq, {}), 200)
    del line["response"]["json"]
    line["response"]["frames"] = 5
    return line


async def test_a_hostile_cassette_over_http_is_served_as_data_and_the_replay_keeps_serving(
    tmp_path,
):
    lines = [http_line(1, INIT, READY, 200, "initialize")]
    for i, (name, (answer, how)) in enumerate(CASES.items(), start=2):
        lines.append(http_line(i, call(answer["id"], name), answer, how))
    lines.append(odd_frames_line(50))
    path = tmp_path / "hostile.jsonl"
    write(path, lines)
    accept = {"accept": "application/json, text/event-stream"}
    async with MCPReplay(path) as replay, httpx.AsyncClient(timeout=30) as http:
        assert (await http.post(replay.url, json=INIT, headers=accept)).status_code == 200
        got = {}
        for name, (answer, _) in CASES.items():
            r = await http.post(replay.url, json=call(answer["id"], name), headers=accept)
            got[name] = (r.status_code, r.headers["content-type"], r.text)
        odd_client = await http.post(
            replay.url,
            json={"jsonrpc": "2.0", "id": {"an": "object"}, "result": {}},
            headers=accept,
        )
        too_deep = await http.post(
            replay.url, json={**call(60, "x"), "params": deep(MAX_DEPTH + 5)}, headers=accept
        )
        after = await http.post(replay.url, json=call(7, "huge"), headers=accept)
    for name in ("status 101", "status 304", "status 999"):
        status, kind, text = got[name]
        assert status == 200 and kind == "application/json", (name, got[name])
        assert json.loads(text)["result"]["ok"] == int(name[-3:])
    status, kind, text = got["deep answer"]
    assert status == 200 and json.loads(text)["error"]["code"] == -32603
    assert f"nests deeper than {MAX_DEPTH} levels" in json.loads(text)["error"]["message"]
    assert json.loads(got["huge"][2])["result"]["content"][0]["text"] == HUGE
    status, kind, text = got["escape"]  # the frame's text stays inside its one data line
    assert kind == "text/event-stream"
    events = [e for e in text.split("\n\n") if e]
    assert len(events) == 2 and all(e.startswith("event: message\ndata: ") for e in events)
    assert json.loads(events[0].split("data: ", 1)[1])["params"]["data"] == ESCAPE
    assert "deeper" not in got["deep notice"][2] and '"kept"' in got["deep notice"][2]
    assert '"asked"' in got["object id"][2]  # its odd request passed on as data, never waited on
    assert odd_client.status_code == 202
    assert json.loads(too_deep.text)["error"]["code"] == -32600
    assert after.status_code == 200 and len(after.content) > 5_000_000


async def test_a_hostile_cassette_over_stdio_is_served_as_data_and_the_replay_keeps_serving(
    tmp_path,
):
    lines = [stdio_line(1, INIT, READY, 0.5)]
    at = 10
    for name, (answer, how) in CASES.items():  # its frames while it ran, then it and its answer
        lines += [
            stdio_line(at + 1, None, frame) for frame in (how if isinstance(how, list) else [])
        ]
        lines.append(stdio_line(at + 2, call(answer["id"], name), answer, 2))
        at += 10
    path = tmp_path / "hostile-stdio.jsonl"
    write(path, lines)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus.cli",
        "replay",
        str(path),
        "--stdio",
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def ask(message: dict) -> list[dict]:
        """What the replay writes for ``message``, up to its answer (every line JSON)."""
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        await proc.stdin.drain()
        said = []
        async with asyncio.timeout(60):
            while True:
                said.append(json.loads(await proc.stdout.readline()))
                if said[-1].get("id") == message["id"] and "method" not in said[-1]:
                    return said

    try:
        await ask(INIT)
        got = {name: await ask(call(answer["id"], name)) for name, (answer, _) in CASES.items()}
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": [1], "result": {}}\n')  # an odd answer
        too_deep = await ask({**call(60, "x"), "params": deep(MAX_DEPTH + 5)})
        again = await ask(call(7, "huge"))
    finally:
        proc.stdin.close()
        async with asyncio.timeout(30):
            await proc.wait()
        errors = (await proc.stderr.read()).decode()
    assert got["deep answer"][-1]["error"]["code"] == -32603
    assert got["huge"][-1]["result"]["content"][0]["text"] == HUGE
    assert got["escape"][0]["params"]["data"] == ESCAPE and got["escape"][-1]["result"]
    assert got["deep notice"][-1]["result"] == {"ok": "kept"} and len(got["deep notice"]) == 1
    assert got["object id"][-1]["result"] == {"ok": "asked"}
    assert too_deep[-1]["error"]["code"] == -32600
    assert again[-1]["result"]["content"][0]["text"] == HUGE
    assert "Traceback" not in errors and proc.returncode == 0, errors
