"""How the client's calls reach a peer: one transport per binding (JSON-RPC in the 0.3 and 1.0
dialects, the toolnexus legacy dialect over JSON-RPC, HTTP+JSON in 1.0 or 0.3, gRPC in 1.0).

A transport takes an operation of the table (:mod:`toolnexus.protocol.operations`) and its params in
the transport's shapes (``Transport.shapes``), sends it, and hands back the result as that
binding answers it (in 1.0 JSON for HTTP+JSON and gRPC), or a stream's frames folded into tasks.
Every exchange is on the client's wire log however it ends; every read is bounded in size and
time (:mod:`toolnexus.http.fetch`). ``A2AClient`` picks one transport from the card, once, and
holds the fallbacks between them (``A2AClient._send_op``, ``A2AClient.stream``). The HTTP
transports are here with the registry of bindings (:func:`transport_for`, :func:`register_binding`);
gRPC's is :mod:`~toolnexus.client.grpc_transport`, what they all share
:mod:`~toolnexus.client.transport_base`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx

from .. import _json
from ..errors import PeerError, RPCError
from ..http import fetch
from ..http.fetch import exchange, read_body, sse_events, why
from ..protocol import rest
from ..protocol.dialects import Dialect
from ..protocol.model import Message, Task, new_id
from ..protocol.operations import BINDING_NAMES, V03_METHODS, Binding, Operation
from .grpc_transport import GrpcTransport
from .transport_base import (
    GRPC_REFUSALS,
    Caller,
    Transport,
    _Fold,
    _heard,
    about,
    as_task,
    json_named,
    rpc_error,
)

__all__ = [
    "Caller",
    "Transport",
    "JsonRpcTransport",
    "LegacyTransport",
    "RestTransport",
    "GrpcTransport",
    "transport_for",
    "register_binding",
    "as_task",
    "json_named",
    "GRPC_REFUSALS",
]


class _HttpTransport(Transport):
    """What JSON-RPC and HTTP+JSON share: a request, its bounded answer, SSE streams."""

    def request(
        self, op: Operation, params: dict[str, Any], stream: bool = False
    ) -> tuple[str, str, str, bytes, dict[str, str]]:
        """``(method name, HTTP method, URL, body, headers)`` of a call."""
        raise NotImplementedError

    def result(self, method: str, status: int, content: bytes, *, empty_ok: bool = False) -> Any:
        raise NotImplementedError

    async def call(self, op: Operation, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        """One call; ``empty_ok``: an answer with neither result nor error is a null result (the
        official SDK's 0.3 compat answers a delete that way)."""
        c = self.client
        method, verb, url, body, headers = self.request(op, params)
        started = time.perf_counter()
        try:
            r, content = await exchange(
                c.http,
                verb,
                url,
                headers=headers,
                content=body,
                limit=fetch.MAX_RESPONSE,
                timeout=c.timeout,
            )
        except httpx.HTTPError as exc:
            error, task_id = why(exc), about(params)
            c.traffic.sent(
                verb, url, started, headers, body, error=error, rpc_method=method, task_id=task_id
            )
            raise PeerError(f"{c.peer}: {method} failed: {error}") from None
        result: Any = None
        _heard(c, r.headers.get_list)
        try:
            result = self.result(method, r.status_code, content, empty_ok=empty_ok)
            return result
        finally:
            sent = dict(r.request.headers)
            task_id = about(params, result)
            c.traffic.sent(
                verb, url, started, sent, body, (r, content), rpc_method=method, task_id=task_id
            )

    async def stream(
        self, op: Operation, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """The frames of a stream as tasks. Each event is at most ``fetch.MAX_FRAME`` bytes and must arrive
        whole within ``timeout`` of its first byte; between events the peer may stay silent for
        ``max(timeout, 60)`` seconds. A peer that answers with a whole result instead of a stream
        is read as that result."""
        c = self.client
        method, verb, url, body, headers = self.request(op, params, stream=True)
        started = time.perf_counter()
        frames: list[str] = []
        task: Task | None = None
        response: httpx.Response | None = None
        content = b""
        error: str | None = None
        timeout = httpx.Timeout(c.timeout, read=max(c.timeout, 60.0))
        try:
            async with c.http.stream(
                verb, url, content=body, headers=headers, timeout=timeout
            ) as r:
                response, status = r, r.status_code
                _heard(c, r.headers.get_list)
                kind = r.headers.get("content-type", "")
                lines = kind.startswith(fetch.NDJSON_TYPES) and status == 200
                if lines:
                    note = (
                        f"{method} was answered as {kind.split(';')[0]}, not text/event-stream "
                        "(SSE): read one answer a line"
                    )
                    if note not in c.warnings:
                        c.warnings.append(note)
                elif not kind.startswith("text/event-stream"):
                    async with asyncio.timeout(c.timeout):
                        content = await read_body(r, fetch.MAX_RESPONSE)
                    yield as_task(self.result(method, status, content), sent)
                    return
                fold = _Fold(sent)
                async for frame in sse_events(r, c.timeout, fetch.MAX_FRAME, lines=lines):
                    frames.append(frame)
                    task = fold.step(c, self.result(method, status, frame.encode()))
                    yield task
                fold.end(c)
        except TimeoutError:
            error = f"AnswerTooSlow: no whole answer within {c.timeout:g}s"
            raise PeerError(f"{c.peer}: {method} stream failed: {error}") from None
        except httpx.HTTPError as exc:
            error = why(exc)
            lost = isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError)
            raise PeerError(f"{c.peer}: {method} stream failed: {error}", lost=lost) from None
        except (GeneratorExit, RPCError, PeerError):  # the caller had enough, or the peer said no
            raise
        except asyncio.CancelledError:
            error = "canceled"
            raise
        except BaseException as exc:  # a frame that is not what it claims to be
            error = why(exc)
            raise
        finally:
            answer = (response, content or "\n\n".join(frames))
            task_id = task.id if task is not None else about(params)
            c.traffic.sent(
                verb,
                url,
                started,
                headers,
                body,
                answer,
                error=error,
                rpc_method=method,
                frames=frames,
                task_id=task_id,
            )

    def _unreadable(self, method: str, status: int, content: bytes, what: str) -> PeerError:
        excerpt = self.client.traffic.mask(content[:200].decode("utf-8", "replace"))
        return PeerError(
            f"{self.client.peer}: {method} answered HTTP {status}{what}: {excerpt}", status=status
        )


class JsonRpcTransport(_HttpTransport):
    """JSON-RPC 2.0 at the interface URL, in the 0.3 or the 1.0 dialect."""

    binding = Binding.JSONRPC
    caller_dialect = True
    push_get_needs_id = False

    @property
    def shapes(self) -> Dialect:
        return self.dialect

    def request(
        self, op: Operation, params: dict[str, Any], stream: bool = False
    ) -> tuple[str, str, str, bytes, dict[str, str]]:
        method = self.method(op)
        if method is None:
            raise self.unsupported(op)
        body = _json.dumps({"jsonrpc": "2.0", "id": new_id(), "method": method, "params": params})
        return (
            method,
            "POST",
            self.client.endpoint,
            body,
            self.client.request_headers(self.dialect, stream=stream),
        )

    def result(self, method: str, status: int, content: bytes, *, empty_ok: bool = False) -> Any:
        refused = self._refused(method, status)
        if refused is not None:  # a refused credential, whatever the body says (an agent's JSON-RPC
            raise refused  # error, a proxy's {"error": "..."}, a page): the headers to check
        try:
            data = _json.loads(content)
        except (*_json.JSONDecodeError, ValueError):
            raise self._unreadable(method, status, content, " with no JSON-RPC body") from None
        if (
            empty_ok
            and isinstance(data, dict)
            and status == 200
            and data.get("error") is None
            and "result" not in data
        ):
            return None
        if not isinstance(data, dict) or (
            "result" not in data and not isinstance(data.get("error"), dict)
        ):
            raise PeerError(
                f"{self.client.peer}: {method} answered HTTP {status} without a JSON-RPC result",
                status=status,
            )
        if data.get("error") is not None:
            raise rpc_error(data["error"], self.client.traffic.mask)
        return data["result"]


class LegacyTransport(JsonRpcTransport):
    """The toolnexus legacy dialect (the ports in other languages): JSON-RPC with the 1.0 names of
    send, get and cancel only, the older shapes, no streams."""

    streams = False

    def method(self, op: Operation) -> str | None:
        return op.v10 if op.legacy else None


class RestTransport(_HttpTransport):
    """HTTP+JSON: 1.0's routes, or 0.3's under ``/v1/`` (calls are built and answers read in the
    1.0 shapes either way; ``protocol.rest`` converts 0.3's)."""

    binding = Binding.HTTP_JSON

    def request(
        self, op: Operation, params: dict[str, Any], stream: bool = False
    ) -> tuple[str, str, str, bytes, dict[str, str]]:
        v03 = self.dialect is Dialect.V03
        verb, path, payload = rest.request_for(op, params, v03=v03)
        headers = self.client.request_headers(self.dialect, stream=stream)
        if v03:
            headers["A2A-Version"] = "0.3"
        if payload is None:
            del headers["content-type"]
        body = b"" if payload is None else _json.dumps(payload)
        return (
            self.method(op) or op.v10,
            verb,
            self.client.endpoint.rstrip("/") + path,
            body,
            headers,
        )

    def result(self, method: str, status: int, content: bytes, *, empty_ok: bool = False) -> Any:
        """An HTTP+JSON answer: the result is the whole body; a failure is ``{"error": {...}}``."""
        c = self.client
        if not content.strip() and 200 <= status < 300:
            return {}
        try:
            data = _json.loads(content)
        except (*_json.JSONDecodeError, ValueError):
            hint = " (it serves no HTTP+JSON binding there)" if status in (404, 405) else ""
            raise self._unreadable(method, status, content, f"{hint} with no JSON body") from None
        error = rest.parse_error(status, data, c.traffic.mask)
        if error is not None:
            raise error
        if not 200 <= status < 300:
            raise self._refused(method, status) or PeerError(
                f"{c.peer}: {method} answered HTTP {status} without an A2A error", status=status
            )
        if self.dialect is not Dialect.V03:
            return data
        try:
            return rest.v03_answer(V03_METHODS[method].key, data)
        except RPCError as exc:  # the peer's answer, not our call, is what is wrong
            raise PeerError(
                f"{c.peer}: {method} answered a shape A2A 0.3 does not have: {exc.message}",
                status=status,
            ) from None


_BY_BINDING: dict[Binding, type[Transport]] = {
    Binding.JSONRPC: JsonRpcTransport,
    Binding.HTTP_JSON: RestTransport,
    Binding.GRPC: GrpcTransport,
}


Factory = Callable[[Caller, Dialect], Transport]
"""Makes a transport for a client that speaks a dialect (a :class:`Transport` subclass is one)."""

CUSTOM: dict[str, Factory] = {}
"""The bindings a library user registered, by the ``protocolBinding`` URI a card names them with."""


def register_binding(uri: str, factory: Factory) -> None:
    """Let every client speak a binding of your own: a card interface whose ``protocolBinding``
    is ``uri`` is reached through ``factory(client, dialect)``, a :class:`Transport` whose
    ``call`` and ``stream`` take the operations of the table in 1.0's shapes (its ``binding``:
    the standard binding whose addressing it follows, which decides where credentials may go).
    A client takes it where the card lists it first, or where asked (``A2AClient(binding=uri)``).

    Raises:
        ValueError: ``uri`` names a standard binding, or is not a URI.
    """
    if Binding.named(uri) is not None or uri.lower() in BINDING_NAMES or ":" not in uri:
        raise ValueError(f"a custom binding is named by a URI of its own, not {uri!r}")
    CUSTOM[uri] = factory


def transport_for(client: Caller, binding: Binding, dialect: Dialect) -> Transport:
    """The transport of ``binding`` in ``dialect`` (JSON-RPC in the legacy dialect is its own)."""
    if binding is Binding.JSONRPC and dialect is Dialect.LEGACY:
        return LegacyTransport(client, dialect)
    return _BY_BINDING[binding](client, dialect)
