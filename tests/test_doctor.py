"""``toolnexus doctor``: deliberately broken peers (each a small Starlette app with one known
defect) and the official SDK servers, which must come out clean or with only their real quirks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

import toolnexus as tn
from toolnexus import doctor
from toolnexus.http.server import AsgiServer

from .conftest import EXAMPLE_SKILLS
from .peers.js_peer import js_server
from .peers.sdk_server import sdk_server

DEFECTS = (
    "none",
    "no-card",
    "old-path-only",
    "rest-not-served",
    "wrong-not-found",
    "undeclared-auth",
    "stream-is-json",
    "ansi-name",
    "bare-task",
    "lower-states",
    "endless-stream",
    "card-not-json",
    "many-interfaces",
)


@contextlib.asynccontextmanager
async def broken_peer(defect: str, hold: asyncio.Event | None = None) -> AsyncIterator[str]:
    """A 1.0 JSON-RPC agent with one defect (``none``: a healthy one); with ``hold``, every call
    (not the card) waits until it is set."""
    holder: dict[str, str] = {}

    def card(request: Request) -> Response:
        if defect == "card-not-json":
            return PlainTextResponse("<html><script>alert(1)</script></html>")
        url = holder["url"] + "/"
        interfaces = [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
        if defect == "rest-not-served":
            interfaces.append(
                {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
            )
        if defect == "many-interfaces":  # 5,000 of them, each somewhere that is not there
            interfaces += [
                {
                    "url": f"http://127.0.0.1:9/{i}/",
                    "protocolBinding": "JSONRPC",
                    "protocolVersion": "1.0",
                }
                for i in range(5000)
            ]
        name = "evil\x1b[2J\x1b[31m-agent" if defect == "ansi-name" else "peer"
        return JSONResponse(
            {
                "name": name,
                "description": "a test peer",
                "version": "1",
                "url": url,
                "protocolVersion": "0.3.0",
                "supportedInterfaces": interfaces,
                "capabilities": {"streaming": True},
                "defaultInputModes": ["text"],
                "defaultOutputModes": ["text"],
                "skills": [{"id": "echo", "name": "echo", "description": "echoes", "tags": ["t"]}],
            }
        )

    kept: dict[str, dict] = {}  # the tasks it made, for GetTask and ListTasks

    def task(text: str) -> dict:
        state = "completed" if defect == "lower-states" else "TASK_STATE_COMPLETED"
        made = {
            "id": str(uuid.uuid4()),
            "contextId": str(uuid.uuid4()),
            "status": {"state": state, "timestamp": "2026-12-01T00:00:00Z"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": f"echo: {text}"}]}],
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}],
        }
        kept[made["id"]] = made
        return made

    def shown(made: dict, history: int | None, artifacts: bool = True) -> dict:
        out = dict(made)
        if history is not None:
            out["history"] = made["history"][len(made["history"]) - history :] if history else []
        if not artifacts:
            out.pop("artifacts")
        return out

    def listed(params: dict) -> dict:
        tasks = [
            t
            for t in kept.values()
            if params.get("contextId") in (None, t["contextId"])
            and params.get("status") in (None, t["status"]["state"])
        ]
        start = int(params.get("pageToken") or 0)
        size = int(params.get("pageSize") or 50)
        page = tasks[start : start + size]
        more = str(start + size) if start + size < len(tasks) else ""
        return {
            "tasks": [shown(t, None, bool(params.get("includeArtifacts"))) for t in page],
            "nextPageToken": more,
            "pageSize": size,
            "totalSize": len(tasks),
        }

    async def rpc(request: Request) -> Response:
        if hold is not None:
            await hold.wait()
        if defect == "undeclared-auth" and "authorization" not in request.headers:
            return JSONResponse({"error": "who are you"}, status_code=401)
        body = json.loads(await request.body())
        rid, method, params = body.get("id"), body.get("method"), body.get("params") or {}

        def error(code: int, message: str) -> JSONResponse:
            return JSONResponse(
                {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
            )

        if request.headers.get("a2a-version", "1.0").split(".")[0] not in ("0", "1"):
            return error(-32009, "Version not supported")
        if method in ("GetTask", "tasks/get"):
            if not isinstance(params.get("id"), str):
                return error(-32602, "Invalid params")
            if params["id"] in kept:
                made = shown(kept[params["id"]], params.get("historyLength"))
                return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": made})
            return (
                error(-32603, "Internal error")
                if defect == "wrong-not-found"
                else error(-32001, "Task not found")
            )
        if method == "ListTasks":
            return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": listed(params)})
        if method == "SendMessage":
            answer = task("hi") if defect == "bare-task" else {"task": task("hi")}
            return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": answer})
        if method == "message/send":  # the card's top-level url is 0.3: its send, in 0.3's shapes
            if not isinstance(params.get("message"), dict):
                return error(-32602, "Invalid params: message is required")
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "kind": "task",
                        "id": str(uuid.uuid4()),
                        "contextId": str(uuid.uuid4()),
                        "status": {"state": "completed", "timestamp": "2026-12-01T00:00:00Z"},
                        "artifacts": [
                            {"artifactId": "a", "parts": [{"kind": "text", "text": "echo: hi"}]}
                        ],
                    },
                }
            )
        if method == "CancelTask":  # every task here is finished at once
            return error(-32002, "Task cannot be canceled: it is already completed")
        if method == "SendStreamingMessage":
            result = {"jsonrpc": "2.0", "id": rid, "result": {"task": task("hi")}}
            if defect == "stream-is-json":
                return JSONResponse(result)

            async def frames() -> AsyncIterator[bytes]:
                yield b"data: " + json.dumps(result).encode() + b"\n\n"
                while defect == "endless-stream":  # working, working, working ...
                    await asyncio.sleep(0.002)
                    yield (
                        b"data: "
                        + json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": rid,
                                "result": {
                                    "statusUpdate": {
                                        "taskId": result["result"]["task"]["id"],
                                        "status": {"state": "TASK_STATE_WORKING"},
                                    }
                                },
                            }
                        ).encode()
                        + b"\n\n"
                    )

            return StreamingResponse(frames(), media_type="text/event-stream")
        return error(-32601, "Method not found")

    routes = [Route("/", rpc, methods=["POST"])]
    if defect != "no-card":
        path = (
            "/.well-known/agent.json"
            if defect == "old-path-only"
            else "/.well-known/agent-card.json"
        )
        routes.append(Route(path, card))
    routes.append(
        Route(
            "/{rest:path}", lambda r: PlainTextResponse("Not Found", 404), methods=["GET", "POST"]
        )
    )
    server = AsgiServer(Starlette(routes=routes))
    await server.start()
    holder["url"] = server.url
    try:
        yield server.url
    finally:
        await server.stop()


def _findings(report, severity: str) -> list[tuple[str, str]]:
    return [(f.check, f.message) for f in report.findings if f.severity == severity]


@pytest.mark.parametrize("defect", DEFECTS)
async def test_each_defect_is_found_with_its_evidence_and_fix(defect):
    async with broken_peer(defect) as url:
        report = await doctor(url, send=True, timeout=5)
    errors, warnings = _findings(report, "error"), _findings(report, "warning")
    text = report.text()
    if defect in ("none", "ansi-name"):
        assert not errors and not warnings, text
        assert report.summary == "healthy: every check passed" and not report.failed("warning")
        assert (
            "\x1b" not in text and "\x1b" not in report.html()
        )  # a peer's name is data, never a command
        if defect == "ansi-name":
            assert "'evil␛[2J␛[31m-agent'" in text
        return
    assert report.failed("warning")
    found = {f.check: f for f in report.findings if f.severity in ("error", "warning")}
    if defect == "no-card":
        assert errors and "no agent card" in errors[0][1] and report.failed("error")
        assert found["card"].fix.startswith("serve the card at /.well-known/agent-card.json")
    elif defect == "old-path-only":
        assert ("card", "the card is only at /.well-known/agent.json (the 0.2 path)") in warnings
        assert "a2a-sdk 1.x" in found["card"].breaks
    elif defect == "rest-not-served":
        [(check, message)] = errors
        assert check == "HTTP+JSON 1.x" and "declared, but no A2A answer" in message
        assert found[check].at == url + "/"  # where, apart from which check: stable for CI
        assert "404" in found[check].evidence[0] and found[check].fix.startswith(
            "serve this interface"
        )
    elif defect == "wrong-not-found":
        assert [c.split(" at ")[0] for c, _ in warnings] == [
            "JSONRPC 1.x",
            "JSONRPC 0.x",
        ]  # each dialect checked
        check, message = warnings[0]
        assert "InternalError (-32603" in message and "not TaskNotFound" in message
        assert '"code":-32603' in found[check].evidence[0].replace(" ", "")
    elif defect == "undeclared-auth":
        assert any(
            "refuses calls without credentials (HTTP 401)" in m and "declares no security" in m
            for _, m in errors
        )
    elif defect == "stream-is-json":
        assert any(c == "streaming" and "not SSE" in m for c, m in warnings)
    elif defect == "bare-task":
        assert [c for c, _ in warnings] == [
            "result wrapping",
            "client: a2a-sdk 1.x",
            "client: JS SDK 1.x",
            "client: Google ADK",  # on the a2a-sdk 1.x
            "client: Microsoft Agent Framework",
            "client: a2a-handler",
        ]
        assert "a2a-sdk 1.x" in found["result wrapping"].breaks
        assert found["client: a2a-sdk 1.x"].message.endswith(
            'cannot read the answer: the result is not wrapped as {"task": …} or {"message": …}'
        )
        assert found["client: a2a-sdk 1.x"].breaks == [
            "a2a-sdk 1.x"
        ]  # only the clients that do break
    elif defect == "many-interfaces":
        assert ("card", "the card lists 5002 interfaces; the first 16 were checked") in warnings
        assert (
            sum(
                f.check == "JSONRPC 1.x" and f.at.startswith("http://127.0.0.1:9/")
                for f in report.findings
                if f.severity == "error"
            )
            == 15
        )
    elif defect == "card-not-json":
        assert (
            "card",
            "/.well-known/agent-card.json answered 200 with what is not a JSON object",
        ) in errors
        assert "<html>" in found["card"].evidence[0]  # shown as data, in the evidence
    elif defect == "endless-stream":
        assert any(c == "streaming" and "200 frames without ending" in m for c, m in warnings)
        assert not any(f.check == "streaming" and f.severity == "ok" for f in report.findings)
    elif defect == "lower-states":
        assert ("enum casing", "a 1.0 task state is 'completed', not TASK_STATE_*") in warnings


async def test_the_official_servers_come_out_with_only_their_real_quirks():
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="ours", description="d", grpc="127.0.0.1:0")
    ) as ours:
        mine = await doctor(ours.url, send=True)
    assert [
        f for f in mine.findings if f.severity in ("error", "warning") and f.check != "card schema"
    ] == []
    checked = {f.check.split(" at ")[0] for f in mine.findings if f.severity == "ok"}
    assert {
        "JSONRPC 1.x",
        "JSONRPC 0.x",
        "HTTP+JSON 1.x",
        "HTTP+JSON 0.x",
        "GRPC 1.x",
        "GRPC 0.x",
        "send",
        "streaming",
        "input-required",
    } <= checked
    [trip] = [f.message for f in mine.findings if f.check == "input-required"]
    assert trip.startswith(
        "'draft and approve the weekly report' asked for input"
    ) and trip.endswith("completed")
    async with sdk_server(compat=True) as url:
        sdk = await doctor(url, send=True)
    # its 0.3 compat answers a mistyped id with -32600, not -32602: a real quirk, reported as such
    assert [(c.split(": ")[-1], m) for c, m in _findings(sdk, "warning")] == [
        ("invalid params", "expected JSON-RPC error -32602, got -32600")
    ]
    assert not _findings(sdk, "error")
    async with js_server() as url:
        js = await doctor(url, send=True)
    assert [
        f.message for f in js.findings if f.check == "input-required" and f.severity == "ok"
    ] == ["'ask me a question' asked for input; the answer went on the same task, now completed"]
    assert not _findings(js, "error")
    [no_url] = [f for f in js.findings if f.check == "card schema" and f.at == "$.url"]
    assert no_url.severity == "warning"  # no 0.3 url
    assert (
        no_url.fix
        == f'add "url": "{url}/" (the 0.3 JSON-RPC endpoint) if 0.3 clients should reach the agent'
    )
    assert no_url.breaks == ["a2a-sdk 0.3"]


async def test_cli_text_json_and_exit_codes():
    from toolnexus.cli import main

    async with broken_peer("wrong-not-found") as url:
        code = await asyncio.to_thread(main, ["doctor", url])
        assert code == 0  # a warning: below the default threshold
        assert await asyncio.to_thread(main, ["doctor", url, "--fail-on", "warning"]) == 1
    async with broken_peer("no-card") as url:
        assert await asyncio.to_thread(main, ["doctor", url, "--json"]) == 1
    assert (
        await asyncio.to_thread(main, ["doctor", "http://127.0.0.1:9", "--header", "nocolon"]) == 2
    )


async def test_cli_json_report(capsys):
    from toolnexus.cli import main

    async with broken_peer("old-path-only") as url:
        await asyncio.to_thread(
            main, ["doctor", url, "--json", "--header", "Authorization: Bearer doc-secret-1"]
        )
    data = json.loads(capsys.readouterr().out)
    assert data["worst"] == "warning" and data["target"] == url
    assert {"severity", "check", "at", "message", "evidence", "breaks", "fix"} == set(
        data["findings"][0]
    )
    assert "doc-secret-1" not in json.dumps(data)


async def test_a_grpc_only_official_server_is_checked_as_grpc():
    """The official a2a-sdk 1.3 server with gRPC alone on its card: its target is a host:port, not a
    URL (it was shown as ``://:None``), and its stream is a gRPC stream, not SSE (it was faulted for
    "no content type, not SSE" while the stream worked)."""
    async with sdk_server(binding="GRPC") as url:
        report = await doctor(url, send=True)
    said = [f"{f.check}: {f.message}" for f in report.findings]
    assert not any(":None" in line for line in said), said
    assert not any("not SSE" in line for line in said), said
    [stream] = [f for f in report.findings if f.check == "streaming"]
    assert stream.severity == "ok" and stream.message.endswith("over a gRPC stream"), stream
    assert any(f.check.startswith("GRPC 1.x") and f.severity == "ok" for f in report.findings), said
