"""Hostile input: 20,000 generated requests against a served toolkit, then normal service.

A seeded generator (reproducible: the seed is printed on failure) mixes malformed and truncated
JSON, wrong types at every field of the envelope and of each method's params, huge strings,
deep nesting, invalid UTF-8, wrong content types and the three dialects. Every answer must be a
well-formed JSON-RPC response or a 4xx, never a 5xx nor a traceback, and a rejected request must
create no task.
"""

from __future__ import annotations

import json
import random
import socket
import time
from typing import Any

import pytest

import toolnexus as tn

from ..helpers import assert_legal

SEED = 20261130
COUNT = 20_000

METHODS = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "CancelTask",
    "ListTasks",
    "SubscribeToTask",
    "tasks/pushNotificationConfig/set",
    "GetExtendedAgentCard",
    "agent/getAuthenticatedExtendedCard",
    "nope",
    "",
    "message/send/",
    "SENDMESSAGE",
]
WEIRD = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    1e308,
    "",
    "x" * 70_000,
    [],
    [1, 2],
    {},
    {"a": {"b": [None]}},
    "\u0000",
    "\ud7ff",
    "😀" * 100,
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "' OR 1=1 --",
    -(2**63),
    2**64,
]


def _weird(r: random.Random) -> Any:
    return r.choice(WEIRD)


def _part(r: random.Random) -> Any:
    shape = r.randrange(8)
    if shape == 0:
        return {"kind": "text", "text": r.choice(["hi", "slow 0", "confirm it", ""])}
    if shape == 1:
        return {"text": "hi"}
    if shape == 2:
        return {
            "kind": r.choice(["data", "file", "video", None, 3]),
            "data": _weird(r),
            "file": _weird(r),
        }
    if shape == 3:
        return {"text": "a", "data": {}, "url": "http://x"}
    if shape == 4:
        return {"raw": _weird(r), "mediaType": _weird(r)}
    return _weird(r)


def _message(r: random.Random) -> Any:
    if r.random() < 0.1:
        return _weird(r)
    msg: dict[str, Any] = {}
    for key, options in (
        ("messageId", ["m1", "", None, 5, ["x"]]),
        ("role", ["user", "ROLE_USER", "agent", "ROLE_AGENT", "", None, 1]),
        ("kind", ["message", None, 7]),
        ("contextId", [None, "", 5, "ctx"]),
        ("taskId", [None, "", 5, "ghost", {}]),
        ("metadata", [None, {"skill": 5}, {"skill": "nope"}, [], "x"]),
    ):
        if r.random() < 0.7:
            msg[key] = r.choice(options)
    if r.random() < 0.9:
        msg["parts"] = r.choice([[], [_part(r)], [_part(r), _part(r)], _weird(r), [_part(r)] * 50])
    return msg


def _params(r: random.Random) -> Any:
    if r.random() < 0.1:
        return _weird(r)
    params: dict[str, Any] = {}
    if r.random() < 0.8:
        params["message"] = _message(r)
    for key in (
        "id",
        "historyLength",
        "configuration",
        "pageSize",
        "pageToken",
        "status",
        "includeArtifacts",
        "contextId",
        "statusTimestampAfter",
    ):
        if r.random() < 0.3:
            params[key] = r.choice(
                [
                    _weird(r),
                    {
                        "blocking": _weird(r),
                        "returnImmediately": _weird(r),
                        "historyLength": _weird(r),
                    },
                ]
            )
    return params


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def generate(r: random.Random) -> tuple[bytes, str]:
    """One hostile request: (body, content type)."""
    kind = r.randrange(12)
    ctype = "application/json"
    if kind == 0:  # truncated valid request
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": _message(r)},
            }
        ).encode()
        body = body[: r.randrange(len(body))]
    elif kind == 1:  # invalid UTF-8
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe\xfd", "params": {}}'
    elif kind == 2:  # deep nesting
        body = (_nested(r.choice([50, 1000, 5000, 100_000]))).encode()
    elif kind == 3:  # wrong content type
        ctype = r.choice(
            [
                "text/plain",
                "application/x-www-form-urlencoded",
                "",
                "multipart/form-data",
                "application/json; charset=latin-1",
            ]
        )
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}
        ).encode()
    elif kind == 4:  # random bytes
        body = bytes(r.randrange(256) for _ in range(r.randrange(1, 200)))
    elif kind == 5:  # envelope types
        env: dict[str, Any] = {
            "jsonrpc": r.choice(["2.0", "1.0", 2, None]),
            "method": r.choice(METHODS + [5, None]),
        }
        if r.random() < 0.8:
            env["id"] = r.choice([1, "a", None, True, [1], {"x": 1}, 1.5])
        env["params"] = _params(r)
        body = json.dumps(env).encode()
    elif kind == 6:  # batch
        body = json.dumps(
            [
                {"jsonrpc": "2.0", "id": i, "method": "tasks/get", "params": {"id": "x"}}
                for i in range(r.randrange(0, 5))
            ]
        ).encode()
    elif kind == 7:  # huge string (stays under the body limit)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "m",
                        "role": "user",
                        "parts": [
                            {"kind": "text", "text": "fail " + "x" * r.randrange(1000, 500_000)}
                        ],
                    }
                },
            }
        ).encode()
    else:  # a method with generated params, any dialect
        env = {
            "jsonrpc": "2.0",
            "id": r.randrange(1_000_000),
            "method": r.choice(METHODS),
            "params": _params(r),
        }
        body = json.dumps(env, default=str).encode()
    return body, ctype


class Raw:
    """A keep-alive HTTP/1.1 client on a plain socket: fast enough for 20,000 requests."""

    def __init__(self, host: str, port: int) -> None:
        self.addr = (host, port)
        self.sock: socket.socket | None = None
        self.buf = b""

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection(self.addr, timeout=30)
            self.buf = b""
        return self.sock

    def post(
        self, body: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        sock = self._connect()
        head = f"POST / HTTP/1.1\r\nHost: {self.addr[0]}:{self.addr[1]}\r\nContent-Length: {len(body)}\r\n"
        if ctype:
            head += f"Content-Type: {ctype}\r\n"
        for k, v in (headers or {}).items():
            head += f"{k}: {v}\r\n"
        sock.sendall(head.encode() + b"\r\n" + body)
        while b"\r\n\r\n" not in self.buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        raw_head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(hdrs.get("content-length", "0"))
        if hdrs.get("transfer-encoding") == "chunked":  # a stream: read to the end of the chunks
            while not self.buf.endswith(b"0\r\n\r\n"):
                self.buf += sock.recv(65536)
            content, self.buf = self.buf, b""
        else:
            while len(self.buf) < length:
                self.buf += sock.recv(65536)
            content, self.buf = self.buf[:length], self.buf[length:]
        if hdrs.get("connection", "").lower() == "close":
            self.close()
        return status, hdrs, content

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def check(status: int, headers: dict[str, str], content: bytes, note: str) -> bool:
    """The answer is a well-formed JSON-RPC response (or an SSE stream of them) or a 4xx. Returns
    True when the request was rejected."""
    assert status < 500, (note, status, content[:300])
    assert b"Traceback" not in content and b'File "' not in content, (note, content[:300])
    if status == 204:
        assert content == b""
        return False
    if status != 200:
        return True
    if headers.get("content-type", "").startswith("text/event-stream"):
        frames = [line for line in content.split(b"\n") if line.startswith(b"data: ")]
        assert frames, (note, content[:300])
        for frame in frames:
            data = json.loads(frame[6:])
            assert data["jsonrpc"] == "2.0" and ("result" in data) != ("error" in data)
        return False
    data = json.loads(content)
    assert isinstance(data, dict) and data.get("jsonrpc") == "2.0", (note, content[:300])
    assert ("result" in data) != ("error" in data), (note, data)
    if "error" in data:
        err = data["error"]
        assert isinstance(err["code"], int) and isinstance(err["message"], str), (note, data)
        return True
    return False


def test_twenty_thousand_hostile_requests():
    import asyncio

    tk = asyncio.run(
        tn.create_toolkit(builtins=False, skills=[tn.SkillDef("greet", "says hello", "Say hello.")])
    )
    bus = tn.EventBus(
        history=1_000_000, history_bytes=1 << 40
    )  # keeps every transition, for the legality check at the end
    with tk.serve_in_thread(
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="fuzz", max_body=1024 * 1024, blocking_timeout=2.0),
        events=bus,
    ) as handle:
        store = handle.runner.store
        host, port = handle.url.removeprefix("http://").split(":")
        client = Raw(host, int(port))
        r = random.Random(SEED)
        rejected = created_ok = 0
        started = time.monotonic()
        for i in range(COUNT):
            body, ctype = generate(r)
            before = len(store)
            status, headers, content = client.post(body, ctype)
            note = f"seed {SEED} request {i}"
            if (
                status == 204
            ):  # a notification runs after its answer: let it land before counting again
                time.sleep(0.005)
            if check(status, headers, content, note):
                rejected += 1
                assert len(store) == before, (note, "a rejected request created a task", body[:200])
            elif len(store) > before:
                created_ok += 1
        elapsed = time.monotonic() - started
        # normal service afterwards
        ok_body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "after",
                "method": "message/send",
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "after",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "still ok"}],
                    }
                },
            }
        )
        status, _, content = client.post(ok_body.encode(), "application/json")
        assert (
            status == 200
            and json.loads(content)["result"]["artifacts"][0]["parts"][0]["text"]
            == "You said: still ok"
        )
        client.close()
        history = bus.history()
    assert rejected > COUNT // 2
    assert_legal(history)
    print(
        f"\n{COUNT} hostile requests in {elapsed:.1f}s: {rejected} rejected, {created_ok} created a task, 0 5xx"
    )


@pytest.mark.parametrize("depth", [1_000, 100_000, 1_000_000])
def test_deep_nesting_never_recurses(depth):
    import asyncio

    tk = asyncio.run(tn.create_toolkit(builtins=False))
    with tk.serve_in_thread(a2a=tn.A2AConfig(max_body=4 * 1024 * 1024)) as handle:
        host, port = handle.url.removeprefix("http://").split(":")
        raw = Raw(host, int(port))
        status, headers, content = raw.post(_nested(depth).encode(), "application/json")
        raw.close()
        assert status == 200
        assert json.loads(content)["error"]["code"] in (-32700, -32600)
