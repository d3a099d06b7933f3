"""Benchmark (not a test): does toolnexus-tui stay responsive while a hosted server is busy?

A hosted server with an instant in-process model takes 1,000 tasks, then bursts of about 500
transitions a second (non-blocking sends from a client on the same loop, as a real peer's would
arrive), while the Tasks screen is open. Meanwhile a key press (cursor down / up in the task
table) is timed from the press until the screen has processed it and repainted. Target: under
100 ms.

Run: python bench/tui_bench.py [--tasks 1000] [--burst-seconds 5] [--presses 100]
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

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402

from toolnexus.hosting import ServerSpec, Workspace  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402


def _body(i: int) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {
        "configuration": {"blocking": False},
        "message": {"kind": "message", "messageId": f"b{i}", "role": "user", "parts": [{"kind": "text", "text": f"t{i}"}]}}}


_GC: dict[int, list[float]] = {0: [], 1: [], 2: []}  # pauses of the collector while keys are timed
_gc_began = [0.0]


def _gc_watch(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_began[0] = time.perf_counter()
    else:
        _GC[info["generation"]].append((time.perf_counter() - _gc_began[0]) * 1000)


async def main(tasks: int, burst_seconds: float, presses: int) -> None:
    ws = Workspace()
    app = ToolnexusApp(ws, specs=[ServerSpec(name="bench", mcp=False)], tune_gc=True)  # as `toolnexus-tui` runs
    async with app.run_test(size=(120, 40)) as pilot:
        while not ws.running():
            await pilot.pause(0.05)
        url = ws.get("bench").url
        await pilot.press("2")
        async with httpx.AsyncClient(timeout=30) as http:
            t0 = time.perf_counter()
            for start in range(0, tasks, 50):
                await asyncio.gather(*(http.post(url + "/", json=_body(i)) for i in range(start, min(tasks, start + 50))))
            fill = time.perf_counter() - t0
            while len(app.book.tasks) < tasks:
                await pilot.pause(0.05)
            await pilot.pause(0.3)
            table = app.screen.query_one("#tasks", RowTable)
            print(f"filled {tasks} tasks in {fill:.2f}s; table rows {table.row_count}")
            await pilot.press("F")  # follow off: the cursor stays where the keys put it
            table.move_cursor(row=table.row_count // 2)
            await pilot.pause()

            stop = threading.Event()
            sent = 0

            def burst() -> None:  # a peer in its own thread: ~500 transitions/s (3 a task, ~170 tasks/s)
                nonlocal sent
                i = tasks
                with httpx.Client(timeout=30) as peer:
                    while not stop.is_set():
                        tick = time.perf_counter()
                        for k in range(17):
                            peer.post(url + "/", json=_body(i + k))
                        i += 17
                        sent += 17
                        time.sleep(max(0.0, 0.1 - (time.perf_counter() - tick)))

            load = threading.Thread(target=burst, daemon=True)
            load.start()
            latencies = []
            gc.callbacks.append(_gc_watch)
            began = time.perf_counter()
            for n in range(presses):
                key = "down" if n % 2 else "up"
                before = table.cursor_row
                t = time.perf_counter()
                event = events.Key(key, None)
                event.set_sender(app)
                app._driver.send_message(event)  # as the terminal driver delivers a key press  # noqa: SLF001
                while table.cursor_row == before:  # the key is handled...
                    await asyncio.sleep(0.0005)
                screen = app.screen
                await asyncio.sleep(0)  # ...and the frame that shows it is composed
                while table in screen._dirty_widgets:  # noqa: SLF001
                    await asyncio.sleep(0.0005)
                latencies.append((time.perf_counter() - t) * 1000)
                await asyncio.sleep(max(0.0, burst_seconds / presses - (time.perf_counter() - t)))
            elapsed = time.perf_counter() - began
            gc.callbacks.remove(_gc_watch)
            stop.set()
            await asyncio.to_thread(load.join)
        latencies.sort()
        rate = sent * 3 / elapsed
        print(f"load: {sent} tasks in {elapsed:.1f}s = {rate:.0f} transitions/s over {len(app.book.tasks)} tasks")
        print(f"key press to screen: p50 {statistics.median(latencies):.1f} ms, "
              f"p95 {latencies[int(len(latencies) * 0.95) - 1]:.1f} ms, max {latencies[-1]:.1f} ms (target < 100 ms)")
        print("collector meanwhile: " + ", ".join(f"gen{g} {len(p)}x, longest {max(p, default=0):.1f} ms"
                                                  for g, p in _GC.items()))
        await pilot.press("ctrl+q")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--burst-seconds", type=float, default=5.0)
    ap.add_argument("--presses", type=int, default=100)
    a = ap.parse_args()
    asyncio.run(main(a.tasks, a.burst_seconds, a.presses))
