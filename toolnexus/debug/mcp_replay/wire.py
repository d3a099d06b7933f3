"""What the MCP replay writes besides the recorded answers: a recorded status as it may be served,
an answer made the live request's, and SSE."""

from __future__ import annotations

import copy
import json
from typing import Any

from ..replay.server import MAX_REQUEST
from .calls import SUBSCRIPTION, Call, json_object


def servable(status: int | None) -> int:
    """A recorded HTTP status as the replay serves it: one of 200-599 that may carry a body, else
    200 (a hostile cassette's 101 claimed a protocol switch, its 304 lost the answer, its 999
    broke the server's answer)."""
    if status is None or not 200 <= status <= 599 or status in (204, 205, 304):
        return 200
    return status


def made_live(message: dict[str, Any], call: Call, live: dict[str, Any]) -> dict[str, Any]:
    """A recorded server message for ``call`` as it goes to the live request: its progress token
    and the subscription it names are the live request's."""
    params = message.get("params")
    if not isinstance(params, dict):
        return message
    out = copy.deepcopy(message)
    live_meta = json_object(json_object(live.get("params")).get("_meta"))
    if "progressToken" in params and "progressToken" in live_meta:
        out["params"]["progressToken"] = live_meta["progressToken"]
    meta = out["params"].get("_meta")
    if isinstance(meta, dict) and SUBSCRIPTION in meta and call.method == "subscriptions/listen":
        meta[SUBSCRIPTION] = live.get("id")
    return out


async def sse_body(receive: Any) -> str | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return ""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks).decode("utf-8", "replace")


async def disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def sse_start(send: Any, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"x-content-type-options", b"nosniff"),
                *headers,
            ],
        }
    )


async def sse(send: Any, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.body",
            "body": b"event: message\ndata: " + data + b"\n\n",
            "more_body": True,
        }
    )
