"""Run an ASGI app with uvicorn inside a host program: on its event loop, or in a thread.

The host may be plain asyncio, a Textual app or a Jupyter kernel, so the runner binds its own
socket (a bind error is an ``OSError`` for the caller), captures no signals, configures no
logging, never lets ``SystemExit`` escape, and closes the socket however the server ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import ipaddress
import mmap
import os
import resource
import socket
import sys
import tempfile
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from pathlib import Path
from typing import Any, ClassVar, Protocol

import h11
import uvicorn

__all__ = [
    "AsgiServer",
    "LoopThread",
    "new_event_loop",
    "parse_addr",
    "http_url",
    "listening_socket",
    "serving_gc",
    "HEADER_TIMEOUT",
    "MAX_HEAD",
    "MAX_CONNECTIONS",
    "ConnectionShare",
    "FdLimit",
    "PEER_CERTIFICATE",
    "peer_certificate",
    "fd_limit",
    "raise_fd_limit",
    "connections_for",
    "accept_queue",
    "GC_THRESHOLD",
    "ServingCollector",
    "Holder",
    "COLLECT_EVERY",
    "HELD_MANY",
    "FULL_GROWTH",
    "FULL_LOOK",
    "ANSWER_GRACE",
    "CUT",
]

DEFAULT_HOST = "127.0.0.1"
HEADER_TIMEOUT = 10.0
"""Seconds a connection may stay without a request in progress, or with a request whose body is
still arriving, before it is closed (checked each interval: closed within two): a new socket that
sends nothing, one trickling a request head or a body. uvicorn's keep-alive timeout (5 s) closes
an idle connection after a response."""
MAX_HEAD = 64 * 1024
"""The largest request head (request line and headers) a server reads, in bytes: past it the answer
is 431 and the connection is closed, the rest never read (nothing bounded it: a 4 MB header was
read whole and answered 200). gRPC's metadata has the same bound."""
MAX_CONNECTIONS = 1000
"""gRPC's calls at once, past which new ones are refused (``RESOURCE_EXHAUSTED``). The HTTP server's
connection limit is sized from the file-descriptor limit instead (:func:`connections_for`)."""
FD_RESERVE = 64
"""File descriptors kept for the process itself (the listening socket, the event loop's, the
store's pool, logs, imported files) when a connection limit is sized from the descriptor limit."""
ANSWER_GRACE = 1.0
"""Seconds a stop gives the requests still open when its drain's time is up to write the answers
its ``time_up`` gave them (a blocking send's task, a stream's last event), before they are cancelled."""
CUT = "toolnexus.cut"
"""The ASGI scope extension (``scope["extensions"][CUT]()``) that closes the connection at once, what
the app wrote of its answer sent first: an answer ended mid-body on purpose, without the error log
line an exception would cost (``serve.quirks``' ``drop-streams``)."""
GC_THRESHOLD = (20_000, 20, 20)
"""The collector's thresholds in a serving process (see :func:`serving_gc`; Python's are 700, 10, 10)."""
HELD_MANY = 1000
"""Connections and calls held open (:class:`Holder`: an HTTP server's connections, a gRPC
server's calls) from which :class:`ServingCollector` runs the collector itself, until fewer than
half as many are (below it, Python's with :data:`GC_THRESHOLD`: short requests' objects die
before a collection walks them)."""
COLLECT_EVERY = 0.05
"""Seconds between two young collections of :class:`ServingCollector`, each followed by setting
what survived aside: a collection walks only what was made since the one before and is still
alive (at 10,000 open streams, a word every 5 s each, a few thousand objects)."""
FULL_GROWTH = 1.5
"""How far :class:`ServingCollector` lets memory grow before a full collection walks everything
set aside again for the cycles that died there (a pause of the whole heap: 0.5-1 s at 10,000 open
streams): past this factor of what the last full collection left, or, when more connections are
open since, of what start-up and they account for (each as the last full collection found one:
what more connections hold is alive, not garbage; counted whole, 10,000 streams opening ran four
full collections, 2.8 s of CPU, a 3.8 s pause on a loaded core). Counted twice: in Python's
memory blocks (``sys.getallocatedblocks``: many small objects) and in the bytes C's allocator
holds (a large object, a body, is one block; resident bytes would not do: they seldom fall)."""
FULL_LOOK = 1.0
"""Seconds between two looks of :class:`ServingCollector` at memory (a look counts every pool of
every arena: ~0.5 ms at 4 million blocks)."""


def serving_gc(collect: bool = True) -> None:
    """Tune this process's garbage collector for serving, once the server has started.

    Every request in flight holds a few hundred young objects (coroutines, frames, dicts); with
    Python's thresholds the youngest generation is collected every few requests and walks all of
    them each time, and the full collections that follow walk everything start-up made: a fifth
    of a served request's CPU and 30-60 ms pauses at 64 concurrent callers (``bench/README.md``).
    Here what start-up made is set aside (``gc.freeze``: never walked again) and the youngest
    generation is collected after 20,000 new objects. Cycles are still collected, later.

    With ``collect`` and a running loop, :class:`ServingCollector` also runs on that loop (once
    a loop): while thousands of connections or gRPC calls are open (streams, whose objects live
    as long as they are), it runs the collector itself. ``toolnexus serve`` calls it (the process
    is the server's); a program that embeds :func:`~toolnexus.serve.serve` decides for its own
    process (the TUI runs a collector of its own).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    if not collect:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    ServingCollector.running[:] = [c for c in ServingCollector.running if not c.loop.is_closed()]
    if not any(c.loop is loop for c in ServingCollector.running):
        ServingCollector(loop).start()


class Holder(Protocol):
    """A server whose open connections or calls :class:`ServingCollector` counts
    (:meth:`ServingCollector.hold`)."""

    def holding(self) -> int:
        """What it holds open now, each for as long as it is open: an HTTP server's connections
        (a stream is one), a gRPC server's calls (a stream is one; its connection holds many, and
        none of their objects)."""
        ...


class ServingCollector:
    """A serving process's collector while it holds :data:`HELD_MANY` connections or calls open or
    more (its servers' together, :class:`Holder`), run on its loop: every :data:`COLLECT_EVERY`
    seconds the youngest generation is collected and what survived is set aside (``gc.freeze``),
    never walked again until a full collection; every :data:`FULL_LOOK` seconds, once memory (blocks
    or C's bytes) grew by :data:`FULL_GROWTH` past what the last full collection left (or what
    start-up and the connections open now account for, when more are), everything set aside is
    walked again (``gc.unfreeze``, a full collection, set aside again) for the cycles that died
    there (an HTTP client's request is one: ``serve.push._Once``). When fewer than half as many are
    open, a last full collection and Python's collector again. Full collections come with growth not
    explained by more connections, not with time.

    Why: with Python's collector (:func:`serving_gc`'s thresholds), an open stream's objects for
    each word live until its next word, seconds later; the young generation holds every word of
    every stream since the last collection (260,000 objects at 10,000 streams, a word every 5 s
    each: 150-170 ms of CPU a collection), and what survives it is walked again by the middle
    generation's. Here a collection walks the last 50 ms' survivors, a few milliseconds
    (``bench/README.md``, "Ten thousand open streams, round 5"). Python's own collections stay on
    (another thread's garbage, a loop held up): they walk only what is not set aside yet.
    """

    running: ClassVar[list[ServingCollector]] = []
    """The collectors running, one per loop at most (:func:`serving_gc`)."""
    holders: ClassVar[weakref.WeakSet[Holder]] = weakref.WeakSet()
    """The servers started in this process, on any loop (:meth:`hold`), counted together."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.held = False
        """Whether it runs the collector now (HELD_MANY connections or calls open)."""
        self.full = 0
        """Full collections it ran."""
        self._malloc = _malloc_in_use()
        self._floor = self._memory()  # start-up's blocks and C's bytes
        self._left = self._floor  # what the last full collection left (or the collector found)
        self._per = (0.0, 0.0)  # and per connection or call open, above start-up's
        self._looked = 0.0

    @staticmethod
    def hold(server: Holder) -> None:
        """Count what ``server`` holds open from now on, as long as it is alive (a started server
        calls it)."""
        ServingCollector.holders.add(server)

    def start(self) -> None:
        """Look at the open connections and calls (every :data:`FULL_LOOK` seconds while few
        are), and collect while many are, from now on."""
        ServingCollector.running.append(self)
        self.loop.call_later(COLLECT_EVERY, self._tick)

    def _tick(self) -> None:
        open_ = sum(server.holding() for server in ServingCollector.holders)
        held = open_ >= HELD_MANY or (self.held and open_ >= HELD_MANY // 2)
        self.loop.call_later(COLLECT_EVERY if held else FULL_LOOK, self._tick)
        if not held:
            if self.held:  # fallen back: what died set aside is found, Python's collector again
                self.held = False
                self._full(open_)
            return
        if not self.held:
            self.held, self._looked = True, self.loop.time()
            self._measure(open_)
        gc.collect(0)
        gc.freeze()
        now = self.loop.time()
        if now - self._looked >= FULL_LOOK:
            self._looked = now
            n = max(open_, 1)
            if any(
                used > FULL_GROWTH * max(left, floor + per * n)
                for used, left, floor, per in zip(
                    self._memory(), self._left, self._floor, self._per, strict=True
                )
            ):
                self._full(open_)

    def _full(self, open_: int) -> None:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.full += 1
        self._measure(open_)

    def _memory(self) -> tuple[int, int]:
        """Python's memory blocks and the bytes C's allocator holds for it: a large object (a
        body, a buffer) is one block, and counted in the bytes (~0.5 ms at 4M blocks)."""
        return sys.getallocatedblocks(), self._malloc()

    def _measure(self, open_: int) -> None:
        """What memory is now, and each open connection's part above start-up's."""
        self._left = self._memory()
        n = max(open_, 1)
        blocks, bytes_ = (
            max(0, used - floor) / n for used, floor in zip(self._left, self._floor, strict=True)
        )
        self._per = (blocks, bytes_)


def _malloc_in_use() -> Callable[[], int]:
    """A reader of the bytes C's allocator has handed out and not had back (glibc's ``mallinfo2``:
    its heap's and its own mappings'), which, unlike the resident bytes, fall again when freed; a
    reader of 0 where there is none (another C library: the blocks alone count then)."""
    import ctypes  # noqa: PLC0415  # start-up time: only a collector holding many streams reads it

    class Mallinfo2(ctypes.Structure):
        _fields_ = [  # noqa: RUF012  # ctypes' declared layout
            (name, ctypes.c_size_t)
            for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
        ]

    try:
        call = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return lambda: 0
    call.restype = Mallinfo2

    def in_use() -> int:
        info = call()
        return int(info.uordblks) + int(info.hblkhd)

    return in_use


@dataclasses.dataclass(frozen=True)
class FdLimit:
    """This process's limit of open files (``RLIMIT_NOFILE``'s soft limit): ``now``, and ``before``
    :func:`raise_fd_limit` raised it (the same when it did not). None: unlimited."""

    before: int | None
    now: int | None


def fd_limit() -> int | None:
    """This process's soft limit of open files, or None when it is unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def raise_fd_limit() -> FdLimit:
    """Raise this process's soft limit of open files to its hard limit, where it may: a server holds
    a descriptor per connection, and the soft limit a shell gives (often 1,024) caps it far below
    what memory allows. Where the hard limit is unlimited (macOS) or refused, it tries 10,240
    (macOS's ``OPEN_MAX``) and keeps what it had if that is refused too. Children (the workers of
    ``toolnexus serve --workers N``) inherit it. ``toolnexus serve`` calls it (the process is the
    server's); a program that embeds :func:`~toolnexus.serve.serve` decides for its own process."""
    before = fd_limit()
    if before is None:
        return FdLimit(before, before)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for want in (hard, 10_240):
        if want == resource.RLIM_INFINITY or want <= before:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            continue
        return FdLimit(before, want)
    return FdLimit(before, before)


def connections_for(nofile: int | None) -> int:
    """The connection limit a server sized from ``nofile`` open files holds (:data:`MAX_CONNECTIONS`
    when they are unlimited): what :data:`FD_RESERVE` leaves, halved, since a connection's
    task may hold a descriptor of its own (the model's connection, a webhook's, a file) and a full
    server must still reach its model: 20,000 open files hold 9,968 connections, 1,024 hold 480."""
    if nofile is None:
        return MAX_CONNECTIONS
    return max(1, (nofile - FD_RESERVE) // 2)


def accept_queue() -> int:
    """How many new connections the kernel holds for a server before it accepts them: as many as
    the machine allows (Linux's ``net.core.somaxconn``, which cuts any larger ``listen()``). A
    burst of connections arriving faster than the server accepts them overflows the queue and the
    kernel drops them (their clients see resets): uvicorn's default, 2,048, was half of what this
    machine allows (4,096)."""
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):  # not Linux
        return socket.SOMAXCONN


def parse_addr(addr: str | int | None) -> tuple[str, int]:
    """``"host:port"``, ``":port"``, ``"port"``, ``"[::1]:port"`` or an int; the host defaults to loopback."""
    if addr is None or addr == "":
        return DEFAULT_HOST, 0
    if isinstance(addr, int):
        return DEFAULT_HOST, addr
    text = str(addr).strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.lstrip(":")
    elif text.count(":") == 1:
        host, port = text.split(":")
    elif text.isdigit():
        host, port = "", text
    else:
        host, port = text, "0"
    try:
        number = int(port or 0)
    except ValueError:
        raise ValueError(f"invalid port in address {addr!r}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"port out of range in address {addr!r}")
    return host or DEFAULT_HOST, number


ACCEPTS_PER_TURN = 16
"""Waiting connections a server takes in a turn of its loop at most, on uvloop (:class:`_Accepts`);
libuv's own is one."""


class _Accepts:
    """On uvloop, the connections waiting for a server taken as one is: up to
    :data:`ACCEPTS_PER_TURN` a turn of the loop (``_Guard.connection_made`` calls :meth:`more`),
    where libuv takes one.

    libuv accepts one connection a turn for each handle listening (since 1.45: level-triggered
    polling brings the next at the next turn). Under load a turn is long: measured at 128 streams
    a host (``bench/stream_bench.py --hosts``), turns of 100-150 ms, 30-75 connections waiting in
    the accept queue for seconds and taken one a turn while the open ones were served within tens
    of milliseconds; behind nginx, which opens a connection to a host per request, most subscribes
    reached their host after their one-second reply had ended. One more ``accept`` a connection
    (it finds none: EAGAIN) is all this costs while nothing waits; what it takes goes through
    ``loop.connect_accepted_socket`` (a task each). More handles on the same socket would cost
    every handle's wake-up at each connection. asyncio's own loop takes every waiting connection
    in a turn already: nothing is done there."""

    def __init__(self, server: _Uvicorn, sockets: list[socket.socket]) -> None:
        self._server = server
        self._socks: list[socket.socket] = []
        self._handing: set[asyncio.Task[Any]] = set()
        self._taken = 0  # this turn's, by more(): each taken one's connection_made asks again
        if not sockets:
            return
        loop = asyncio.get_running_loop()
        if not type(loop).__module__.startswith("uvloop"):
            return
        for sock in sockets:
            mine = sock.dup()
            mine.setblocking(False)
            self._socks.append(mine)
        server.server_state.tn_accepts = self  # type: ignore[attr-defined]  # read by _Guard

    def more(self) -> None:
        """Take the connections waiting now, up to ACCEPTS_PER_TURN - 1 a turn of the loop.

        A connection taken here calls this again from its own ``connection_made`` (a turn
        later): without the turn's count, each of the 15 would take 15 more, and a worker of
        ``--workers`` that woke first would empty the accept queue the others share."""
        if not self._socks or self._taken >= ACCEPTS_PER_TURN - 1:
            return
        config = self._server.config
        loop = asyncio.get_running_loop()
        for sock in self._socks:
            while self._taken < ACCEPTS_PER_TURN - 1:
                try:
                    conn, _ = sock.accept()
                except OSError:  # none waits (EAGAIN), or out of files: libuv's handle says so
                    break
                if self._taken == 0:
                    loop.call_soon(self._new_turn)
                self._taken += 1
                conn.setblocking(False)
                if conn.family != socket.AF_UNIX:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                task = loop.create_task(self._hand(conn, config.ssl))
                self._handing.add(task)
                task.add_done_callback(self._handing.discard)

    def _new_turn(self) -> None:
        self._taken = 0

    def _protocol(self) -> asyncio.Protocol:
        """uvicorn's own factory, as its startup makes it (its class typed as any protocol's)."""
        config, server = self._server.config, self._server
        protocol: Any = config.http_protocol_class
        return protocol(
            config=config, server_state=server.server_state, app_state=server.lifespan.state
        )

    async def _hand(self, conn: socket.socket, ssl: Any) -> None:
        """One connection taken, handed to the loop as uvicorn's own are (the protocol's
        ``connection_made`` counts it among the server's)."""
        try:
            await asyncio.get_running_loop().connect_accepted_socket(self._protocol, conn, ssl=ssl)
        except Exception:  # a TLS handshake that failed, a loop closing: as libuv drops one
            conn.close()

    def close(self) -> None:
        """Take no more (the server stops accepting)."""
        socks, self._socks = self._socks, []
        for sock in socks:
            sock.close()


class _Uvicorn(uvicorn.Server):
    """A uvicorn server that leaves signals to its host, stops on an event, not a 0.1 s poll, and
    drains (see :meth:`AsgiServer.stop`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()
        self.stopping = asyncio.Event()
        self.hurry = asyncio.Event()  # set: the drain ends now
        graceful = config.timeout_graceful_shutdown
        self.grace: float | None = float(graceful) if graceful is not None else None
        self.until_idle: Callable[[], Awaitable[None]] | None = None
        self.time_up: Callable[[], Awaitable[None]] | None = None
        self._accepts = _Accepts(self, [])

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self._accepts = _Accepts(self, sockets or [])
        ServingCollector.hold(self)
        self.ready.set()

    def holding(self) -> int:
        """Its open connections (:class:`Holder`)."""
        return len(self.server_state.connections)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, drain, cancel what is left (uvicorn's shutdown, without its
        unconditional 0.1 s sleep when no connection is open, and with the host's drain)."""
        self._accepts.close()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # an idle one closes now, a busy one after its response
        if self.server_state.connections:
            await asyncio.sleep(0.02)
        if not await self._within(self.grace, self._drain()):
            if self.time_up is not None:
                await self.time_up()  # the callers still waiting are answered
                await self._within(ANSWER_GRACE, self._wait_tasks_to_complete())
            cancelled = list(self.server_state.tasks)
            for task in cancelled:
                task.cancel(msg="toolnexus: server stopping")
            if cancelled:  # each closes its connection as it ends
                await asyncio.wait(cancelled, timeout=ANSWER_GRACE)
        await self._cut()
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _cut(self) -> None:
        """Close at once the connections a drain left open, and return once their sockets are.

        A connection whose answer waits in its buffer for a client that does not read (a stream's
        subscriber that never reads) is only ever closed gracefully: the buffer is written first,
        which never happens. Its socket stayed open after the stop: until the loop's end on a
        thread of servers (the TUI's), and past it on asyncio's loop (a test's), where the
        collector found it later, in whatever ran then (``ResourceWarning: unclosed transport``)."""
        for connection in list(self.server_state.connections):
            connection.transport.abort()  # what its buffer holds is dropped
        for _ in range(10):  # each one's connection_lost runs at the loop's next turn or two
            if not self.server_state.connections:
                return
            await asyncio.sleep(0)

    async def _drain(self) -> None:
        await self._wait_tasks_to_complete()
        if self.until_idle is not None:
            await self.until_idle()

    async def _within(self, seconds: float | None, work: Coroutine[Any, Any, None]) -> bool:
        """Run ``work`` for at most ``seconds`` (less once :attr:`hurry` is set); whether it ended."""
        job, hurry = asyncio.ensure_future(work), asyncio.ensure_future(self.hurry.wait())
        try:
            await asyncio.wait({job, hurry}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hurry.cancel()
            if not job.done():
                job.cancel()
        return job.done() and not job.cancelled()

    async def main_loop(self) -> None:
        while not await self.on_tick(0):  # tick 0 refreshes the Date header
            try:
                await asyncio.wait_for(self.stopping.wait(), 1.0)
            except TimeoutError:
                pass


class _OneWrite:
    """What a connection's requests write their responses through (uvicorn's ``cycle.transport``):
    a response with a Content-Length leaves in one system call, its head held until its body is
    written (one TCP segment, not two, and the peer wakes once). Anything else (a streamed body, a
    100 Continue, a refusal) goes out as written; a held head goes out first when the response
    ends without a body or the connection is closed, and on its own before a body of 64 KiB or
    more (not copied to join it)."""

    __slots__ = ("_transport", "_protocol", "_held", "_cycle")

    def __init__(self, transport: Any, protocol: Any) -> None:
        self._transport = transport
        self._protocol = protocol  # its current cycle says whether more of the response must follow
        self._held: bytes | None = None
        self._cycle: Any = None  # the request whose response wrote last

    def write(self, data: bytes) -> None:
        cycle = self._protocol.cycle
        first, self._cycle = cycle is not self._cycle, cycle
        if (
            first
            and cycle.expected_content_length > 0
            and not cycle.chunked_encoding
            and not cycle.response_complete
        ):  # a response's head, and a body must follow
            self._held = data
            return
        held, self._held = self._held, None
        if held is not None:
            if len(data) >= 65536:
                self._transport.write(held)
            else:
                data = held + data
        self._transport.write(data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


_TOO_LARGE = b"request head too large (limit %d bytes)"


class _HeadTooLarge(Exception):
    """Raised in a parser's callback to stop it: the head was answered 431 (see :data:`MAX_HEAD`)."""


def _head_size(target: bytes, headers: Iterable[tuple[bytes, bytes]]) -> int:
    """A request head's bytes, near enough: its target and each header's name and value."""
    return len(target) + sum(len(k) + len(v) + 4 for k, v in headers)


PEER_CERTIFICATE = "toolnexus.peer_certificate"
"""The key of a request's ASGI ``state`` holding the certificate its connection's TLS client
presented (DER bytes), where the server required one (mutual TLS); absent otherwise. Set by the
host per connection: no header can carry it."""


def peer_certificate(scope: Any) -> bytes | None:
    """The certificate the client of this request's connection presented (mutual TLS), or None."""
    state = scope.get("state")
    found = state.get(PEER_CERTIFICATE) if isinstance(state, dict) else None
    return found if isinstance(found, bytes) else None


def _presented(transport: Any) -> bytes | None:
    """The certificate a TLS client presented on ``transport`` (DER), verified by the handshake."""
    tls = transport.get_extra_info("ssl_object")
    return tls.getpeercert(binary_form=True) if tls is not None else None


_Protocol: Any = object
""":class:`_Guard`'s base as the type checker sees it: uvicorn's HTTP protocol, which
:func:`_guarded` mixes it into."""


class _Guard(_Protocol):
    """What :func:`_guarded` adds to uvicorn's HTTP protocol class; its settings are the class's
    (see there)."""

    _tn_timeout: float
    _tn_max_head: int
    _tn_one_write: bool
    _tn_whole: bool
    """httptools: it holds a head until it ends (h11 bounds its own)."""
    _tn_timer: asyncio.TimerHandle | None
    """The next check (:meth:`_tn_check`); None while an answer whose request came whole is
    written: a stream open for hours costs no check every interval."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        accepts = getattr(self.server_state, "tn_accepts", None)
        if accepts is not None:  # the connections waiting behind this one (see _Accepts)
            accepts.more()
        certificate = _presented(transport)
        if certificate is not None:  # each request's state says who this connection is
            self.app_state = {**self.app_state, PEER_CERTIFICATE: certificate}
        self._tn_one = _OneWrite(transport, self) if self._tn_one_write else None
        self._tn_seen = None
        self._tn_head: int | None = 0  # bytes of a head still arriving (None: none is)
        self._tn_timer = self.loop.call_later(self._tn_timeout, self._tn_check)
        if not self._tn_whole:
            self._tn_next_event, self.conn.next_event = self.conn.next_event, self._tn_check_h11

    def data_received(self, data: bytes) -> None:
        if self._tn_whole and self._tn_head is not None:
            self._tn_head += len(data)
        super().data_received(data)
        if self._tn_whole and self._tn_head is not None and self._tn_head > self._tn_max_head:
            self._tn_refuse()  # no more of a head past the bound is read

    def _tn_refuse(self) -> None:
        """431, written raw (no request was made of the head), and the connection closed."""
        if self.transport.is_closing():
            return
        msg = _TOO_LARGE % self._tn_max_head
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(msg), msg)
        )
        self.transport.close()

    def send_400_response(self, msg: str) -> None:  # a parser's refusal
        if self.transport.is_closing():
            return  # answered 431 already
        if not self._tn_whole and len(self.conn.trailing_data[0]) > self._tn_max_head:
            self._tn_refuse()  # h11's own bound: an unfinished head past it
            return
        super().send_400_response(msg)

    def _tn_check_h11(self) -> Any:
        """h11's next event, a request whose head is past the bound answered 431 (h11 bounds
        only a head still arriving, and then answers 400)."""
        event = self._tn_next_event()
        if (
            isinstance(event, h11.Request)
            and _head_size(event.target, event.headers) > self._tn_max_head
        ):
            self._tn_refuse()
            raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
        return event

    def on_message_complete(self) -> None:  # httptools: a new head may follow
        self._tn_head = 0
        super().on_message_complete()

    def _tn_check(self) -> None:
        cycle = getattr(self, "cycle", None)
        busy = cycle is not None and not cycle.response_complete
        if self.transport.is_closing():
            return
        idle = not busy and getattr(self, "timeout_keep_alive_task", None) is None
        body_stalled = busy and getattr(cycle, "more_body", False)  # its body still arriving
        if busy and not body_stalled:  # an answer written (a stream): watched from its end
            self._tn_timer = None
            return
        if cycle is self._tn_seen and (idle or body_stalled):
            self.transport.close()
            return
        self._tn_seen = cycle
        self._tn_timer = self.loop.call_later(self._tn_timeout, self._tn_check)

    def on_headers_complete(self) -> None:
        # an app may end its answer mid-body on purpose (serve.quirks: drop-streams)
        self.scope["extensions"] = {**self.scope.get("extensions", {}), CUT: self._tn_cut}
        self._tn_head = None
        if _head_size(self.url, self.headers) > self._tn_max_head:  # whole within the last read
            self._tn_refuse()
            raise _HeadTooLarge  # the parser stops: nothing of it reaches the app
        super().on_headers_complete()
        if self._tn_one is not None:
            self.cycle.transport = self._tn_one  # the protocol itself keeps the socket's transport

    def _tn_cut(self) -> None:
        """Close the connection now, what was written of the answer sent first."""
        (self._tn_one or self.transport).close()

    def on_response_complete(self) -> None:
        if self._tn_one is not None:
            self._tn_one.flush()  # a body that wrote nothing (HEAD, an empty one): its head goes now
        super().on_response_complete()
        if self._tn_timer is None and not self.transport.is_closing():  # paused (_tn_check)
            self._tn_seen = None
            self._tn_timer = self.loop.call_later(self._tn_timeout, self._tn_check)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._tn_timer is not None:
            self._tn_timer.cancel()
        super().connection_lost(exc)


def _guarded(
    base: Any, header_timeout: float, max_head: int = MAX_HEAD, one_write: bool = False
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class, closing a connection that spends a whole ``header_timeout``
    interval (checked every interval, so within two) with no request in progress and no keep-alive
    timer of uvicorn's own running (silent, or trickling a request head: slowloris), or with the
    same request's body still arriving (a trickled body); not watched while an answer to a
    request that came whole is written (a stream held for hours costs no check an interval), and
    watched again from its end; and answering 431 to a request whose
    head is past ``max_head`` bytes (httptools bounds nothing; h11's own bound answers 400), the
    connection closed once more than ``max_head`` bytes came without the head's end; a TLS
    client's certificate (mutual TLS) put in each of its requests' state (:data:`PEER_CERTIFICATE`).
    No cost per request beyond a count."""

    settings = {
        "_tn_timeout": header_timeout,
        "_tn_max_head": max_head,
        "_tn_one_write": one_write,
        "_tn_whole": base.__name__ == "HttpToolsProtocol",
    }
    return type(f"Guarded{base.__name__}", (_Guard, base), settings)


class ConnectionShare:
    """One limit of open connections for the workers of ``toolnexus serve --workers N``, which
    accept on one socket: each worker writes how many connections it holds into its own slot of a
    small file every worker maps (one writer a slot: no lock), and a request that comes while the
    sum is at ``limit`` gets 503, whichever worker took it. (Each worker used to count its own: two
    workers holding 1,030 connections still answered 200.)

    Args:
        fd: the shared file, eight bytes a worker (the supervisor's :meth:`made`, inherited).
        index: this worker's slot.
        limit: connections the workers hold together before new requests get 503.
    """

    def __init__(self, fd: int, index: int, limit: int) -> None:
        self._slots = memoryview(mmap.mmap(fd, 0)).cast("q")
        self.index = index
        self.limit = limit
        self._slots[index] = 0  # a worker started in a dead one's place counts from nothing

    @staticmethod
    def made(workers: int) -> int:
        """A new shared file of ``workers`` empty slots, with no name on disk: its descriptor."""
        with tempfile.TemporaryFile() as f:
            f.truncate(8 * workers)
            return os.dup(f.fileno())

    def hold(self, connections: int) -> None:
        """This worker now holds ``connections``."""
        self._slots[self.index] = connections

    def full(self) -> bool:
        """Whether the workers hold more than ``limit`` (the asking connection counted)."""
        return sum(self._slots) > self.limit


def _sharing(base: Any, share: ConnectionShare) -> type[asyncio.Protocol]:
    """``base`` (a guarded protocol class) counting its connections into ``share``, and answering
    503 when the workers' sum is at its limit (uvicorn's own check, made to see the sum)."""

    class Sharing(base):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            share.hold(len(self.connections))

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            share.hold(len(self.connections))

        @property
        def limit_concurrency(self) -> int:  # read by uvicorn as each request's head completes
            return 0 if share.full() else share.limit + 1  # see AsgiServer's

        @limit_concurrency.setter
        def limit_concurrency(self, value: int | None) -> None:  # uvicorn's, from its config
            pass

    return Sharing


@functools.lru_cache(maxsize=16)
def _http_protocol(header_timeout: float, max_head: int = MAX_HEAD) -> type[asyncio.Protocol]:
    """The guarded protocol class for this timeout and head bound (made once, not per server)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415  # optional extra: httptools (fast)
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: PLC0415  # the fallback without the fast extra

        return _guarded(H11Protocol, header_timeout, max_head)
    return _guarded(
        HttpToolsProtocol, header_timeout, max_head, one_write=True
    )  # its cycle says what must follow


class AsgiServer:
    """One ASGI app served on one socket, on the running event loop.

    Args:
        app: the ASGI app.
        addr: ``host:port`` (see :func:`parse_addr`); port 0 picks a free port.
        graceful: seconds a stop waits for open requests (streams) before cancelling them.
        header_timeout: see :data:`HEADER_TIMEOUT`.
        max_connections: open connections (and requests in progress) past which new requests get
            503; None: sized from this process's open-file limit (:func:`connections_for`); a
            :class:`ConnectionShare` for a worker of several (the limit is theirs together).
    """

    def __init__(
        self,
        app: Any,
        addr: str | int | None = None,
        *,
        graceful: float = 1.0,
        header_timeout: float = HEADER_TIMEOUT,
        max_connections: int | ConnectionShare | None = None,
        sock: socket.socket | None = None,
        **uvicorn_options: Any,
    ) -> None:
        self.app = app
        self.host, self.port = parse_addr(addr)
        if max_connections is None:
            max_connections = connections_for(fd_limit())
        self.max_connections = (
            max_connections if isinstance(max_connections, int) else max_connections.limit
        )
        """Open connections and requests past which new requests get 503 (several workers': theirs
        together)."""
        self._given = sock  # bound and listening already (see listening_socket)
        self._options = {
            "log_config": None,
            "access_log": False,
            "timeout_graceful_shutdown": graceful,
            "lifespan": "on",
            "http": _http_protocol(header_timeout)
            if isinstance(max_connections, int)
            else _sharing(_http_protocol(header_timeout), max_connections),
            "h11_max_incomplete_event_size": MAX_HEAD,  # h11's own bound (then 431, above)
            # nothing a client sends (X-Forwarded-For/-Proto) rewrites who it is, and a
            # request passes one middleware fewer
            "proxy_headers": False,
            # uvicorn refuses a request when its own connection makes the count reach the limit:
            # one more, so that ``max_connections`` are served and the one after is refused
            "limit_concurrency": self.max_connections + 1,
            "backlog": accept_queue(),  # uvicorn listens again, with its own (2,048) if not told
            **uvicorn_options,
        }
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        """``http://host:port``; ``https://`` when it serves TLS (uvicorn's ``ssl_certfile``)."""
        url = http_url(self.host, self.port)
        return "https" + url.removeprefix("http") if self._options.get("ssl_certfile") else url

    def _bind(self) -> socket.socket:
        return listening_socket(self.host, self.port)

    async def start(self) -> None:
        """Bind, start serving, and return once the server accepts connections.

        Raises:
            OSError: the address cannot be bound (in use, not local, no permission).
            RuntimeError: the app failed to start (its lifespan raised).
        """
        if self._task is not None:
            raise RuntimeError("server already started")
        self._sock, self._given = self._given or self._bind(), None
        self.port = self._sock.getsockname()[1]
        server = self._server = _Uvicorn(uvicorn.Config(self.app, **self._options))
        self._task = asyncio.ensure_future(self._serve(server, self._sock))
        ready = asyncio.ensure_future(server.ready.wait())
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if not server.ready.is_set():
            task, self._task = self._task, None
            exc = task.exception()
            raise RuntimeError(f"the server failed to start: {exc}") from exc

    async def _serve(self, server: _Uvicorn, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit as exc:  # uvicorn's exit on a failed startup must not end the host
            raise RuntimeError(f"uvicorn stopped during startup (exit code {exc.code})") from None
        finally:
            sock.close()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(
        self,
        drain: float | None = None,
        *,
        until_idle: Callable[[], Awaitable[None]] | None = None,
        time_up: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Stop accepting at once (an idle connection is closed, a busy one after its response), let
        the requests in flight finish and ``until_idle()`` return, for up to ``drain`` seconds
        (default ``graceful``) or until :meth:`hurry`; past that, ``time_up()`` runs, the requests
        still open get :data:`ANSWER_GRACE` to write what it gave them, and the rest are cancelled.
        Closes the socket, and then every connection still open (a client that does not read)."""
        task, server = self._task, self._server
        if task is None or server is None:
            return
        if drain is not None:
            server.grace = drain
        server.until_idle, server.time_up = until_idle, time_up
        server.should_exit = True
        server.stopping.set()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
        finally:
            if self._sock is not None:
                self._sock.close()
            self._task = None

    def hurry(self) -> None:
        """End a stop's drain now (a second Ctrl-C)."""
        if self._server is not None:
            self._server.hurry.set()


def listening_socket(host: str, port: int) -> socket.socket:
    """A non-blocking TCP socket bound to ``host:port`` (0: any free port) and listening.

    Raises:
        OSError: the address cannot be bound (in use, not local, no permission).
    """
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET  # a name such as localhost
    # IPPROTO_TCP so that asyncio sets TCP_NODELAY (a plain socket stalls keep-alive replies 40 ms)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(accept_queue())
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def http_url(host: str, port: int) -> str:
    """The URL a server bound to ``host:port`` answers on (IPv6 hosts in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when it is installed (the ``fast`` extra), else asyncio's: what serving runs
    on, in ``toolnexus serve`` as in a thread of its own."""
    try:
        import uvloop  # noqa: PLC0415  # optional extra: uvloop (fast)
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class LoopThread:
    """An event loop (see :func:`new_event_loop`) in a daemon thread, for code that has no running
    loop of its own, or whose loop has other work (a front end's screen)."""

    def __init__(self, name: str = "toolnexus-loop") -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coro`` on the thread's loop and wait for its result here."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
