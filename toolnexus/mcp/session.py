"""The session an inspector (the TUI's MCP mode, its web form, the notebook's ``%toolnexus mcp``)
keeps open with any MCP server and only renders: see :class:`MCPSession`. What the server told or
asked is a :class:`Notice`; its questions for the user an :class:`Elicitation` (answered with a
:class:`Reply`) or a :class:`Sampling` request; a read resource's items :class:`Content`."""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import copy
import dataclasses
import json
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal, Protocol

from ..display import printable
from ..errors import ConfigError, PeerError
from ..tools import Progress, ProgressFn, ToolResult
from .client import progress_from, tool_dict, tool_result
from .forms import Field, form_fields, root_uri
from .transport import (
    DEFAULT_TIMEOUT,
    MAX_STDERR_LINES,
    TRANSPORTS,
    endpoint_label,
    exception_text,
    mcp_failure,
    open_client,
    owner_ended,
    recorder_for,
    sdk,
    start_failed,
)

__all__ = [
    "MCPSession",
    "Notice",
    "Elicitation",
    "Reply",
    "Sampling",
    "Content",
    "Model",
    "Page",
    "TaskState",
    "LISTS",
    "LOG_LEVELS",
    "eras",
]

log = logging.getLogger("toolnexus.mcp")

CALL_TIMEOUT = 600.0
"""Seconds a session's call, read or prompt may take: a handshake-era server may ask the user a
question in the middle of it, and the user takes their time."""
STDIO_START = 30.0
"""Seconds a stdio server is given to start, beyond the per-request ``timeout``, before its first
answer: its process is launched and its imports run first (a Python server built on the MCP SDK
took 2-3 s on a loaded two-core machine, and the doctor's ``--timeout 10`` then called a working
server broken)."""
MAX_NOTICES = 1000
"""The notices a session keeps (the oldest go first)."""
MAX_PAGES = 50
"""The most pages of one listing a session reads."""
MAX_ITEMS = 5000
"""The most items of one listing a session keeps."""
USER_REJECTED = -1
"""The JSON-RPC code the MCP spec gives a sampling request the user refused."""
MAX_SUGGESTED = 100
"""The most values of a completion a session keeps (the spec caps a server's at 100)."""
MAX_TASKS = 1000
"""The tasks a session remembers the last state of (the oldest go first)."""
TASK_TTL_MS = 600_000
"""How long a task the session creates is asked to be kept (ms): :data:`CALL_TIMEOUT`'s."""
POLL_BOUNDS = (0.05, 5.0)
"""The fewest and most seconds between two ``tasks/get`` of one task, whatever its server
suggests (``pollInterval``); one second when it suggests none."""
MAX_POLL_MS = 86_400_000
"""The longest ``pollInterval`` a server is believed (a day, in ms): a larger one, or a negative
one, is not a poll interval (and a huge integer overflows a float)."""
TASK_STATES = ("working", "input_required", "completed", "failed", "cancelled")
"""The states of an MCP task (2025-11-25); the last three end it."""
RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key of a server's request made for one of its tasks (an ``input_required`` task's
question): ``{"taskId": ...}``."""
LISTS = {
    "tools": ("list_tools", "tools"),
    "resources": ("list_resources", "resources"),
    "templates": ("list_resource_templates", "resource_templates"),
    "prompts": ("list_prompts", "prompts"),
}
"""Each listing a session pages through: the SDK client's method and its result's field."""
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The levels of ``logging/setLevel`` (RFC 5424's, from the least severe)."""


@dataclass(frozen=True)
class Notice:
    """Something the server told or asked, in order: a notification (a list changed, a resource
    updated, a log message, progress), a request of its own (elicitation, sampling, roots) and how
    it was answered, or the session's own news (connected, a stream lost)."""

    when: float
    kind: str
    """``notification``, ``request``, ``progress``, ``log`` or ``session``."""
    method: str
    summary: str
    params: Any = None

    @property
    def clock(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.when))


@dataclass(frozen=True)
class Elicitation:
    """A server's question for the user: a form (``fields`` from its ``requestedSchema``) or, in
    URL mode, an address to visit (``url``). Texts are the peer's, made printable."""

    message: str
    fields: list[Field]
    url: str | None = None
    schema: dict[str, Any] = dataclass_field(default_factory=dict)
    task: str = ""
    """The id of the server's task that asks (its ``input_required``), or nothing."""


@dataclass(frozen=True)
class Reply:
    """The user's answer to an :class:`Elicitation`: ``accept`` (with ``content``), ``decline``
    or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


@dataclass(frozen=True)
class Sampling:
    """A server's request to run the client's model: the conversation (role, text), its system
    prompt and token budget, for the user to approve or refuse."""

    messages: list[tuple[str, str]]
    system: str | None
    max_tokens: int
    task: str = ""
    """The id of the server's task that asks (its ``input_required``), or nothing."""

    @property
    def prompt(self) -> str:
        return self.messages[-1][1] if self.messages else ""


@dataclass(frozen=True)
class Content:
    """One item of a read resource: its URI, MIME type, and text, or (a blob) its bytes."""

    uri: str
    mime: str | None
    text: str | None = None
    data: bytes | None = None

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else len((self.text or "").encode())


@dataclass(frozen=True)
class Page:
    """Some of a listing: its items and the cursor of the rest (``None``: nothing more)."""

    items: list[dict[str, Any]]
    next_cursor: str | None = None


class Model(Protocol):
    """What a session uses of the model that answers sampling (an ``llm.Client``)."""

    model: str

    async def run(
        self, prompt: str, toolkit: Any = None, history: Any = None, *, sink: Any = None
    ) -> Any: ...


@dataclass(frozen=True)
class TaskState:
    """What a server last said of one MCP task (2025-11-25's long-running requests): its id,
    ``status`` (one of :data:`TASK_STATES`), its status message, the seconds it asks between
    polls, the tool whose call it runs (when this session made it), and when the server says it
    was created and last updated (ISO 8601, as it wrote them). Texts are the peer's, made
    printable."""

    task_id: str
    status: str
    message: str = ""
    poll_interval: float | None = None
    tool: str = ""
    created: str = ""
    updated: str = ""

    @property
    def done(self) -> bool:
        return self.status in TASK_STATES[2:]

    @property
    def summary(self) -> str:
        return f"task {self.task_id}: {self.status}" + (f": {self.message}" if self.message else "")


def _task_state(task: Any, tool: str = "") -> TaskState:
    """A ``Task`` (or a ``tasks/get`` result) of the SDK's types as a :class:`TaskState`."""
    poll = getattr(task, "poll_interval", None)
    return TaskState(
        printable(str(task.task_id), 200),
        printable(str(task.status), 40),
        printable(task.status_message or "", 400),
        poll / 1000 if isinstance(poll, (int, float)) and 0 <= poll < MAX_POLL_MS else None,
        tool,
        printable(str(getattr(task, "created_at", None) or ""), 40),
        printable(str(getattr(task, "last_updated_at", None) or ""), 40),
    )


def _asking_task(params: Any) -> str:
    """The id of the task a server's request is made for (its ``_meta``), or nothing."""
    related = (getattr(params, "meta", None) or {}).get(RELATED_TASK)
    task_id = related.get("taskId") if isinstance(related, dict) else None
    return printable(task_id, 200) if isinstance(task_id, str) else ""


Elicit = Callable[[Elicitation], Awaitable[Reply]]
Approve = Callable[[Sampling], Awaitable[bool | str]]
WRITTEN_BY = "user"
"""The model a sampling reply the user wrote is sent as (a sampling result names its model)."""
Listener = Callable[[Notice], None]


def eras() -> tuple[str, ...]:
    """The eras a session may be asked to speak (its ``mode``): ``auto`` (the newest the server
    speaks), ``legacy`` (the ``initialize`` handshake, 2025-11-25 and before), or a version of the
    handshake-free era (2026-07-28) adopted without asking."""
    return ("auto", "legacy", *sdk().MODERN_PROTOCOL_VERSIONS)


class MCPSession:
    """One live session with any MCP server, kept open for an inspector (the TUI's MCP mode, its
    web form, the notebook's widget): what it negotiated, its lists, reads, prompts and calls, and
    everything it told or asked (:attr:`notices`, :meth:`watch`). Owned by a background task (anyio
    wants the task that opened a session to close it); calls may come from any task.

    ``target``: a streamable-HTTP URL (with ``headers``) or a stdio server's command line as a list
    (with ``env`` added to a safe default environment, and ``cwd``). Every exchange, each stdio
    JSON-RPC message too, is on ``bus`` (the Wire). The session offers the server what it was given:
    ``elicit`` (the user answers a form: the elicitation capability), ``model`` and ``approve`` (a
    sampling request goes to ``approve``, which answers True to let ``model`` answer it, False to
    refuse it, or the reply's text, written by the user, sent as :data:`WRITTEN_BY`'s: the sampling
    capability), ``roots`` (always offered; the user's list, :meth:`set_roots`), ``authorize`` (an
    OAuth sign-in when an HTTP server asks for one: see :mod:`toolnexus.mcp.auth`; ``client_id``: the
    static one its authorization server gave, where it registers no client); ``on_stderr``: each line
    a stdio server writes on its stderr, as it comes (also kept: :attr:`console`). ``record``: a
    :class:`~toolnexus.debug.cassette.CassetteWriter` every exchange is written to as well (a
    cassette ``toolnexus replay`` serves as this server, or diffs against it: see
    :mod:`toolnexus.debug.mcp_replay`); the caller closes it.

    Both eras the official SDK speaks: a 2026-07-28 server's questions come as ``input_required``
    results, which the SDK answers through the same callbacks and retries; its changes come on a
    ``subscriptions/listen`` stream the session keeps open (re-opened when the resources subscribed
    to change). A handshake-era server asks during the call and notifies on the connection; its
    resources are subscribed with ``resources/subscribe``.
    """

    def __init__(
        self,
        target: str | list[str],
        *,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        bus: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        roots: list[str] | None = None,
        elicit: Elicit | None = None,
        model: Model | None = None,
        approve: Approve | None = None,
        authorize: Any = None,
        client_id: str | None = None,
        on_stderr: Callable[[str], None] | None = None,
        mode: str = "auto",
        transport: str = "auto",
        record: Any = None,
    ) -> None:
        from .auth import OAuthFlow  # noqa: PLC0415  # start-up: its redirect server (Starlette's responses, 50 ms)

        if not isinstance(target, str) and (not target or not target[0]):
            raise ConfigError("an MCP stdio server needs a command")
        if transport not in TRANSPORTS:
            raise ConfigError(f"no MCP transport {transport!r}: one of {', '.join(TRANSPORTS)}")
        self.target = target
        self.where = endpoint_label(target)
        self.headers = dict(headers or {})
        self.env, self.cwd = env, cwd
        self.timeout, self.call_timeout = timeout, call_timeout
        self.roots = [root_uri(r) for r in roots or []]
        self.elicit, self.model, self.approve = elicit, model, approve
        self.mode = mode
        self.transport = transport if isinstance(target, str) else "stdio"
        """How the server is reached: ``http`` (streamable HTTP), ``sse`` (the legacy HTTP+SSE
        transport), ``stdio``; ``auto`` until :meth:`start` found which of the first two."""
        self.recorder = recorder_for(target, self.headers, bus)
        self.recorder.cassette = record
        self.oauth = (
            OAuthFlow(authorize, secret=self.recorder.secret_values.add, client_id=client_id)
            if authorize is not None and isinstance(target, str)
            else None
        )
        self.status: Literal["connecting", "connected", "failed", "closed"] = "connecting"
        self.reason = ""
        self.protocol_version = ""
        self.server_name = ""
        self.server_version = ""
        self.instructions = ""
        self.capabilities: dict[str, Any] = {}
        self.subscribed: set[str] = set()
        self.log_level: str | None = None
        """The lowest log level asked for (:meth:`set_level`); ``None``: never asked."""
        self.running: dict[int, tuple[str, asyncio.Task[Any]]] = {}
        """The user's requests in flight (a call, a read, a prompt): what each is, by number."""
        self._numbered = 0
        self.tasks: collections.OrderedDict[str, TaskState] = collections.OrderedDict()
        """The last state heard of each task (:class:`TaskState`, by id): the ones this session
        created, polled, listed or was told of, the newest last (:data:`MAX_TASKS` of them)."""
        self.task_support: dict[str, str] = {}
        """Each listed tool's ``execution.taskSupport`` (``optional`` or ``required``), by name:
        :meth:`call` runs such a tool as a task where the server offers tasks."""
        self.notices: collections.deque[Notice] = collections.deque(maxlen=MAX_NOTICES)
        self.stderr = ""
        """The end of a stdio server's stderr once it ended (quoted when it failed)."""
        self.console: collections.deque[str] = collections.deque(maxlen=MAX_STDERR_LINES)
        """A stdio server's stderr as it comes, its last :data:`MAX_STDERR_LINES` lines (each
        also told to ``on_stderr``); nothing over HTTP."""
        self.on_stderr = on_stderr
        self.challenge = ""
        """The ``WWW-Authenticate`` of the last 401 (a challenge, no secret)."""
        self._listeners: list[Listener] = []
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"MCPSession({self.where!r}, status={self.status!r})"

    @property
    def modern(self) -> bool:
        """The 2026-07-28 era (a per-request envelope, no handshake), else the handshake era."""
        MODERN_PROTOCOL_VERSIONS = sdk().MODERN_PROTOCOL_VERSIONS

        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def client(self) -> Any:
        """The official SDK's ``mcp.Client`` of this session, for what the session does not wrap
        (the doctor asks it for exact JSON-RPC errors).

        Raises:
            PeerError: the session is not connected.
        """
        return self._connected()

    @property
    def offered(self) -> list[str]:
        """The capabilities this client declares."""
        out = ["roots"]
        if self.elicit is not None:
            out.append("elicitation")
        if self.approve is not None:
            out.append("sampling")
        return out

    # -- life ---------------------------------------------------------------------------------------
    async def start(self) -> MCPSession:
        """Connect; when the server refuses with a 401 that names its protected-resource metadata
        (the MCP authorization spec's sign that it takes OAuth) and ``authorize`` was given, run
        the OAuth sign-in and connect again with its token.

        Raises:
            PeerError: it could not connect; the reason in one line (also in :attr:`reason`).
        """
        try:
            await self._attempt(None)
        except PeerError as refused:
            if self._old_server():  # the spec's way to old servers: HTTP+SSE after a 4xx
                self._stop = asyncio.Event()
                self.transport = "sse"
                try:
                    await self._attempt(None)
                except PeerError as exc:
                    self.reason = f"{self.reason} (streamable HTTP: {refused})"
                    raise PeerError(f"{exc}; streamable HTTP: {self._first(refused)}") from None
                self.status = "connected"
                self._tell("session", "connected", self._hello())
                return self
            if self.oauth is None or not self._asks_oauth():
                raise
            self._tell("session", "oauth", "the server asks for OAuth: signing in")
            self._stop = asyncio.Event()
            await self._attempt(self.oauth)
        if self.transport == "auto":
            self.transport = "http"
        self.status = "connected"
        self._tell("session", "connected", self._hello())
        return self

    def _old_server(self) -> bool:
        """Whether a streamable-HTTP attempt (``auto``) was refused as an old server refuses it:
        a 400, 404 or 405 (its HTTP+SSE endpoint takes no POST, or the URL is its stream's)."""
        return self.transport == "auto" and self.reason.startswith(
            ("HTTP 400", "HTTP 404", "HTTP 405")
        )

    def _first(self, refused: PeerError) -> str:
        return str(refused).removeprefix(f"{self.where}: ")

    async def _attempt(self, auth: Any) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own(auth))
        wait = self.timeout + (auth.timeout if auth is not None else 0)
        if not isinstance(self.target, str):  # a command to start first
            wait += STDIO_START
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), wait)
        except Exception as exc:
            silent = isinstance(exc, TimeoutError) and not self._ready.done()
            reason = self._failure(exc, f"no answer within {wait:g} s" if silent else "")
            await self.close()
            self.status, self.reason = "failed", reason
            raise PeerError(f"{self.where}: {reason}") from None

    def _asks_oauth(self) -> bool:
        """Whether the last 401 names the server's protected-resource metadata (read from the
        answer itself: the wire log masks every header named for auth)."""
        return "resource_metadata" in self.challenge.lower()

    def _answered(self, response: Any) -> None:
        if response.status_code == 401:
            self.challenge = response.headers.get("www-authenticate", "")

    async def __aenter__(self) -> MCPSession:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._stop.set()
        await owner_ended(self._owner)
        if self.oauth is not None:
            await self.oauth.close()
        if self.status in ("connected", "connecting"):
            self.status = "closed"

    def _failure(self, exc: BaseException, said: str = "") -> str:
        """Why the session failed, in one line: ``said`` when the caller knows (a start that
        timed out), else what :func:`mcp_failure` reads in ``exc``; the server's stderr after."""
        if self.oauth is not None and self.oauth.failure:  # the sign-in's own words
            return self.oauth.failure
        reason = said or mcp_failure(exc, self.recorder)
        if self.stderr:
            reason += f"; its stderr ends: {printable(self.stderr[-400:].strip())}"
        return reason

    def _hello(self) -> str:
        who = f"{self.server_name} {self.server_version}".strip() or "an anonymous server"
        over = {"sse": ", over HTTP+SSE (2024-11-05)"}.get(self.transport, "")
        return f"{who}, protocol {self.protocol_version}{over}"

    async def _own(self, auth: Any) -> None:
        try:
            async with open_client(
                self.target,
                self.recorder,
                self.timeout,
                headers=self.headers,
                env=self.env,
                cwd=self.cwd,
                auth=auth,
                stderr=self._heard_stderr,
                stderr_line=self._heard_line,
                on_response=self._answered,
                transport=self.transport,
                # the 2024-11-05 transport carries the handshake era only
                mode="legacy" if self.transport == "sse" and self.mode == "auto" else self.mode,
                cache=None,
                message_handler=self._heard,
                elicitation_callback=self._elicited if self.elicit is not None else None,
                sampling_callback=self._sampled if self.approve is not None else None,
                list_roots_callback=self._listed_roots,
            ) as client:
                self._client = client
                self._learn(client)
                if self.modern:
                    self._listen_task = asyncio.ensure_future(self._listen())
                assert self._ready is not None
                if not self._ready.done():
                    self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the session ended; report, never raise here
            if not start_failed(self._ready, exc) and not self._stop.is_set():
                self.status, self.reason = "failed", self._failure(exc)
                self._tell("session", "ended", f"the session ended: {self.reason}")
            if isinstance(exc, asyncio.CancelledError):
                return
        finally:
            self._client = None
            if self._listen_task is not None:
                self._listen_task.cancel()
                await asyncio.gather(self._listen_task, return_exceptions=True)
            if not self._stop.is_set() and self.status == "connected":
                self.status, self.reason = "failed", "the server closed the connection"
                self._tell("session", "ended", self.reason)

    def _learn(self, client: Any) -> None:
        self.protocol_version = str(client.protocol_version)
        info = client.server_info
        self.server_name = printable(info.name, 200) if info is not None else ""
        self.server_version = printable(info.version, 100) if info is not None else ""
        self.instructions = printable(client.instructions or "", 4000)
        self.capabilities = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)

    def _heard_stderr(self, tail: str) -> None:
        self.stderr = tail

    def _heard_line(self, line: str) -> None:
        self.console.append(line)
        if self.on_stderr is not None:
            try:
                self.on_stderr(line)
            except Exception:  # noqa: BLE001 - a front end's listener never breaks the session
                log.warning("a stderr listener failed", exc_info=True)

    # -- what the server says -----------------------------------------------------------------------
    def watch(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(notice)`` for every notice from now on; returns the way to stop."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _tell(self, kind: str, method: str, summary: str, params: Any = None) -> Notice:
        notice = Notice(time.time(), kind, method, printable(summary, 400), params)
        self.notices.append(notice)
        for listener in list(self._listeners):
            try:
                listener(notice)
            except Exception:  # noqa: BLE001 - a front end's listener never breaks the session
                log.warning("a notice listener failed", exc_info=True)
        return notice

    async def _heard(self, message: Any) -> None:
        if isinstance(message, Exception):
            self._tell("session", "error", f"the connection said: {mcp_failure(message)}")
            return
        method = str(getattr(message, "method", "?"))
        params = getattr(message, "params", None)
        data = _as_sent(params) if params else {}
        if method == "notifications/message":
            level = data.get("level", "info")
            said = data.get("data")
            text = said if isinstance(said, str) else json.dumps(said, ensure_ascii=False)
            self._tell("log", method, f"{level}: {text}", data)
        elif method == "notifications/subscriptions/acknowledged":
            return  # the listen stream says what it honoured
        elif method == "notifications/progress":
            self._tell("progress", method, _progress_text(data), data)
        elif method == "notifications/tasks/status":
            state = self._heard_task(sdk().types.TaskStatusNotificationParams.model_validate(data))
            self._tell("task", method, state.summary, data)
        elif method == "notifications/resources/updated":
            self._tell("notification", method, f"updated: {data.get('uri', '')}", data)
        else:
            self._tell("notification", method, method.removeprefix("notifications/"), data)

    async def _listen(self, acked: asyncio.Future[None] | None = None) -> None:
        """2026-07-28: keep a ``subscriptions/listen`` stream open for every change and the
        resources subscribed to (its events reach :meth:`_heard` like notifications); ``acked``
        is done once the server acknowledged it (or refused)."""
        ListenNotSupportedError, SubscriptionLost = (
            sdk().ListenNotSupportedError,
            sdk().SubscriptionLost,
        )

        client = self._client
        try:
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=sorted(self.subscribed),
            ) as sub:
                honored = getattr(sub, "honored", None)
                said = honored.model_dump(by_alias=True, exclude_none=True) if honored else {}
                self._tell(
                    "session", "subscriptions/listen", f"listening: {json.dumps(said)}", said
                )
                if acked is not None and not acked.done():
                    acked.set_result(None)
                async for _ in sub:
                    pass
            self._tell("session", "subscriptions/listen", "the server ended the listen stream")
        except asyncio.CancelledError:
            raise
        except (ListenNotSupportedError, SubscriptionLost, Exception) as exc:  # noqa: BLE001
            if self._stop.is_set():
                return  # the session is closing: the stream goes with it
            self._tell("session", "subscriptions/listen", f"no change stream: {mcp_failure(exc)}")
        finally:
            if acked is not None and not acked.done():
                acked.set_result(None)

    async def _relisten(self) -> None:
        """Open the listen stream again for the resources now subscribed to, and wait until the
        server acknowledged it (2026-07-28; nothing in the handshake era)."""
        if not self.modern or self._client is None:
            return
        before = self._listen_task
        if before is not None:
            before.cancel()
        acked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._listen_task = asyncio.ensure_future(self._after(before, acked))
        await asyncio.wait_for(asyncio.shield(acked), self.timeout)

    async def _after(self, before: asyncio.Task[None] | None, acked: asyncio.Future[None]) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        await self._listen(acked)

    # -- what the server asks -----------------------------------------------------------------------
    async def _elicited(self, context: Any, params: Any) -> Any:
        types = sdk().types

        url = getattr(params, "url", None)
        schema = dict(getattr(params, "requested_schema", None) or {})
        request = Elicitation(
            printable(params.message, 2000),
            form_fields(schema),
            printable(url, 2000) if url else None,
            schema,
            _asking_task(params),
        )
        self._tell("request", "elicitation/create", f"asks: {request.message}", _as_sent(params))
        assert self.elicit is not None
        try:
            reply = await self.elicit(request)
        except Exception as exc:  # noqa: BLE001 - the front end's failure is a cancel, not a crash
            log.warning("the elicitation form failed", exc_info=True)
            reply = Reply("cancel")
            self._tell("session", "elicitation/create", f"the form failed: {exception_text(exc)}")
        self._tell("request", "elicitation/create", f"answered: {reply.action}")
        return types.ElicitResult(
            action=reply.action, content=reply.content if reply.action == "accept" else None
        )

    async def _sampled(self, context: Any, params: Any) -> Any:
        types = sdk().types

        request = Sampling(
            [(m.role, printable(_sampled_text(m.content), 20000)) for m in params.messages],
            printable(params.system_prompt, 4000) if params.system_prompt else None,
            params.max_tokens,
            _asking_task(params),
        )
        self._tell(
            "request",
            "sampling/createMessage",
            f"asks the model: {request.prompt[:200]}",
            _as_sent(params),
        )
        assert self.approve is not None
        try:
            approved = await self.approve(request)
        except Exception:  # noqa: BLE001 - a failed approval is a refusal
            log.warning("the sampling approval failed", exc_info=True)
            approved = False
        if isinstance(approved, str):  # the user wrote the reply: sent as written
            self._tell(
                "request", "sampling/createMessage", f"answered by the user: {approved[:200]}"
            )
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(type="text", text=approved),
                model=WRITTEN_BY,
                stop_reason="endTurn",
            )
        if not approved:
            self._tell("request", "sampling/createMessage", "refused by the user")
            return types.ErrorData(
                code=USER_REJECTED, message="the user refused the sampling request"
            )
        if self.model is None:
            self._tell("request", "sampling/createMessage", "no model to answer it")
            return types.ErrorData(
                code=USER_REJECTED, message="no model to answer, and the user wrote no reply"
            )
        try:
            said, model = await _complete(self.model, request, self.call_timeout)
        except Exception as exc:  # noqa: BLE001 - the model's failure is the request's error
            self._tell(
                "request", "sampling/createMessage", f"the model failed: {exception_text(exc)}"
            )
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"the model failed: {exception_text(exc)}"
            )
        self._tell("request", "sampling/createMessage", f"answered by {model}: {said[:200]}")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=said),
            model=model,
            stop_reason="endTurn",
        )

    async def _listed_roots(self, context: Any) -> Any:
        types = sdk().types

        self._tell("request", "roots/list", f"asks for the roots: {len(self.roots)} given")
        FileUrl = sdk().FileUrl

        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(u)) for u in self.roots])

    async def set_roots(self, roots: list[str]) -> None:
        """Declare the user's roots (paths or ``file://`` URIs); a handshake-era server is told
        they changed (2026-07-28 has no such notification: it asks again when it needs them)."""
        self.roots = [root_uri(r) for r in roots]
        client = self._client
        if client is not None and not self.modern:
            await self._handshake_era(lambda: client.session.send_roots_list_changed())
        self._tell("session", "roots", f"roots: {', '.join(self.roots) or 'none'}")

    # -- what the user asks -------------------------------------------------------------------------
    async def _do(
        self, work: Awaitable[Any], timeout: float | None = None, *, what: str = ""
    ) -> Any:
        """Run one request of the session from any task, bounded in time; the session dying
        fails it at once. ``what`` names a request the user may cancel (:meth:`cancel`).

        Raises:
            PeerError: the server refused it (a JSON-RPC error, in one line), it failed, or the
                user cancelled it.
        """
        job = asyncio.ensure_future(work)
        number = 0
        if what:
            self._numbered += 1
            number = self._numbered
            self.running[number] = (what, job)
        owner = self._owner
        waits: set[asyncio.Future[Any]] = {job} if owner is None else {job, owner}
        limit = self.timeout if timeout is None else timeout
        try:
            done, _ = await asyncio.wait(
                waits, timeout=limit + 1, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            job.cancel()
            raise
        finally:
            self.running.pop(number, None)
        if job.cancelled():
            raise PeerError(f"{what or 'the request'}: cancelled, {self._cancel_words(what)}")
        if job not in done:
            job.cancel()
            await asyncio.gather(job, return_exceptions=True)
            if owner is not None and owner.done():
                raise PeerError(
                    f"{self.where}: the session ended: {self.reason or 'connection lost'}"
                )
            raise PeerError(f"{self.where}: no answer within {limit:g} s")
        try:
            return job.result()
        except Exception as exc:
            raise PeerError(mcp_failure(exc, self.recorder)) from None

    async def _handshake_era(self, request: Callable[[], Awaitable[Any]], what: str = "") -> Any:
        """A handshake-era request, which the SDK marks deprecated (it warns as each is made):
        made and run (as :meth:`_do` runs any) without the warning."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return await self._do(request(), what=what)

    def _cancel_words(self, what: str = "") -> str:
        """How the server was told of a cancel: a task is cancelled with ``tasks/cancel``;
        2026-07-28 over HTTP closes the request's stream (it has no notifications from the client
        there), everything else sends ``notifications/cancelled``."""
        if what.endswith(AS_TASK):
            return "the server was told (tasks/cancel)"
        if self.modern and isinstance(self.target, str):
            return "the server was told by closing its answer's stream (2026-07-28 over HTTP)"
        return "the server was told (notifications/cancelled)"

    def cancel(self, number: int | None = None) -> list[str]:
        """Cancel the user's request numbered ``number`` in :attr:`running`, or all of them: the
        SDK tells the server (``notifications/cancelled``; on 2026-07-28 over HTTP, the request's
        stream closed) and the request raises :class:`PeerError` saying it was cancelled. Returns
        what was cancelled."""
        chosen = [
            (n, what, job)
            for n, (what, job) in self.running.items()
            if number is None or n == number
        ]
        for _, what, job in chosen:
            job.cancel()
            self._tell("session", "notifications/cancelled", f"cancelled: {what}")
        return [what for _, what, _ in chosen]

    def _connected(self) -> Any:
        client = self._client
        if client is None or self.status != "connected":
            raise PeerError(
                f"{self.where}: the session is {self.status}{': ' + self.reason if self.reason else ''}"
            )
        return client

    async def page(self, kind: str, cursor: str | None = None) -> Page:
        """One page of a listing (``kind``: ``tools``, ``resources``, ``templates`` or
        ``prompts``, :data:`LISTS`), from ``cursor`` (the first page without one), and the
        server's cursor of the next (the MCP spec's ``nextCursor``: opaque, the server's own).

        Raises:
            PeerError: the server refused (a cursor it does not know: -32602) or failed.
        """
        client = self._connected()
        method, field_name = LISTS[kind]
        result = await self._do(getattr(client, method)(cursor=cursor))
        listed = getattr(result, field_name) or []
        if kind == "tools":
            items = [tool_dict(t) for t in listed]
            for item in items:
                support = item.get("execution", {}).get("taskSupport")
                if support in ("optional", "required"):
                    self.task_support[item["name"]] = support
                else:
                    self.task_support.pop(item["name"], None)
        else:
            items = [i.model_dump(exclude_none=True, mode="json") for i in listed]
        more = result.next_cursor
        return Page(items, printable(more, 1000) if isinstance(more, str) and more else None)

    async def listing(self, kind: str, cursor: str | None = None, limit: int = MAX_ITEMS) -> Page:
        """A listing page after page from ``cursor`` until it ends, or has ``limit`` items (whole
        pages: it may pass it by less than a page), or :data:`MAX_PAGES` pages were read; the
        cursor left (``None``: all of it was read). Never more than :data:`MAX_ITEMS` items."""
        items: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES):
            got = await self.page(kind, cursor)
            items += got.items
            cursor = got.next_cursor
            if not cursor or len(items) >= min(limit, MAX_ITEMS):
                break
        if len(items) > MAX_ITEMS:
            return Page(items[:MAX_ITEMS], cursor)
        return Page(items, cursor)

    async def tools(self) -> list[dict[str, Any]]:
        """``[{name, description, input_schema, output_schema?, annotations?}]``, every page."""
        return (await self.listing("tools")).items

    async def resources(self) -> list[dict[str, Any]]:
        """``[{uri, name, description, mime_type, size}]``, every page."""
        return (await self.listing("resources")).items

    async def templates(self) -> list[dict[str, Any]]:
        """``[{uri_template, name, description, mime_type}]``, every page."""
        return (await self.listing("templates")).items

    async def prompts(self) -> list[dict[str, Any]]:
        """``[{name, description, arguments: [{name, description, required}]}]``, every page."""
        return (await self.listing("prompts")).items

    async def ping(self) -> float:
        """``ping``: the seconds the server took to answer it (the round trip). 2026-07-28 has
        no ping (the SDK refuses it there): a session in that era says so.

        Raises:
            PeerError: the era has no ping, or the server did not answer.
        """
        client = self._connected()
        if self.modern:
            raise PeerError(
                f"{self.where}: MCP {self.protocol_version} has no ping (it was removed with the "
                "handshake); connect in the handshake era to ping"
            )
        started = time.perf_counter()
        await self._handshake_era(lambda: client.send_ping(), what="ping")
        took = time.perf_counter() - started
        self._tell("session", "ping", f"ping answered in {took * 1000:.1f} ms")
        return took

    async def set_level(self, level: str) -> None:
        """Ask for the server's log lines at ``level`` and above (:data:`LOG_LEVELS`): in the
        handshake era ``logging/setLevel`` (when the server declares logging); on 2026-07-28,
        where that method is gone, every later call, read and prompt asks for them in its own
        ``_meta`` (``io.modelcontextprotocol/logLevel``), as that era has it.

        Raises:
            PeerError: an unknown level, a server without logging (handshake era), or it refused.
        """
        if level not in LOG_LEVELS:
            raise PeerError(
                f"no log level {printable(level, 40)!r}: one of {', '.join(LOG_LEVELS)}"
            )
        client = self._connected()
        if not self.modern:
            if "logging" not in self.capabilities:
                raise PeerError(
                    f"{self.where}: the server declares no logging capability (its log lines, "
                    "if any, come as it sends them)"
                )
            await self._handshake_era(lambda: client.set_logging_level(level))
        self.log_level = level
        how = "logging/setLevel" if not self.modern else "asked in each request's _meta"
        self._tell("session", "logging/setLevel", f"log level {level} ({how})", {"level": level})

    async def complete(
        self,
        ref: str,
        name: str,
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> list[str]:
        """What the server suggests for ``argument`` of a prompt (``ref`` ``prompt``, ``name`` its
        name) or a resource template (``template``, ``name`` its URI template) as ``value`` is
        typed (``completion/complete``; ``context``: the other arguments filled in). A server that
        declares no completions is not asked: none.

        Raises:
            PeerError: the server refused or failed.
        """
        types = sdk().types

        client = self._connected()
        if "completions" not in self.capabilities:
            return []
        reference = (
            types.PromptReference(name=name)
            if ref == "prompt"
            else types.ResourceTemplateReference(uri=name)
        )
        result = await self._do(
            client.complete(reference, {"name": argument, "value": value}, context or None)
        )
        return [printable(str(v), 200) for v in result.completion.values[:MAX_SUGGESTED]]

    def _meta(self) -> dict[str, Any] | None:
        """What a user's request carries in its ``_meta``: on 2026-07-28, the log level asked."""
        if self.modern and self.log_level is not None:
            return {sdk().types.LOG_LEVEL_META_KEY: self.log_level}
        return None

    async def read(self, uri: str) -> list[Content]:
        """The contents of one resource (a blob's bytes decoded), each with its MIME type."""
        client = self._connected()
        result = await self._do(
            client.read_resource(uri, meta=self._meta()), self.call_timeout, what=f"read {uri}"
        )
        out = []
        for c in result.contents:
            blob = getattr(c, "blob", None)
            data = None
            if blob is not None:
                try:
                    data = base64.b64decode(blob, validate=False)
                except ValueError:
                    data = b""
            out.append(Content(str(c.uri), c.mime_type, getattr(c, "text", None), data))
        return out

    async def prompt(
        self, name: str, arguments: dict[str, str]
    ) -> tuple[str, list[tuple[str, str]]]:
        """A prompt filled with ``arguments``: its description and its messages (role, text)."""
        client = self._connected()
        result = await self._do(
            client.get_prompt(name, arguments, meta=self._meta()),
            self.call_timeout,
            what=f"prompt {name}",
        )
        return (
            printable(result.description or "", 2000),
            [(m.role, _block_text(m.content)) for m in result.messages],
        )

    @property
    def offers_tasks(self) -> bool:
        """Whether the server runs tool calls as tasks (its ``tasks.requests.tools.call``
        capability; MCP 2025-11-25, the handshake era: 2026-07-28 moved tasks to an extension
        this session does not speak)."""
        tasks = self.capabilities.get("tasks") or {}
        return not self.modern and "call" in ((tasks.get("requests") or {}).get("tools") or {})

    async def call(
        self,
        name: str,
        args: dict[str, Any],
        *,
        progress: ProgressFn | None = None,
        on_task: Callable[[TaskState], None] | None = None,
    ) -> ToolResult:
        """Call one tool; ``progress`` hears what the server reports while it runs (also a notice).
        A tool whose listing says it runs as a task (``execution.taskSupport`` ``optional`` or
        ``required``, :attr:`task_support`), on a server that offers tasks, is called as one:
        ``tools/call`` with a ``task``, then ``tasks/get`` every ``pollInterval`` while it works
        (each state told to ``on_task`` and as a notice), then ``tasks/result``; cancelling the
        call (:meth:`cancel`) cancels the task (``tasks/cancel``). A tool's error is a result
        (``is_error``); a protocol error raises.

        Raises:
            PeerError: the server refused the call (a JSON-RPC error), the session failed, or the
                task failed without a result or was cancelled.
        """
        client = self._connected()
        if self.offers_tasks and name in self.task_support:
            return await self._do(
                self._task_call(name, args, on_task),
                self.call_timeout,
                what=f"call {name}{AS_TASK}",
            )

        async def heard(p: Progress) -> None:
            self._tell(
                "progress",
                "notifications/progress",
                _progress_text({"progress": p.done, "total": p.total, "message": p.message}),
            )
            if progress is not None:
                await progress(p)

        result = await self._do(
            client.call_tool(
                name,
                args,
                read_timeout_seconds=self.call_timeout,
                progress_callback=progress_from(progress or _ignore),
                meta=self._meta(),
            ),
            self.call_timeout,
            what=f"call {name}",
        )
        return _outcome(result)

    async def _task_call(
        self, name: str, args: dict[str, Any], on_task: Callable[[TaskState], None] | None
    ) -> ToolResult:
        """A tool called as a task, run by :meth:`_do` (whose cancel reaches the task)."""
        types = sdk().types

        client = self._connected()
        params = _as_sent(
            types.CallToolRequestParams(
                name=name, arguments=args, task=types.TaskMetadata(ttl=TASK_TTL_MS)
            )
        )
        # the SDK (mcp 2.3) has no tasks API and checks a tools/call result as a CallToolResult:
        # a task-augmented call goes through its dispatcher as it is, its answer checked here
        raw = await client.session._dispatcher.send_raw_request(  # noqa: SLF001  # see above
            "tools/call", params, {"timeout": self.timeout}
        )
        state = self._heard_task(types.CreateTaskResult.model_validate(raw).task, name)
        told = ""
        try:
            while True:
                if state.summary != told:
                    told = state.summary
                    self._tell("task", "tasks/get", f"{name}: {told}")
                    if on_task is not None:
                        on_task(state)
                if state.status != "working":
                    break
                low, high = POLL_BOUNDS
                await asyncio.sleep(min(max(state.poll_interval or 1.0, low), high))
                state = await self.task(state.task_id)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._cancel_quietly(state.task_id))
            raise
        if state.status == "cancelled":
            raise PeerError(f"call {name}: {state.summary} (cancelled by the server)")
        try:  # completed, failed, or input_required: its result (the server asks meanwhile)
            result = await self._payload(state.task_id)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._cancel_quietly(state.task_id))
            raise
        except Exception as exc:  # noqa: BLE001 - a failed task may keep no result
            raise PeerError(f"call {name}: {state.summary}: {mcp_failure(exc)}") from None
        if not state.done:  # it asked for input, and its result came: it ended, as it says
            state = await self._ended(state, result)
            self._tell("task", "tasks/get", f"{name}: {state.summary}")
            if on_task is not None:
                on_task(state)
        return _outcome(result)

    async def _payload(self, task_id: str) -> Any:
        """``tasks/result``: a task's result, once it ended (the server holds the answer till
        then, and sends meanwhile the questions its task asks)."""
        types = sdk().types

        return await self._connected().session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult,
            request_read_timeout_seconds=self.call_timeout,
        )

    async def _ended(self, state: TaskState, result: Any) -> TaskState:
        """How a task whose result came ended: as the server says (``tasks/get``); when it
        cannot say, ``failed`` for an error result, else ``completed``."""
        try:
            return await asyncio.wait_for(self._task_request("get", state.task_id), self.timeout)
        except Exception:  # noqa: BLE001 - the result is what matters: its error says enough
            ended = "failed" if result.is_error else "completed"
            return self._heard_task(dataclasses.replace(state, status=ended, message=""))

    async def _cancel_quietly(self, task_id: str) -> None:
        state = await asyncio.wait_for(self._task_request("cancel", task_id), self.timeout)
        self._tell("task", "tasks/cancel", state.summary)

    def _heard_task(self, task: Any, tool: str = "") -> TaskState:
        """Remember what was heard of a task (a :class:`TaskState` or an SDK ``Task``)."""
        state = task if isinstance(task, TaskState) else _task_state(task)
        known = self.tasks.pop(state.task_id, None)
        if not state.tool and (tool or known is not None):
            state = dataclasses.replace(state, tool=tool or (known.tool if known else ""))
        self.tasks[state.task_id] = state
        while len(self.tasks) > MAX_TASKS:
            self.tasks.popitem(last=False)
        return state

    async def _task_request(self, verb: str, task_id: str) -> TaskState:
        types = sdk().types

        client = self._connected()
        if verb == "get":
            request: Any = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
            answer: Any = types.GetTaskResult
        else:
            request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
            answer = types.CancelTaskResult
        got = await client.session.send_request(
            request, answer, request_read_timeout_seconds=self.timeout
        )
        return self._heard_task(got)

    def _need_tasks(self, what: str) -> None:
        tasks = self.capabilities.get("tasks")
        if self.modern or not isinstance(tasks, dict) or (what and what not in tasks):
            raise PeerError(
                f"{self.where}: the server offers no task {what or 'support'} (its capabilities "
                "say so)"
            )

    async def task(self, task_id: str) -> TaskState:
        """A task's state now (``tasks/get``).

        Raises:
            PeerError: the server offers no tasks, does not know this one, or failed.
        """
        self._need_tasks("")
        return await self._do(self._task_request("get", task_id))

    async def task_result(self, task_id: str) -> ToolResult:
        """A task's result (``tasks/result``): the server answers once the task ended, and a task
        that needs input asks for it meanwhile (through ``elicit``, ``approve``). The user may
        cancel the wait (:meth:`cancel`: the task goes on). A tool's error is a result.

        Raises:
            PeerError: the server offers no tasks, does not know this one, keeps no result (a
                cancelled task), or failed.
        """
        self._need_tasks("")
        result = await self._do(
            self._payload(task_id), self.call_timeout, what=f"result of task {task_id}"
        )
        known = self.tasks.get(task_id)
        if known is None or not known.done:
            await self._ended(known or TaskState(task_id, "working"), result)
        return _outcome(result)

    async def cancel_task(self, task_id: str) -> TaskState:
        """Cancel a task (``tasks/cancel``): its state after.

        Raises:
            PeerError: the server offers no task cancel, refused (a task already ended), or failed.
        """
        self._need_tasks("cancel")
        state = await self._do(self._task_request("cancel", task_id))
        self._tell("task", "tasks/cancel", state.summary)
        return state

    async def list_tasks(self, cursor: str | None = None) -> tuple[list[TaskState], str | None]:
        """One page of the server's tasks (``tasks/list``) and the cursor of the next.

        Raises:
            PeerError: the server offers no task list, or failed.
        """
        types = sdk().types

        self._need_tasks("list")
        client = self._connected()
        result = await self._do(
            client.session.send_request(
                types.ListTasksRequest(
                    params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
                ),
                types.ListTasksResult,
                request_read_timeout_seconds=self.timeout,
            )
        )
        states = [self._heard_task(t) for t in result.tasks[:MAX_ITEMS]]
        more = result.next_cursor
        return states, printable(more, 1000) if isinstance(more, str) and more else None

    async def subscribe(self, uri: str) -> None:
        """Be told when this resource changes: ``resources/subscribe`` in the handshake era, the
        listen stream's ``resourceSubscriptions`` on 2026-07-28."""
        client = self._connected()
        if not self.modern:
            if not (self.capabilities.get("resources") or {}).get("subscribe"):
                raise PeerError(
                    f"{self.where}: the server offers no resource subscriptions (its capabilities "
                    "say so); read the resource again to see it now"
                )
            await self._handshake_era(lambda: client.subscribe_resource(uri))
        self.subscribed.add(uri)
        await self._relisten()
        self._tell("session", "resources/subscribe", f"subscribed: {uri}")

    async def unsubscribe(self, uri: str) -> None:
        client = self._connected()
        if not self.modern:
            await self._handshake_era(lambda: client.unsubscribe_resource(uri))
        self.subscribed.discard(uri)
        await self._relisten()
        self._tell("session", "resources/unsubscribe", f"unsubscribed: {uri}")


AS_TASK = " (a task)"
"""How a request the user may cancel is named when it runs as a task."""


def _as_sent(model: Any) -> dict[str, Any]:
    """An SDK model as it crosses the wire: its JSON names, nothing unset."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _outcome(result: Any) -> ToolResult:
    """A ``CallToolResult`` as a :class:`ToolResult`, its structured content and blocks kept."""
    outcome = tool_result(result)
    if result.structured_content is not None:
        outcome.metadata["structured"] = result.structured_content
    outcome.metadata["content"] = [_as_sent(b) for b in result.content or []]
    return outcome


async def _ignore(p: Progress) -> None:
    """A progress listener that asks for progress (the notices show it) and does nothing."""


def _progress_text(data: dict[str, Any]) -> str:
    done, total, message = data.get("progress"), data.get("total"), data.get("message")
    amount = f"{done:g}" if isinstance(done, (int, float)) else "?"
    if isinstance(total, (int, float)):
        amount += f"/{total:g}"
    return f"progress {amount}" + (f": {message}" if message else "")


def _block_text(block: Any) -> str:
    """A content block as text for people (an image or audio as its type, a resource its URI)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {getattr(block, 'mime_type', '')}]"
    if kind == "resource_link":
        return f"[resource: {getattr(block, 'uri', '')}]"
    if kind == "resource":
        res = getattr(block, "resource", None)
        return getattr(res, "text", None) or f"[resource: {getattr(res, 'uri', '')}]"
    return f"[{kind or 'content'}]"


def _sampled_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(_block_text(b) for b in blocks)


async def _complete(model: Model, request: Sampling, timeout: float) -> tuple[str, str]:
    """``request`` run through ``model`` (its system prompt the request's, no tools)."""
    chosen = copy.copy(model)
    if request.system is not None and hasattr(chosen, "system_prompt"):
        chosen.system_prompt = request.system  # type: ignore[attr-defined]  # an llm.Client's
    history = [{"role": role, "content": text} for role, text in request.messages[:-1]]
    result = await asyncio.wait_for(chosen.run(request.prompt, None, history), timeout)
    return str(getattr(result, "text", "")), str(getattr(result, "model", "") or model.model)
