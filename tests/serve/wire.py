"""Raw JSON-RPC over HTTP, for tests that pin exact bytes and shapes."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

V10 = {"A2A-Version": "1.0"}


def v03_message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def v10_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def legacy_message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "role": "user",
        "messageId": str(uuid.uuid4()),
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def envelope(method: str, params: Any = None, id: Any = "1") -> dict[str, Any]:
    """A JSON-RPC request as a dict (for a client of any kind: sync, async, a thread)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return body


async def rpc(
    http: httpx.AsyncClient,
    url: str,
    method: str,
    params: Any = None,
    *,
    id: Any = "1",
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    r = await http.post(url + "/", json=envelope(method, params, id), headers=headers or {})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    data = r.json()
    assert ("result" in data) != ("error" in data), data  # never both, never neither
    return data


async def raw(
    http: httpx.AsyncClient,
    url: str,
    content: bytes | str,
    *,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    h = {"content-type": "application/json", **(headers or {})}
    return await http.post(url + "/", content=content, headers=h)


async def sse(
    http: httpx.AsyncClient,
    url: str,
    method: str,
    params: Any,
    *,
    id: Any = "s1",
    headers: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    frames = []
    async with http.stream(
        "POST", url + "/", json=body, headers={"accept": "text/event-stream", **(headers or {})}
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
    return frames
