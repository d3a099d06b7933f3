"""The A2A agent of a served toolkit: the card, JSON-RPC at ``POST /`` in all three dialects, and
the HTTP+JSON routes of 1.0 and 0.3; the gRPC binding (``grpc_server.py``) calls the same handlers.

Each binding only decodes, calls a handler of an operation (the table in
:mod:`toolnexus.protocol.operations`) and encodes. What comes before, for every binding alike: auth
(401/403, UNAUTHENTICATED/PERMISSION_DENIED), the ``A2A-Version`` header, then for a request
that carries a body its content type (415), its size (413), JSON (-32700) and depth. On
``POST /`` the envelope is read before the version header (the method decides the dialect). Then
``dispatch`` parses the params once (``protocol.params.parse``, for every binding and dialect) and
the handler checks what the typed request asks of this agent before the runner takes it. A
rejected call creates no task and runs nothing. An unexpected failure, in a handler or in
rendering its answer, is a generic internal error whose detail only the server log sees.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, cast

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .. import _json, trace
from ..errors import (
    ConfigError,
    ContentTypeNotSupportedError,
    ExtendedCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    ParseError,
    PermissionDeniedError,
    PushNotificationNotSupportedError,
    RPCError,
    ServerStoppingError,
    TaskNotFoundError,
    UnauthenticatedError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from ..events import TaskEvent, TextEvent
from ..http.server import peer_certificate
from ..protocol import rest
from ..protocol.dialects import (
    Dialect,
    lower_enums,
    render_artifact_update,
    render_message,
    render_send_result,
    render_status_update,
    render_task,
)
from ..protocol.extensions import HEADER, LEGACY_HEADER, header_value, requested
from ..protocol.files import in_modes
from ..protocol.jsonrpc import (
    error_envelope,
    parse_request,
    refuse_too_deep,
    request_id_of,
    result_envelope,
)
from ..protocol.model import Artifact, Message, Part, Task, TaskState
from ..protocol.operations import V03_METHODS, V10_METHODS, Binding, Operation
from ..protocol.params import (
    CancelTask,
    DeletePushConfig,
    GetExtendedCard,
    GetPushConfig,
    GetTask,
    ListPushConfigs,
    ListTasks,
    SendMessage,
    SetPushConfig,
    SubscribeToTask,
    looks_v10,
    parse,
    unversioned,
)
from ..protocol.push import render_push_config
from ..skills import SkillDef
from ..stores.base import window
from .card import ServedCard
from .config import A2AConfig, AuthRefused, Caller
from .lifecycle import Follow, TaskRunner
from .metrics import Metrics

__all__ = ["A2AEndpoint", "KEEPALIVE"]

log = logging.getLogger("toolnexus.serve")

KEEPALIVE = 15.0
"""Seconds between ``: ping`` comments on an idle stream."""
FINISHED_CACHE = 1024
"""GetTask answers of finished tasks kept rendered, at most (the most recently asked kept)."""
FINISHED_BYTES = 16 * 1024 * 1024
"""What those answers may hold together, at most, in bytes: each as ``_json.held`` counts it from
its JSON (never less than it holds), and that JSON, kept with it. One that would hold more than an
eighth of it is answered and not kept. 1,024 small tasks (788 bytes of JSON) are counted 11.8 MiB
(they hold 5.8); bounded by count only, a peer's big tasks polled held several GB (2.7 MB each)."""
HYBRID_TASKS = 10_000
"""The tasks made by fasta2a-style sends that are remembered (the latest), so that a get, cancel or
resubscribe of one, which carries no message to tell its caller's dialect by, is answered alike."""

_SERVED_VERSIONS = "0.3, 1.0"
_CALLER: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar("caller_headers")
"""The headers (gRPC: metadata) of the request being answered, as ``owner_of`` read them."""
_GRANTED: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("caller", default=None)
"""Who the request being answered comes from, as the agent's auth admitted it."""
_DRAIN = 1024 * 1024
"""Bytes past the limit read and thrown away before a 413, so that the client sees the answer."""
_JSON_TYPES = ("application/json", "application/json-rpc", "application/jsonrequest")


def as_is(result: Any) -> Any:
    """A stream's results as the runner renders them (the ``wrap`` of a binding that frames them itself)."""
    return result


class _Answer:
    """A whole JSON answer as an ASGI app: two messages, no more (Starlette's ``Response`` does the
    same with more work per request)."""

    __slots__ = ("status_code", "body", "raw_headers")

    def __init__(self, body: bytes, status: int, headers: Mapping[str, str] | None) -> None:
        self.status_code = status
        self.body = body
        self.raw_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
        ]
        if headers:
            self.raw_headers += [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()
            ]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        await send({"type": "http.response.body", "body": self.body})


class _Kept(dict[str, Any]):
    """A finished task's GetTask answer as rendered, kept by the endpoint (``_Finished``) with its
    JSON-RPC result's JSON (``json``, written once as it is kept, which also measures it), and the
    bytes both hold (``held``). One object: evicting it lets go of both. A dict to every binding:
    orjson (given no ``OPT_PASSTHROUGH_SUBCLASS``) and the standard library write a dict subclass
    as the dict, and protobuf's ``ParseDict`` reads it as one."""

    __slots__ = ("json", "held")
    json: bytes
    held: int

    def enveloped(self, rid: Any) -> bytes:
        """The JSON-RPC answer of ``rid`` with this result, its JSON set in the envelope: the same
        bytes ``_json.dumps(result_envelope(rid, self))`` writes (compact, in the envelope's
        order)."""
        return b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (_json.dumps(rid), self.json)


class _Finished:
    """The GetTask answers of finished tasks the endpoint keeps (``A2AEndpoint._get``), the most
    recently asked last: at most :data:`FINISHED_CACHE` of them, holding at most
    :data:`FINISHED_BYTES` together (``held``), the least recently asked let go first."""

    __slots__ = ("answers", "held")

    def __init__(self) -> None:
        self.answers: collections.OrderedDict[tuple[Any, ...], _Kept] = collections.OrderedDict()
        self.held = 0

    def keep(self, key: tuple[Any, ...], rendered: dict[str, Any]) -> Any:
        """``rendered`` kept as ``key``'s answer (a ``_Kept``), or as it is when it would hold more
        than an eighth of :data:`FINISHED_BYTES`. Its JSON, written once here (tight: orjson's
        own bytes keep the room it set aside, 6x a task), measures it and is kept with it: the
        answer decoded (``_json.held``) and that JSON beside it."""
        encoded = _json.tight(rendered)
        if len(encoded) > FINISHED_BYTES // 8:  # too big already: not counted (2 ms for 2.7 MB)
            return rendered
        held = _json.held(encoded) + len(encoded)
        if held > FINISHED_BYTES // 8:
            return rendered
        kept = self.answers[key] = _Kept(rendered)
        kept.json, kept.held = encoded, held
        self.held += held
        answers = self.answers
        while len(answers) > FINISHED_CACHE or self.held > FINISHED_BYTES:
            self.held -= answers.popitem(last=False)[1].held
        return kept


def _json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> _Answer:
    return _Answer(_json.dumps(body), status, headers)


async def _whole_body(request: Request) -> bytes:
    """The body of a request whose length the server holds it to, read straight from ``receive``
    (Starlette's ``body()`` goes through an async generator per request)."""
    chunks: list[bytes] = []
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _header_map(scope: Any) -> dict[str, str]:
    """A request's headers by their lower-case names (the first of a repeated one, as Starlette's
    ``Headers.get`` reads them), made once for the few a JSON-RPC call reads."""
    out: dict[str, str] = {}
    for key, value in scope["headers"]:
        name = key.decode("latin-1")
        if name not in out:
            out[name] = value.decode("latin-1")
    return out


class Refusal(Exception):
    """A transport-level refusal (HTTP 4xx) before JSON-RPC begins."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})


class A2AEndpoint:
    """The card and JSON-RPC routes for one served toolkit."""

    def __init__(
        self,
        runner: TaskRunner,
        config: A2AConfig,
        skills: list[SkillDef],
        base_url: Callable[[], str],
    ) -> None:
        self.runner = runner
        self.config = config
        allowed = None if config.skills is None else set(config.skills)
        only = set(config.extended_skills or ())  # on the extended card only
        unknown = only - {s.name for s in skills}
        if unknown:
            log.warning("a2a.extended_skills: %s not in the toolkit", ", ".join(sorted(unknown)))
        self.skills = [
            s for s in skills if (allowed is None or s.name in allowed) and s.name not in only
        ]
        extended = [s for s in skills if s.name in only]
        self._skill_names = {s.name: s for s in [*self.skills, *extended]}
        self.needs = {name: self._needs(s) for name, s in self._skill_names.items()}
        """Each skill's security requirements, as its card entry lists them (see ``skill_security``)."""
        self.metrics: Metrics | None = None
        """Where each dispatched operation is counted, when the agent exports metrics."""
        self.card = ServedCard(
            config,
            self.skills,
            base_url,
            push=runner.push is not None,
            extended_skills=extended,
            needs=self.needs,
        )
        """The card it serves (built, cached and tagged there)."""
        self._notifications: set[asyncio.Task[Any]] = set()
        # GetTask answers for finished tasks, as rendered (they never change), each with its JSON
        # (see _Kept): polls of a task that just finished skip unpacking, parsing and rendering it
        # again, and JSON-RPC's skip writing it
        self._finished = _Finished()
        self._hybrid: collections.OrderedDict[str, None] = collections.OrderedDict()

    def _needs(self, skill: SkillDef) -> list[dict[str, list[str]]]:
        needs = self.config.needs(skill)
        if not needs:
            return []
        auth = self.config.auth
        if auth is None:
            raise ConfigError(
                f"the skill {skill.name!r} declares security requirements: set a2a.auth, whose "
                "schemes they name"
            )
        return auth.expand(needs)

    def hidden(self, caller: Caller) -> frozenset[str]:
        """The skills ``caller`` may not use: it lacks the scopes of each."""
        auth = self.config.auth
        if auth is None:
            return frozenset()
        return frozenset(n for n, needs in self.needs.items() if auth.missing(needs, caller))

    def routes(self) -> list[Route]:
        return [
            *(Route(path, self.card, methods=["GET"]) for path in self.card.paths),
            Route("/", self.rpc, methods=["POST"]),
            *self._rest_routes(),
        ]

    def _rest_routes(self) -> list[Route]:
        """The HTTP+JSON binding at the same base URL, 1.0's and 0.3's (under ``/v1/``), in the
        order of ``rest.ROUTES``."""
        return [
            Route(t, functools.partial(self.rest, op, v03=v03), methods=[m])
            for m, t, op, v03 in rest.ROUTES
        ]

    def ahead(self, app: Any) -> Any:
        """``app`` behind an ASGI layer that answers card GETs and JSON-RPC POSTs itself, before
        Starlette's routing and middleware (they are nearly every request a busy agent gets; the
        same answers as the routes :meth:`card` and :meth:`rpc`, which other methods still reach
        for their 405)."""
        paths = self.card.paths

        async def first(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
            elif scope["path"] == "/" and scope["method"] == "POST":
                try:
                    response = await self._rpc(Request(scope, receive), _header_map(scope))
                except Exception as exc:  # as build_app's handler: never a traceback on the wire
                    log.exception("unhandled error on POST /", exc_info=exc)
                    response = _json_response({"error": "internal server error"}, 500)
                await response(scope, receive, send)
            elif scope["path"] in paths and scope["method"] in ("GET", "HEAD"):
                await self.card(scope, receive, send)
            else:
                await app(scope, receive, send)

        return first

    # -- JSON-RPC -------------------------------------------------------------------------------
    async def rpc(self, request: Request) -> Any:
        return await self._rpc(request, request.headers)

    async def _rpc(self, request: Request, headers: Mapping[str, str]) -> Any:
        try:
            owner = await self.owner_of(headers, peer_certificate(request.scope))
            body = await self._read(request, headers)
        except Refusal as refusal:
            if refusal.status in (401, 403):  # HTTP authentication, before the body is read:
                # its status and challenge, and a JSON-RPC error any envelope-only client reads
                err = (UnauthenticatedError if refusal.status == 401 else PermissionDeniedError)(
                    str(refusal)
                )
                return _json_response(
                    error_envelope(None, err, error_info=True), refusal.status, refusal.headers
                )
            # 415, 413, 400 keep their status (415 also closes the browser simple-request path), and
            # carry a JSON-RPC error object so that any client can read why
            return _json_response(
                error_envelope(None, InvalidRequestError(str(refusal))),
                refusal.status,
                refusal.headers,
            )
        except ClientDisconnect:  # the client left before its request arrived: nothing to answer
            return Response(status_code=400)
        try:
            data = _json.loads(body)
        except _json.JSONDecodeError:
            return _json_response(
                error_envelope(None, ParseError("Parse error: the body is not valid JSON"))
            )
        except ValueError:  # invalid UTF-8 and other decoding failures
            return _json_response(
                error_envelope(None, ParseError("Parse error: the body is not valid UTF-8 JSON"))
            )
        try:
            call = parse_request(data, body)
        except RPCError as err:
            return _json_response(error_envelope(request_id_of(err), err))
        rid = None if call.is_notification else call.id
        dialect = Dialect.V10 if "/" not in call.method else Dialect.V03
        op: Operation | None = None
        activated: dict[str, str] = {}
        params, hybrid = call.params, False
        try:
            dialect, op = self._route(call.method, params, headers)
            if self.config.extensions:  # else no Headers made for it: most agents declare none
                activated = self.activated(request.headers.getlist, dialect)
            if dialect is Dialect.V03 and self._speaks_hybrid(op, params):
                dialect, params, hybrid = Dialect.V10, _hybrid_params(params), True
            if call.is_notification:
                if not op.streams:
                    self._background(self.dispatch(op, params, dialect, None, owner))
                return Response(status_code=204)
            wrap = self._hybrid_stream(rid) if hybrid else None
            outcome = await self.dispatch(op, params, dialect, rid, owner, wrap)
            if not isinstance(outcome, Response):
                if hybrid:
                    outcome = self._spelled_hybrid(outcome)
                elif type(outcome) is _Kept:  # a finished task's GetTask answer, kept
                    return _Answer(outcome.enveloped(rid), 200, activated)
                return _json_response(result_envelope(rid, outcome), headers=activated)
            outcome.headers.update(activated)
        except RPCError as err:
            if call.is_notification:
                return Response(status_code=204)
            status = 200
            if (
                op is not None and op.key == "resubscribe" and dialect is Dialect.V03
            ):  # 0.3 §7.9: a failed resubscribe is a 4xx
                status = 404 if isinstance(err, TaskNotFoundError) else 400
            return _json_response(
                error_envelope(rid, err, error_info=dialect is Dialect.V10), status, activated
            )
        except Exception:
            log.exception("JSON-RPC %s failed", call.method)
            if call.is_notification:
                return Response(status_code=204)
            return _json_response(
                error_envelope(rid, InternalError(), error_info=dialect is Dialect.V10)
            )
        return outcome

    # -- fasta2a's hybrid: 0.3's method names, 1.0's objects, 0.3's enums --------------------------
    def _speaks_hybrid(self, op: Operation, params: dict[str, Any]) -> bool:
        """Whether a 0.3 call comes from a client of fasta2a's dialect (fasta2a 2.1's own): its
        send's message is 1.0's (parts without ``kind``: every 0.3 SDK writes it), or it names a
        task such a send made. Such a call is answered as 1.0 answers, spelled with 0.3's enums."""
        if op.key in ("send", "stream"):
            return looks_v10(params.get("message"))
        task_id = params.get("id")
        return op.key in ("get", "cancel", "resubscribe") and (
            isinstance(task_id, str) and task_id in self._hybrid
        )

    def _spelled_hybrid(self, result: Any) -> Any:
        """A 1.0 result as fasta2a's client reads it (:func:`lower_enums`); the task it carries is
        remembered as one of its (see :data:`HYBRID_TASKS`)."""
        task = result.get("task") if _json.is_object(result) else None
        task_id = task.get("id") if _json.is_object(task) else None
        if isinstance(task_id, str):
            self._hybrid[task_id] = None
            self._hybrid.move_to_end(task_id)
            if len(self._hybrid) > HYBRID_TASKS:
                self._hybrid.popitem(last=False)
        return lower_enums(result)

    def _hybrid_stream(self, rid: Any) -> Callable[[AsyncGenerator[Any, None]], Any]:
        """The ``wrap`` of a hybrid caller's stream: JSON-RPC over SSE, each result spelled its way."""
        return lambda results: sse(
            results,
            lambda result: result_envelope(rid, self._spelled_hybrid(result)),
            lambda err: error_envelope(rid, err, error_info=True),
        )

    def activated(self, given: Callable[[str], list[str]], dialect: Dialect) -> dict[str, str]:
        """The response headers naming the extensions a request activates: those it asks for
        (``given(name)``: every value of a request header, ``A2A-Extensions`` and 0.3's
        ``X-A2A-Extensions``) that this agent declares; for a 0.3 request under both names.

        Raises:
            ExtensionSupportRequiredError: a required extension is not asked for (§4.6.3).
        """
        declared = self.config.declared
        if not declared:
            return {}
        asked = requested([*given(HEADER.lower()), *given(LEGACY_HEADER.lower())])
        missing = [e.uri for e in declared if e.required and e.uri not in asked]
        if missing:
            raise ExtensionSupportRequiredError(
                f"Extension support required: this agent requires {', '.join(missing)}; list "
                f"{'it' if len(missing) == 1 else 'them'} in the {HEADER} header"
            )
        on = [e.uri for e in declared if e.uri in asked]
        if not on:
            return {}
        value = header_value(on)
        return {HEADER: value} | ({} if dialect is Dialect.V10 else {LEGACY_HEADER: value})

    async def owner_of(
        self, headers: Mapping[str, str], certificate: bytes | None = None
    ) -> str | None:
        """The caller's owner key (see ``Auth.admit``) from its headers (lower-case names) or a
        gRPC call's metadata, and the client certificate its connection presented (mutual TLS);
        a refused caller raises Refusal. Every binding reads its caller here,
        so the caller's W3C trace is noted here too (``trace.accept``), and what it was granted
        (``_GRANTED``), which the skills' security requirements are checked against."""
        trace.accept(headers)
        _CALLER.set(headers)
        auth = self.config.auth
        if auth is None:
            return None
        try:
            caller = await auth.admit(headers, certificate)
        except AuthRefused as refused:
            raise Refusal(refused.status, str(refused), refused.headers) from None
        _GRANTED.set(caller)
        return caller.owner

    # -- HTTP+JSON ----------------------------------------------------------------------------------
    async def rest(self, op: Operation, request: Request, v03: bool = False) -> Response | _Answer:
        """One operation of the HTTP+JSON binding (A2A 1.0 §11; ``v03``: 0.3's under ``/v1/``):
        the checks and the handler of its JSON-RPC method, the answer as the binding writes it (the
        result as the body; a failure as ``google.rpc.Status`` with the HTTP status of §5.4)."""
        error_body = rest.v03_error_body if v03 else rest.error_body
        if not rest.is_tenant(request.path_params):  # /v1/... is 0.3's, where it has no such route
            return Response("Not Found", 404, media_type="text/plain")
        activated: dict[str, str] = {}
        try:
            # first: an unauthenticated caller learns nothing more
            owner = await self.owner_of(request.headers, peer_certificate(request.scope))
            version = request.headers.get("a2a-version")
            if version is not None and major_version(version) != (0 if v03 else 1):
                speaks = "0.3 under /v1/" if v03 else "1.0"
                raise VersionNotSupportedError(
                    f"Version not supported: A2A-Version {version} on {request.url.path} (these HTTP+JSON routes "
                    f"speak {speaks})",
                    data={"supportedVersions": "0.3" if v03 else "1.0"},
                )
            activated = self.activated(request.headers.getlist, Dialect.V03 if v03 else Dialect.V10)
            body = None
            if request.method == "POST" and (op.body == "required" or _has_body(request.headers)):
                raw = await self._read(request, request.headers)
                try:
                    body = _json.loads(raw)
                except (*_json.JSONDecodeError, ValueError):
                    raise ParseError("Parse error: the body is not valid JSON") from None
                refuse_too_deep(body, raw)  # the limit JSON-RPC's params have
            params = rest.params_from(
                op.key, dict(request.path_params), dict(request.query_params), body
            )
            frame = functools.partial(rest.v03_result, "stream") if v03 else as_is
            outcome = await self.dispatch(
                op,
                rest.v03_params(op.key, params) if v03 else params,
                Dialect.V10,
                None,
                owner,
                wrap=lambda results: sse(results, frame, error_body),
                binding=Binding.HTTP_JSON,
            )
            if isinstance(outcome, Response):
                outcome.headers.update(activated)
                return outcome
            return Response(
                _json.dumps(rest.v03_result(op.key, outcome) if v03 else outcome),
                200,
                activated,
                media_type=rest.MEDIA_TYPE,
            )
        except Refusal as refusal:
            return _json_response(
                rest.refusal_body(refusal.status, str(refusal)), refusal.status, refusal.headers
            )
        except ClientDisconnect:
            return Response(status_code=400)
        except RPCError as err:
            return _json_response(error_body(err), err.http_status, activated)
        except Exception:
            log.exception("HTTP+JSON %s %s failed", request.method, request.url.path)
            return _json_response(error_body(InternalError()), 500)

    async def _read(self, request: Request, headers: Mapping[str, str]) -> bytes:
        """The body of an admitted caller's request, within the content type and size every
        binding takes; refusals raise Refusal."""
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in _JSON_TYPES and not ctype.endswith("+json"):
            raise Refusal(415, f"Content-Type must be application/json, got {ctype or 'none'}")
        limit = self.config.max_body
        declared = headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise Refusal(400, "invalid Content-Length") from None
            if size > limit:
                raise Refusal(413, f"request body too large: {declared} bytes (limit {limit})")
            return await _whole_body(
                request
            )  # the server enforces Content-Length: no more can arrive
        # a trickled body: the server's header_timeout closes the connection (http.server)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                # discard (never keep) a bounded tail so the client reads the 413 instead of a reset
                async for rest in request.stream():
                    size += len(rest)
                    if size > limit + _DRAIN:
                        break
                raise Refusal(
                    413, f"request body too large (limit {limit} bytes)", {"Connection": "close"}
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _background(self, work: Any) -> None:
        async def swallow() -> None:
            try:
                await work
            except Exception:
                log.debug("notification failed", exc_info=True)

        t = asyncio.ensure_future(swallow())
        self._notifications.add(t)
        t.add_done_callback(self._notifications.discard)

    def _route(
        self, method: str, params: dict[str, Any], headers: Mapping[str, str]
    ) -> tuple[Dialect, Operation]:
        """The dialect and operation of a call, after the A2A-Version check. Nothing has run yet."""
        version = headers.get("a2a-version")
        major = major_version(version) if version else None
        if version is not None and major not in (0, 1):
            raise VersionNotSupportedError(
                f"Version not supported: A2A-Version {version} (this agent speaks {_SERVED_VERSIONS})",
                data={"supportedVersions": _SERVED_VERSIONS},
            )
        found = V03_METHODS.get(method)
        if found is not None:
            return Dialect.V03, found
        op = V10_METHODS.get(method)
        if op is None:
            raise MethodNotFoundError(f"Method not found: {method}")
        if major == 0:
            raise VersionNotSupportedError(
                f"Version not supported: A2A-Version {version} with method {method} (0.3 methods are "
                f"message/send, tasks/get, ...; this agent speaks {_SERVED_VERSIONS})",
                data={"supportedVersions": _SERVED_VERSIONS},
            )
        return (Dialect.V10 if major == 1 else unversioned(op, params)), op

    async def dispatch(
        self,
        op: Operation,
        params: dict[str, Any],
        dialect: Dialect,
        rid: Any = None,
        owner: str | None = None,
        wrap: Callable[[AsyncGenerator[Any, None]], Any] | None = None,
        binding: Binding = Binding.JSONRPC,
    ) -> Any:
        """What ``op`` answers to ``params`` (any binding's, in ``dialect``; parsed here once into
        its typed request, ``protocol.params``): a rendered result, or a stream: its results as
        ``wrap`` makes them (default: JSON-RPC over SSE; the HTTP+JSON and gRPC bindings pass their own).
        Counted once in ``metrics`` (by ``binding``) when the agent exports them."""
        if self.metrics is None:
            return await self._answer(op, params, dialect, rid, owner, wrap)
        started, error = time.perf_counter(), None
        try:
            return await self._answer(op, params, dialect, rid, owner, wrap)
        except BaseException as exc:
            error = exc
            raise
        finally:
            self.metrics.request(binding, op, error, time.perf_counter() - started)

    async def _answer(
        self,
        op: Operation,
        params: dict[str, Any],
        dialect: Dialect,
        rid: Any,
        owner: str | None,
        wrap: Callable[[AsyncGenerator[Any, None]], Any] | None,
    ) -> Any:
        request = parse(op, params, dialect)  # the one place a call's params are read
        owner = self._space(owner, request.tenant)
        if op.streams and not self.config.streaming:
            raise UnsupportedOperationError("Streaming is not supported by this agent")
        match request:  # the most frequent first: polls, then sends
            case GetTask():
                return await self._get(request, dialect, owner)
            case SendMessage():
                return await self._send(request, dialect, rid, owner, op.streams, wrap)
            case SubscribeToTask():
                return await self._resubscribe(request, dialect, rid, owner, wrap)
            case CancelTask():
                return render_task(await self.runner.cancel(request.id, owner), dialect)
            case ListTasks():
                return await self._list(request, owner)
            case GetExtendedCard():
                if self.card.has_extended:
                    return self.card.extended(_CALLER.get({}))
                # this agent's card declares no extended card: 1.0 (§3.3.4) answers
                # UnsupportedOperation; 0.3 has only "not configured" for it
                if dialect is Dialect.V10:
                    raise UnsupportedOperationError(
                        "This agent's card declares no extended agent card"
                    )
                raise ExtendedCardNotConfiguredError()
            case _:
                return await self._push(request, dialect, owner)

    def _space(self, owner: str | None, tenant: str | None) -> str | None:
        """The task space of a 1.0 request: with ``A2AConfig.tenants`` (and ``tenant_spaces``),
        the caller's owner key within the tenant it names (never None, so that no space sees
        another's tasks); without, the caller's own (the tenant read, checked and not told apart)."""
        tenants = self.config.tenants
        if tenants is None:
            return owner
        if tenant and tenant not in tenants:
            raise InvalidParamsError(
                f"Invalid params: tenant {tenant!r} is not served here (this agent serves "
                f"{', '.join(map(repr, tenants))}, and requests that name no tenant)"
            )
        return f"{owner or ''}@{tenant or ''}" if self.config.tenant_spaces else owner

    async def _get(self, request: GetTask, dialect: Dialect, owner: str | None) -> Any:
        key = (request.id, dialect, request.history_length, owner)
        finished = self._finished.answers
        kept = finished.get(key)
        if kept is not None:
            finished.move_to_end(key)
            return kept
        task = await self.runner.get(request.id, owner)
        kept = finished.get(key)  # kept meanwhile by a poll that read it at once:
        if kept is not None:  # polls at once answer one, rendered once, its JSON made once
            return kept
        rendered = render_task(task, dialect, request.history_length)
        if not task.state.terminal:
            return rendered
        return self._finished.keep(key, rendered)

    # -- send ---------------------------------------------------------------------------------
    async def _send(
        self,
        request: SendMessage,
        dialect: Dialect,
        rid: Any,
        owner: str | None,
        stream: bool,
        wrap: Callable[[AsyncGenerator[Any, None]], Any] | None = None,
    ) -> Any:
        """A send, once what it asks of this agent is checked: push notifications (and the
        webhook's address), the skill, output modes it makes, files it takes."""
        message = request.message
        if request.push is not None:
            if self.runner.push is None:
                raise PushNotificationNotSupportedError(
                    "Push notifications are not supported by this agent"
                )
            self.runner.push.check(request.push.url)
        skill = request.skill
        if skill is not None and skill not in self._skill_names:
            raise MethodNotFoundError("Method not found")
        chosen = self._skill_names.get(skill) if skill is not None else None
        hidden = self.hidden(_GRANTED.get() or Caller())
        if skill is not None and skill in hidden:
            auth = self.config.auth
            assert auth is not None  # a skill is hidden only behind auth
            missing = auth.missing(self.needs[skill], _GRANTED.get() or Caller())
            raise PermissionDeniedError(
                f"Permission denied: the skill {skill!r} needs the scope {' '.join(missing)}"
            )
        if request.accepted is not None:
            self._check_accepted(request.accepted, chosen)
        if any(part.kind == "file" for part in message.parts) and self.runner.files is None:
            raise ContentTypeNotSupportedError("Incompatible content types: no files taken")
        if self.runner.files is not None and any(part.kind != "text" for part in message.parts):
            self.runner.files.check(message, chosen.input_modes if chosen else None)
        new = not message.task_id  # (the runner names the task it makes on the message)
        try:
            task, queue = await self.runner.send(request, owner=owner, follow=stream, hidden=hidden)
        except (
            UnsupportedOperationError
        ) as err:  # a finished task: 0.3 and legacy have no such error
            if dialect is Dialect.V10:
                raise
            raise InvalidParamsError(err.message) from None
        # a message may be the answer (A2A §3.1.1) to a new message the caller waits for
        direct = (
            self.config.direct_replies
            and new
            and dialect is not Dialect.LEGACY
            and (queue is not None or request.blocking)
        )
        if queue is not None:
            if direct:
                results = self._direct(task, queue, dialect, request.history_length)
                return wrap(results) if wrap is not None else self._sse(results, dialect, rid)
            return self._stream(
                task, task.snapshot(), queue, dialect, rid, request.history_length, wrap
            )
        if request.blocking:
            task = await self.runner.wait(task, self.config.blocking_timeout)
        if direct:
            return _reply(task, dialect, request.history_length)
        return render_send_result(task, dialect, request.history_length)

    def _check_accepted(self, accepted: tuple[str, ...], skill: SkillDef | None) -> None:
        """A send's ``acceptedOutputModes`` refused with -32005 when the agent (or the skill asked
        for) makes none of them (A2A §3.2.2)."""
        makes = (skill.output_modes if skill else None) or self.config.output_modes
        if not any(in_modes(m, accepted) or in_modes(a, makes) for m in makes for a in accepted):
            raise ContentTypeNotSupportedError(
                f"Incompatible content types: this agent answers in {', '.join(makes)}, "
                f"none of {', '.join(accepted)}"
            )

    async def _push(
        self,
        request: SetPushConfig | GetPushConfig | ListPushConfigs | DeletePushConfig,
        dialect: Dialect,
        owner: str | None,
    ) -> Any:
        """Set, get, list and delete a task's push-notification configs, in the caller's dialect."""
        notifier = self.runner.push
        if notifier is None:
            raise PushNotificationNotSupportedError(
                "Push notifications are not supported by this agent"
            )
        if isinstance(request, SetPushConfig):
            await self.runner.get(request.config.task_id, owner)
            return render_push_config(await notifier.keep(notifier.set(request.config)), dialect)
        task_id = request.task_id
        await self.runner.get(task_id, owner)
        await notifier.load(task_id)  # shared by workers: what the database holds (set on any)
        if isinstance(request, GetPushConfig):
            return render_push_config(notifier.get(task_id, request.config_id), dialect)
        if isinstance(request, ListPushConfigs):
            configs = notifier.list(task_id)
            if dialect is not Dialect.V10:  # 0.3's JSON-RPC list is one array
                return [render_push_config(c, dialect) for c in configs]
            try:
                start, end, token = window(
                    len(configs), request.page_size or max(len(configs), 1), request.page_token
                )
            except ValueError as exc:
                raise InvalidParamsError(str(exc)) from None
            return {
                "configs": [render_push_config(c, dialect) for c in configs[start:end]],
                "nextPageToken": token,
            }
        notifier.delete(task_id, request.config_id)
        await notifier.forget(task_id, request.config_id)
        return {} if dialect is Dialect.V10 else None

    async def _list(self, request: ListTasks, owner: str | None) -> dict[str, Any]:
        try:
            page = await self.runner.list(request, owner)
        except ValueError as exc:
            raise InvalidParamsError(str(exc)) from None
        return {
            "tasks": [
                render_task(t, Dialect.V10, request.history_length, request.include_artifacts)
                for t in page.tasks
            ],
            "nextPageToken": page.next_token,
            "pageSize": request.page_size,
            "totalSize": page.total,
        }

    async def _resubscribe(
        self,
        request: SubscribeToTask,
        dialect: Dialect,
        rid: Any,
        owner: str | None,
        wrap: Callable[[AsyncGenerator[Any, None]], Any] | None = None,
    ) -> Any:
        task = await self.runner.get(request.id, owner)
        if task.state.terminal:
            raise UnsupportedOperationError(
                f"Task {task.id} is already {task.state.value}; there is nothing to follow"
            )
        queue = self.runner.listen(task.id)
        return self._stream(task, task.snapshot(), queue, dialect, rid, None, wrap)

    # -- streams ----------------------------------------------------------------------------------
    def _stream(
        self,
        task: Task,
        first: Task,
        queue: Follow,
        dialect: Dialect,
        rid: Any,
        history_length: int | None,
        wrap: Callable[[AsyncGenerator[Any, None]], Any] | None = None,
    ) -> Any:
        """A task's results from ``first`` on, as ``wrap`` makes them (default: JSON-RPC over SSE)."""
        results = self._results(task, first, queue, dialect, history_length)
        return wrap(results) if wrap is not None else self._sse(results, dialect, rid)

    @staticmethod
    def _sse(results: AsyncGenerator[Any, None], dialect: Dialect, rid: Any) -> StreamingResponse:
        """A stream's results as JSON-RPC over SSE."""
        return sse(
            results,
            functools.partial(result_envelope, rid),
            lambda err: error_envelope(rid, err, error_info=dialect is Dialect.V10),
        )

    async def _direct(
        self, task: Task, queue: Follow, dialect: Dialect, history_length: int | None
    ) -> AsyncGenerator[Any, None]:
        """The stream of a send answered directly (``A2AConfig.direct_replies``): nothing (pings)
        until the task settles, then one result: the reply as a message (§3.1.1: "exactly one
        Message object and then close"), or the task when it asks, fails or is canceled."""
        try:
            last = task.snapshot()
            while not (last.state.terminal or last.state.interrupted):
                try:
                    event = await queue.get(KEEPALIVE)
                except TimeoutError:
                    yield None
                    continue
                if event is None:
                    raise ServerStoppingError()
                if event.__class__ is TaskEvent:
                    last = cast(TaskEvent, event).task
            yield _reply(last, dialect, history_length)
        finally:
            self.runner.unlisten(task.id, queue)

    async def _results(
        self, task: Task, first: Task, queue: Follow, dialect: Dialect, history_length: int | None
    ) -> AsyncGenerator[Any, None]:
        """The rendered results of a stream (None: nothing happened for ``KEEPALIVE`` seconds).

        A reply said as it comes goes out as appends to its artifact (:class:`TextEvent`: what
        was not sent yet; a text that starts over replaces it); its last chunk is the whole
        artifact, ``append: false, lastChunk: true`` (as ADK's and fasta2a's servers close one,
        and as ADK's client reads one: the whole artifact, not a piece), so the stream's join is
        the task's artifact, however its words went and however a client reads the close."""
        sent: dict[str, str] = {a.artifact_id: a.text for a in first.artifacts}
        whole: set[str] = set(sent)  # artifacts sent to their last chunk
        try:
            yield render_send_result(first, dialect, history_length)
            if first.state.terminal or first.state.interrupted:
                return
            while True:
                try:
                    event = await queue.get(KEEPALIVE)
                except TimeoutError:
                    yield None
                    continue
                if event is None:  # this server stops before the task ends: follow it on another
                    raise ServerStoppingError()
                if event.__class__ is TextEvent:
                    words = cast(TextEvent, event)
                    update = _words(task, words.artifact_id, words.text, sent, words.last, dialect)
                    if update is not None:
                        yield update
                    if words.last:
                        whole.add(words.artifact_id)
                    continue
                change = cast(TaskEvent, event)
                snap = change.task
                if change.state is TaskState.SUBMITTED:
                    continue
                for art in snap.artifacts:
                    if art.artifact_id in whole:
                        continue
                    whole.add(art.artifact_id)
                    if art.artifact_id in sent:  # said as it came: what the appends did not say
                        update = _words(task, art.artifact_id, art.text, sent, True, dialect)
                        if update is not None:
                            yield update
                    else:
                        yield render_artifact_update(snap, art, dialect)
                done = change.state.terminal or change.state.interrupted
                yield render_status_update(snap, dialect, final=done)
                if done:
                    return
        finally:
            self.runner.unlisten(task.id, queue)


def _reply(task: Task, dialect: Dialect, history_length: int | None) -> dict[str, Any]:
    """A send's answer when a message may be (``A2AConfig.direct_replies``): a completed task's
    reply as a message of its context (its text and files, in the modes the caller accepts; no
    task id: there is no task to follow), else the task as always."""
    parts = [p for a in task.artifacts for p in a.parts]
    if task.state is not TaskState.COMPLETED or not parts:
        return render_send_result(task, dialect, history_length)
    said = next((m for m in reversed(task.history) if m.role == "agent"), None)
    reply = Message("agent", parts, context_id=task.context_id)
    if said is not None:
        reply.message_id = said.message_id
    rendered = render_message(reply, dialect)
    return {"message": rendered} if dialect is Dialect.V10 else rendered


def _words(
    task: Task, artifact_id: str, text: str, sent: dict[str, str], last: bool, dialect: Dialect
) -> dict[str, Any] | None:
    """The artifact update that brings a caller who was sent ``sent[artifact_id]`` to ``text``:
    the rest appended, or all of it replacing what was sent when the text started over or is
    the ``last`` chunk. None when there is nothing to send (nothing new, and not the last)."""
    before = sent.get(artifact_id)
    append = not last and before is not None and text.startswith(before)
    piece = text[len(before) :] if append and before is not None else text
    if not piece and not last and append:
        return None
    sent[artifact_id] = text
    art = Artifact([Part.of_text(piece)], artifact_id, name="reply")
    return render_artifact_update(task, art, dialect, append=append, last_chunk=last)


def sse(
    results: AsyncGenerator[Any, None], data: Callable[[Any], Any], error: Callable[[RPCError], Any]
) -> StreamingResponse:
    """A stream's results as SSE: each one's ``data`` is ``data(result)``; a quiet spell is a
    ``: ping``; a stream that cannot go on (its server stopping) ends with ``error(err)``."""

    async def frames() -> AsyncGenerator[bytes, None]:
        async with contextlib.aclosing(results):  # closed with the response, however it ends
            try:
                async for result in results:
                    yield (
                        b": ping\n\n"
                        if result is None
                        else b"data: " + _json.dumps(data(result)) + b"\n\n"
                    )
            except RPCError as err:
                yield b"data: " + _json.dumps(error(err)) + b"\n\n"

    return StreamingResponse(
        frames(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


# -- header helpers ---------------------------------------------------------------------------------


def _has_body(headers: Mapping[str, str]) -> bool:
    """Whether a request carries a body (HTTP/1.1: a Content-Length other than 0, or chunked)."""
    return headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in headers


def major_version(version: str) -> int | None:
    head = version.strip().split(".")[0]
    return int(head) if head.isdigit() else None


def _hybrid_params(params: dict[str, Any]) -> dict[str, Any]:
    """A hybrid send's params as 1.0 reads them: its ``configuration.blocking`` (fasta2a's
    configuration is 1.0's with 0.3's ``blocking``) as ``returnImmediately``."""
    config = params.get("configuration")
    if not _json.is_object(config) or "blocking" not in config or "returnImmediately" in config:
        return params
    blocking = config["blocking"]
    if not isinstance(blocking, bool):
        raise InvalidParamsError("configuration.blocking must be a boolean")
    return {**params, "configuration": {**config, "returnImmediately": not blocking}}
