"""Benchmark (not a test): does toolnexus-tui stay responsive while a hosted server is busy?

A hosted server with an instant in-process model takes 1,000 tasks, then bursts of about 500
transitions a second (non-blocking sends from a peer in its own thread, as a real peer's would
arrive). Meanwhile, timed from the key press (delivered as the terminal driver delivers it) to the
frame that shows its effect (the frame rendered to terminal text as a real terminal's driver
would, the screen left with nothing to lay out or paint):

- cursor down / up in the Tasks table (``--presses`` of them);
- every mode's key, 1-6 (escape first, as from a text box), ``--rounds`` times: the first round is
  every screen's first visit; and Escape in Chat (the message box lets go of the keys).

Target (issue 34): p95 under 100 ms for every key, first visits included.

Run: python bench/tui_bench.py [--tasks 1000] [--burst-seconds 5] [--presses 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402
from textual._compositor import CompositorUpdate  # noqa: E402

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


_GC: dict[int, list[float]] = {0: [], 1: [], 2: []}  # pauses of the collector while keys are timed
_gc_began = [0.0]


def _gc_watch(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_began[0] = time.perf_counter()
    else:
        _GC[info["generation"]].append((time.perf_counter() - _gc_began[0]) * 1000)


MODE_KEYS = {"1": "servers", "2": "tasks", "3": "peers", "4": "chat", "5": "wire", "6": "mcp"}


def _press(app: ToolnexusApp, key: str) -> float:
    """Deliver ``key`` as the terminal driver does; return when it was pressed."""
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    pressed = time.perf_counter()
    app._driver.send_message(event)  # noqa: SLF001
    return pressed


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
        original = app._display  # noqa: SLF001

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)
            self.shown.append((time.perf_counter(), screen))

        app._display = display  # type: ignore[method-assign]  # noqa: SLF001

    async def until_shown(self, pressed: float, done: Callable[[], bool]) -> float:
        """Milliseconds from ``pressed`` to the last frame before ``done()`` held and the screen settled."""
        while True:
            screen = self.app.screen
            if done() and _settled(screen):
                last = next(
                    (t for t, shown in reversed(self.shown) if shown is screen and t >= pressed),
                    None,
                )
                if last is not None:
                    return (last - pressed) * 1000
            if time.perf_counter() - pressed > 10:
                raise TimeoutError("no frame within 10 s")
            await asyncio.sleep(0.0005)


def _summary(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[max(0, int(len(ms) * 0.95 + 0.5) - 1)]
    return f"{name:<26} n={len(ms):<4} p50 {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms  max {ms[-1]:6.1f} ms"


async def main(
    tasks: int, burst_seconds: float, presses: int, rounds: int, load_on: bool = True
) -> None:
    ws = Workspace()
    app = ToolnexusApp(
        ws, specs=[ServerSpec(name="bench", mcp=False)], tune_gc=True
    )  # as `toolnexus-tui` runs
    async with app.run_test(size=(120, 40)) as pilot:
        frames = Frames(app)
        while not ws.running():
            await pilot.pause(0.05)
        url = ws.get("bench").url
        async with httpx.AsyncClient(timeout=30) as http:
            t0 = time.perf_counter()
            for start in range(0, tasks, 50):
                await asyncio.gather(
                    *(
                        http.post(url + "/", json=_body(i))
                        for i in range(start, min(tasks, start + 50))
                    )
                )
            fill = time.perf_counter() - t0
            while len(app.book.tasks) < tasks:
                await pilot.pause(0.05)
        await pilot.pause(0.3)
        print(f"filled {tasks} tasks in {fill:.2f}s (no mode visited yet but Servers)")

        stop = threading.Event()
        sent = 0

        def burst() -> (
            None
        ):  # a peer in its own thread: ~500 transitions/s (3 a task, ~170 tasks/s)
            nonlocal sent
            i = tasks
            with httpx.Client(timeout=30) as peer:
                while load_on and not stop.is_set():
                    tick = time.perf_counter()
                    for k in range(17):
                        peer.post(url + "/", json=_body(i + k))
                    i += 17
                    sent += 17
                    time.sleep(max(0.0, 0.1 - (time.perf_counter() - tick)))

        load = threading.Thread(target=burst, daemon=True)
        load.start()
        await asyncio.sleep(0.5)
        gc.callbacks.append(_gc_watch)
        began = time.perf_counter()
        timed: dict[str, list[float]] = {}
        for r in range(
            rounds
        ):  # every mode's key; the first round visits each screen for the first time
            for key, mode in (
                ("2", "tasks"),
                ("3", "peers"),
                ("4", "chat"),
                ("5", "wire"),
                ("6", "mcp"),
                ("1", "servers"),
            ):
                if app.focused is not None and app.focused.__class__.__name__ in (
                    "TextBox",
                    "Input",
                ):
                    focused = app.focused
                    pressed = _press(
                        app, "escape"
                    )  # as from a text box: Escape lets go of the keys
                    ms = await frames.until_shown(pressed, lambda: app.focused is not focused)
                    timed.setdefault(f"escape in {app.current_mode}", []).append(ms)
                pressed = _press(app, key)
                ms = await frames.until_shown(pressed, lambda: app.current_mode == mode)
                timed.setdefault(
                    f"{key} {mode} (first visit)"
                    if r == 0 and mode != "servers"
                    else f"{key} {mode}",
                    [],
                ).append(ms)
                await asyncio.sleep(0.1)

        table = app.screen.query_one("#tasks", RowTable) if app.current_mode == "tasks" else None
        if table is None:
            pressed = _press(app, "2")
            await frames.until_shown(pressed, lambda: app.current_mode == "tasks")
            table = app.screen.query_one("#tasks", RowTable)
        await pilot.press("F")  # follow off: the cursor stays where the keys put it
        table.move_cursor(row=table.row_count // 2)
        await pilot.pause()
        for n in range(presses):
            before = table.cursor_row
            pressed = _press(app, "down" if n % 2 else "up")
            ms = await frames.until_shown(pressed, lambda: table.cursor_row != before)
            timed.setdefault("up/down in Tasks", []).append(ms)
            await asyncio.sleep(max(0.0, burst_seconds / presses - (time.perf_counter() - pressed)))
        elapsed = time.perf_counter() - began
        gc.callbacks.remove(_gc_watch)
        stop.set()
        await asyncio.to_thread(load.join)
        rate = sent * 3 / elapsed
        print(
            f"load: {sent} tasks in {elapsed:.1f}s = {rate:.0f} transitions/s; {len(app.book.tasks)} tasks in the book"
        )
        every = [ms for ms_list in timed.values() for ms in ms_list]
        for name, ms_list in timed.items():
            print(_summary(name, ms_list))
        print(_summary("every key", every) + "   (target: p95 < 100 ms)")
        print(
            "collector meanwhile: "
            + ", ".join(
                f"gen{g} {len(p)}x, longest {max(p, default=0):.1f} ms" for g, p in _GC.items()
            )
        )
        await pilot.press("ctrl+q")


if __name__ == "__main__":
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
    a = ap.parse_args()
    asyncio.run(main(a.tasks, a.burst_seconds, a.presses, a.rounds, not a.no_load))
