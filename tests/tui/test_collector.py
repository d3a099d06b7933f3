"""The collector toolnexus-tui runs itself (``tune_gc``, ``ToolnexusApp._collect``): a full
collection forced by growth never runs inside a key, a loop held by a long handler does not let
garbage pile up, and a Textual without the private parts the collector reads leaves it to Python.
Each in a fresh interpreter: the test process keeps Python's collector (as the other collector test
in test_rowtable does)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("textual")

from ..helpers import ROOT  # noqa: E402


def _run(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    return out.stdout.split()


@pytest.mark.parametrize(("grown", "when"), [(6, "after"), (10**9, "during")])
def test_a_full_collection_forced_by_growth_waits_for_a_moment_between_keys(grown, when):
    """What is set aside grown past FULL_FORCED while keys are pressed (each key's answer slow
    enough for the app's 50 ms look to come before its frame): no full collection starts from a
    key to its frame (at x2.25 one ran there, 1.87 s inside a key), and one runs once keys stop,
    without the usual FULL_IDLE pause (made endless here); grown past FULL_CAP, one runs between
    keys (a key held down, auto-repeating, leaves no pause)."""
    print_ = _run(f"""
        import asyncio, gc, time
        import tui.app as tapp
        from tests.tui.answering import Answering

        tapp.FULL_IDLE = 10**6  # only the forced collection runs
        GROWN, WHEN = {grown}, "{when}"

        async def main():
            app = tapp.ToolnexusApp(specs=[], tune_gc=True)
            async with app.run_test() as pilot:
                while gc.isenabled():  # the app's collector taken
                    await pilot.pause(0.05)
                inside, full = [], []

                def grow():
                    app._set_aside, app._set_aside_since = 1, GROWN - 1

                def slow():  # the app's look at the collector comes before the frame
                    time.sleep(0.12)

                answering = Answering(app, before=grow, after=slow)

                def watch(phase, info):
                    if phase == "start" and info["generation"] == 2:
                        full.append(time.monotonic())
                        if answering.now:
                            inside.append(2)

                gc.callbacks.append(watch)
                for i in range(30):
                    await pilot.press("2" if i % 2 else "1")
                    await pilot.pause(0.02)
                stopped = time.monotonic()
                during = [t for t in full if t < stopped]
                for _ in range(600):  # keys stopped: the forced collection (FULL_IDLE endless)
                    if full and full[-1] > stopped:
                        break
                    await pilot.pause(0.05)
                gc.callbacks.remove(watch)
                print(inside, bool(during if WHEN == "during" else full and full[-1] > stopped))
                await pilot.press("ctrl+q")

        asyncio.run(main())
    """)
    assert print_ == ["[]", "True"]


def test_a_loop_held_by_a_long_handler_lets_python_collect_meanwhile():
    """The app's loop held 3 s (a long handler) while another thread makes cyclic garbage, as the
    hosted servers' does: the app cannot look at the collector then, and with Python's automatic
    collection off nothing collected (150,000-300,000 objects waiting at the end); now a watch
    thread collects the young once HELD_BACK thresholds' worth wait (made 2 here), and Python's
    automatic collection stays off."""
    print_ = _run("""
        import asyncio, gc, sys, threading, time
        import tui.app as tapp
        from toolnexus.http.server import GC_THRESHOLD

        tapp.HELD_BACK = 2  # the watch collects past 40,000 young (200,000 in the app)

        class Litter:
            pass

        async def main():
            app = tapp.ToolnexusApp(specs=[], tune_gc=True)
            async with app.run_test() as pilot:
                while gc.isenabled():
                    await pilot.pause(0.05)
                stop, seen = threading.Event(), []

                def litter():  # ~100,000 objects a second, each in a cycle
                    while not stop.is_set():
                        for _ in range(500):
                            one = Litter()
                            one.me = one
                        time.sleep(0.005)

                def held():  # a handler that holds the loop
                    time.sleep(3.0)
                    seen.append(gc.get_count()[0])

                thread = threading.Thread(target=litter)
                thread.start()
                app.call_later(held)
                while not seen:
                    await pilot.pause(0.05)
                await pilot.pause(0.3)
                taken_back = not gc.isenabled()
                stop.set()
                thread.join()
                print("young at the end of the hold:", seen[0], file=sys.stderr)
                print(seen[0] < 5 * GC_THRESHOLD[0], taken_back)
                await pilot.press("ctrl+q")

        asyncio.run(main())
    """)
    assert print_ == ["True", "True"]


def test_a_textual_without_the_parts_the_collector_reads_leaves_it_to_python():
    """Textual renames what the collector reads (``App._display``, a screen's flags): the app
    runs as before, Python's automatic collection stays on (no AttributeError every 50 ms, no
    collector that waits for a frame it is never told of), and keys are answered."""
    print_ = _run("""
        import asyncio, gc, logging, weakref
        import tui.app as tapp

        class Cycle:
            pass

        tapp.TEXTUAL_PRIVATE = {"app": ("_display_renamed",), "screen": tapp.TEXTUAL_PRIVATE["screen"]}
        said = []
        logging.getLogger("toolnexus.tui").addHandler(logging.Handler())
        logging.getLogger("toolnexus.tui").handlers[-1].emit = lambda r: said.append(r.getMessage())

        async def main():
            app = tapp.ToolnexusApp(specs=[], tune_gc=True)
            app.strict_handlers = True
            async with app.run_test() as pilot:
                for _ in range(40):
                    if said:
                        break
                    await pilot.pause(0.05)
                await pilot.press("2")
                await pilot.pause(0.3)
                one = Cycle()
                one.me = one
                gone = weakref.ref(one)
                del one
                for _ in range(400):  # Python's own collector finds it, garbage piling up
                    if gone() is None:
                        break
                    for _ in range(2000):
                        litter = Cycle()
                        litter.me = litter
                    await pilot.pause(0.01)
                print(gc.isenabled(), type(app.screen).__name__, gone() is None,
                      said == ["toolnexus-tui: Python runs the collector "
                               "(Textual has no ['App._display_renamed'])"])
                await pilot.press("ctrl+q")

        asyncio.run(main())
    """)
    assert print_ == ["True", "TasksScreen", "True", "True"]
