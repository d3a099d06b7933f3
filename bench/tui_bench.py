"""Benchmark (not a test): do toolnexus-tui and the servers it hosts keep out of each other's way?

Keys (the default): a hosted server with the demo model takes ``--tasks`` tasks, then about 500
transitions a second (non-blocking sends from a peer process, as a real peer's would arrive).
Meanwhile, timed from the key press (delivered as the terminal driver delivers it) to the frame
that shows its effect (the frame rendered to terminal text as a real terminal's driver would, the
screen left with nothing to lay out or paint):

- cursor down / up in the Tasks table (``--presses`` of them);
- every mode's key, 1-6 (escape first, as from a text box), ``--rounds`` times: the first round is
  every screen's first visit; and Escape in Chat (the message box lets go of the keys).

``--switches N`` then switches Servers -> Tasks N times, 0.3 s on each (Tasks hidden while tasks
move: issue 61). ``--lines``: only the Tasks table's lines, the CPU to draw a 120x40 table's lines
frame after frame, one row moving each frame and every age every fourth (``lines_main``).

``--hosting thread`` runs the hosted servers on their own loop in a thread (as ``toolnexus-tui``
does), ``loop`` on the app's loop (as before issue 52); ``both`` alternates them, run after run.
``process`` (a measure of a design, not what the TUI does): the server in a child process of its
own, every event of its bus sent to the app pickled over a pipe and published on the app's bus
(read and unpickled on the app's loop); the app hosts nothing, so its Servers mode is empty.
Targets (issue 52): every key on its own, first visits included, p95 <= 100 ms and max <= 200 ms
at 10,000 tasks and 500 transitions/s.

``--served``: the other way round. The same server hosted in the TUI and started by ``toolnexus
serve`` (a process of its own), asked in turn by a client process (one request at a time, the two
servers alternating) for the card and for a blocking send, while the TUI redraws (its mode keys
pressed one after another, each frame waited for). Target: p99 of each within 1.2x of
``toolnexus serve``'s.

``--stream``: from a word leaving the model to the Chat showing it (issue 53). The TUI hosts a
server whose model is ``stream_bench.py``'s OpenAI-style stub (20 words 50 ms apart, each stamped
with the monotonic time it was written); the Chat talks to it, each message in a new
conversation, first with nothing else served, then while ``--others`` streams (64) are served by
the same hosted server to callers in another process (``stream_bench.py --load``). Timed: a
word's stamp -> the first frame displayed (rendered to terminal text, as above) after which the
Chat's log holds that word. The TUI runs on the last core, the stub and the callers on the others.
Target: p95 <= 100 ms while 64 other streams are served.

``--soak SECONDS``: memory over a long stream of transitions (the peer as above; 5 s of keys, Servers
and Tasks in turn, then 5 s without): the book's size and RSS as it grows, and at the end what the
app's collector tuning set aside (``gc.freeze``) and how much of it a full collection finds to be
garbage (cycles that died after being set aside), by type.

Run: python bench/tui_bench.py [--tasks 1000] [--burst-seconds 5] [--presses 100] [--rounds 5]
     [--hosting thread|loop|both] [--runs N]
     python bench/tui_bench.py --served [--requests 1500] [--hosting thread|loop|both]
     python bench/tui_bench.py --soak 300
     python bench/tui_bench.py --stream [--messages 10] [--others 64] [--hosting thread|loop|both]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import gc
import json
import os
import pickle
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import stream_bench as sb  # noqa: E402  # the stub and the callers of --stream
from textual import events  # noqa: E402
from textual._compositor import CompositorUpdate  # noqa: E402
from textual.widgets import Input, Static  # noqa: E402

from toolnexus import events as bus  # noqa: E402
from toolnexus.hosting import ServerSpec, Workspace  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402


def _body(i: int) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "message/send",
        "params": {
            "configuration": {"blocking": False},
            "message": {
                "kind": "message",
                "messageId": f"b{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": f"t{i}"}],
            },
        },
    }


_GC: dict[int, list[float]] = {
    0: [],
    1: [],
    2: [],
}  # pauses of the collector while keys are timed
_GC_CPU: dict[int, list[float]] = {
    0: [],
    1: [],
    2: [],
}  # the same, the collecting thread's CPU
_gc_began = [0.0, 0.0]


_GC_SPANS: list[tuple[float, float, int, bool]] = []
"""Each collection while keys are timed: began, ended, its generation, run by the app's thread."""


def _gc_watch(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_began[:] = time.perf_counter(), time.thread_time()
    else:
        ended = time.perf_counter()
        _GC[info["generation"]].append((ended - _gc_began[0]) * 1000)
        _GC_CPU[info["generation"]].append((time.thread_time() - _gc_began[1]) * 1000)
        _GC_SPANS.append(
            (
                _gc_began[0],
                ended,
                info["generation"],
                threading.current_thread() is threading.main_thread(),
            )
        )


def _collections_in_keys(spans: list[tuple[float, float]]) -> str:
    """Which timed keys had a collection inside (press to frame), and by which thread."""
    inside = [(key, [c for c in _GC_SPANS if c[0] < key[1] and c[1] > key[0]]) for key in spans]
    hit = [(key, found) for key, found in inside if found]
    if not hit:
        return f"keys with a collection inside: none of {len(spans)}"
    (began, ended), found = max(hit, key=lambda h: h[0][1] - h[0][0])
    return (
        f"keys with a collection inside: {len(hit)} of {len(spans)}; the slowest of them "
        f"{(ended - began) * 1000:.1f} ms with "
        + ", ".join(
            f"gen{g} {(e - b) * 1000:.1f} ms ({'app' if app else 'servers'} thread)"
            for b, e, g, app in found
        )
    )


def _press(app: ToolnexusApp, key: str) -> float:
    """Deliver ``key`` as the terminal driver does; return when it was pressed."""
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    pressed = time.perf_counter()
    _CPU_AT[pressed] = time.thread_time(), _queued()
    app._driver.send_message(event)  # noqa: SLF001
    return pressed


_CPU_AT: dict[float, tuple[float, float]] = {}
"""The app's thread's CPU seconds when each key was pressed, and its seconds waiting for a core."""


def _queued() -> float:
    """Seconds this thread has waited for a core (Linux's schedstat; 0 elsewhere): the machine's
    load, apart from its waits for the interpreter (asleep, as when idle)."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _settled(screen: Any) -> bool:
    """Nothing left to lay out, scroll, paint or recompose on ``screen``."""
    return not (
        screen._layout_required
        or screen._scroll_required
        or screen._repaint_required  # noqa: SLF001
        or screen._recompose_required
        or screen._dirty_widgets
    )  # noqa: SLF001


class Frames:
    """The frames the app displays, each rendered to terminal text as a real driver renders it
    (headless, Textual skips that work), with when it was done."""

    def __init__(self, app: ToolnexusApp) -> None:
        self.app, self.shown = app, []
        self.spans: list[tuple[float, float]] = []  # each key timed: pressed, its frame shown
        self.cpu = 0.0
        self.queued = 0.0
        """The app's thread's milliseconds waiting for a core, from the last key to its frame."""
        """The app's thread's CPU milliseconds from the last key timed to its frame: what wall
        time would be on an idle machine, whatever else the machine runs."""
        original = app._display  # noqa: SLF001

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)
            self.shown.append((time.perf_counter(), time.thread_time(), screen, _queued()))

        app._display = display  # type: ignore[method-assign]  # noqa: SLF001

    async def until_shown(self, pressed: float, done: Callable[[], bool]) -> float:
        """Milliseconds from ``pressed`` to the last frame before ``done()`` held and the screen settled."""
        while True:
            screen = self.app.screen
            if done() and _settled(screen):
                last = next(
                    (
                        (t, c, q)
                        for t, c, shown, q in reversed(self.shown)
                        if shown is screen and t >= pressed
                    ),
                    None,
                )
                if last is not None:
                    cpu, queued = _CPU_AT.pop(pressed, (last[1], last[2]))
                    self.cpu, self.queued = (last[1] - cpu) * 1000, (last[2] - queued) * 1000
                    self.spans.append((pressed, last[0]))
                    return (last[0] - pressed) * 1000
            if time.perf_counter() - pressed > 10:
                raise TimeoutError("no frame within 10 s")
            await asyncio.sleep(0.0005)


def _summary(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[max(0, int(len(ms) * 0.95 + 0.5) - 1)]
    return f"{name:<26} n={len(ms):<4} p50 {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms  max {ms[-1]:6.1f} ms"


MODES_IN_TURN = (
    ("2", "tasks"),
    ("3", "peers"),
    ("4", "chat"),
    ("5", "wire"),
    ("6", "mcp"),
    ("1", "servers"),
)


async def _switch(
    app: ToolnexusApp, frames: Frames, key: str, mode: str
) -> dict[str, tuple[float, float, float]]:
    """Press ``key`` (Escape first, where a text box has the keys); the milliseconds each took,
    the app's thread's CPU milliseconds and its milliseconds waiting for a core."""
    out = {}
    if app.focused is not None and app.focused.__class__.__name__ in (
        "TextBox",
        "Input",
    ):
        focused = app.focused
        pressed = _press(app, "escape")  # as from a text box: Escape lets go of the keys
        out["escape"] = (
            await frames.until_shown(pressed, lambda: app.focused is not focused),
            frames.cpu,
            frames.queued,
        )
    pressed = _press(app, key)
    out[key] = (
        await frames.until_shown(pressed, lambda: app.current_mode == mode),
        frames.cpu,
        frames.queued,
    )
    return out


KEEPALIVE = httpx.Limits(keepalive_expiry=1.0)
"""The bench's clients keep an idle connection 1 s, well under the server's keep-alive timeout
(uvicorn's 5 s): a connection the server is closing is not reused."""


async def _fill_one(http: httpx.AsyncClient, url: str, i: int) -> None:
    """One task of the fill, sent again when its connection closed with no answer (on a machine at
    load 15-19 one of 10,000 did, twice, after the first hosting's run: cause not found; a task
    sent twice only adds one to the book)."""
    for attempt in range(3):
        try:
            await http.post(url + "/", json=_body(i))
            return
        except (httpx.ReadError, httpx.RemoteProtocolError):
            if attempt == 2:
                raise


def _app(hosting: str) -> tuple[Workspace, ToolnexusApp]:
    ws = Workspace(thread=hosting == "thread")
    specs = [] if hosting == "process" else [ServerSpec(name="bench", mcp=False)]
    app = ToolnexusApp(ws, specs=specs, tune_gc=True)
    app.prebuild = True  # as `toolnexus-tui` runs
    return ws, app


def _subprocess(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


async def _host_child(
    ws: Workspace,
) -> tuple[asyncio.subprocess.Process, str, asyncio.Task]:
    """``--hosting process``: the server in a child process (``host_child``), its events read on
    the app's loop (unpickled there) and published on the app's bus, as a design of the hosted
    servers in a process of their own would."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--host-child",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    url = (await child.stdout.readline()).decode().strip()

    async def read() -> None:
        assert child.stdout is not None
        while True:
            try:
                head = await child.stdout.readexactly(4)
            except asyncio.IncompleteReadError:
                return
            body = await child.stdout.readexactly(int.from_bytes(head, "big"))
            ws.events.publish_many(pickle.loads(body))

    return child, url, asyncio.ensure_future(read())


async def host_child() -> None:
    """The child of ``--hosting process``: the bench's server, every event of its bus written to
    stdout (pickled lists, a length before each, one a 10 ms) till stdin closes."""
    ws = Workspace()
    server = await ws.start(ServerSpec(name="bench", mcp=False))
    out = sys.stdout.buffer
    out.write(server.url.encode() + b"\n")
    out.flush()
    loop, done = asyncio.get_running_loop(), asyncio.Event()
    threading.Thread(
        target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(done.set)),
        daemon=True,
    ).start()
    batch: list[Any] = []

    kinds = (
        bus.TaskEvent,
        bus.TextEvent,
        bus.RemoteCallEvent,
        bus.ToolCallEvent,
        bus.TrafficEvent,
        bus.ServerEvent,
    )

    def flush() -> None:
        kept = [
            bus.TrafficEvent(
                **{f.name: getattr(e, f.name) for f in dataclasses.fields(bus.TrafficEvent)}
            )
            if isinstance(
                e, bus.TrafficEvent
            )  # the server's own, worked out when read: a plain one
            else e
            for e in batch
            if isinstance(e, kinds)
        ]
        body = pickle.dumps(kept)
        batch.clear()
        out.write(len(body).to_bytes(4, "big") + body)
        out.flush()

    async def forward() -> None:
        async for event in ws.events.subscribe(replay=True, max_queue=100_000):
            if not batch:
                loop.call_later(0.01, flush)
            batch.append(event)

    forwarding = asyncio.ensure_future(forward())
    await done.wait()
    forwarding.cancel()
    await ws.close()


async def keys(
    tasks: int,
    burst_seconds: float,
    presses: int,
    rounds: int,
    hosting: str,
    load_on: bool = True,
    switches: int = 0,
) -> dict[str, list[float]]:
    ws, app = _app(hosting)
    async with app.run_test(size=(120, 40)) as pilot:
        frames = Frames(app)
        if hosting == "process":
            child, url, reading = await _host_child(ws)
        else:
            while not ws.running():
                await pilot.pause(0.05)
            url = ws.get("bench").url
        async with httpx.AsyncClient(timeout=30, limits=KEEPALIVE) as http:
            t0 = time.perf_counter()
            for start in range(0, tasks, 50):
                await asyncio.gather(
                    *(_fill_one(http, url, i) for i in range(start, min(tasks, start + 50)))
                )
            fill = time.perf_counter() - t0
            while len(app.book.tasks) < tasks:
                await pilot.pause(0.05)
        await pilot.pause(0.3)
        print(f"[{hosting}] filled {tasks} tasks in {fill:.2f}s (no mode visited yet but Servers)")

        peer = _subprocess("--peer", url, str(tasks)) if load_on else None
        await asyncio.sleep(0.5)
        gc.callbacks.append(_gc_watch)
        began = time.perf_counter()
        hold = getattr(ws, "servers_hold", None)  # (None: a tree before it, or no thread)
        held_before = (hold.seconds, collections.Counter(hold.ends)) if hold else (0.0, None)
        timed: dict[str, list[float]] = {}
        used: dict[str, list[float]] = {}  # the app's thread's CPU for each
        asleep: dict[
            str, list[float]
        ] = {}  # neither on a core nor waiting for one: for the GIL, or idle
        for r in range(rounds):  # every mode's key; the first round: each screen's first visit
            for key, mode in MODES_IN_TURN:
                was = app.current_mode
                for pressed, (ms, cpu, queued) in (await _switch(app, frames, key, mode)).items():
                    name = (
                        f"escape in {was}"
                        if pressed == "escape"
                        else f"{key} {mode} (first visit)"
                        if r == 0 and mode != "servers"
                        else f"{key} {mode}"
                    )
                    timed.setdefault(name, []).append(ms)
                    used.setdefault(name, []).append(cpu)
                    asleep.setdefault(name, []).append(ms - cpu - queued)
                await asyncio.sleep(0.1)

        for _ in range(switches):  # Servers -> Tasks, 0.3 s on each: Tasks hidden while tasks move
            await _switch(app, frames, "1", "servers")
            await asyncio.sleep(0.3)
            for ms, cpu, queued in (await _switch(app, frames, "2", "tasks")).values():
                timed.setdefault("2 tasks, 0.3 s after 1", []).append(ms)
                used.setdefault("2 tasks, 0.3 s after 1", []).append(cpu)
                asleep.setdefault("2 tasks, 0.3 s after 1", []).append(ms - cpu - queued)
            await asyncio.sleep(0.3)
        if app.current_mode != "tasks":
            await _switch(app, frames, "2", "tasks")
        table = app.screen.query_one("#tasks", RowTable)
        await pilot.press("F")  # follow off: the cursor stays where the keys put it
        table.move_cursor(row=table.row_count // 2)
        await pilot.pause()
        for n in range(presses):
            before = table.cursor_row
            pressed = _press(app, "down" if n % 2 else "up")
            ms = await frames.until_shown(pressed, lambda: table.cursor_row != before)  # noqa: B023  # awaited here
            timed.setdefault("up/down in Tasks", []).append(ms)
            used.setdefault("up/down in Tasks", []).append(frames.cpu)
            asleep.setdefault("up/down in Tasks", []).append(ms - frames.cpu - frames.queued)
            await asyncio.sleep(max(0.0, burst_seconds / presses - (time.perf_counter() - pressed)))
        elapsed = time.perf_counter() - began
        gc.callbacks.remove(_gc_watch)
        sent = 0
        if peer is not None:
            out, _ = await asyncio.to_thread(peer.communicate, "")
            sent = int(out.split()[-1])
        print(
            f"[{hosting}] load: {sent} tasks in {elapsed:.1f}s = {sent * 3 / elapsed:.0f} "
            f"transitions/s; {len(app.book.tasks)} tasks in the book"
        )
        every = [ms for ms_list in timed.values() for ms in ms_list]
        for name, ms_list in timed.items():
            print(_summary(name, ms_list))
        print(_summary("every key", every) + "   (target: p95 <= 100 ms, max <= 200 ms)")
        print(
            "the app's thread's CPU from each key to its frame (what an idle machine would take):"
        )
        for name, ms_list in used.items():
            print(_summary(name, ms_list))
        print(_summary("every key, CPU", [ms for ms_list in used.values() for ms in ms_list]))
        print(
            "the app's thread asleep from each key to its frame (wall - CPU - waiting for a core: "
            "waiting for the interpreter, or idle; the machine's load left out):"
        )
        for name in ("2 tasks, 0.3 s after 1", "up/down in Tasks"):
            if name in asleep:
                print(_summary(name, asleep[name]))
        print(_summary("every key, asleep", [ms for ms_list in asleep.values() for ms in ms_list]))
        print(
            "collector meanwhile: "
            + ", ".join(
                f"gen{g} {len(p)}x, longest {max(p, default=0):.1f} ms "
                f"({max(_GC_CPU[g], default=0):.1f} ms CPU)"
                for g, p in _GC.items()
            )
        )
        print(_collections_in_keys(frames.spans))
        if hold is not None:
            ends = hold.ends - held_before[1]
            print(
                f"servers held for keys: {sum(ends.values())} holds ("
                + ", ".join(f"{n} {end}" for end, n in sorted(ends.items()))
                + f"), {hold.seconds - held_before[0]:.2f} s of the {elapsed:.1f} s timed"
            )
        for p in (*_GC.values(), *_GC_CPU.values()):
            p.clear()
        _GC_SPANS.clear()
        if hosting == "process":
            assert child.stdin is not None
            child.stdin.close()
            await child.wait()
            await reading
        await pilot.press("ctrl+q")
    return timed


def peer(url: str, first: int) -> None:
    """A peer process: ~500 transitions/s (3 a task, ~170 tasks/s) until its stdin closes; then
    prints how many tasks it sent."""
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    sent, i = 0, first
    with httpx.Client(timeout=30, limits=KEEPALIVE) as http:
        while not done.is_set():
            tick = time.perf_counter()
            for k in range(17):
                http.post(url + "/", json=_body(i + k))
            i += 17
            sent += 17
            time.sleep(max(0.0, 0.1 - (time.perf_counter() - tick)))
    print(sent, flush=True)


def measure(urls: list[str], requests: int) -> None:
    """A client process: ``requests`` rounds, each a card GET and a blocking send to every URL in
    turn (one request at a time); prints each URL's milliseconds as JSON."""
    out: dict[str, dict[str, list[float]]] = {u: {"card": [], "send": []} for u in urls}
    with httpx.Client(timeout=30, limits=KEEPALIVE) as http:
        for u in urls:  # connections open, first requests paid
            for _ in range(20):
                http.get(u + "/.well-known/agent-card.json")
                http.post(u + "/", json=_body(0) | {"params": _blocking(0)})
        for i in range(requests):
            for u in urls if i % 2 else reversed(urls):
                t = time.perf_counter()
                http.get(u + "/.well-known/agent-card.json").raise_for_status()
                out[u]["card"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                answer = http.post(u + "/", json=_body(i) | {"params": _blocking(i)}).json()
                out[u]["send"].append((time.perf_counter() - t) * 1000)
                assert answer["result"]["status"]["state"] == "completed", answer
    print(json.dumps(out), flush=True)


def _blocking(i: int) -> dict:
    return {
        "configuration": {"blocking": True},
        "message": _body(i)["params"]["message"],
    }


def _p(ms: list[float], q: float) -> float:
    ms = sorted(ms)
    return ms[min(len(ms) - 1, int(len(ms) * q))]


async def served(requests: int, hosting: str) -> None:
    """The same server hosted in the TUI and by ``toolnexus serve``, asked in turn while the TUI
    redraws."""
    cli = Path(sys.executable).with_name("toolnexus")
    said = tempfile.TemporaryFile("w+")  # a line a task: a pipe left unread would stall it
    alone = subprocess.Popen(
        [str(cli), "serve", "--name", "bench", "--port", "0", "--json"],
        stdout=said,
        text=True,
    )
    try:
        while not said.tell():
            await asyncio.sleep(0.05)
        said.seek(0)
        alone_url = json.loads(said.readline())["url"]
        ws, app = _app(hosting)
        async with app.run_test(size=(120, 40)) as pilot:
            frames = Frames(app)
            while not ws.running():
                await pilot.pause(0.05)
            await pilot.pause(4)  # the screens built ahead (prebuild), as a user would find them
            hosted = ws.get("bench").url
            client = _subprocess("--measure", hosted, alone_url, str(requests))
            switches: list[float] = []
            while client.poll() is None:  # the TUI redraws all along
                for key, mode in MODES_IN_TURN:
                    switches += [v[0] for v in (await _switch(app, frames, key, mode)).values()]
            out = json.loads(client.stdout.read())  # type: ignore[union-attr]
            await pilot.press("ctrl+q")
    finally:
        alone.send_signal(signal.SIGINT)
        alone.wait(10)
        said.close()
    print(
        f"[{hosting}] {requests} rounds; the TUI switched screens {len(switches)} times meanwhile "
        f"(p50 {statistics.median(switches):.1f} ms)"
    )
    for what in ("card", "send"):
        h, a = out[hosted][what], out[alone_url][what]
        print(
            f"  {what:<5} hosted p50 {_p(h, 0.5):6.2f} p99 {_p(h, 0.99):6.2f} ms   "
            f"toolnexus serve p50 {_p(a, 0.5):6.2f} p99 {_p(a, 0.99):6.2f} ms   "
            f"p99 ratio {_p(h, 0.99) / _p(a, 0.99):.2f} (target <= 1.2)"
        )


def _rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status)[1]) / 1024  # type: ignore[index]


async def soak(seconds: float, hosting: str) -> None:
    """See ``--soak``: memory over a long stream of transitions, 5 s of keys (Servers and Tasks
    in turn) and 5 s without in turn."""
    ws, app = _app(hosting)
    async with app.run_test(size=(120, 40)) as pilot:
        while not ws.running():
            await pilot.pause(0.05)
        await pilot.pause(3)  # the screens built ahead
        peer = _subprocess("--peer", ws.get("bench").url, "0")
        frames, began, seen = Frames(app), time.perf_counter(), []
        print(f"[{hosting}] seconds, tasks in the book, RSS MB, objects set aside (gc.freeze)")
        while (elapsed := time.perf_counter() - began) < seconds:
            for n in range(16):  # 5 s at the keys, then 5 s reading
                key = "2" if n % 2 else "1"
                await _switch(app, frames, key, "tasks" if key == "2" else "servers")
                await asyncio.sleep(0.3)
            await asyncio.sleep(5)
            seen.append((elapsed, len(app.book.tasks), _rss_mb()))
            print(
                f"  {elapsed:6.0f} s {seen[-1][1]:7d} {seen[-1][2]:8.1f} {gc.get_freeze_count():10d}",
                flush=True,
            )
        out, _ = await asyncio.to_thread(peer.communicate, "")
        half = seen[len(seen) // 2]
        print(
            f"[{hosting}] {out.split()[-1]} tasks sent in {elapsed:.0f} s; RSS from the middle on: "
            f"{(seen[-1][2] - half[2]) / max(1, seen[-1][1] - half[1]) * 1000:.1f} MB per 1,000 tasks "
            f"({half[2]:.0f} -> {seen[-1][2]:.0f} MB)"
        )
        held = gc.get_freeze_count()
        gc.unfreeze()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what it was: kept in gc.garbage, counted by type
        found = gc.collect()
        kinds = collections.Counter(
            f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage
        )
        gc.set_debug(0)
        gc.garbage.clear()
        print(
            f"[{hosting}] {held} objects set aside at the end; unfrozen, a full collection found "
            f"{found} unreachable (garbage that setting aside had kept); RSS {_rss_mb():.0f} MB; "
            f"most of it: {', '.join(f'{k} {n}' for k, n in kinds.most_common(4))}"
        )
        await pilot.press("ctrl+q")


async def main(a: argparse.Namespace) -> None:
    os.environ["TOOLNEXUS_DEMO_PACE"] = "0"  # an instant model, here and in `toolnexus serve`
    if a.switch_interval:
        sys.setswitchinterval(a.switch_interval / 1000)
    order = ["thread", "loop"] if a.hosting == "both" else [a.hosting]
    for run in range(a.runs):
        for hosting in order if run % 2 == 0 else list(reversed(order)):
            if a.served:
                await served(a.requests, hosting)
            elif a.soak:
                await soak(a.soak, hosting)
            else:
                await keys(
                    a.tasks,
                    a.burst_seconds,
                    a.presses,
                    a.rounds,
                    hosting,
                    not a.no_load,
                    a.switches,
                )


async def stream_main(messages: int, others: int, hosting: str = "thread") -> None:
    """See ``--stream`` in the module's docstring."""
    stamp = re.compile(r"@(\d+);")
    cores = sb._cores()
    if cores is not None:
        os.sched_setaffinity(0, cores[1])
    stub, stub_url = sb._start("stub", cores=cores[0] if cores else None)
    os.environ["TOOLNEXUS_BENCH_KEY"] = "bench"
    spec = ServerSpec(
        name="bench",
        mcp=False,
        model="openai:stub-model",
        base_url=stub_url,
        api_key_env="TOOLNEXUS_BENCH_KEY",
    )
    ws = Workspace(thread=hosting != "loop")  # as `toolnexus-tui` runs
    app = ToolnexusApp(ws, specs=[spec], tune_gc=True)
    shown: dict[int, int] = {}  # stamp -> ns when a displayed frame first held it
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            original = app._display  # noqa: SLF001
            log: list[Static] = []

            def display(screen: Any, renderable: Any) -> None:
                original(screen, renderable)
                if isinstance(renderable, CompositorUpdate):
                    renderable.render_segments(app.console)
                if log:
                    now = time.monotonic_ns()
                    for found in stamp.findall(str(log[0].render())):
                        shown.setdefault(int(found), now)

            app._display = display  # type: ignore[method-assign]  # noqa: SLF001
            while not ws.running():
                await pilot.pause(0.05)
            hosted = ws.get("bench").url
            while not (
                hosted in app.peer_book.peers and app.peer_book.peers[hosted].state == "reachable"
            ):
                await pilot.pause(0.05)
            app.chat_peer = hosted
            await pilot.press("4")
            while app.conversation.peer != hosted:
                await pilot.pause(0.05)
            log.append(app.screen.query_one("#chat-log", Static))

            spent: dict[str, float] = {}  # each phase's share of a core this process used

            async def chat(n: int) -> list[float]:
                delays: list[float] = []
                cpu0, wall0 = time.process_time(), time.monotonic()
                for k in range(n):
                    app.screen.action_new_conversation()  # type: ignore[attr-defined]
                    shown.clear()
                    box = app.screen.query_one("#chat-input", Input)
                    box.value = f"message {k}"
                    await pilot.press("enter")
                    t0 = time.monotonic()
                    while len(shown) < sb.DELTAS or not any(
                        t.task_state is not None and t.task_state.terminal
                        for t in app.conversation.turns
                    ):
                        if time.monotonic() - t0 > 60:
                            raise TimeoutError(f"the reply showed {len(shown)} words in 60 s")
                        await asyncio.sleep(0.01)
                    delays += [(seen - said) / 1e6 for said, seen in shown.items()]
                spent[f"{len(spent)}"] = (time.process_time() - cpu0) / (time.monotonic() - wall0)
                return delays

            alone = await chat(messages)
            load = subprocess.Popen(
                [sys.executable, str(Path(sb.__file__)), "--load", hosted]
                + ["--streams", str(others), "--seconds", str(messages * 2.0 + 3)],
                stdout=subprocess.PIPE,
                text=True,
                env=sb._env("load"),
                preexec_fn=sb._die_with_parent,
            )
            if cores is not None:
                os.sched_setaffinity(load.pid, cores[0])
            await asyncio.sleep(2.0)  # the others' streams under way
            loaded = await chat(messages)
            out, _ = await asyncio.to_thread(load.communicate)
            others_seen = json.loads(out.strip().splitlines()[-1])
            for i, (name, ms) in enumerate((("alone", alone), (f"{others} others", loaded))):
                print(
                    _summary(f"word -> Chat, {name}", ms)
                    + f"   (this process: {spent[str(i)]:.0%} of a core)"
                )
            print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
            print(
                f"the {others} other streams meanwhile: {others_seen['streams']} streams, "
                f"{others_seen['failed']} failed, word delay p50 {others_seen['p50_ms']:.1f} ms, "
                f"p99 {others_seen['p99_ms']:.1f} ms   (target: the Chat's p95 <= 100 ms)"
            )
            await pilot.press("ctrl+q")
    finally:
        stub.kill()
        stub.wait()


async def lines_main(rounds: int = 6, frames: int = 300) -> None:
    """See ``--lines``: a RowTable of 10,000 rows in the Tasks mode's columns at 120x40, its lines on
    screen drawn frame after frame (``render_line``, as the compositor asks), one row moving each
    frame and every row's age every fourth; the app's CPU per frame, each round in a new app."""
    from rich.text import Text  # noqa: PLC0415  # this mode only
    from textual.app import App, ComposeResult  # noqa: PLC0415  # this mode only

    from tui.screens.tasks import COLUMNS  # noqa: PLC0415  # this mode only

    tick = [0, 0]  # seconds on the clock, frames drawn

    def cells(key: str) -> list[Any]:
        moved = tick[1] if key == "k5000" else 0
        state = "working" if moved % 2 else "completed"
        age = f"{tick[0]}s"
        return [
            Text(f"● {state}", "green"),
            key,
            "bench",
            "—",
            f"t{key}",
            "ctx",
            age,
            "0.1s",
            "—",
            "—",
        ]

    class TableApp(App[None]):
        def compose(self) -> ComposeResult:
            yield RowTable(cells, id="t")

    per_frame = []
    for _ in range(rounds):
        app = TableApp()
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.query_one(RowTable)
            table.set_columns(COLUMNS, padding=1, flex="request")
            table.set_rows(f"k{i}" for i in range(10_000))
            table.move_cursor(row=5000)
            await pilot.pause()
            height = table.scrollable_content_region.height
            cpu = time.thread_time()
            for frame in range(frames):
                tick[1] += 1
                tick[0] += frame % 4 == 0
                for y in range(height):
                    table.render_line(y)
            per_frame.append((time.thread_time() - cpu) / frames * 1000)
    print(
        f"the table's {height} lines, CPU per frame: median {statistics.median(per_frame):.2f} ms "
        f"({', '.join(f'{ms:.2f}' for ms in per_frame)})"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer"]:
        peer(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    if sys.argv[1:2] == ["--host-child"]:
        asyncio.run(host_child())
        sys.exit(0)
    if sys.argv[1:2] == ["--measure"]:
        measure(sys.argv[2:4], int(sys.argv[4]))
        sys.exit(0)
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--burst-seconds", type=float, default=5.0)
    ap.add_argument("--presses", type=int, default=100)
    ap.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="rounds of the six mode keys (the first: first visits)",
    )
    ap.add_argument(
        "--no-load",
        action="store_true",
        help="no peer sending meanwhile: what the screens cost alone",
    )
    ap.add_argument(
        "--switches",
        type=int,
        default=0,
        help="then Servers -> Tasks this many times, 0.3 s on each (Tasks hidden while tasks move)",
    )
    ap.add_argument(
        "--lines",
        action="store_true",
        help="only the Tasks table's lines: CPU to draw a 120x40 table's, frame after frame",
    )
    ap.add_argument("--hosting", choices=("thread", "loop", "both", "process"), default="thread")
    ap.add_argument("--runs", type=int, default=1, help="runs of each hosting (alternated)")
    ap.add_argument("--served", action="store_true", help="hosted against toolnexus serve")
    ap.add_argument(
        "--soak",
        type=float,
        metavar="SECONDS",
        help="memory over SECONDS of transitions (RSS, objects set aside, garbage they kept)",
    )
    ap.add_argument("--requests", type=int, default=1500, help="with --served: rounds")
    ap.add_argument("--switch-interval", type=float, help="the interpreter's, in ms (default 5)")
    ap.add_argument(
        "--stream",
        action="store_true",
        help="word -> Chat delay, alone and while --others streams are served (issue 53)",
    )
    ap.add_argument("--messages", type=int, default=10, help="with --stream: messages per phase")
    ap.add_argument(
        "--others", type=int, default=64, help="with --stream: streams served meanwhile"
    )
    a = ap.parse_args()
    if a.lines:
        asyncio.run(lines_main())
    elif a.stream:
        asyncio.run(stream_main(a.messages, a.others, a.hosting))
    else:
        asyncio.run(main(a))
