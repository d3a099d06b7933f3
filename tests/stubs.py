"""Small scripted HTTP peers on real loopback ports, for the tests."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from toolnexus.http.server import AsgiServer


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    events: list[Any] | None = None
    """An SSE answer instead: each item one event's ``data`` (a str as is, else JSON), or a
    ``(name, data)`` pair for an event with an ``event:`` line."""
    gap: float = 0.0
    """Seconds between the events."""
    cut_after: int | None = None
    """Drop the connection after this many events (a stream cut mid-way)."""


class _Cut(Exception):
    """Raised inside a streaming answer: the server drops the connection mid-body."""


_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_DATA_URL = re.compile(r"^data:([a-z]+/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]+={0,2})$")


def _base64(text: Any) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        return False
    return isinstance(text, str) and bool(text)


def openai_shape(body: Any) -> str | None:
    """Why OpenAI's chat completions would refuse ``body``'s user content parts (None: it takes
    them), from its documented shapes: a string, or parts ``text`` {text}, ``image_url``
    {image_url: {url: an http(s) URL or a ``data:image/...;base64,`` URL of png, jpeg, gif or
    webp}}, ``file`` {file: {file_data: a ``data:application/pdf;base64,`` URL, filename}}."""
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content")
        if m.get("role") != "user" or isinstance(content, str):
            continue
        if not isinstance(content, list) or not content:
            return f"messages[{i}].content must be a string or a non-empty array"
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"messages[{i}].content[{j}]"
            if kind == "text" and isinstance(part.get("text"), str):
                continue
            if kind == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                match = _DATA_URL.match(url)
                if url.startswith(("http://", "https://")) or (
                    match and match[1] in _IMAGES and _base64(match[2])
                ):
                    continue
                return f"{where}.image_url.url is not an image URL or an image data URL"
            if kind == "file":
                f = part.get("file") or {}
                match = _DATA_URL.match(f.get("file_data", ""))
                if match and match[1] == "application/pdf" and _base64(match[2]):
                    continue
                return f"{where}.file.file_data must be a data:application/pdf;base64 URL"
            return f"{where}: invalid content part {kind!r}"
    return None


def anthropic_shape(body: Any) -> str | None:
    """Why Anthropic's Messages API would refuse ``body``'s user content blocks (None: it takes
    them), from its documented shapes: ``text`` {text}, ``image`` {source: {type: base64,
    media_type: png, jpeg, gif or webp, data}}, ``document`` {source: {type: base64, media_type:
    application/pdf, data}}, ``tool_result``."""
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content")
        if m.get("role") != "user" or isinstance(content, str):
            continue
        for j, block in enumerate(content or []):
            kind = block.get("type") if isinstance(block, dict) else None
            where = f"messages.{i}.content.{j}"
            source = block.get("source") or {} if isinstance(block, dict) else {}
            if kind in ("text", "tool_result"):
                continue
            types = {"image": _IMAGES, "document": ("application/pdf",)}.get(kind or "")
            if types is None:
                return f"{where}: unknown block type {kind!r}"
            if source.get("type") != "base64" or source.get("media_type") not in types:
                return f"{where}.source: a base64 source of {', '.join(types)} is required"
            if not _base64(source.get("data")):
                return f"{where}.source.data is not base64"
    return None


class ScriptedServer:
    """Answers each POST with the next scripted :class:`Reply`, recording every request.
    ``shape``: ``openai_shape`` or ``anthropic_shape``, a request it finds wrong answered 400 in
    the provider's error shape (as the provider would), not with the script. ``respond``: once the
    script is spent, each request (path, headers, json) answered with ``respond(request)``."""

    def __init__(
        self,
        replies: list[Reply] | None = None,
        shape: Callable[[Any], str | None] | None = None,
        respond: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> None:
        self.shape = shape
        self.respond = respond
        self.replies = list(replies or [])
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.sent: list[float] = []  # when each streamed event was sent (the loop's clock)
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
        wrong = self.shape(self.requests[-1]["json"] or {}) if self.shape else None
        if wrong is not None:
            error = {"type": "invalid_request_error", "message": wrong}
            return Response(json.dumps({"error": error}), 400, media_type="application/json")
        if not self.replies and self.respond is not None:
            self.replies.append(self.respond(self.requests[-1]))
        if not self.replies:
            return Response(
                '{"error": "no scripted reply left"}', 500, media_type="application/json"
            )
        reply = self.replies.pop(0)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.events is not None:
            return StreamingResponse(
                self._events(reply), reply.status, media_type="text/event-stream"
            )
        content = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        return Response(content, reply.status, headers=reply.headers, media_type="application/json")

    async def _events(self, reply: Reply) -> AsyncGenerator[bytes, None]:
        assert reply.events is not None
        for i, item in enumerate(reply.events):
            if reply.cut_after is not None and i >= reply.cut_after:
                raise _Cut("the stub drops the connection")
            if i and reply.gap:
                await asyncio.sleep(reply.gap)
            name, data = item if isinstance(item, tuple) else (None, item)
            text = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            self.sent.append(asyncio.get_running_loop().time())
            yield f"{head}data: {text}\n\n".encode()
        if reply.cut_after is not None:
            raise _Cut("the stub drops the connection")

    @property
    def url(self) -> str:
        return self.server.url

    async def __aenter__(self) -> ScriptedServer:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()


def openai_text(text: str, prompt: int = 3, completion: int = 2) -> Reply:
    """A ``chat.completion`` as OpenAI documents it."""
    return Reply(
        body={
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "stub-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
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


def openai_stream(
    *pieces: str,
    calls: tuple[tuple[str, str, str], ...] = (),
    usage: tuple[int, int] = (3, 2),
    gap: float = 0.0,
    done: bool = True,
    cut_after: int | None = None,
) -> Reply:
    """A ``chat.completion.chunk`` stream as OpenAI documents it: a first chunk with the role,
    one per text piece, the tool calls' id and name then their arguments in two pieces (by
    index), a last chunk with ``finish_reason``, the usage chunk (``include_usage``: no choices),
    then ``[DONE]``."""

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, **more: Any) -> dict:
        choices = (
            []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "stub-model",
            "choices": choices,
            **more,
        }

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces]
    for index, (cid, name, args) in enumerate(calls):
        head = {
            "index": index,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    events.append(chunk({}, "tool_calls" if calls else "stop"))
    prompt, completion = usage
    events.append(
        chunk(
            None,
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        )
    )
    if done:
        events.append("[DONE]")
    return Reply(events=events, gap=gap, cut_after=cut_after)


def anthropic_stream(
    *pieces: str,
    calls: tuple[tuple[str, str, str], ...] = (),
    usage: tuple[int, int] = (3, 2),
    gap: float = 0.0,
    cut_after: int | None = None,
    error: str | None = None,
) -> Reply:
    """Anthropic's Messages stream as documented: ``message_start``, a text block
    (``content_block_start``, ``text_delta`` per piece, ``content_block_stop``), each tool call as a
    ``tool_use`` block with its input in ``input_json_delta`` pieces, ``message_delta`` with the
    output tokens, ``message_stop``; ``ping`` after the start. ``error``: an ``error`` event of that
    type after the text instead of the end."""
    inp, out = usage
    events: list[Any] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stub",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-stub",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": inp, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    index = 0
    if pieces:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        events += [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                },
            )
            for p in pieces
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if error is not None:
        events.append(("error", {"type": "error", "error": {"type": error, "message": "stub"}}))
        return Reply(events=events, gap=gap, cut_after=cut_after)
    for cid, name, args in calls:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
                },
            )
        )
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": out},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply(events=events, gap=gap, cut_after=cut_after)
