"""A peer that speaks the toolnexus legacy dialect exactly as A2A-WIRE.md shows it (the toolnexus
ports in other languages): a 0.3.0 card with only a top-level url, ``SendMessage`` answered with
the bare task (``submitted``), ``GetTask`` with ``{id}``; every other method is -32601.

Script: a task completes on its first GetTask with ``42`` (or ``echo: <text>``); "question" asks
for input, and the answer on the same taskId completes it with ``answered: <text>``; "fail"
fails with a reason; "slow" never finishes.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from . import on_loopback


class LegacyStub:
    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.methods: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def card(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "name": "legacy-desk",
                "description": "a toolnexus port in another language",
                "url": self.url + "/",
                "version": "0.1.0",
                "protocolVersion": "0.3.0",
                "capabilities": {"streaming": False, "pushNotifications": False},
                "defaultInputModes": ["text"],
                "defaultOutputModes": ["text"],
                "skills": [
                    {"id": "answer", "name": "answer", "description": "answers", "tags": ["answer"]}
                ],
            }
        )

    async def rpc(self, request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        method, params, rid = body["method"], body.get("params") or {}, body.get("id")
        self.methods.append(method)
        self.headers.append(dict(request.headers))
        if method == "SendMessage":
            msg = params["message"]
            assert msg["role"] == "user" and all("kind" in p for p in msg["parts"]), msg
            assert "kind" not in msg, msg
            text = "\n".join(p.get("text", "") for p in msg["parts"])
            if msg.get("taskId"):
                task = self.tasks[msg["taskId"]]
                task["status"] = {"state": "working"}
                task["_answer"] = text
            else:
                tid = str(uuid.uuid4())
                task = self.tasks[tid] = {
                    "id": tid,
                    "contextId": str(uuid.uuid4()),
                    "status": {"state": "submitted"},
                    "_text": text,
                }
            return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": _public(task)})
        if method == "GetTask":
            task = self.tasks.get(params.get("id"))
            if task is None:
                return JSONResponse(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {"code": -32001, "message": "Task not found"},
                    }
                )
            self._advance(task)
            return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": _public(task)})
        return JSONResponse(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32601, "message": f"Method not found: {method}"},
            }
        )

    def _advance(self, task: dict[str, Any]) -> None:
        state = task["status"]["state"]
        text = task["_text"]
        if state == "working" and "_answer" in task:
            self._done(task, f"answered: {task['_answer']}")
        elif state != "submitted":
            return
        elif "question" in text:
            task["status"] = {
                "state": "input-required",
                "message": {
                    "role": "agent",
                    "messageId": str(uuid.uuid4()),
                    "parts": [{"kind": "text", "text": "Which colour?"}],
                },
            }
        elif "fail" in text:
            task["status"] = {
                "state": "failed",
                "message": {
                    "role": "agent",
                    "messageId": str(uuid.uuid4()),
                    "parts": [{"kind": "text", "text": "no can do"}],
                },
            }
        elif "slow" in text:
            task["status"] = {"state": "working"}
        else:
            self._done(task, "42" if "6*7" in text else f"echo: {text}")

    def _done(self, task: dict[str, Any], text: str) -> None:
        task["status"] = {"state": "completed"}
        task["artifacts"] = [
            {"artifactId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": text}]}
        ]


def _public(task: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in task.items() if not k.startswith("_")}


@contextlib.asynccontextmanager
async def legacy_stub() -> AsyncIterator[LegacyStub]:
    stub = LegacyStub()
    app = Starlette(
        routes=[
            Route("/.well-known/agent-card.json", stub.card),
            Route("/", stub.rpc, methods=["POST"]),
        ]
    )
    async with on_loopback(app) as url:
        stub.url = url
        yield stub
