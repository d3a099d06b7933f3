"""A workspace of hosted servers: what the TUI and the notebook start, stop and watch.

A :class:`ServerSpec` says what to serve (skills, model, profiles, address, store, auth); a
:class:`Workspace` starts and stops servers from specs and carries every event of every hosted
server (tasks, MCP calls, server state) on one bus. The front ends only call this and subscribe
to ``workspace.events``; they hold no protocol knowledge of their own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from .builtins import COMMAND_TOOLS
from .errors import ConfigError, InvalidParamsError, ToolnexusError
from .events import EventBus, ServerEvent
from .http.server import LoopThread, http_url
from .llm import create_client, demo_client
from .protocol.model import Message, Part, Task
from .serve.config import A2AConfig, Auth, MCPServeConfig
from .stores import TaskPage, TaskQuery
from .toolkit import create_toolkit

__all__ = [
    "ServerSpec",
    "HostedServer",
    "Workspace",
    "ServersHold",
    "build_client",
    "prepare",
    "profiles",
    "EXAMPLE_SKILLS",
    "DEMO_ASK",
    "DEMO_TRY",
    "demo_spec",
    "kept_tasks",
]

log = logging.getLogger("toolnexus.hosting")
T = TypeVar("T")

EXAMPLE_SKILLS = Path(__file__).resolve().parent.parent / "examples" / "skills"
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
DEMO_DESCRIPTION = (
    "The toolnexus demo agent: greets, reports the weather from a bundled table and drafts "
    "reports that need approval. Runs offline on the embedded demo model."
)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
DEMO_ASK = "draft the weekly report"
"""What to type to the demo to see a task ask a question (``input-required``): its report skill
asks the requester to approve the draft."""
DEMO_TRY = (
    f'try "{DEMO_ASK}": it asks you to approve the draft (input-required); '
    'or "weather in Oslo", "greet Ada"'
)
"""What the first screens say to type to the demo (the TUI's Servers and Chat)."""
HOLD_MAX = 0.15
"""Seconds a front end may hold the servers' thread at a time (:class:`ServersHold`)."""
HOLD_SHARE = 0.5
"""The share of the time the servers may be held, in the long run: holds spend a budget of at most
HOLD_BUDGET seconds, which grows back by HOLD_SHARE seconds a second."""
HOLD_BUDGET = 2 * HOLD_MAX
"""So in any T seconds the servers are held at most HOLD_BUDGET + HOLD_SHARE * T seconds."""
HOLD_IDLE = 0.03
"""Seconds the holding thread may be idle (on a core or waiting for one under a quarter of the
time) before a hold ends by itself: it waits for something, perhaps for the servers. Longer than
Textual's wait for a frame (1/60 s)."""
HOLD_SLICE = 0.005
"""Seconds between two looks of a held servers' thread at the holder."""
KEPT_SHOWN = 10_000
"""At most this many of the tasks a hosted server's store kept from before, the newest, reach a
front end when it starts (:meth:`Workspace.kept`): the book the TUI's keys are measured at
(``bench/tui_bench.py``, 10,000 tasks); a store may hold 100,000."""
KEPT_PAGE = 500
"""Tasks read from a store at a time, on the servers' loop, for :meth:`Workspace.kept`."""


def build_client(
    model: str = "demo", base_url: str | None = None, api_key_env: str | None = None
) -> Any:
    """``demo``, ``openai:MODEL`` or ``anthropic:MODEL`` as a client; the key is read from ``api_key_env``.

    Raises:
        ConfigError: the model spelling is wrong, or the key's environment variable is not set.
    """

    if model == "demo":
        return demo_client()
    style, _, name = model.partition(":")
    if style not in DEFAULT_BASE_URLS or not name:
        raise ConfigError(f"model must be demo, openai:MODEL or anthropic:MODEL, not {model!r}")
    key = None
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise ConfigError(f"the API key variable {api_key_env} is not set")
    return create_client(base_url or DEFAULT_BASE_URLS[style], style, name, api_key=key)  # type: ignore[arg-type]  # a spec's style is one of DEFAULT_BASE_URLS' keys


@dataclass
class ServerSpec:
    """What to serve. Secrets are never held here: only the names of environment variables.

    Attributes:
        name: the server's (and card's) name.
        skills: folders of SKILL.md files.
        config: a toolkit config file (its a2a and mcpServer blocks apply).
        host, port: where to bind (port 0: any free port).
        model: ``demo``, ``openai:MODEL`` or ``anthropic:MODEL``.
        base_url: the model endpoint (any OpenAI-compatible server with ``openai:``).
        api_key_env: the environment variable holding the model key.
        store: where its tasks are kept, as ``toolnexus serve --store`` takes it: one of the
            kinds in ``toolnexus.stores.KINDS`` (``STORE_FORMS`` spells them for a form).
        a2a, mcp: the profiles to serve.
        mcp_tools: tools exposed over MCP (None: all but the command-running builtins).
        builtins: include the builtin file and shell tools.
        auth_token_env: an environment variable holding a bearer token; the server then requires it.
        description: the card's description.
    """

    name: str = "toolnexus-agent"
    skills: list[str] = field(default_factory=list)
    config: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    model: str = "demo"
    base_url: str | None = None
    api_key_env: str | None = None
    store: str = "memory"
    a2a: bool = True
    mcp: bool = False
    mcp_tools: list[str] | None = None
    builtins: bool = False
    auth_token_env: str | None = None
    description: str = ""
    metrics: bool = False
    """Prometheus metrics at ``/metrics`` (needs prometheus-client)."""

    @property
    def profiles(self) -> list[str]:
        return [p for p, on in (("A2A", self.a2a), ("MCP", self.mcp)) if on]


def demo_spec(name: str = "demo-desk") -> ServerSpec:
    """The demo: the example skills on the demo model, A2A and MCP on loopback."""
    skills = [str(EXAMPLE_SKILLS)] if EXAMPLE_SKILLS.is_dir() else []
    return ServerSpec(name=name, skills=skills, mcp=True, description=DEMO_DESCRIPTION)


def prepare(spec: ServerSpec) -> tuple[Any, Any]:
    """Check what a spec can be checked for before anything starts (profiles, skills folders, model,
    environment variables) and build its model client and auth. Raises ConfigError naming the problem."""

    if not spec.a2a and not spec.mcp:
        raise ConfigError("choose at least one profile: A2A or MCP")
    for folder in spec.skills:
        if not Path(folder).expanduser().is_dir():
            raise ConfigError(f"skills folder not found: {folder}")
    client = build_client(spec.model, spec.base_url, spec.api_key_env)
    auth = None
    if spec.auth_token_env:
        token = os.environ.get(spec.auth_token_env)
        if not token:
            raise ConfigError(f"the auth token variable {spec.auth_token_env} is not set")
        auth = Auth.bearer(token)
    return client, auth


def profiles(spec: ServerSpec, toolkit: Any, auth: Any) -> tuple[Any, Any]:
    """The A2A and MCP configs a spec serves (the toolkit config's a2a block under the spec's name)."""

    a2a = None
    if spec.a2a:
        a2a = A2AConfig.from_config(toolkit.config.get("a2a"))
        a2a.name = spec.name
        a2a.description = spec.description or a2a.description
        a2a.store = spec.store
        a2a.auth = auth or a2a.auth
    mcp = MCPServeConfig(name=spec.name, tools=spec.mcp_tools, auth=auth) if spec.mcp else None
    return a2a, mcp


class HostedServer:
    """One server of a workspace: its spec, its state and, while it runs, its handle."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.handle: Any = None
        self.toolkit: Any = None
        self.state = "stopped"  # starting | running | stopped | failed
        self.error = ""

    def __repr__(self) -> str:
        return f"HostedServer({self.spec.name!r}, {self.state})"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def url(self) -> str:
        """Where it answers; known while it starts when its port is (so a notebook cell can use it)."""
        if self.handle is not None:
            return self.handle.url
        if self.state == "starting" and self.spec.port:
            return http_url(self.spec.host, self.spec.port)
        return ""

    @property
    def auth(self) -> bool:
        return bool(self.spec.auth_token_env)

    @property
    def hint(self) -> str:
        """What to type to it, when it is the demo (the example skills on the demo model)."""
        if self.spec.model == "demo" and str(EXAMPLE_SKILLS) in self.spec.skills:
            return DEMO_TRY
        return ""

    def warnings(self) -> list[str]:
        """What a careful person would want to know before leaving this server running."""
        out = []
        if self.spec.host not in LOOPBACK and not self.auth:
            out.append(f"binds {self.spec.host}, beyond this machine, without auth")
        if (
            self.spec.mcp
            and self.toolkit is not None
            and self.handle is not None
            and self.handle.mcp is not None
        ):
            exposed = [
                t.name
                for t in self.handle.mcp.tools
                if t.source == "builtin" and t.name in COMMAND_TOOLS
            ]
            for name in exposed:
                out.append(f"exposes `{name}` over MCP{'' if self.auth else ' without auth'}")
        return out

    def mcp_tools(self) -> list[str]:
        if self.handle is None or self.handle.mcp is None:
            return []
        return [t.name for t in self.handle.mcp.tools]

    def skills(self) -> list[str]:
        if self.handle is None or self.handle.a2a is None:
            return []
        return [s.name for s in self.handle.a2a.skills]


class ServersHold:
    """The servers' thread paused while a front end's thread answers a key.

    The two threads share one interpreter: while the servers answer a stream of peers they hold it
    about half the time, and a key the screen answers in 50 ms of CPU takes 100 ms to show
    (``bench/tui_bench.py``). :meth:`hold`, from the front end's thread, asks the servers' loop to
    stop at its next callback boundary and wait (releasing the interpreter) until :meth:`release`
    (the key's frame is drawn), or until the holder's thread has neither run nor waited for a core
    for HOLD_IDLE seconds (it waits for something, perhaps for the servers: never a deadlock; seen
    on Linux, elsewhere the cap ends it), or HOLD_MAX seconds at most. The servers are held at
    most half the time in the long run (HOLD_SHARE, HOLD_BUDGET). Nothing is lost meanwhile: what
    peers send waits in the sockets' buffers, and is answered after. Nothing the app's thread
    waits for runs on the servers' loop but what :class:`Workspace` sends there (each such call
    lets them go first) and the hosted servers themselves, over sockets (Chat to a hosted server:
    the app's thread then idles, and the hold ends).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ends: Counter[str] = Counter()
        """How each hold ended: ``released`` (before it began, too), ``idle``, ``cap``; and
        ``spent``: a hold not begun, the budget spent (for benches and tests)."""
        self.seconds = 0.0
        """Seconds the servers were held in all."""
        self._lock = threading.Lock()
        self._go = threading.Event()
        self._asked = 0  # the hold asked and not ended (its number), else 0
        self._count = 0
        self._budget, self._budget_at = HOLD_BUDGET, time.monotonic()  # HOLD_SHARE
        self._cap = HOLD_MAX  # the hold asked: its length at most
        self._holder: int | None = None  # the holder thread's native id

    @property
    def asked(self) -> bool:
        """A hold is asked and not ended."""
        return bool(self._asked)

    def hold(self) -> None:
        """Hold the servers (from the front end's thread; thread-safe, a no-op while one is asked
        or the budget is spent)."""
        with self._lock:
            if self._asked:
                return
            if self._refill() < HOLD_SLICE:
                self.ends["spent"] += 1
                return
            self._cap = min(HOLD_MAX, self._budget)
            self._count += 1
            self._asked = self._count
            self._go.clear()
            self._holder = threading.get_native_id()
        self.loop.call_soon_threadsafe(self._held, self._count)

    def _refill(self) -> float:
        """The budget left, grown back since it was last spent (under the lock)."""
        now = time.monotonic()
        self._budget = min(HOLD_BUDGET, self._budget + (now - self._budget_at) * HOLD_SHARE)
        self._budget_at = now
        return self._budget

    def release(self) -> None:
        """Let the servers run again (thread-safe, a no-op when not held)."""
        with self._lock:
            self._asked = 0
            self._go.set()

    def _held(self, number: int) -> None:
        """On the servers' loop: wait till released, the holder idle, or the hold's cap."""
        began = time.monotonic()
        if self._asked != number:  # released (or a later one asked) before it got here
            with self._lock:
                self.ends["released"] += 1
            return
        end, cap = "released", self._cap
        with _Busy(self._holder) as busy:
            seen, worked = began, began
            while not self._go.wait(HOLD_SLICE):
                now = time.monotonic()
                if busy.time() >= (now - seen) / 4:  # at work a quarter of the time, or more
                    worked = now
                seen = now
                if now - worked >= HOLD_IDLE:
                    end = "idle"
                    break
                if now - began >= cap:
                    end = "cap"
                    break
        ended = time.monotonic()
        with self._lock:
            if self._asked == number:
                self._asked = 0
            self._refill()
            self._budget -= ended - began
            self.seconds += ended - began
            self.ends[end] += 1


class _Busy:
    """How long a thread (its native id) was at work or waiting for a core since the last look
    (Linux's ``schedstat``: its time on a core plus its time in the run queue). Where that cannot
    be read, always "at work" (a hold then ends when released, or at HOLD_MAX)."""

    def __init__(self, thread: int | None) -> None:
        self.thread = thread
        self._fd: int | None = None
        self._last = 0

    def __enter__(self) -> _Busy:
        try:
            self._fd = os.open(f"/proc/self/task/{self.thread}/schedstat", os.O_RDONLY)
            self._last = self._read()
        except (OSError, ValueError):  # not Linux, or no schedstat
            self._close()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read(self) -> int:
        assert self._fd is not None
        on_core, queued, _ = os.pread(self._fd, 128, 0).split()
        return int(on_core) + int(queued)

    def time(self) -> float:
        """Seconds at work or waiting for a core since the last call (inf: unknown)."""
        if self._fd is None:
            return float("inf")
        now = self._read()
        spent, self._last = now - self._last, now
        return spent / 1e9


class Workspace:
    """Hosted servers by name, and one bus for all their events.

    Every action on a server (start, stop, restart, its tasks, cancel, answer) goes through here.
    With ``thread=True`` the servers run on an event loop of their own in a thread (started at the
    first server, ended by :meth:`close`): a front end's loop then only draws, and what the servers
    do never waits for it (the TUI); while it answers a key, it may hold them (:meth:`hold_servers`,
    :class:`ServersHold`). Without, they run on the caller's loop (the notebook's kernel,
    where a server starts when the cell ends). Either way the methods are awaited on the caller's
    loop, and the bus (thread-safe) brings every event to the caller's subscribers.
    """

    def __init__(self, events: EventBus | None = None, *, thread: bool = False) -> None:
        self.events = events or EventBus(history=5000)
        self.servers: dict[str, HostedServer] = {}
        self.thread = thread
        self._loop_thread: Any = None  # http.server.LoopThread, at the first server
        self.servers_hold: ServersHold | None = None
        """The hold on the servers' thread (with ``thread=True``, from the first server)."""

    def __repr__(self) -> str:
        return f"Workspace({list(self.servers)})"

    async def _on_servers(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` where the servers run and await its result here (cancelling this wait
        cancels it there)."""
        if not self.thread:
            return await coro
        if self._loop_thread is None:
            self._loop_thread = LoopThread(name="toolnexus-servers")
            self.servers_hold = ServersHold(self._loop_thread.loop)
        self.release_servers()  # the caller waits for them now
        future = asyncio.run_coroutine_threadsafe(coro, self._loop_thread.loop)
        return await asyncio.wrap_future(future)

    def hold_servers(self) -> None:
        """Pause the servers' thread while this thread answers a key (see :class:`ServersHold`;
        nothing without a thread of their own)."""
        if self.servers_hold is not None:
            self.servers_hold.hold()

    def release_servers(self) -> None:
        """The key answered: the servers run again."""
        if self.servers_hold is not None:
            self.servers_hold.release()

    def get(self, name: str) -> HostedServer:
        try:
            return self.servers[name]
        except KeyError:
            raise ConfigError(
                f"no server named {name!r} (servers: {', '.join(self.servers) or 'none'})"
            ) from None

    async def start(self, spec: ServerSpec, sock: Any = None) -> HostedServer:
        """Start (or restart) the server of ``spec``. Failures raise ConfigError or OSError, and the
        server is recorded as ``failed`` with the reason; nothing else is affected. ``sock``: a socket
        already listening on the spec's address (see ``http.server.listening_socket``)."""
        server = self.starting(spec)
        return await self._on_servers(self._start(server, sock))

    def starting(self, spec: ServerSpec) -> HostedServer:
        """The server of ``spec``, known at once (on the caller's side) as starting: what
        :meth:`start` does first, for a front end that shows it before its start is under way.

        Raises:
            ConfigError: a server of that name is running.
        """
        server = self.servers.get(spec.name)
        if server is not None and server.state == "running":
            raise ConfigError(f"a server named {spec.name!r} is already running; stop it first")
        if server is None:
            server = self.servers[spec.name] = HostedServer(spec)
        server.spec, server.state, server.error = spec, "starting", ""  # the same object, restarted
        return server

    async def _start(self, server: HostedServer, sock: Any = None) -> HostedServer:
        try:
            await self._serve(server, sock)
        except BaseException as exc:
            if sock is not None:
                sock.close()
            server.state, server.error = "failed", _reason(exc)
            self.events.publish(ServerEvent(server.name, "failed", detail=server.error))
            if server.toolkit is not None:
                await server.toolkit.close()
            raise
        return server

    async def _serve(self, server: HostedServer, sock: Any = None) -> None:
        spec = server.spec
        client, auth = prepare(spec)
        server.toolkit = await create_toolkit(
            spec.skills, builtins=spec.builtins, config=spec.config
        )
        a2a, mcp = profiles(spec, server.toolkit, auth)
        # hosted servers are watched by a debugger (the TUI, the notebook): their inbound wire too
        server.handle = await server.toolkit.serve(
            f"{spec.host}:{spec.port}",
            client=client,
            a2a=a2a,
            mcp=mcp,
            events=self.events,
            record_wire=True,
            sock=sock,
            metrics=spec.metrics,
        )
        if (
            spec.port == 0
        ):  # keep the port it got: a restart must not break saved peers and curl lines
            server.spec = replace(spec, port=server.handle.port)
        server.state, server.error = "running", ""

    async def stop(self, name: str | HostedServer) -> HostedServer:
        """Stop a running server (its tasks in flight are cancelled); safe on a stopped one. Given
        the server itself, that one, even when another has taken its name since."""
        server = name if isinstance(name, HostedServer) else self.get(name)
        return await self._on_servers(self._stop(server))

    async def _stop(self, server: HostedServer) -> HostedServer:
        if server.handle is not None:
            await server.handle.stop()
            server.handle = None
        if server.toolkit is not None:
            await server.toolkit.close()
            server.toolkit = None
        if server.state != "failed":
            server.state = "stopped"
        return server

    async def restart(self, name: str, spec: ServerSpec | None = None) -> HostedServer:
        server = await self.stop(name)
        return await self.start(spec or server.spec)

    def add(self, spec: ServerSpec) -> HostedServer:
        """A server known here but not started (one saved elsewhere: another toolnexus-tui's)."""
        server = self.servers.get(spec.name)
        if server is None:
            server = self.servers[spec.name] = HostedServer(spec)
        elif server.state not in ("running", "starting"):
            server.spec = spec
        return server

    def remove(self, name: str) -> None:
        server = self.get(name)
        if server.state == "running":
            raise ConfigError(f"stop {name!r} before removing it")
        del self.servers[name]

    async def close(self) -> None:
        """Stop every server (and the servers' thread, if they have one)."""
        for server in list(self.servers.values()):
            await self.stop(server)
        if self._loop_thread is not None:  # what is left there (a start under way) ends first
            await self._on_servers(_cancel_the_others())
            loop_thread, self._loop_thread = self._loop_thread, None
            self.release_servers()
            self.servers_hold = None
            await asyncio.to_thread(loop_thread.close)

    def running(self) -> list[HostedServer]:
        return [s for s in self.servers.values() if s.state == "running"]

    async def tasks(self, name: str | None = None, limit: int = 100) -> list[Any]:
        """The newest tasks of one server, or of all running servers."""
        servers = [self.get(name)] if name else self.running()

        async def newest() -> list[Any]:
            out = []
            for server in servers:
                if server.handle is not None:
                    out += await server.handle.tasks(limit=limit)
            return out

        return await self._on_servers(newest())

    def kept(self, name: str, limit: int = KEPT_SHOWN) -> AsyncGenerator[list[Task], None]:
        """The tasks running server ``name``'s store holds (kept from before it started, on a
        file or PostgreSQL store: a relaunch; and any since), as :func:`kept_tasks` gives them,
        each page read where the servers run, so the caller's loop never waits on the store.
        Nothing for a server not running or without A2A."""
        return kept_tasks(lambda query: self._on_servers(self._kept_page(name, query)), name, limit)

    async def _kept_page(self, name: str, query: TaskQuery) -> TaskPage | None:
        try:
            runner = self._runner(name)
        except ConfigError:  # stopped meanwhile, or no A2A: nothing to show
            return None
        return await runner.store.list(query)

    def _runner(self, name: str) -> Any:
        server = self.servers.get(name)
        if server is None or server.handle is None or server.handle.runner is None:
            raise ConfigError(f"server {name!r} is not running (or serves no A2A)")
        return server.handle.runner

    async def cancel(self, server: str, task_id: str) -> Any:
        """Cancel a hosted task. Raises an RPCError when it is already terminal or unknown."""
        return await self._on_servers(self._runner(server).cancel(task_id))

    async def answer(self, server: str, task_id: str, text: str) -> Any:
        """Answer a hosted task waiting for input; the same task resumes."""

        runner = self._runner(server)

        async def resume() -> Any:
            task = await runner.get(task_id)
            if not task.state.interrupted:
                raise InvalidParamsError(
                    f"task {task_id} is {task.state.value}, not waiting for input"
                )
            return await runner.answer(task, Message("user", [Part.of_text(text)]))

        return await self._on_servers(resume())


async def kept_tasks(
    page: Callable[[TaskQuery], Awaitable[TaskPage | None]], name: str, limit: int = KEPT_SHOWN
) -> AsyncGenerator[list[Task], None]:
    """The newest ``limit`` tasks of server ``name``'s store, for a front end's book, read with
    ``page`` (a page of the store's listing, KEPT_PAGE tasks, newest first; None: the server is
    gone, nothing to show): given back oldest first, a page at a time with a turn of the caller's
    loop between, the order the bus tells tasks in. A store that fails to list ends it (logged).
    """
    pages: list[list[Task]] = []
    token, count = "", 0
    while count < limit:
        try:
            got = await page(TaskQuery(page_size=min(KEPT_PAGE, limit - count), page_token=token))
        except (ToolnexusError, OSError, ValueError) as exc:
            log.warning("%s: its stored tasks could not be listed: %s", name, _reason(exc))
            break
        if got is None:
            return
        pages.append(got.tasks)
        count, token = count + len(got.tasks), got.next_token
        if not token or not got.tasks:
            break
    for tasks in reversed(pages):
        yield tasks[::-1]
        await asyncio.sleep(0)  # the caller's loop draws and takes keys between pages


async def _cancel_the_others() -> None:
    """Cancel every other task of this loop and wait for them to end."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot listen: {exc.strerror}"
    text = str(exc).strip()
    return text or type(exc).__name__
