"""Serving a toolkit: the Starlette app, the handle, and ``serve`` / ``serve_in_thread``.

``a2a`` and ``mcp`` are independent profiles on one port. With neither (and no ``a2a`` or
``mcpServer`` block in the toolkit's config) the server still runs and every path answers 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import AsyncGenerator, Callable, Generator
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .. import trace
from ..builtins import COMMAND_TOOLS
from ..errors import ConfigError, MissingExtra
from ..events import EventBus, ServerEvent
from ..http.guard import HostGuard, is_loopback
from ..http.server import (
    ANSWER_GRACE,
    HEADER_TIMEOUT,
    AsgiServer,
    ConnectionShare,
    LoopThread,
    listening_socket,
    parse_addr,
)
from ..protocol.card import CARD_PATH
from ..protocol.model import Task, TaskState
from ..protocol.params import ListTasks
from ..skills import ToolkitLike
from ..stores import (
    Closable,
    Durable,
    JoinsConversations,
    MemoryConversationStore,
    Shared,
    open_store,
)
from ..traffic import InboundRecorder, TrafficRecorder
from .a2a import A2AEndpoint
from .config import A2AConfig, Auth, AuthRefused, MCPServeConfig, connection_limit
from .files import TaskFiles
from .grpc_server import GrpcServer
from .lifecycle import STOPPED, TaskRunner
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import Metrics
from .push import PushNotifier
from .quirks import Quirk, QuirkPeer, quirks_named

if TYPE_CHECKING:
    from ..llm import Client
    from ..mcp.server import MCPProfile  # imported by _imported (in a thread): named for contracts

__all__ = ["ServeHandle", "ThreadServeHandle", "serve", "serve_in_thread", "build_app"]

log = logging.getLogger("toolnexus.serve")


class ServeHandle:
    """A running served toolkit.

    Attributes:
        url: the base URL, without a trailing slash.
        card_url: the agent card's URL (meaningful when the A2A profile is on).
        events: the bus carrying every task transition, MCP call and server event.
        runner: the task runner (None without the A2A profile).
        name: the server's name (the card's name, or the MCP server's).
        grpc_target: ``host:port`` of the gRPC service (``A2AConfig.grpc``), or None.
        metrics: the agent's Prometheus metrics (None when it exports none).
        metrics_url: where they are scraped (``/metrics`` on the agent's port, or their own).
        quirks: the layer that makes the agent a peer from the field (``A2AConfig.quirks``; its
            ``asked`` holds the calls its callers sent), or None.
    """

    def __init__(
        self,
        server: AsgiServer,
        name: str,
        events: EventBus,
        runner: TaskRunner | None,
        a2a: A2AEndpoint | None,
        mcp: Any,
        on_close: Callable[[], Any] | None = None,
        grpc: Any = None,
        metrics: Metrics | None = None,
        metrics_server: AsgiServer | None = None,
        quirks: QuirkPeer | None = None,
    ) -> None:
        self._server = server
        self.quirks = quirks
        self._grpc = grpc
        self.metrics = metrics
        self._metrics_server = metrics_server
        self.grpc_target: str | None = grpc.target if grpc is not None else None
        self.name = name
        self.events = events
        self.runner = runner
        self.a2a = a2a
        self.mcp = mcp
        self._on_close = on_close
        self._stopped = False

    def __repr__(self) -> str:
        return f"ServeHandle(name={self.name!r}, url={self.url!r}, running={self.running})"

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def max_connections(self) -> int:
        """Open connections and requests past which new requests get 503 (with several workers,
        theirs together)."""
        return self._server.max_connections

    @property
    def card_url(self) -> str:
        return self.url + CARD_PATH

    @property
    def mcp_url(self) -> str:
        return self.url + "/mcp"

    @property
    def metrics_url(self) -> str | None:
        if self.metrics is None:
            return None
        return (
            self._metrics_server.url if self._metrics_server is not None else self.url
        ) + "/metrics"

    @property
    def running(self) -> bool:
        return self._server.running

    @property
    def port(self) -> int:
        return self._server.port

    async def tasks(
        self,
        *,
        context_id: str | None = None,
        state: TaskState | str | None = None,
        limit: int = 100,
    ) -> list[Task]:
        """The newest tasks of this server (up to ``limit``)."""
        if self.runner is None:
            return []
        st = TaskState(state) if isinstance(state, str) else state
        page = await self.runner.list(
            ListTasks(context_id=context_id, state=st, page_size=min(limit, 100))
        )
        return page.tasks

    async def stop(self, drain: float | None = None) -> None:
        """Stop serving. Safe to call twice.

        New connections are refused at once. With ``drain`` (seconds), what is under way gets that
        long to end: requests in flight (a blocking send waiting for its task, a stream) and the
        runs of tasks (a suspended one, waiting for input, is not running: it stays, and resumes
        wherever its answer arrives). Without, open requests get a second and runs none. Then
        every task still running here is failed, saying so (:data:`STOPPED`; saved, so that
        every host asked sees it), the callers waiting on one are answered with it, a stream
        following a task run elsewhere ends with a retryable error (``ServerStoppingError``),
        and what is still open a second later is closed. :meth:`hurry` ends the drain early.
        """
        if self._stopped:
            return
        self._stopped = True
        runner = self.runner

        async def time_up() -> None:
            if runner is not None:
                failed = await runner.stop_runs(STOPPED)
                if failed:
                    log.warning(
                        "%s: %d task(s) still running when it stopped were failed",
                        self.name,
                        failed,
                    )

        if self.mcp is not None:  # an MCP listen stream never ends by itself: it ends now
            self.mcp.closing()
        idle = runner.idle if runner is not None and drain is not None else None
        if self._grpc is not None:  # its calls drain beside the HTTP ones
            await asyncio.gather(
                self._server.stop(drain, until_idle=idle, time_up=time_up),
                self._grpc.stop(drain + ANSWER_GRACE if drain is not None else 0.5),
            )
        else:
            await self._server.stop(drain, until_idle=idle, time_up=time_up)
        await time_up()  # what no open request waited on
        if self._metrics_server is not None:
            await self._metrics_server.stop()
        if self.metrics is not None:
            await self.metrics.stop()
        if self.runner is not None:
            if self.runner.link is not None:
                await self.runner.link.stop()
            await self.runner.close()
            if self.runner.push is not None:
                await self.runner.push.close()
            if self.runner.files is not None:
                await self.runner.files.close()
            if isinstance(self.runner.store, Closable):  # a database's connections
                await self.runner.store.aclose()
        if self._on_close is not None:
            out = self._on_close()
            if asyncio.iscoroutine(out):
                await out
        self.events.publish(ServerEvent(self.name, "stopped", self.url))

    def hurry(self) -> None:
        """End a drain under way (:meth:`stop`) now: what still runs is failed and answered."""
        self._server.hurry()

    async def __aenter__(self) -> ServeHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def build_app(routes: list[BaseRoute], lifespan: Any = None) -> Starlette:
    async def not_found(request: Any, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": f"not found: {request.url.path}"}, status_code=404)

    async def not_allowed(request: Any, exc: Exception) -> JSONResponse:
        return JSONResponse(
            {"error": f"method {request.method} not allowed on {request.url.path}"}, status_code=405
        )

    async def crashed(
        request: Any, exc: Exception
    ) -> JSONResponse:  # never a traceback on the wire
        log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": "internal server error"}, status_code=500)

    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: not_allowed, 500: crashed, Exception: crashed},
    )


async def serve(
    toolkit: ToolkitLike,
    addr: str | int | None = "127.0.0.1:0",
    *,
    client: Client | None = None,
    a2a: A2AConfig | dict[str, Any] | bool | None = None,
    on_task: Callable[[dict[str, Any]], Any] | None = None,
    on_text: Callable[[dict[str, Any]], Any] | None = None,
    mcp: MCPServeConfig | dict[str, Any] | bool | None = None,
    on_call: Callable[[dict[str, Any]], Any] | None = None,
    events: EventBus | None = None,
    allow_unauthenticated: bool = False,
    header_timeout: float = HEADER_TIMEOUT,
    max_connections: int | ConnectionShare | None = None,
    record_wire: bool = False,
    sock: Any = None,
    metrics: bool | str = False,
) -> ServeHandle:
    """Serve ``toolkit`` on ``addr`` (``host:port``; port 0 picks one; host 127.0.0.1 by default).

    Every route checks Host and Origin (``http.guard``). A toolkit with tools that run commands
    or change files (``bash``, ``write``, ``edit``) is not served beyond loopback without auth
    unless ``allow_unauthenticated=True``. A connection that spends ``header_timeout`` seconds with
    no request in progress, or with a request whose body is still arriving, is closed; past
    ``max_connections`` open connections and requests (a ``ConnectionShare``: those of several
    workers together; None: the config's ``maxConnections``, else sized from the process's
    open-file limit, ``serve.config.connection_limit``), new requests get 503. ``on_task`` is called
    with each task that ends or waits for input (its ``result``, the run's ``RunResult``);
    ``on_text`` with a working task's reply as the model says it (``id``, ``context_id``,
    ``skill``, ``text``: all of it so far, ``last``), at most every ``TEXT_EVERY`` seconds. ``record_wire=True`` puts every inbound exchange on the bus as
    a TrafficEvent (direction ``in``, masked, with its ``task_id``): what a debugger shows.
    ``sock``: a socket already bound and listening on ``addr`` to serve on (connections made to it
    meanwhile wait in its backlog): a notebook hands out a server's URL before the server starts.
    ``metrics``: Prometheus metrics of the A2A agent (``serve.metrics``, needs prometheus-client):
    True for ``/metrics`` behind the agent's auth, ``host:port`` to serve them on a port of their
    own (behind the same auth); off by default (they cost a served task 7-10 % of its CPU today,
    ``bench/README.md``).

    Returns once the socket is bound. Raises ``OSError`` when it cannot be, ``ConfigError`` when
    the options are unsafe or wrong.
    """
    a2a_cfg, mcp_cfg, max_connections, quirks = _checked(toolkit, a2a, mcp, max_connections)
    host, port = parse_addr(addr)
    if not is_loopback(host) and not allow_unauthenticated:
        _refuse_open_commands(toolkit, host, a2a_cfg, mcp_cfg)
    async with _bound_first(host, port, sock) as (sock, made):
        bus = events or EventBus()
        name = a2a_cfg.name if a2a_cfg else (mcp_cfg.name if mcp_cfg else "toolnexus")
        bound = _Bound()
        wire = TrafficRecorder(bus, keep=0) if record_wire else None  # it masks; the bus keeps them
        endpoint: A2AEndpoint | None = None
        if a2a_cfg is not None:
            runner = await _runner(toolkit, a2a_cfg, client, bus, name, on_task, on_text)
            made.append(runner)
            endpoint = await _agent(runner, a2a_cfg, toolkit, bound, host, wire, metrics)
        mcp_profile: MCPProfile | None = None
        if mcp_cfg is not None:
            sessions = not isinstance(max_connections, ConnectionShare)  # one process: sessions
            mcp_profile = await _mcp(toolkit, mcp_cfg, a2a_cfg, bus, name, on_call, sessions)
        configs = [c for c in (a2a_cfg, mcp_cfg) if c is not None]
        app, bent = _app(endpoint, mcp_profile, metrics, quirks, bound, configs)
        outer: Any = InboundRecorder(app, wire, name) if wire is not None else app
        tls = next((c.auth.tls for c in configs if c.auth is not None and c.auth.tls), None)
        server = bound.server = AsgiServer(
            outer,
            addr,
            header_timeout=header_timeout,
            max_connections=max_connections,
            sock=sock,
            **(
                tls.uvicorn() if tls is not None else {}
            ),  # mutual TLS: the handshake checks the caller
        )
        grpc_server = await _grpc(endpoint, tls, toolkit, allow_unauthenticated)
        metrics_server = _metrics_server(endpoint, metrics, header_timeout)
        return await _started(
            server, name, bus, endpoint, mcp_profile, grpc_server, metrics_server, wire, bent
        )


@contextlib.asynccontextmanager
async def _bound_first(
    host: str, port: int, sock: Any
) -> AsyncGenerator[tuple[Any, list[TaskRunner]], None]:
    """``sock``, else a socket bound and listening on ``host:port`` now, before the store is
    opened: a server that cannot listen (another holds the port: a second toolnexus-tui starting
    the same saved server) never fails, "interrupted by restart", the tasks the one listening runs
    on the store they share. One bound here is closed if the server does not start, and so are
    the stores of the runners made for it (the list given back): a file store's folder is let go."""
    made: list[TaskRunner] = []
    mine = listening_socket(host, port) if sock is None else None
    try:
        yield (sock if mine is None else mine), made
    except BaseException:
        if mine is not None:
            mine.close()
        for runner in made:
            if isinstance(runner.store, Closable):
                await runner.store.aclose()
        raise


class _Bound:
    """Where a server listens: asked by the parts built before it (once it is made, they run)."""

    def __init__(self) -> None:
        self.server: AsgiServer | None = None

    def address(self) -> tuple[str, int]:
        assert self.server is not None
        return self.server.host, self.server.port

    def url(self) -> str:
        assert self.server is not None
        return self.server.url


def _checked(
    toolkit: ToolkitLike,
    a2a: A2AConfig | dict[str, Any] | bool | None,
    mcp: MCPServeConfig | dict[str, Any] | bool | None,
    max_connections: int | ConnectionShare | None,
) -> tuple[A2AConfig | None, MCPServeConfig | None, int | ConnectionShare, tuple[Quirk, ...]]:
    """:func:`serve`'s options checked: the profiles to serve, as given, else as the toolkit's
    config has them (its ``a2a`` and ``mcpServer`` blocks; None for one that is off), the
    connection limit and the quirks asked for. Raises ``ConfigError``."""
    if a2a is None and toolkit.config.get("a2a") is not None:
        a2a = toolkit.config["a2a"]
    if mcp is None and toolkit.config.get("mcpServer") is not None:
        mcp = toolkit.config["mcpServer"]
    a2a_cfg = (  # checked here, once: after the last change a caller made
        A2AConfig.from_config(a2a).check() if a2a is not None and a2a is not False else None
    )
    mcp_cfg = MCPServeConfig.from_config(mcp) if mcp is not None and mcp is not False else None
    if not isinstance(max_connections, ConnectionShare):
        max_connections = connection_limit(toolkit.config, max_connections)
    quirks = quirks_named(a2a_cfg.quirks) if a2a_cfg is not None else ()
    return a2a_cfg, mcp_cfg, max_connections, quirks


async def _runner(
    toolkit: ToolkitLike,
    config: A2AConfig,
    client: Client | None,
    bus: EventBus,
    name: str,
    on_task: Callable[[dict[str, Any]], Any] | None,
    on_text: Callable[[dict[str, Any]], Any] | None,
) -> TaskRunner:
    """The agent's task runner on the store the config names: one worker of many hears the others
    (its link started); a durable store's tasks that a restart interrupted are marked failed."""
    store = open_store(config.store, max_tasks=config.keep_tasks, max_age=config.keep_for)
    if (
        isinstance(store, JoinsConversations)
        and client is not None
        and type(client.store) is MemoryConversationStore
    ):  # kept where the tasks are (with a shared store, every worker sees each conversation)
        client.store = store.conversations()
    runner = TaskRunner(
        toolkit=toolkit,
        client=client,
        store=store,
        bus=bus,
        server=name,
        on_task=on_task,
        on_text=on_text,
    )
    if isinstance(store, Shared):  # one worker of many: hear the others, lease what runs here
        store.lease = config.lease
        link = store.link(runner)
        await link.start()
        runner.link = link
    elif isinstance(store, Durable):  # what its last run left running was interrupted
        recovered = await runner.recover()
        if recovered:
            log.warning(
                "%s: %d task(s) interrupted by a restart were marked failed", name, recovered
            )
    return runner


async def _agent(
    runner: TaskRunner,
    config: A2AConfig,
    toolkit: ToolkitLike,
    bound: _Bound,
    host: str,
    wire: TrafficRecorder | None,
    metrics: bool | str,
) -> A2AEndpoint:
    """The A2A endpoint over ``runner``: its tasks' files, its push notifications, its metrics
    (when asked), its card naming the public URL (else where it is served). Files and pushes
    reach private addresses when the config says so, else when served on loopback."""
    private_ok = is_loopback(host) if config.push_private_ok is None else config.push_private_ok
    await _files(runner, config, bound, private_ok)
    public = config.public_url.rstrip("/") if config.public_url else None
    if config.push_notifications:
        runner.push = _push(runner, config, bound, private_ok, wire, public)
    endpoint = A2AEndpoint(runner, config, toolkit.skills(), lambda: public or bound.url())
    if metrics:
        endpoint.metrics = Metrics(runner.server, (s.name for s in toolkit.skills()))
        endpoint.metrics.time_store(runner.store)
    return endpoint


async def _mcp(
    toolkit: ToolkitLike,
    config: MCPServeConfig,
    a2a: A2AConfig | None,
    bus: EventBus,
    name: str,
    on_call: Callable[[dict[str, Any]], Any] | None,
    sessions: bool,
) -> MCPProfile:
    """The MCP profile, behind its own auth, else the A2A agent's."""
    profile: type[MCPProfile] = (await _imported("toolnexus.mcp.server")).MCPProfile
    return profile(
        toolkit,
        config,
        bus=bus,
        server=name,
        on_call=on_call,
        auth=config.auth or (a2a.auth if a2a else None),
        sessions=sessions,
    )


async def _grpc(
    endpoint: A2AEndpoint | None, tls: Any, toolkit: ToolkitLike, allow_unauthenticated: bool
) -> GrpcServer | None:
    """The agent's gRPC service, started, when its config asks for one (its address on the card)."""
    if endpoint is None or endpoint.config.grpc is None:
        return None
    grpc_server = GrpcServer(endpoint, endpoint.config.grpc, tls=tls)
    if not is_loopback(grpc_server.host) and not allow_unauthenticated:
        _refuse_open_commands(toolkit, grpc_server.host, endpoint.config, None)
    await grpc_server.start()
    endpoint.card.grpc_target = grpc_server.url
    return grpc_server


async def _files(runner: TaskRunner, config: A2AConfig, bound: _Bound, private_ok: bool) -> None:
    """Give the runner its tasks' files, and remove the task folders a crash left."""
    store = runner.store
    runner.files = TaskFiles(
        config.input_modes,
        config.max_file,
        root=config.files_dir,
        fetch=config.fetch_files,
        bound=bound.address,
        private_ok=private_ok,
    )

    async def live(task_id: str) -> bool:  # still to run or to answer: its folder is kept
        task = await store.get(task_id)
        return task is not None and not task.state.terminal

    swept = await runner.files.sweep(live)
    if swept:
        log.warning(
            "%s: removed %d task folder(s) under %s that a crash left (their tasks are over): %s",
            runner.server,
            len(swept),
            config.files_dir,
            ", ".join(swept[:10]) + (" ..." if len(swept) > 10 else ""),
        )


def _push(
    runner: TaskRunner,
    config: A2AConfig,
    bound: _Bound,
    private_ok: bool,
    wire: TrafficRecorder | None,
    public: str | None,
) -> PushNotifier:
    """What delivers the agent's push notifications (every worker's configs, with a shared store)."""
    push = PushNotifier(
        bound.address,
        private_ok=private_ok,
        traffic=wire,
        server=runner.server,
        signer=config.signer,
        issuer=lambda: (public or bound.url()).rstrip("/") + "/",
    )
    if isinstance(runner.store, Shared):  # every worker delivers for the configs set on any
        push.shared = runner.store
    return push


def _app(
    endpoint: A2AEndpoint | None,
    mcp: MCPProfile | None,
    metrics: bool | str,
    quirks: tuple[Quirk, ...],
    bound: _Bound,
    configs: list[A2AConfig | MCPServeConfig],
) -> tuple[Any, QuirkPeer | None]:
    """The app of the A2A agent's routes (``/metrics`` among them, unless on a port of their own)
    and the MCP profile's, its lifespan the profile's, the A2A endpoint's layer ahead of it (and
    the quirks, when asked: a peer from the field, on purpose), Host and Origin checked first;
    and the quirks' layer, if any."""
    routes: list[BaseRoute] = []
    if endpoint is not None:
        routes += endpoint.routes()
        if endpoint.metrics is not None and not isinstance(metrics, str):
            routes.append(metrics_route(endpoint.metrics, endpoint.config.auth))
    if mcp is not None:
        routes += mcp.routes()
    lifespans = [mcp.lifespan] if mcp is not None else []

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncGenerator[None, None]:
        async with contextlib.AsyncExitStack() as stack:
            for enter in lifespans:
                await stack.enter_async_context(enter())
            yield

    app: Any = build_app(routes, lifespan)
    bent: QuirkPeer | None = None
    if endpoint is not None:
        app = endpoint.ahead(app)
        if quirks:  # a peer from the field, on purpose
            app = bent = QuirkPeer(app, quirks)
    guarded = HostGuard(
        app,
        bound.address,
        allowed_hosts=[h for c in configs for h in c.allowed_hosts],
        allowed_origins=[o for c in configs for o in c.allowed_origins],
    )
    return guarded, bent


def _metrics_server(
    endpoint: A2AEndpoint | None, metrics: bool | str, header_timeout: float
) -> AsgiServer | None:
    """The agent's metrics served on a port of their own (``metrics`` its ``host:port``), behind
    the agent's auth; None when they are not."""
    if endpoint is None or endpoint.metrics is None or not isinstance(metrics, str):
        return None
    bound = _Bound()
    guarded = HostGuard(
        build_app([metrics_route(endpoint.metrics, endpoint.config.auth)]), bound.address
    )
    bound.server = AsgiServer(guarded, metrics, header_timeout=header_timeout)
    return bound.server


async def _started(
    server: AsgiServer,
    name: str,
    bus: EventBus,
    endpoint: A2AEndpoint | None,
    mcp: MCPProfile | None,
    grpc: GrpcServer | None,
    metrics_server: AsgiServer | None,
    wire: TrafficRecorder | None,
    quirks: QuirkPeer | None,
) -> ServeHandle:
    """Start the HTTP server (and the metrics'; if either cannot, stop what was started), the
    metrics' export, and say so on the bus: the handle of what runs."""
    try:
        await server.start()
        if metrics_server is not None:
            await metrics_server.start()
    except BaseException:
        if grpc is not None:
            await grpc.stop(0)
        await server.stop()
        raise
    metrics = endpoint.metrics if endpoint is not None else None
    if endpoint is not None and metrics is not None:
        metrics.start(bus, endpoint.runner.push, wire)
    handle = ServeHandle(
        server,
        name,
        bus,
        endpoint.runner if endpoint is not None else None,
        endpoint,
        mcp,
        grpc=grpc,
        metrics=metrics,
        metrics_server=metrics_server,
        on_close=_spans_over_otlp(bus, name),
        quirks=quirks,
    )
    bus.publish(ServerEvent(name, "started", server.url))
    return handle


async def _imported(name: str) -> Any:
    """Module ``name``, imported in a thread: the MCP SDK's pydantic models take most of a second
    to build, and the loop serving (a TUI's screen, a kernel's cells, the other servers) keeps
    running meanwhile. Always through ``import_module``, never read from ``sys.modules``: there a
    module another start is still importing sits half-built (``partially initialized module``, the
    TUI's saved servers starting together at launch), where ``import_module`` waits for it."""
    return await asyncio.to_thread(importlib.import_module, name)


def _spans_over_otlp(bus: EventBus, name: str) -> Callable[[], Any] | None:
    """Export the server's traced tasks as OpenTelemetry spans over OTLP when the standard
    ``OTEL_EXPORTER_OTLP_*`` variables name an endpoint (``trace.otlp_exporter``); what stops it."""
    try:
        exporter = trace.otlp_exporter()
    except MissingExtra as exc:
        log.warning("%s: %s", name, exc)
        return None
    if exporter is None:
        return None
    pump = trace.export_spans(bus, exporter, service=name)

    async def stop() -> None:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        await asyncio.to_thread(exporter.shutdown)

    return stop


def metrics_route(metrics: Metrics, auth: Auth | None) -> Route:
    """``GET /metrics``: the exposition, behind ``auth`` (the agent's); scraped in a thread, as
    multiprocess mode reads every worker's files."""

    async def scrape(request: Request) -> Response:
        if auth is not None:
            try:
                await auth.admit({k.lower(): v for k, v in request.headers.items()})
            except AuthRefused as refused:
                return JSONResponse({"error": str(refused)}, refused.status, refused.headers)
        return Response(await asyncio.to_thread(metrics.exposition), media_type=METRICS_TYPE)

    return Route("/metrics", scrape, methods=["GET"])


def _refuse_open_commands(
    toolkit: ToolkitLike, host: str, a2a: A2AConfig | None, mcp: MCPServeConfig | None
) -> None:
    """Refuse to serve command-running tools beyond loopback to anyone who asks."""
    commands = sorted(
        t.name for t in toolkit.tools() if t.source == "builtin" and t.name in COMMAND_TOOLS
    )
    if not commands:
        return
    open_profiles: list[str] = []
    if a2a is not None and a2a.auth is None:
        open_profiles.append("A2A")
    if (
        mcp is not None
        and (mcp.auth or (a2a.auth if a2a else None)) is None
        and any(t.name in commands for t in mcp.exposed(toolkit.tools()))
    ):
        open_profiles.append("MCP")
    if open_profiles:
        raise ConfigError(
            f"refusing to serve {', '.join(commands)} on {host} without auth ({' and '.join(open_profiles)} "
            f"would let anyone who reaches {host} run commands through the agent): set auth "
            f"(A2AConfig(auth=Auth.bearer(...)), --auth-token-env), bind to 127.0.0.1, turn those builtins "
            f"off, or pass allow_unauthenticated=True (--allow-unauthenticated) if you mean it"
        )


class ThreadServeHandle:
    """A served toolkit running on its own event loop in a daemon thread; for code with no loop."""

    def __init__(self, loop_thread: LoopThread, handle: ServeHandle) -> None:
        self._thread = loop_thread
        self.handle = handle

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __repr__(self) -> str:
        return f"ThreadServeHandle({self.handle!r})"

    @property
    def url(self) -> str:
        return self.handle.url

    @property
    def card_url(self) -> str:
        return self.handle.card_url

    def call(self, coro: Any, timeout: float | None = 30) -> Any:
        """Run a coroutine on the server's loop and return its result (e.g. ``h.call(h.handle.tasks())``)."""
        return self._thread.run(coro, timeout)

    def stop(self) -> None:
        """Stop the server and its thread. Safe to call twice."""
        if self._thread.loop.is_closed():
            return
        try:
            self._thread.run(self.handle.stop(), timeout=30)
        finally:
            self._thread.close()

    def __enter__(self) -> ThreadServeHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_thread(
    toolkit: ToolkitLike, addr: str | int | None = "127.0.0.1:0", **options: Any
) -> ThreadServeHandle:
    """Like :func:`serve`, on a new event loop in a daemon thread. Raises ``OSError`` on a bind failure."""
    loop_thread = LoopThread(name="toolnexus-serve")
    try:
        handle = loop_thread.run(serve(toolkit, addr, **options), timeout=60)
    except BaseException:
        loop_thread.close()
        raise
    return ThreadServeHandle(loop_thread, handle)


class ServeCall:
    """What ``Toolkit.serve`` returns: ``await`` it for the handle, or use it with ``async with``."""

    def __init__(self, coro: Any) -> None:
        self._coro = coro
        self._handle: ServeHandle | None = None

    def __await__(self) -> Generator[Any, None, ServeHandle]:
        return self._coro.__await__()

    async def __aenter__(self) -> ServeHandle:
        self._handle = handle = await self._coro
        return handle

    async def __aexit__(self, *exc: object) -> None:
        if self._handle is not None:
            await self._handle.stop()
