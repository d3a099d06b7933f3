"""Small scripted HTTP peers on real loopback ports, for the tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolnexus.http.server import AsgiServer


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None


class ScriptedServer:
    """Answers each POST with the next scripted :class:`Reply`, recording every request."""

    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.server = AsgiServer(
            Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST", "GET"])])
        )

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        self.times.append(asyncio.get_running_loop().time())
        self.requests.append(
            {
                "path": request.url.path,
                "headers": dict(request.headers),
                "json": json.loads(body) if body else None,
            }
        )
        if not self.replies:
            return Response(
                '{"error": "no scripted reply left"}', 500, media_type="application/json"
            )
        reply = self.replies.pop(0)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        content = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        return Response(content, reply.status, headers=reply.headers, media_type="application/json")

    @property
    def url(self) -> str:
        return self.server.url

    async def __aenter__(self) -> ScriptedServer:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()


def openai_text(text: str, prompt: int = 3, completion: int = 2) -> Reply:
    return Reply(
        body={
            "model": "stub-model",
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    )


def openai_calls(*calls: tuple[str, str, Any], prompt: int = 5, completion: int = 4) -> Reply:
    return Reply(
        body={
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {
                                    "name": name,
                                    "arguments": args
                                    if isinstance(args, str)
                                    else json.dumps(args),
                                },
                            }
                            for cid, name, args in calls
                        ],
                    }
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    )


def anthropic_text(text: str, inp: int = 3, out: int = 2) -> Reply:
    return Reply(
        body={
            "model": "claude-stub",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": inp, "output_tokens": out},
            "stop_reason": "end_turn",
        }
    )


def anthropic_calls(
    *calls: tuple[str, str, Any], text: str = "", inp: int = 5, out: int = 4
) -> Reply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls
    ]
    return Reply(
        body={
            "content": blocks,
            "usage": {"input_tokens": inp, "output_tokens": out},
            "stop_reason": "tool_use",
        }
    )
