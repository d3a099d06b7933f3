"""How the client's calls reach a peer: one transport per binding (JSON-RPC in the 0.3 and 1.0
dialects, the toolnexus legacy dialect over JSON-RPC, HTTP+JSON in 1.0 or 0.3, gRPC in 1.0).

A transport takes an operation of the table (:mod:`toolnexus.protocol.operations`) and its params in
the transport's shapes (``Transport.shapes``), sends it, and hands back the result as that
binding answers it (in 1.0 JSON for HTTP+JSON and gRPC), or a stream's frames folded into tasks.
Every exchange is on the client's wire log however it ends; every read is bounded in size and
time (:mod:`toolnexus.http.fetch`). ``A2AClient`` picks one transport from the card, once, and
holds the fallbacks between them (``A2AClient._send_op``, ``A2AClient.stream``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import replace
from typing import Any, ClassVar, Protocol

import httpx

from .. import _json, trace
from ..errors import RPC_ERRORS, PeerError, RPCError, UnsupportedOperationError
from ..http import fetch
from ..http.fetch import AnswerTooLarge, exchange, read_body, sse_events, why
from ..protocol import grpc_binding, rest
from ..protocol.card import elsewhere
from ..protocol.dialects import Dialect, json_names, parse_message, parse_task
from ..protocol.extensions import HEADER, LEGACY_HEADER, header_value, requested
from ..protocol.model import Message, Part, Task, TaskState, TaskStatus, add_words, new_id
from ..protocol.operations import BINDING_NAMES, V03_METHODS, Binding, Operation
from ..protocol.stream import Fault, StreamCheck, event_of
from ..traffic import TrafficRecorder, task_id_of

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
    "GRPC_REFUSALS",
]


class Caller(Protocol):
    """What a transport uses of the client whose calls it carries (:class:`~toolnexus.client.peer.A2AClient`
    is the one there is), named here so that the transports sit below the client that picks them."""

    endpoint: str
    timeout: float
    traffic: TrafficRecorder
    headers: dict[str, str]
    credentials_sent: bool
    extensions: list[str]
    activated: list[str]
    warnings: list[str]
    """What the caller is told of a peer's departures its calls got past."""

    @property
    def peer(self) -> str: ...

    @property
    def http(self) -> httpx.AsyncClient: ...

    def request_headers(self, dialect: Dialect, stream: bool = False) -> dict[str, str]: ...

    def sent_headers(self) -> dict[str, str]: ...

    def channel_credentials(self) -> Any: ...


GRPC_REFUSALS = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
"""gRPC's statuses for HTTP's refusals of credentials."""


class Transport:
    """One binding's way to a peer, for one client (its HTTP client, headers, wire log, timeout)."""

    binding: ClassVar[Binding]
    caller_dialect: ClassVar[bool] = False
    """The caller's dialect holds on this binding (JSON-RPC speaks every dialect at one URL);
    otherwise the card's interface decides it."""
    streams: ClassVar[bool] = True
    """Whether the binding has streams at all (the legacy dialect has none)."""
    push_get_needs_id: ClassVar[bool] = True
    """A push config is got by its id (the route or the request names one)."""

    def __init__(self, client: Caller, dialect: Dialect) -> None:
        self.client = client
        self.dialect = dialect

    @property
    def shapes(self) -> Dialect:
        """The dialect whose shapes calls are built in and answers read in: 1.0's, but for
        JSON-RPC (0.3's REST routes are converted to and from them, see ``protocol.rest``)."""
        return Dialect.V10

    def method(self, op: Operation) -> str | None:
        """What a call of ``op`` is named on the wire and in the log: its method in the dialect
        spoken (None: not in this dialect)."""
        return op.v03 if self.dialect is Dialect.V03 else op.v10

    def elsewhere(self, endpoint: str, named: str) -> bool:
        """Whether ``endpoint`` is on another host than the one the caller ``named``."""
        return elsewhere(endpoint, named, self.binding)

    async def call(self, op: Operation, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        raise NotImplementedError

    def stream(
        self, op: Operation, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        raise NotImplementedError

    async def close(self) -> None:
        """Close what the transport opened (it reopens on the next call)."""

    def _refused(self, method: str, status: int) -> PeerError | None:
        """The error of an answer refusing the credentials (401, 403; gRPC's UNAUTHENTICATED and
        PERMISSION_DENIED are their statuses), else None."""
        if status not in (401, 403):
            return None
        meaning = "authentication required" if status == 401 else "invalid credentials"
        said = f"HTTP {status}" if self.binding is not Binding.GRPC else GRPC_REFUSALS[status]
        return PeerError(
            f"{self.client.peer}: {method} answered {said} ({meaning}): check the "
            "headers/credentials",
            status=status,
        )

    def unsupported(self, op: Operation) -> UnsupportedOperationError:
        """The error for an operation this transport's dialect does not have."""
        what = "streaming" if op.streams else f"{op.key} operation"
        return UnsupportedOperationError(f"the {self.dialect.value} dialect has no {what}")


def about(params: dict[str, Any], result: Any = None) -> str | None:
    """The task a call is about, for its line on the wire log: the task its answer is or names,
    else the one its params name (a get, a cancel, an answer to a question); in any dialect."""
    return task_id_of({"params": params}, {"result": result})


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
                    task = fold.apply(self.result(method, status, frame.encode()))
                    _faults(c, fold.faults)
                    yield task.snapshot()
                _faults(c, fold.check.end())
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


class GrpcTransport(Transport):
    """gRPC on the interface's ``host:port``: 1.0's service, or 0.3's (calls are built and answers
    read in the 1.0 shapes either way; ``grpc_binding`` converts 0.3's); needs
    ``pip install 'toolnexus[grpc]'``."""

    binding = Binding.GRPC

    def __init__(self, client: Caller, dialect: Dialect) -> None:
        super().__init__(client, dialect)
        self._channel: Any = None  # opened on first use

    async def close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    def method(self, op: Operation) -> str | None:
        if self.dialect is not Dialect.V03:
            return op.v10
        return op.v03_grpc[0] if op.v03_grpc else None

    def _stub(
        self, op: Operation, params: dict[str, Any]
    ) -> tuple[Any, Any, str, list[tuple[str, str]]]:
        """``(stub method, request message, wire URL, metadata)`` of ``op`` with ``params``."""
        c = self.client
        v03 = self.dialect is Dialect.V03
        if v03 and op.v03_grpc is None:
            raise self.unsupported(op)
        _, _, pb_grpc = grpc_binding.modules(v03)
        if self._channel is None:
            self._channel = grpc_binding.channel(
                c.endpoint, fetch.MAX_RESPONSE, c.channel_credentials()
            )
        metadata = [("a2a-version", "0.3" if v03 else "1.0")] + [
            (k.lower(), v) for k, v in c.sent_headers().items()
        ]
        if c.extensions:
            metadata.append((HEADER.lower(), header_value(c.extensions)))
        parent = trace.outgoing()
        if parent is not None:
            metadata.append((trace.HEADER, parent))
        if v03 and op.v03_grpc is not None:
            rpc, service = op.v03_grpc[0], grpc_binding.SERVICE_V03
            request = grpc_binding.to_proto(
                op.v03_grpc[1], grpc_binding.v03_request(op.key, params), v03=True
            )
        else:
            rpc, service = op.v10, grpc_binding.SERVICE
            request = grpc_binding.to_proto(op.grpc_request, params)
        url = f"grpc://{grpc_binding.target_of(c.endpoint)}/{service}/{rpc}"
        return getattr(pb_grpc.A2AServiceStub(self._channel), rpc), request, url, metadata

    def _answer(self, op: Operation, reply: Any) -> Any:
        """A reply (or stream message) as the 1.0 JSON the client parses."""
        data = grpc_binding.to_json(reply)
        if self.dialect is not Dialect.V03:
            return data
        try:
            return rest.v03_answer(op.key, data)
        except RPCError as exc:  # the peer's answer, not our call, is what is wrong
            raise PeerError(
                f"{self.client.peer}: {op.v03_grpc and op.v03_grpc[0]} answered a shape A2A 0.3 "
                f"does not have: {exc.message}"
            ) from None

    def _failed(self, rpc: str, exc: BaseException) -> Exception:
        c = self.client
        if not hasattr(exc, "code"):  # no status: the channel or the message failed
            return PeerError(f"{c.peer}: {rpc} failed: {why(exc)}")
        rpc_error: Any = exc  # a grpc.RpcError, by its code()
        refused = {name: status for status, name in GRPC_REFUSALS.items()}
        status = refused.get(rpc_error.code().name)
        if status is not None:  # the credentials refused, as HTTP's 401 and 403 are
            return self._refused(rpc, status) or PeerError(rpc)
        return grpc_binding.error_of(exc, c.traffic.mask) or PeerError(
            f"{c.peer}: {rpc} failed: {rpc_error.code().name}: "
            f"{c.traffic.mask(rpc_error.details() or '')}"
        )

    async def call(self, op: Operation, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        c = self.client
        stub, message, url, metadata = self._stub(op, params)
        rpc = self.method(op) or op.v10
        # the call as the wire log shows it: its method, URL, start, metadata and body
        asked = ("POST", url, time.perf_counter(), dict(metadata), _json.dumps(params))
        try:
            call = stub(message, metadata=metadata, timeout=c.timeout)
            reply = await call
            if c.extensions:
                _heard(c, _metadata(await call.initial_metadata()))
        except Exception as exc:
            failed = self._failed(rpc, exc)
            answer = (getattr(failed, "http_status", None), b"")
            c.traffic.sent(
                *asked,
                answer,
                error=str(failed),
                rpc_method=rpc,
                response_headers=_trailers(exc),
                task_id=about(params),
            )
            raise failed from None
        result = self._answer(op, reply)
        answer = (200, _json.dumps(result))
        c.traffic.sent(
            *asked,
            answer,
            rpc_method=rpc,
            response_headers=_trailers(None),
            task_id=about(params, result),
        )
        return result

    async def stream(
        self, op: Operation, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """A server-streaming call's messages as tasks; each must come within ``max(timeout, 60)``
        seconds of the one before. On the wire log however it ends."""
        c = self.client
        stub, message, url, metadata = self._stub(op, params)
        rpc = self.method(op) or op.v10
        # the call as the wire log shows it: its method, URL, start, metadata and body
        asked = ("POST", url, time.perf_counter(), dict(metadata), _json.dumps(params))
        frames: list[str] = []
        error: str | None = None
        trailers: dict[str, str] = {}
        fold = _Fold(sent)
        call = stub(message, metadata=metadata)
        try:
            if c.extensions:
                async with asyncio.timeout(max(c.timeout, 60.0)):
                    _heard(c, _metadata(await call.initial_metadata()))
            replies = call.__aiter__()
            while True:
                try:
                    async with asyncio.timeout(max(c.timeout, 60.0)):
                        reply = await replies.__anext__()
                except StopAsyncIteration:
                    break
                frame = self._answer(op, reply)
                frames.append(_json.dumps(frame).decode())
                task = fold.apply(frame)
                _faults(c, fold.faults)
                yield task.snapshot()
            _faults(c, fold.check.end())
        except TimeoutError:
            error = f"AnswerTooSlow: no message within {max(c.timeout, 60.0):g}s"
            raise PeerError(f"{c.peer}: {rpc} stream failed: {error}") from None
        except (GeneratorExit, asyncio.CancelledError):
            error = "canceled"
            raise
        except PeerError as exc:  # an answer in a shape its version does not have
            error = str(exc)
            raise
        except Exception as exc:
            failed = self._failed(rpc, exc)
            error, trailers = str(failed), _trailers(exc)
            raise failed from None
        finally:
            call.cancel()
            answer = (None if error else 200, "\n\n".join(frames))
            task_id = fold.task.id if fold.task is not None else about(params)
            c.traffic.sent(
                *asked,
                answer,
                error=error,
                rpc_method=rpc,
                response_headers=trailers if error else _trailers(None),
                frames=frames,
                task_id=task_id,
            )


def _faults(c: Caller, faults: list[Fault]) -> None:
    """Warn of a stream's faults as they come (each once)."""
    for fault in faults:
        if (note := f"{c.peer}: {fault}") not in c.warnings:
            c.warnings.append(note)


def _heard(c: Caller, given: Any) -> None:
    """Note the extensions a peer's answer names as activated (``given(name)``: a response
    header's values), when the caller asked for any."""
    if c.extensions:
        c.activated = requested([*given(HEADER), *given(LEGACY_HEADER)])


def _metadata(items: Any) -> Any:
    """gRPC metadata as ``given(name)`` reads it (every value of a key, case-blind)."""
    pairs = [(str(k).lower(), v) for k, v in items or ()]
    return lambda name: [v for k, v in pairs if k == name.lower() and isinstance(v, str)]


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


# -- answers and frames, whichever transport they came by ------------------------------------------


def rpc_error(error: Any, mask: Any = str) -> RPCError:
    """A JSON-RPC error object as the RPCError of its code (peer text masked and cut)."""
    if not isinstance(error, dict):
        return RPCError(mask(f"peer error: {error!r}"[:500]))
    code = error.get("code")
    message = mask(str(error.get("message") or "")[:2000])
    cls = RPC_ERRORS.get(code) if isinstance(code, int) else None
    if cls is None:
        err = RPCError(message or f"peer error {code}", data=error.get("data"))
        err.code = code if isinstance(code, int) else -32603
        return err
    return cls(message or None, data=error.get("data"))


def json_named(result: Any) -> Any:
    """A peer's answer with every field by its JSON name: ProtoJSON readers take the proto names
    too (``context_id`` for ``contextId``, A2A 1.0 §5.5), so this client does; a caller's own
    keys (metadata, data parts) are left as they are."""
    try:
        return json_names(result)
    except RPCError as exc:
        raise PeerError(f"the peer's answer is not readable: {exc.message}") from None


def as_task(result: Any, sent: Message | None) -> Task:
    """A send/get result as a Task: a task (wrapped or not), or a Message reply."""
    result = json_named(result)
    if isinstance(result, dict):
        if "task" in result and isinstance(result["task"], dict):
            return parse_task(result["task"])
        if "message" in result and isinstance(result["message"], dict) and "id" not in result:
            return _message_task(parse_message(result["message"], inbound=False), sent)
        if "messageId" in result and "status" not in result:
            return _message_task(parse_message(result, inbound=False), sent)
        return parse_task(result)
    raise PeerError(f"the peer answered with {type(result).__name__}, not a task or a message")


def _message_task(reply: Message, sent: Message | None) -> Task:
    """A peer that answers with a Message (no task): shown as a completed task holding it."""
    history = [sent, reply] if sent is not None else [reply]
    return Task(
        reply.task_id or "",
        reply.context_id or (sent.context_id if sent else "") or "",
        TaskStatus(TaskState.COMPLETED),
        history,
    )


class _Fold:
    """A stream's frames (any dialect) folded into the task they are about, frame by frame.

    Text streamed as appends is one text, not a part per piece. An append the task frame before
    it already holds is not added again: a peer that sends the task first and then the events
    queued meanwhile (the official SDK's subscribe) may send the last piece it applied twice,
    once in the task and once as an event (seen as a reply with one piece doubled). Only the
    first append after a task frame can be such an echo, and only when the task's artifact was
    itself made of appended pieces (more than one part) and ends with exactly that piece."""

    def __init__(self, sent: Message | None) -> None:
        self.sent = sent
        self.task: Task | None = None
        self.echo: dict[str, Part] = {}  # an artifact's last piece in the last task frame
        self.words = ""  # the text said in status messages since the state last changed
        self.snapshots: bool | None = None  # each holds the text so far (else: each a piece)
        self.check = StreamCheck()  # the stream's faults, said as warnings as they come
        self.faults: list[Fault] = []  # the last frame's
        self.ended: TaskStatus | None = None  # the first terminal status: the task's for good

    def apply(self, result: Any) -> Task:
        task, sent = self.task, self.sent
        if not isinstance(result, dict):
            raise PeerError("a stream frame is not an object")
        result = json_named(result)
        self.faults = self.check.frame(result)
        kind, body = event_of(result)
        if kind == "task":
            task = parse_task(body)
            self.echo = {a.artifact_id: a.parts[-1] for a in task.artifacts if len(a.parts) > 1}
            unfinished = not (task.state.terminal or task.state.interrupted)
            self.words = task.said if unfinished and not task.artifacts_text else ""
            self.snapshots = None
        elif kind == "message":
            msg = parse_message(body, inbound=False)
            if task is None:
                task = _message_task(msg, sent)
            else:
                task.history.append(msg)
        else:
            if task is None:
                task = Task(
                    str(body.get("taskId", "")),
                    str(body.get("contextId", "")),
                    TaskStatus(TaskState.SUBMITTED),
                    [sent] if sent else [],
                )
            if kind == "status-update":
                self._status(task, parse_task({"id": task.id, "status": body.get("status") or {}}))
            else:
                self._artifact(task, body)
        if self.ended is not None and task.status.state is not self.ended.state:
            task.status = self.ended  # a terminal state never changes: the late frame is a warning
        elif self.ended is None and task.status.state.terminal:
            self.ended = task.status
        self.task = task
        return task

    def _status(self, task: Task, update: Task) -> None:
        """A status update. The words a peer says as the agent's status messages while the task
        is unfinished are one message as they come: each a piece (Strands, the Gemini CLI) or each
        the text so far (LangGraph), told apart by the second (it starts with the first: the text
        so far). When the state moves on, that message stays in the history, as the SDKs' task
        managers keep a status message, so a turn whose only words came so is still a reply (the
        Gemini CLI ends its turns input-required with no message). An update in the same state
        without a message keeps the words."""
        status, old = update.status, task.status
        if status.state is not old.state:
            if self.words and old.message is not None:
                if all(m.message_id != old.message.message_id for m in task.history):
                    task.history.append(old.message)
            self.words, self.snapshots = "", None
        message = status.message
        if message is None and status.state is old.state and self.words:
            status.message = old.message
        elif (
            message is not None
            and message.role == "agent"
            and not (status.state.terminal or status.state.interrupted)
        ):
            text = "".join(p.text or "" for p in message.parts if p.kind == "text")
            words, self.snapshots = add_words(self.words, text, self.snapshots)
            if len(words) > fetch.MAX_RESPONSE:
                raise AnswerTooLarge(
                    f"a reply streamed as status messages passed {fetch.MAX_RESPONSE:,} "
                    "characters; at most that much is kept"
                )
            self.words = words
            others = [p for p in message.parts if p.kind != "text"]
            status.message = replace(message, parts=[Part.of_text(words), *others])
        task.status = status

    def _artifact(self, task: Task, body: dict[str, Any]) -> None:
        art = parse_task({"id": task.id, "artifacts": [body.get("artifact") or {}]}).artifacts
        if not art:
            return
        new = art[0]
        echo = self.echo.pop(new.artifact_id, None)
        index = next(
            (i for i, a in enumerate(task.artifacts) if a.artifact_id == new.artifact_id), None
        )
        if index is None:
            task.artifacts.append(new)
            return
        if not body.get("append"):
            task.artifacts[index] = new
            return
        if echo is not None and new.parts == [echo]:
            return  # the piece the task frame just before already held
        same = task.artifacts[index]
        parts = list(same.parts)
        more = list(new.parts)
        if parts and more and parts[-1].kind == "text" and more[0].kind == "text":
            # a text streamed in pieces is one text, not a line per piece; bounded like an answer,
            # since each piece copies what came before
            text = (parts[-1].text or "") + (more.pop(0).text or "")
            if len(text) > fetch.MAX_RESPONSE:
                raise AnswerTooLarge(
                    f"a streamed artifact passed {fetch.MAX_RESPONSE:,} characters; at most that "
                    "much is kept"
                )
            parts[-1] = replace(parts[-1], text=text)
        # a new value: a task yielded before this frame keeps the artifact it had
        task.artifacts[index] = replace(same, parts=parts + more)


def _trailers(exc: BaseException | None) -> dict[str, str]:
    """A gRPC call's status as its trailer carries it (``grpc-status``, a number: 0 is OK; the
    Wire names it), from the call's error (None: it succeeded); none when no status came back."""
    if exc is None:
        return {"grpc-status": "0"}
    code = getattr(exc, "code", None)
    value = getattr(code(), "value", None) if callable(code) else None
    return {"grpc-status": str(value[0])} if isinstance(value, tuple) else {}
