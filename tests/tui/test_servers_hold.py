"""While the app answers a key, the servers it hosts wait (their thread holds the interpreter
about half the time otherwise: ``toolnexus.hosting.ServersHold``); a key that waits for them is
still answered, and a key answered in a long time lets them serve after a while."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest

pytest.importorskip("textual")

from textual import events  # noqa: E402
from textual.binding import Binding  # noqa: E402

from toolnexus.hosting import ServerSpec  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402

from .test_pilot import until  # noqa: E402
from .test_rowtable import _event  # noqa: E402


class ProbeApp(ToolnexusApp):
    """The app with keys of a test's own: one costs the app's thread a fixed amount of work (as a
    screen's answer does), one awaits the servers, one blocks the app's thread until they answer,
    one keeps it at work until a peer is answered."""

    BINDINGS = [
        *ToolnexusApp.BINDINGS,
        Binding("f6", "work", priority=True),
        Binding("f7", "ask_servers", priority=True),
        Binding("f8", "wait_for_servers", priority=True),
        Binding("f9", "busy", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__(specs=[ServerSpec(name="held", mcp=False)])
        self.results: list[Any] = []
        self.answered = threading.Event()

    def action_work(self) -> None:
        self.results.append(sum(i * i for i in range(200_000)))  # ~15 ms of CPU here
        self.screen.refresh()  # then a frame

    async def action_ask_servers(self) -> None:
        self.results.append(len(await self.workspace.tasks()))

    def action_wait_for_servers(self) -> None:
        hold = self.workspace.servers_hold
        assert hold is not None
        asked = asyncio.run_coroutine_threadsafe(asyncio.sleep(0, "answered"), hold.loop)
        self.results.append(asked.result(30))  # the app's thread blocked on the servers'

    def action_busy(self) -> None:
        url = self.workspace.get("held").url

        def peer() -> None:
            httpx.get(url + "/.well-known/agent-card.json", timeout=30).raise_for_status()
            self.answered.set()

        threading.Thread(target=peer, daemon=True).start()
        give_up, n = time.monotonic() + 30, 0  # (a hold with no end: the test fails, not hangs)
        while not self.answered.is_set() and time.monotonic() < give_up:
            n += 1  # at work all along: never idle
        self.results.append(self.answered.is_set())


async def _hosted(app: ToolnexusApp, pilot: Any) -> asyncio.AbstractEventLoop:
    """The servers' loop, once the hosted server runs."""
    await until(pilot, lambda: bool(app.workspace.running()))
    assert app.workspace.servers_hold is not None
    return app.workspace.servers_hold.loop


async def test_the_servers_thread_runs_no_python_from_a_key_to_its_frame():
    """A coroutine on the servers' loop counts its turns, at work while a key is answered; from
    each key's arrival to the frame drawn after it (mode switches, and a key that costs ~15 ms of
    CPU), it gets none but the one or two already queued when the key came (before the hold,
    thousands in the costly key: the two threads took the interpreter in turns), unless the key
    outlasted the hold's cap (a loaded machine: then the servers run, as they must)."""
    app = ProbeApp()
    async with app.run_test() as pilot:
        loop = await _hosted(app, pilot)
        hold = app.workspace.servers_hold
        assert hold is not None
        for i in range(300):  # something to lay out in Tasks
            app.workspace.events.publish(_event(i))
        await until(pilot, lambda: len(app.book.tasks) == 300)
        answering, inside, turns, stop = [False], [], [0], threading.Event()
        pressed = ("2", "f6", "1", "f6") * 5

        async def turning() -> None:  # at work while a key is answered, else at rest
            while not stop.is_set():
                turns[0] += 1
                if answering[0]:
                    inside[-1] += 1
                await asyncio.sleep(0 if answering[0] else 0.01)

        answer, display = app.on_event, app._display

        keys: list[events.Key] = []
        ends: list[Counter[str]] = []  # how the holds had ended when each key came

        async def on_event(event: events.Event) -> None:
            if (
                isinstance(event, events.Key)
                and event.key in ("1", "2", "f6")
                and event not in keys
            ):
                keys.append(event)  # (the app sees a key twice: as sent, then bubbled up)
                ends.append(Counter(hold.ends))
                inside.append(0)
                answering[0] = True
            await answer(event)

        def shown(screen: Any, update: Any) -> None:
            display(screen, update)
            answering[0] = False

        await pilot.press("2")  # Tasks laid out once: each key below is a switch, not a build
        await pilot.press("1")
        await pilot.pause(0.5)
        app.on_event, app._display = on_event, shown  # type: ignore[method-assign]
        turner = asyncio.run_coroutine_threadsafe(turning(), loop)
        await until(pilot, lambda: turns[0] > 10)
        for key in pressed:
            await pilot.press(key)
            await pilot.pause(0.3)  # (the hold's budget grows back)
        stop.set()
        await asyncio.wrap_future(turner)
        ends.append(Counter(hold.ends))
        assert len(inside) == 20 and turns[0] > sum(inside) + 50, (turns, inside)
        drawn = [  # each key whose hold lasted till its frame, and the turns in it
            (key, n)
            for key, n, was, then in zip(pressed, inside, ends, ends[1:], strict=False)
            if then - was == Counter(released=1)
        ]
        costly = [n for key, n in drawn if key == "f6"]
        assert costly and max(n for _, n in drawn) <= 3, (inside, ends[-1])
        await pilot.press("ctrl+q")


async def test_a_key_that_waits_for_the_servers_is_answered():
    """The servers are held from a key to its frame: a key that awaits them (through the
    workspace) lets them go as it asks; one that blocks the app's thread on them is answered once
    the hold sees that thread idle (Linux; elsewhere at the hold's cap), never a deadlock."""
    app = ProbeApp()
    async with app.run_test() as pilot:
        await _hosted(app, pilot)
        hold = app.workspace.servers_hold
        assert hold is not None
        await pilot.pause(0.5)  # the hold's budget full again after start-up's keys (none)
        ends = dict(hold.ends)
        await pilot.press("f7")
        await until(pilot, lambda: len(app.results) == 1)
        assert hold.ends["cap"] == ends.get("cap", 0) and hold.ends["idle"] == ends.get("idle", 0)
        await pilot.pause(0.5)
        await pilot.press("f8")
        await until(pilot, lambda: len(app.results) == 2)
        assert app.results == [0, "answered"]
        if sys.platform == "linux":  # the holder's idleness seen (schedstat)
            assert hold.ends["idle"] == ends.get("idle", 0) + 1, hold.ends
            assert hold.ends["cap"] == ends.get("cap", 0), hold.ends
        else:
            assert hold.ends["cap"] == ends.get("cap", 0) + 1, hold.ends
        await pilot.press("ctrl+q")


async def test_the_servers_answer_a_peer_while_a_long_key_holds_the_app():
    """A key whose answer keeps the app's thread at work until a peer (another thread) has its
    answer from the hosted server: the hold ends at its cap and the server answers."""
    app = ProbeApp()
    async with app.run_test() as pilot:
        await _hosted(app, pilot)
        hold = app.workspace.servers_hold
        assert hold is not None
        await pilot.pause(0.5)
        caps = hold.ends["cap"]
        await pilot.press("f9")
        await until(pilot, lambda: len(app.results) == 1, timeout=60)
        assert app.results == [True]
        assert hold.ends["cap"] == caps + 1, hold.ends
        await pilot.press("ctrl+q")
