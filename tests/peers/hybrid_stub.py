"""A hybrid peer, scripted as issue 32's table shows fasta2a 2.1 (pydantic-ai) answering; fasta2a
itself is not installed here, so this is our script of what was seen, labelled as such:

- a 1.0 card (``supportedInterfaces``, JSON-RPC 1.0) with no top-level ``url``;
- the 0.3 method names (``message/send``, ``message/stream``, ``tasks/get``) and the 1.0 ones alike,
  every answer in 1.0's shapes: a ``{"task": …}`` wrapper, parts without ``kind``,
  ``TASK_STATE_*`` states, and ``status.timestamp`` without a zone;
- a stream that ends with the final status and no artifact: the reply is only on the task, for
  ``tasks/get``.

Every task completes at once with ``echo: <text>``.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import on_loopback

SENDS = ("message/send", "SendMessage")
STREAMS = ("message/stream", "SendStreamingMessage")
GETS = ("tasks/get", "GetTask")
STAMP = "2026-12-03T10:00:00.123456"  # no zone, as the table shows


class HybridStub:
    def __init__(self) -> None:
        self.url = ""
        self.tasks: dict[str, dict[str, Any]] = {}
        self.methods: list[str] = []

    def card(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "name": "hybrid-desk",
                "description": "0.3 method names, 1.0 shapes",
                "version": "2.1.0",
                "protocolVersion": "1.0",
                "capabilities": {"streaming": True},
                "defaultInputModes": ["text"],
                "defaultOutputModes": ["text"],
                "skills": [
                    {"id": "echo", "name": "echo", "description": "echoes", "tags": ["echo"]}
                ],
                "supportedInterfaces": [
                    {"url": self.url + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                ],
            }
        )

    def _new(self, params: dict[str, Any]) -> dict[str, Any]:
        message = params.get("message") or {}
        text = " ".join(
            str(p.get("text", "")) for p in message.get("parts") or [] if isinstance(p, dict)
        )
        tid = str(uuid.uuid4())
        self.tasks[tid] = {
            "id": tid,
            "contextId": str(uuid.uuid4()),
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": STAMP},
            "artifacts": [{"artifactId": str(uuid.uuid4()), "parts": [{"text": f"echo: {text}"}]}],
        }
        return self.tasks[tid]

    async def rpc(self, request: Request) -> Response:
        body = json.loads(await request.body())
        method, params, rid = body.get("method"), body.get("params") or {}, body.get("id")
        self.methods.append(method)

        def answer(result: Any) -> JSONResponse:
            return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": result})

        def error(code: int, message: str) -> JSONResponse:
            return JSONResponse(
                {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
            )

        if method in SENDS + STREAMS and not isinstance(params.get("message"), dict):
            return error(-32602, "Invalid params: message is required")
        if method in SENDS:
            return answer({"task": self._new(params)})
        if method in STREAMS:
            task = self._new(params)
            head = {k: v for k, v in task.items() if k != "artifacts"} | {
                "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": STAMP}
            }
            frames = [
                {"task": head},
                {
                    "statusUpdate": {
                        "taskId": task["id"],
                        "contextId": task["contextId"],
                        "status": {"state": "TASK_STATE_WORKING", "timestamp": STAMP},
                    }
                },
                {
                    "statusUpdate": {
                        "taskId": task["id"],
                        "contextId": task["contextId"],
                        "status": task["status"],
                        "final": True,
                    }
                },
            ]

            async def sse() -> AsyncIterator[bytes]:
                for frame in frames:
                    yield (
                        b"data: "
                        + json.dumps({"jsonrpc": "2.0", "id": rid, "result": frame}).encode()
                        + b"\n\n"
                    )

            return StreamingResponse(sse(), media_type="text/event-stream")
        if method in GETS:
            task = self.tasks.get(params.get("id"))
            return answer(task) if task is not None else error(-32001, "Task not found")
        return error(-32601, f"Method not found: {method}")


@contextlib.asynccontextmanager
async def hybrid_stub() -> AsyncIterator[HybridStub]:
    stub = HybridStub()
    app = Starlette(
        routes=[
            Route("/.well-known/agent-card.json", stub.card),
            Route("/", stub.rpc, methods=["POST"]),
        ]
    )
    async with on_loopback(app) as url:
        stub.url = url
        yield stub
