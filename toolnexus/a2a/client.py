"""The outbound A2A client: any peer, whichever dialect it speaks, with every exchange on the wire log.

Dialect ``auto`` follows the 1.x SDK's rule on the card (a JSONRPC interface of version 1.x
means 1.0, otherwise 0.3 at the card's ``url``), plus one fallback: when a 0.3 send gets -32601
(the toolnexus ports in other languages answer only ``SendMessage``/``GetTask``), it is retried once
in the toolnexus legacy dialect, and that is remembered for the peer. ``"0.3"``, ``"1.0"`` and
``"legacy"`` force one. ``client.dialect`` and ``client.dialect_reason`` say what is in use and why.

Results come back as the canonical model (``Task``); peers' small differences (results without
``kind``, errors without ``id``, timestamps with or without offsets) are tolerated.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import httpx

from .. import _json, trace
from ..errors import (
    RPC_ERRORS,
    MethodNotFoundError,
    PeerError,
    RPCError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..events import EventBus, TaskEvent
from ..traffic import TrafficRecorder
from .cassette import CassetteWriter
from .card import CARD_PATH, LEGACY_CARD_PATH, AgentCard, origin, origin_text
from . import grpc_binding, rest
from .dialects import Dialect, parse_message, parse_task, render_message
from .model import Message, Part, Task, TaskState, TaskStatus, new_id
from .push import TOKEN_HEADER, PushConfig, parse_push_config, render_push_config

__all__ = ["A2AClient", "fetch_card"]

_BINDINGS = {"auto": None, "jsonrpc": "JSONRPC", "json-rpc": "JSONRPC", "http+json": "HTTP+JSON", "rest": "HTTP+JSON",
             "grpc": "GRPC"}

_METHODS = {
    Dialect.V03: {"send": "message/send", "get": "tasks/get", "cancel": "tasks/cancel", "stream": "message/stream",
                  "resubscribe": "tasks/resubscribe", "push-set": "tasks/pushNotificationConfig/set",
                  "push-get": "tasks/pushNotificationConfig/get", "push-list": "tasks/pushNotificationConfig/list",
                  "push-delete": "tasks/pushNotificationConfig/delete"},
    Dialect.V10: {"send": "SendMessage", "get": "GetTask", "cancel": "CancelTask", "stream": "SendStreamingMessage",
                  "resubscribe": "SubscribeToTask", "list": "ListTasks",
                  "push-set": "CreateTaskPushNotificationConfig", "push-get": "GetTaskPushNotificationConfig",
                  "push-list": "ListTaskPushNotificationConfigs", "push-delete": "DeleteTaskPushNotificationConfig"},
    Dialect.LEGACY: {"send": "SendMessage", "get": "GetTask", "cancel": "CancelTask"},
}
_OPS = {name: op for methods in _METHODS.values() for op, name in methods.items()}


MAX_CARD = 2 * 1024 * 1024
"""The largest agent card read, in bytes."""
MAX_RESPONSE = 16 * 1024 * 1024
"""The largest JSON-RPC answer read, in bytes."""
MAX_FRAME = 4 * 1024 * 1024
"""The largest SSE event read, in bytes."""


class AnswerTooLarge(httpx.HTTPError):
    """A peer's answer went past the size this client reads."""


class AnswerTooSlow(httpx.TimeoutException):
    """A peer's answer did not arrive whole within the time this client gives it."""


async def _read_body(r: httpx.Response, limit: int) -> bytes:
    """The whole body of ``r``, refused past ``limit`` bytes (after decompression)."""
    declared = r.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise AnswerTooLarge(f"the answer is {int(declared):,} bytes; at most {limit:,} are read")
    chunks, size = [], 0
    async for chunk in r.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise AnswerTooLarge(f"the answer passed {limit:,} bytes; at most that much is read")
        chunks.append(chunk)
    return b"".join(chunks)


async def _exchange(http: httpx.AsyncClient, method: str, url: str, *, headers: Mapping[str, str],
                    content: bytes = b"", limit: int, timeout: float) -> tuple[httpx.Response, bytes]:
    """One request and its whole answer: at most ``limit`` bytes, within ``timeout`` seconds in all
    (httpx's own timeout is per read: a peer trickling a byte at a time would never trip it)."""
    try:
        async with asyncio.timeout(timeout):
            async with http.stream(method, url, content=content, headers=dict(headers), timeout=timeout) as r:
                return r, await _read_body(r, limit)
    except TimeoutError:
        raise AnswerTooSlow(f"no whole answer within {timeout:g}s") from None


async def fetch_card(url: str, headers: Mapping[str, str] | None = None, timeout: float = 10.0, *,
                     http: httpx.AsyncClient | None = None, traffic: TrafficRecorder | None = None,
                     version: str = "1.0") -> AgentCard:
    """Fetch a card from its URL, or from a base URL (``/.well-known/agent-card.json``, then
    ``/.well-known/agent.json``). Sends ``A2A-Version: version`` (the newest the caller speaks;
    a server that serves one card per version picks by it) unless ``headers`` name one.

    Raises:
        PeerError: nothing answered, or no card was found, or it is not a JSON object.
    """
    own = http is None
    client = http or httpx.AsyncClient(timeout=timeout)
    if not any(k.lower() == "a2a-version" for k in (headers or {})):
        headers = {"A2A-Version": version, **(headers or {})}
    try:
        if "/.well-known/" in url or url.endswith(".json"):
            candidates = [url]
        else:
            base = url.rstrip("/")
            candidates = [base + CARD_PATH, base + LEGACY_CARD_PATH]
        last = ""
        for candidate in candidates:
            started = time.perf_counter()
            try:
                r, content = await _exchange(client, "GET", candidate, headers=headers or {}, limit=MAX_CARD,
                                             timeout=timeout)
            except httpx.HTTPError as exc:
                if traffic is not None:
                    traffic.record(direction="out", method="GET", url=candidate, status=None, started=started,
                                   request_headers=dict(headers or {}), request_body=b"", error=_why(exc))
                raise PeerError(f"cannot fetch the agent card at {candidate}: {_why(exc)}") from None
            if traffic is not None:
                traffic.record(direction="out", method="GET", url=candidate, status=r.status_code, started=started,
                               request_headers=dict(r.request.headers), request_body=b"",
                               response_headers=dict(r.headers), response_body=content)
            if r.status_code == 404 and candidate != candidates[-1]:
                last = f"{candidate} answered 404"
                continue
            if r.status_code != 200:
                raise PeerError(f"the agent card at {candidate} answered HTTP {r.status_code}", status=r.status_code)
            try:
                raw = _json.loads(content)
            except (*_json.JSONDecodeError, ValueError):
                raise PeerError(f"the agent card at {candidate} is not JSON") from None
            if not isinstance(raw, dict):
                raise PeerError(f"the agent card at {candidate} is not a JSON object")
            return AgentCard(raw, candidate)
        raise PeerError(f"no agent card found: {last}")
    finally:
        if own:
            await client.aclose()


def _why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class A2AClient:
    """Talks to one A2A peer.

    Args:
        card_or_url: the card (``AgentCard`` or its JSON), a card URL, or the agent's base URL.
        headers: sent with every request (values are masked on the wire log).
        timeout: seconds one HTTP request may take (streams: between frames).
        dialect: ``"auto"``, ``"0.3"``, ``"1.0"`` or ``"legacy"``.
        binding: ``"auto"`` (what the card offers: JSON-RPC first), ``"jsonrpc"``, ``"http+json"``
            (the REST binding, spoken in 1.0) or ``"grpc"`` (1.0; ``pip install 'toolnexus[grpc]'``).
        bus: where TrafficEvents (and the TaskEvents of :meth:`watch`) are published.
        secret_headers: more header names to mask on the wire log.
        record: a cassette path (or a :class:`~toolnexus.a2a.cassette.CassetteWriter`): every
            exchange is also written there as it ends, masked, ids made stable (see
            :mod:`toolnexus.a2a.cassette`); a path is closed with the client.
    """

    def __init__(
        self,
        card_or_url: str | AgentCard | dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        dialect: str = "auto",
        bus: EventBus | None = None,
        secret_headers: tuple[str, ...] = (),
        http: httpx.AsyncClient | None = None,
        binding: str = "auto",
        record: str | os.PathLike[str] | CassetteWriter | None = None,
    ) -> None:
        if dialect not in ("auto", "0.3", "1.0", "legacy"):
            raise ValueError(f"dialect must be auto, 0.3, 1.0 or legacy, not {dialect!r}")
        self.forced_binding = _BINDINGS.get(binding.lower())
        if binding.lower() not in _BINDINGS:
            raise ValueError(f"binding must be auto, jsonrpc, http+json or grpc, not {binding!r}")
        if (self.forced_binding == "GRPC" and dialect in ("0.3", "legacy")) or \
                (self.forced_binding == "HTTP+JSON" and dialect == "legacy"):
            only = "1.0 only" if self.forced_binding == "GRPC" else "1.0 and 0.3 only"
            raise ValueError(f"the {self.forced_binding} binding is spoken in {only}, not in {dialect}")
        self.binding = self.forced_binding or "JSONRPC"
        self.card: AgentCard | None = None
        self.url = ""
        if isinstance(card_or_url, AgentCard):
            self.card = card_or_url
        elif isinstance(card_or_url, dict):
            self.card = AgentCard(card_or_url)
        else:
            self.url = card_or_url
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.forced = None if dialect == "auto" else Dialect(dialect)
        self.dialect: Dialect | None = self.forced
        self.dialect_reason = "forced by the caller" if self.forced else ""
        self.endpoint = ""
        self.bus = bus
        self.traffic = TrafficRecorder(bus, peer=self.url or (self.card.name if self.card else ""))
        for name in secret_headers:
            self.traffic.secret(name, self.headers.get(name))
        self._own_cassette = record is not None and not isinstance(record, CassetteWriter)
        if record is not None:
            self.traffic.cassette = record if isinstance(record, CassetteWriter) else CassetteWriter(record)
        self._given_http = http
        self._own: httpx.AsyncClient | None = None
        self._channel: Any = None  # the gRPC channel, opened on first use
        self._fallback_tried = False
        self.credentials_sent = True
        """False when the card sends calls to a host other than the one named: then the headers
        given here are not sent (see :meth:`connect`)."""
        self.warnings: list[str] = []

    def __repr__(self) -> str:
        return f"A2AClient(peer={self.peer!r}, dialect={self.dialect and self.dialect.value!r})"

    @property
    def peer(self) -> str:
        return (self.card.name if self.card and self.card.name else "") or self.url or self.endpoint

    @property
    def _http(self) -> httpx.AsyncClient:
        """The HTTP client: the caller's, or our own, opened on first use."""
        if self._given_http is not None:
            return self._given_http
        if self._own is None or self._own.is_closed:
            self._own = httpx.AsyncClient(timeout=self.timeout)
        return self._own

    async def release(self) -> None:
        """Close our own connections (they reopen on the next call); for callers that come and go."""
        own, self._own = self._own, None
        if own is not None:
            await own.aclose()
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    async def aclose(self) -> None:
        await self.release()
        if self._own_cassette:
            self.traffic.cassette.close()

    async def __aenter__(self) -> A2AClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the card and the dialect ----------------------------------------------------------------
    async def connect(self) -> AgentCard:
        """Fetch the card (when given a URL) and choose the dialect and endpoint."""
        if self.card is None:
            version = "0.3" if self.forced in (Dialect.V03, Dialect.LEGACY) else "1.0"  # what it will speak
            self.card = await fetch_card(self.url, self.headers, self.timeout, http=self._http, traffic=self.traffic,
                                         version=version)
            self.traffic.peer = self.card.name or self.url
        if not self.endpoint:
            dialect, endpoint, reason, self.binding = self.card.route(self.forced_binding,
                                                                      self.forced.value if self.forced else None)
            if endpoint.startswith("/") and self.card.source:  # a relative url on the card
                endpoint = self.card.source.split("/.well-known/")[0] + endpoint
            self.endpoint = endpoint
            if self.forced is None or self.binding != "JSONRPC":
                self.dialect, self.dialect_reason = Dialect(dialect), reason
            named = self.url or self.card.source
            # gRPC has a port of its own: the host named is what credentials may go to
            elsewhere = (origin(named)[1] != grpc_binding.host_of(endpoint)) if self.binding == "GRPC" else \
                origin(endpoint) != origin(named)
            if named and self.headers and elsewhere:
                self.credentials_sent = False
                self.warnings.append(
                    f"the card sends calls to {endpoint}, not to {origin_text(named)} that you named: "
                    "your headers (credentials) are not sent there; name that host yourself to send them")
        return self.card

    # -- JSON-RPC -----------------------------------------------------------------------------------
    def _headers(self, dialect: Dialect, stream: bool = False) -> dict[str, str]:
        h = {"content-type": "application/json", **(self.headers if self.credentials_sent else {})}
        if dialect is Dialect.V10:
            h["A2A-Version"] = "1.0"
        h["accept"] = "text/event-stream" if stream else "application/json"
        parent = trace.outgoing()  # inside a served task's run: the remote task joins its trace
        if parent is not None:
            h["traceparent"] = parent
        return h

    async def _prepare(self, op: str, params: dict[str, Any],
                       stream: bool = False) -> tuple[str, str, str, bytes, dict[str, str]]:
        """``(method name, HTTP method, URL, body, headers)`` of ``op`` in the dialect and binding
        in use (HTTP+JSON: the 1.0 method name, its route, the rest of the params as query or body)."""
        await self.connect()
        dialect = self.dialect or Dialect.V03
        method = _METHODS[dialect].get(op)
        if method is None:
            what = "streaming" if stream else f"{op} operation"
            raise UnsupportedOperationError(f"the {dialect.value} dialect has no {what}")
        if self.binding == "HTTP+JSON":
            verb, path, payload = rest.request_for(op, params, v03=dialect is Dialect.V03)
            headers = self._headers(dialect, stream=stream)
            if dialect is Dialect.V03:
                headers["A2A-Version"] = "0.3"
            if payload is None:
                del headers["content-type"]
            body = b"" if payload is None else _json.dumps(payload)
            return method, verb, self.endpoint.rstrip("/") + path, body, headers
        body = _json.dumps({"jsonrpc": "2.0", "id": new_id(), "method": method, "params": params})
        return method, "POST", self.endpoint, body, self._headers(dialect, stream=stream)

    async def _call(self, op: str, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        """One call; ``empty_ok``: an answer with neither result nor error is a null result (the
        official SDK's 0.3 compat answers a delete that way)."""
        await self.connect()
        if self.binding == "GRPC":
            return await self._grpc_call(op, params)
        method, verb, url, body, headers = await self._prepare(op, params)
        started = time.perf_counter()
        try:
            r, content = await _exchange(self._http, verb, url, headers=headers, content=body,
                                         limit=MAX_RESPONSE, timeout=self.timeout)
        except httpx.HTTPError as exc:
            self.traffic.record(direction="out", method=verb, url=url, status=None, started=started,
                                request_headers=headers, request_body=body, rpc_method=method, error=_why(exc))
            raise PeerError(f"{self.peer}: {method} failed: {_why(exc)}") from None
        self.traffic.record(direction="out", method=verb, url=url, status=r.status_code, started=started,
                            request_headers=dict(r.request.headers), request_body=body,
                            response_headers=dict(r.headers), response_body=content, rpc_method=method)
        return self._result(method, r.status_code, content, empty_ok=empty_ok)

    def _result(self, method: str, status: int, content: bytes, *, empty_ok: bool = False) -> Any:
        if self.binding == "HTTP+JSON":
            return self._rest_result(method, status, content)
        try:
            data = _json.loads(content)
        except (*_json.JSONDecodeError, ValueError):
            raise self._unreadable(method, status, content, " with no JSON-RPC body") from None
        if empty_ok and isinstance(data, dict) and status == 200 and data.get("error") is None and "result" not in data:
            return None
        if not isinstance(data, dict) or ("result" not in data and not isinstance(data.get("error"), dict)):
            # e.g. a proxy's {"error": "..."} on a 401: not the agent's JSON-RPC answer
            raise self._refused(method, status) or PeerError(
                f"{self.peer}: {method} answered HTTP {status} without a JSON-RPC result", status=status)
        if data.get("error") is not None:
            raise _rpc_error(data["error"], self.traffic.mask)
        return data["result"]

    def _unreadable(self, method: str, status: int, content: bytes, what: str) -> PeerError:
        excerpt = self.traffic.mask(content[:200].decode("utf-8", "replace"))
        return PeerError(f"{self.peer}: {method} answered HTTP {status}{what}: {excerpt}", status=status)

    def _refused(self, method: str, status: int) -> PeerError | None:
        """The error of an answer refusing the credentials (401, 403), else None."""
        if status not in (401, 403):
            return None
        meaning = "authentication required" if status == 401 else "invalid credentials"
        return PeerError(f"{self.peer}: {method} answered HTTP {status} ({meaning}): check the headers/credentials",
                         status=status)

    @property
    def _shapes(self) -> Dialect:
        """The dialect whose shapes calls are built in and answers read in: 1.0's for every binding
        but JSON-RPC (0.3's REST routes are converted to and from them, see ``a2a.rest``)."""
        return Dialect.V10 if self.binding != "JSONRPC" else (self.dialect or Dialect.V03)

    def _rest_result(self, method: str, status: int, content: bytes) -> Any:
        """An HTTP+JSON answer: the result is the whole body; a failure is ``{"error": {...}}``."""
        if not content.strip() and 200 <= status < 300:
            return {}
        try:
            data = _json.loads(content)
        except (*_json.JSONDecodeError, ValueError):
            hint = " (it serves no HTTP+JSON binding there)" if status in (404, 405) else ""
            raise self._unreadable(method, status, content, f"{hint} with no JSON body") from None
        error = rest.parse_error(status, data, self.traffic.mask)
        if error is not None:
            raise error
        if not 200 <= status < 300:
            raise self._refused(method, status) or PeerError(
                f"{self.peer}: {method} answered HTTP {status} without an A2A error", status=status)
        if self.dialect is not Dialect.V03:
            return data
        try:
            return rest.v03_answer(_OPS[method], data)
        except RPCError as exc:  # the peer's answer, not our call, is what is wrong
            raise PeerError(f"{self.peer}: {method} answered a shape A2A 0.3 does not have: {exc.message}",
                            status=status) from None

    # -- gRPC ---------------------------------------------------------------------------------------
    def _grpc(self, op: str) -> tuple[Any, str, str, str, list[tuple[str, str]]]:
        """``(stub method, RPC name, request type, wire URL, metadata)`` of ``op`` over gRPC."""
        grpc, _, pb_grpc = grpc_binding.modules()
        if self._channel is None:
            self._channel = grpc_binding.channel(self.endpoint, MAX_RESPONSE)
        rpc, request, _, _ = grpc_binding.METHODS[op]
        metadata = [("a2a-version", "1.0")] + [(k.lower(), v) for k, v in self.headers.items() if self.credentials_sent]
        parent = trace.outgoing()
        if parent is not None:
            metadata.append((trace.HEADER, parent))
        url = f"grpc://{grpc_binding.target_of(self.endpoint)}/{grpc_binding.SERVICE}/{rpc}"
        return getattr(pb_grpc.A2AServiceStub(self._channel), rpc), rpc, request, url, metadata

    def _grpc_failed(self, rpc: str, exc: BaseException) -> Exception:
        if not hasattr(exc, "code"):  # no status: the channel or the message failed
            return PeerError(f"{self.peer}: {rpc} failed: {_why(exc)}")
        return grpc_binding.error_of(exc, self.traffic.mask) or PeerError(
            f"{self.peer}: {rpc} failed: {exc.code().name}: {self.traffic.mask(exc.details() or '')}")

    async def _grpc_call(self, op: str, params: dict[str, Any]) -> Any:
        call, rpc, request, url, metadata = self._grpc(op)
        message = grpc_binding.to_proto(request, params)
        body = _json.dumps(params)
        started = time.perf_counter()
        try:
            reply = await call(message, metadata=metadata, timeout=self.timeout)
        except Exception as exc:
            failed = self._grpc_failed(rpc, exc)
            self.traffic.record(direction="out", method="POST", url=url, status=getattr(failed, "http_status", None),
                                started=started, request_headers=dict(metadata), request_body=body, rpc_method=rpc,
                                error=str(failed))
            raise failed from None
        result = grpc_binding.to_json(reply)
        self.traffic.record(direction="out", method="POST", url=url, status=200, started=started,
                            request_headers=dict(metadata), request_body=body, response_body=_json.dumps(result),
                            rpc_method=rpc)
        return result

    async def _grpc_stream(self, op: str, params: dict[str, Any], sent: Message | None) -> AsyncIterator[Task]:
        """A server-streaming call's messages as tasks; each must come within ``max(timeout, 60)``
        seconds of the one before. On the wire log however it ends."""
        call, rpc, request, url, metadata = self._grpc(op)
        body = _json.dumps(params)
        started = time.perf_counter()
        frames: list[str] = []
        error: str | None = None
        task: Task | None = None
        stream = call(grpc_binding.to_proto(request, params), metadata=metadata)
        try:
            replies = stream.__aiter__()
            while True:
                try:
                    async with asyncio.timeout(max(self.timeout, 60.0)):
                        reply = await replies.__anext__()
                except StopAsyncIteration:
                    break
                frames.append(_json.dumps(grpc_binding.to_json(reply)).decode())
                task = _apply(task, grpc_binding.to_json(reply), sent)
                yield task.snapshot()
        except TimeoutError:
            error = f"AnswerTooSlow: no message within {max(self.timeout, 60.0):g}s"
            raise PeerError(f"{self.peer}: {rpc} stream failed: {error}") from None
        except (GeneratorExit, asyncio.CancelledError):
            error = "canceled"
            raise
        except Exception as exc:
            failed = self._grpc_failed(rpc, exc)
            error = str(failed)
            raise failed from None
        finally:
            stream.cancel()
            self.traffic.record(direction="out", method="POST", url=url, status=None if error else 200, started=started,
                                request_headers=dict(metadata), request_body=body, response_body="\n\n".join(frames),
                                rpc_method=rpc, frames=frames, error=error)

    async def _send_op(self, op: str, params: dict[str, Any]) -> Any:
        """A send; in auto mode a 0.3 send refused with -32601 is retried once as toolnexus legacy."""
        try:
            return await self._call(op, params)
        except MethodNotFoundError:
            if self.forced is not None or self.dialect is not Dialect.V03 or self.binding != "JSONRPC" \
                    or self._fallback_tried or op != "send":
                raise
            self._fallback_tried = True
            self.dialect = Dialect.LEGACY
            self.dialect_reason = "the peer answered message/send with -32601; it speaks the toolnexus legacy dialect"
            return await self._call(op, self._params_for(params))

    def _params_for(self, params: dict[str, Any]) -> dict[str, Any]:
        """Re-render send params (built for 0.3) in the legacy shapes."""
        message = parse_message(params["message"], inbound=False)
        message.role = "user"
        out = dict(params)
        out["message"] = render_message(message, Dialect.LEGACY)
        return out

    def _message(self, text: str | Message, skill: str | None, context_id: str | None, task_id: str | None,
                 metadata: Mapping[str, Any] | None) -> Message:
        msg = text if isinstance(text, Message) else Message("user", [Part.of_text(text)])
        if context_id:
            msg.context_id = context_id
        if task_id:
            msg.task_id = task_id
        meta = dict(msg.metadata or {})
        meta.update(metadata or {})
        if skill:
            meta["skill"] = skill
        msg.metadata = meta or None
        return msg

    def _send_params(self, msg: Message, blocking: bool, history_length: int | None,
                     push: PushConfig | None = None) -> dict[str, Any]:
        dialect = self._shapes
        config: dict[str, Any] = {"returnImmediately": not blocking} if dialect is Dialect.V10 else {"blocking": blocking}
        if history_length is not None:
            config["historyLength"] = history_length
        if push is not None:
            if push.token:
                self.traffic.secret(TOKEN_HEADER, push.token)
            rendered = render_push_config(replace(push, dialect=dialect), dialect)
            if dialect is Dialect.V10:
                config["taskPushNotificationConfig"] = {k: v for k, v in rendered.items() if v != ""}
            else:
                config["pushNotificationConfig"] = rendered["pushNotificationConfig"]
        return {"message": render_message(msg, dialect), "configuration": config}

    # -- operations -----------------------------------------------------------------------------------
    async def send(self, text: str | Message, *, skill: str | None = None, context_id: str | None = None,
                   task_id: str | None = None, blocking: bool = False, history_length: int | None = None,
                   metadata: Mapping[str, Any] | None = None, push: PushConfig | None = None) -> Task:
        """Send a message; returns the task (``submitted`` or later when not blocking). ``push``:
        a config (e.g. ``WebhookReceiver.target()``) the peer notifies of every change of the task."""
        await self.connect()
        msg = self._message(text, skill, context_id, task_id, metadata)
        result = await self._send_op("send", self._send_params(msg, blocking, history_length, push))
        task = _as_task(result, msg)
        if task_id and task.state.interrupted and _asks_again(task, msg):
            # an answer to an input-required task: the spec lets a peer return at once with the task
            # as it was (the JS SDK does), the same question still on it; that is not a new question
            task = await self._past(task, msg)
        return task

    async def _past(self, task: Task, answer: Message) -> Task:
        """The task once its status has moved past the question ``answer`` answered (within the
        client's timeout; after that, as it is)."""
        pause, deadline = 0.05, asyncio.get_running_loop().time() + self.timeout
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
            fresh = await self.get(task.id)
            if not (fresh.state.interrupted and _asks_again(fresh, answer, task)):
                return fresh
        return task

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return _as_task(await self._call("get", params), None)

    async def cancel(self, task_id: str) -> Task:
        return _as_task(await self._call("cancel", {"id": task_id}), None)

    async def list_tasks(self, *, context_id: str | None = None, state: TaskState | None = None,
                         page_size: int | None = None, page_token: str | None = None,
                         include_artifacts: bool = False) -> dict[str, Any]:
        """``ListTasks`` (1.0 peers): ``{tasks: [Task], next_page_token, total_size}``."""
        params: dict[str, Any] = {"includeArtifacts": include_artifacts}
        if context_id:
            params["contextId"] = context_id
        if state is not None:
            params["status"] = "TASK_STATE_" + state.value.upper().replace("-", "_")
        if page_size:
            params["pageSize"] = page_size
        if page_token:
            params["pageToken"] = page_token
        result = await self._call("list", params)
        return {"tasks": [parse_task(t) for t in result.get("tasks") or []],
                "next_page_token": result.get("nextPageToken", ""), "total_size": result.get("totalSize", 0)}

    # -- push notifications -------------------------------------------------------------------------
    async def set_push(self, task_id: str, url: str | PushConfig, *, token: str | None = None,
                       scheme: str | None = None, credentials: str | None = None,
                       config_id: str | None = None) -> PushConfig:
        """Ask the peer to POST every change of ``task_id`` to ``url`` (or a ready config, such as
        ``WebhookReceiver.target()``); returns the config as the peer keeps it."""
        await self.connect()
        dialect = self._shapes
        if isinstance(url, PushConfig):
            config = replace(url, task_id=task_id, dialect=dialect)
        else:
            config = PushConfig(task_id, url, config_id or "", token, scheme, credentials, dialect)
        if config.token:
            self.traffic.secret(TOKEN_HEADER, config.token)  # the token is a secret on the wire log too
        if config.credentials:
            self.traffic.secret("authorization", config.credentials)
        result = await self._call("push-set", render_push_config(config, dialect))
        return self._push_config(result, task_id, dialect)

    async def get_push(self, task_id: str, config_id: str | None = None) -> PushConfig:
        """A push-notification config of ``task_id`` (its first when no id is given)."""
        await self.connect()
        dialect = self._shapes
        if not config_id and self.binding != "JSONRPC":  # its route or request names a config: the first listed
            configs = await self.list_push(task_id)
            if not configs:
                raise TaskNotFoundError(f"task {task_id} has no push notification config")
            return configs[0]
        if dialect is Dialect.V10:
            params: dict[str, Any] = {"taskId": task_id, **({"id": config_id} if config_id else {})}
        else:
            params = {"id": task_id, **({"pushNotificationConfigId": config_id} if config_id else {})}
        return self._push_config(await self._call("push-get", params), task_id, dialect)

    async def list_push(self, task_id: str) -> list[PushConfig]:
        await self.connect()
        dialect = self._shapes
        result = await self._call("push-list", {"taskId": task_id} if dialect is Dialect.V10 else {"id": task_id})
        items = result.get("configs") if isinstance(result, dict) else result
        if items is None:
            return []
        if not isinstance(items, list):
            raise PeerError(f"{self.peer}: its list of push notification configs is not a list")
        return [self._push_config(c, task_id, dialect) for c in items]

    async def delete_push(self, task_id: str, config_id: str) -> None:
        await self.connect()
        dialect = self._shapes
        await self._call("push-delete", {"taskId": task_id, "id": config_id} if dialect is Dialect.V10
                         else {"id": task_id, "pushNotificationConfigId": config_id}, empty_ok=True)

    def _push_config(self, result: Any, task_id: str, dialect: Dialect) -> PushConfig:
        try:
            config = parse_push_config(result, dialect, "result")
        except RPCError as exc:
            raise PeerError(f"{self.peer}: the push notification config it answered is not one: {exc.message}") from None
        config.task_id = config.task_id or task_id
        return config

    async def stream(self, text: str | Message, *, skill: str | None = None, context_id: str | None = None,
                     task_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> AsyncIterator[Task]:
        """Send over SSE; yields the task after every frame, until the stream ends."""
        await self.connect()
        msg = self._message(text, skill, context_id, task_id, metadata)
        params = self._send_params(msg, True, None)
        params.pop("configuration")
        async with contextlib.aclosing(self._sse("stream", params, msg)) as frames:  # closed with us
            async for task in frames:
                yield task

    async def resubscribe(self, task_id: str) -> AsyncIterator[Task]:
        """Follow a running task over SSE; yields the task after every frame."""
        async with contextlib.aclosing(self._sse("resubscribe", {"id": task_id}, None)) as frames:  # closed with us
            async for task in frames:
                yield task

    async def _sse(self, op: str, params: dict[str, Any], sent: Message | None) -> AsyncIterator[Task]:
        """The frames of a stream as tasks. Each event is at most ``MAX_FRAME`` bytes and must arrive
        whole within ``timeout`` of its first byte; between events the peer may stay silent for
        ``max(timeout, 60)`` seconds. The exchange is on the wire log however the stream ends."""
        await self.connect()
        if self.binding == "GRPC":
            async with contextlib.aclosing(self._grpc_stream(op, params, sent)) as tasks:
                async for task in tasks:
                    yield task
            return
        method, verb, url, body, headers = await self._prepare(op, params, stream=True)
        started = time.perf_counter()
        frames: list[str] = []
        task: Task | None = None
        status, response_headers, content = None, {}, b""
        error: str | None = None
        timeout = httpx.Timeout(self.timeout, read=max(self.timeout, 60.0))
        try:
            async with self._http.stream(verb, url, content=body, headers=headers, timeout=timeout) as r:
                status, response_headers = r.status_code, dict(r.headers)
                if not r.headers.get("content-type", "").startswith("text/event-stream"):
                    async with asyncio.timeout(self.timeout):
                        content = await _read_body(r, MAX_RESPONSE)
                    result = self._result(method, status, content)
                    yield _as_task(result, sent)
                    return
                async for frame in _events(r, self.timeout):
                    frames.append(frame)
                    result = self._result(method, status, frame.encode())
                    task = _apply(task, result, sent)
                    yield task.snapshot()
        except TimeoutError:
            error = f"AnswerTooSlow: no whole answer within {self.timeout:g}s"
            raise PeerError(f"{self.peer}: {method} stream failed: {error}") from None
        except httpx.HTTPError as exc:
            error = _why(exc)
            raise PeerError(f"{self.peer}: {method} stream failed: {error}") from None
        except (GeneratorExit, RPCError, PeerError):  # the caller had enough, or the peer said no
            raise
        except asyncio.CancelledError:
            error = "canceled"
            raise
        except BaseException as exc:  # a frame that is not what it claims to be
            error = _why(exc)
            raise
        finally:
            self.traffic.record(direction="out", method=verb, url=url, status=status, started=started,
                                request_headers=headers, request_body=body, response_headers=response_headers,
                                response_body=content or "\n\n".join(frames), rpc_method=method, frames=frames,
                                error=error)

    async def watch(self, task_id: str, *, poll_every: float = 1.0, max_interval: float = 5.0, backoff: float = 1.5,
                    timeout: float | None = None, bus: EventBus | None = None,
                    stream: bool = True) -> AsyncIterator[TaskEvent]:
        """Every state change of a remote task as a TaskEvent, until it is terminal or interrupted.

        Over SSE when the peer streams (``stream`` and the card say so), else one polling loop whose
        interval starts at ``poll_every`` and grows by ``backoff`` up to ``max_interval``. The
        events are also published on ``bus`` (or the client's bus).
        """
        await self.connect()
        target = bus or self.bus
        last: TaskState | None = None
        deadline = None if timeout is None else time.monotonic() + timeout
        self.polls = 0

        def event(task: Task) -> TaskEvent | None:
            nonlocal last
            if task.state is last:
                return None
            ev = TaskEvent(task.id, task.context_id, None, last, task.state, task.snapshot(), self.peer)
            last = task.state
            if target is not None:
                target.publish(ev)
            return ev

        if stream and self.card is not None and self.card.streaming and self.dialect is not Dialect.LEGACY:
            try:
                async with contextlib.aclosing(self.resubscribe(task_id)) as frames:
                    async for task in frames:
                        ev = event(task)
                        if ev is not None:
                            yield ev
                        if task.state.terminal or task.state.interrupted:
                            return
            except (RPCError, PeerError):
                pass  # the peer cannot resubscribe (already terminal, or no streaming after all): poll
        interval = poll_every
        while True:
            task = await self.get(task_id)
            self.polls += 1
            ev = event(task)
            if ev is not None:
                yield ev
            if task.state.terminal or task.state.interrupted:
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            await asyncio.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))
            interval = min(interval * backoff, max(max_interval, poll_every))


def _rpc_error(error: Any, mask: Any = str) -> RPCError:
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


async def _events(r: httpx.Response, timeout: float) -> AsyncIterator[str]:
    """The ``data`` of each SSE event of ``r``, bounded in size (``MAX_FRAME``) and in the time one
    event may take to arrive once begun (``timeout``); comments and other fields are skipped."""
    buffer = b""
    data: list[bytes] = []
    size = 0
    begun: float | None = None
    async for chunk in r.aiter_bytes():
        if begun is None:
            begun = time.monotonic()
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line, buffer = buffer[:end].rstrip(b"\r"), buffer[end + 1:]
            if line.startswith(b"data:"):
                data.append(line[5:].lstrip())
                size += len(line)
            elif not line and data:
                yield b"\n".join(data).decode("utf-8", "replace")
                data, size, begun = [], 0, None
            elif not line:
                begun = None
        if size + len(buffer) > MAX_FRAME:
            raise AnswerTooLarge(f"a stream event passed {MAX_FRAME:,} bytes; at most that much is read")
        if begun is not None and (data or buffer) and time.monotonic() - begun > timeout:
            raise AnswerTooSlow(f"a stream event did not arrive whole within {timeout:g}s")
        if not data and not buffer:
            begun = None


def _asks_again(task: Task, answer: Message, before: Task | None = None) -> bool:
    """Whether ``task``'s question is the one ``answer`` answered: its status message comes before
    the answer in the task's history, or is the very message of ``before`` (the stale reply)."""
    question = task.status.message
    if question is None:
        return False
    if before is not None and before.status.message is not None:
        if question.message_id == before.status.message.message_id and task.status.timestamp == before.status.timestamp:
            return True
    ids = [m.message_id for m in task.history]
    return (question.message_id in ids and answer.message_id in ids
            and ids.index(question.message_id) < ids.index(answer.message_id))


def _as_task(result: Any, sent: Message | None) -> Task:
    """A send/get result as a Task: a task (wrapped or not), or a Message reply."""
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
    return Task(reply.task_id or "", reply.context_id or (sent.context_id if sent else "") or "",
                TaskStatus(TaskState.COMPLETED), history)


def _apply(task: Task | None, result: Any, sent: Message | None) -> Task:
    """Fold one stream frame (any dialect) into the task it is about."""
    if not isinstance(result, dict):
        raise PeerError("a stream frame is not an object")
    kind = result.get("kind")
    body = result
    for wrapper, name in (("statusUpdate", "status-update"), ("artifactUpdate", "artifact-update"),
                          ("task", "task"), ("message", "message")):
        if wrapper in result and isinstance(result[wrapper], dict):
            kind, body = name, result[wrapper]
            break
    if kind is None:
        if "artifact" in body and "taskId" in body:
            kind = "artifact-update"
        elif "status" in body and "taskId" in body:
            kind = "status-update"
        elif "messageId" in body and "status" not in body:
            kind = "message"
        else:
            kind = "task"
    if kind == "task":
        return parse_task(body)
    if kind == "message":
        msg = parse_message(body, inbound=False)
        if task is None:
            return _message_task(msg, sent)
        task.history.append(msg)
        return task
    if task is None:
        task = Task(str(body.get("taskId", "")), str(body.get("contextId", "")), TaskStatus(TaskState.SUBMITTED),
                    [sent] if sent else [])
    if kind == "status-update":
        task.status = parse_task({"id": task.id, "status": body.get("status") or {}}).status
        return task
    art = parse_task({"id": task.id, "artifacts": [body.get("artifact") or {}]}).artifacts
    if art:
        new = art[0]
        same = next((a for a in task.artifacts if a.artifact_id == new.artifact_id), None)
        if same is not None and body.get("append"):
            parts = list(new.parts)
            if same.parts and parts and same.parts[-1].kind == "text" and parts[0].kind == "text":
                # a text streamed in pieces is one text, not a line per piece; bounded like an answer,
                # since each piece copies what came before
                text = (same.parts[-1].text or "") + (parts.pop(0).text or "")
                if len(text) > MAX_RESPONSE:
                    raise AnswerTooLarge(f"a streamed artifact passed {MAX_RESPONSE:,} characters; at most that "
                                         "much is kept")
                same.parts[-1] = replace(same.parts[-1], text=text)
            same.parts.extend(parts)
        elif same is not None:
            task.artifacts[task.artifacts.index(same)] = new
        else:
            task.artifacts.append(new)
    return task

