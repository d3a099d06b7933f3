"""A mode key answered in one pass: a built screen shown without Textual's fixed hold, laid out
and drawn once, its footer's keys hidden and shown rather than rebuilt (issue 61 item 9)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytest.importorskip("textual")

from textual._compositor import LayoutUpdate  # noqa: E402
from textual.widgets import Input, Static  # noqa: E402
from textual.widgets._footer import FooterKey  # noqa: E402

from toolnexus.hosting import Workspace  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.widgets.footer import ModeFooter  # noqa: E402

from .test_peers_chat_and_wire import footer_of  # noqa: E402
from .test_pilot import until  # noqa: E402


def settled(app: ToolnexusApp) -> bool:
    """The screen on view has nothing left to lay out or draw."""
    screen = app.screen
    return not (
        screen._layout_required  # noqa: SLF001
        or screen._scroll_required  # noqa: SLF001
        or screen._repaint_required  # noqa: SLF001
        or screen._dirty_widgets  # noqa: SLF001
        or screen._compositor._dirty_regions  # noqa: SLF001
        or app._batch_count  # noqa: SLF001
    )


def on_view(app: ToolnexusApp) -> list[str]:
    """The screen's lines as drawn now."""
    return [strip.text for strip in app.screen._compositor.render_strips()]  # noqa: SLF001


async def built(app: ToolnexusApp, pilot: Any) -> None:
    """Every mode's screen built ahead and mounted (``prebuild``)."""
    stacks = app._screen_stacks  # noqa: SLF001
    await until(
        pilot,
        lambda: set(stacks) == set(app.MODES) and all(s[0].is_mounted for s in stacks.values()),
        timeout=30,
    )


async def test_a_switch_to_a_built_mode_is_laid_out_once_and_drawn_once_it_is_resumed():
    """A built screen has nothing to hide while it is built: no 50 ms hold of every frame
    (Textual's ``delay_update``); the layout the switch does answers what was asked while it was
    hidden (it was done again at the next update); and the first frame of the switch is the whole
    screen after it took its ``ScreenResume`` (it was what the layout changed, then all again).
    What is on view after is what the screen holds. Each part fails before."""
    app = ToolnexusApp(Workspace(), specs=[])
    frames: list[tuple[Any, Any]] = []
    timers: list[str | None] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await built(app, pilot)
        display, set_timer = app._display, app.set_timer  # noqa: SLF001

        def drawn(screen: Any, renderable: Any) -> None:
            frames.append((screen, renderable))
            display(screen, renderable)

        def timer(delay: float, callback: Any = None, *, name: str | None = None, **kw: Any) -> Any:
            timers.append(name)
            return set_timer(delay, callback, name=name, **kw)

        app._display = drawn  # noqa: SLF001
        app.set_timer = timer
        for key, mode in (("2", "tasks"), ("1", "servers"), ("4", "chat"), ("2", "tasks")):
            target = app._screen_stacks[mode][0]  # noqa: SLF001
            if mode == "tasks":  # asked while hidden: a detail pane's new text to lay out
                target.query_one("#timeline", Static).update(f"changed before {key}")
                await pilot.pause(0.05)
            layouts: list[bool] = []
            lay_out = target._refresh_layout  # noqa: SLF001

            def counted(
                *args: Any, _lay_out: Any = lay_out, _layouts: list[bool] = layouts, **kw: Any
            ) -> None:
                _layouts.append(True)
                _lay_out(*args, **kw)

            target._refresh_layout = counted  # noqa: SLF001
            frames.clear()
            timers.clear()
            await pilot.press("escape", key) if mode == "tasks" else await pilot.press(key)
            await until(pilot, lambda: app.screen is target and settled(app))  # noqa: B023
            await pilot.pause(0.2)
            assert "delay_update" not in timers, mode
            assert len(layouts) == 1, (mode, len(layouts))
            own = [r for screen, r in frames if screen is target]
            assert own and isinstance(own[0], LayoutUpdate), (mode, [type(r) for r in own])
            assert settled(app), mode
            del target._refresh_layout  # noqa: SLF001
        assert "changed before 2" in "\n".join(on_view(app))
        await pilot.press("ctrl+q")


async def test_a_first_visit_of_a_mode_not_built_yet_keeps_textuals_hold():
    """A screen built by its first visit (before ``prebuild`` reached it) is hidden while it is
    built, as Textual does: its hold of every frame stays."""
    app = ToolnexusApp(Workspace(), specs=[])
    app.prebuild = False
    timers: list[str | None] = []
    async with app.run_test(size=(120, 40)) as pilot:
        set_timer = app.set_timer

        def timer(delay: float, callback: Any = None, *, name: str | None = None, **kw: Any) -> Any:
            timers.append(name)
            return set_timer(delay, callback, name=name, **kw)

        app.set_timer = timer
        await pilot.press("5")
        await until(pilot, lambda: app.current_mode == "wire" and settled(app))
        assert "delay_update" in timers
        assert any("5 Wire" in line for line in on_view(app))
        await pilot.press("ctrl+q")


async def test_the_chat_footer_hides_and_shows_its_keys_as_the_text_box_takes_them():
    """In Chat the text box takes the printable keys, so the footer drops ``i Type`` and ``?
    Help`` while it has the focus and shows them after Escape: the same footer widgets, hidden and
    shown (a rebuild of every key was ~10 ms of a switch, twice), drawn as a rebuild draws them."""
    app = ToolnexusApp(Workspace(), specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await built(app, pilot)
        await pilot.press("4")
        await until(pilot, lambda: app.current_mode == "chat" and settled(app))
        footer = app.screen.query_one(ModeFooter)
        box = app.screen.query_one("#chat-input", Input)

        def shown() -> list[str]:
            return [
                k.description
                for k in footer.query_children(FooterKey)
                if k.display and not k.has_class("-command-palette")
            ]

        def line() -> str:
            return on_view(app)[footer.region.y]

        await pilot.press("escape")  # the keys: i and ? shown
        await until(pilot, lambda: app.focused is not box and settled(app))
        await pilot.pause(0.1)
        assert "Type" in shown() and "Help" in shown()
        widgets = list(footer.query_children(FooterKey))
        free, typed = line(), ""
        for _ in range(2):
            await pilot.press("i")  # the text box: i and ? typed there
            await until(pilot, lambda: app.focused is box and settled(app))
            await pilot.pause(0.1)
            assert " ".join(shown()) == footer_of(app) and "Type" not in shown()
            typed = line()
            assert "Type" not in typed
            await pilot.press("escape")
            await until(pilot, lambda: app.focused is not box and settled(app))
            await pilot.pause(0.1)
            assert "Type" in shown() and line() == free
            assert list(footer.query_children(FooterKey)) == widgets  # none rebuilt
        await pilot.press("i")
        await until(pilot, lambda: app.focused is box and settled(app))
        footer._made = footer._shown = None  # noqa: SLF001 (a rebuild, to compare with)
        footer.refresh(recompose=True)
        await until(pilot, lambda: list(footer.query_children(FooterKey)) != widgets)
        await until(pilot, lambda: settled(app))
        await pilot.pause(0.1)
        assert list(footer.query_children(FooterKey)) != widgets and line() == typed
        await pilot.press("ctrl+q")


async def test_a_screen_built_ahead_is_laid_out_and_drawn_unseen_and_shows_what_a_first_build_shows():
    """Every mode's screen built ahead is also laid out and drawn, unseen (a first visit was the
    slowest key: its first layout of every widget, every line drawn); nothing of it is displayed
    before its key, and each first visit shows what a screen built by that visit shows."""
    ahead, late = ToolnexusApp(Workspace(), specs=[]), ToolnexusApp(Workspace(), specs=[])
    late.prebuild = False
    shown: dict[str, list[str]] = {}
    async with ahead.run_test(size=(120, 40)) as pilot:
        await built(ahead, pilot)
        await until(pilot, lambda: ahead._warmed == set(ahead.MODES), timeout=30)  # noqa: SLF001
        frames: list[Any] = []
        display = ahead._display  # noqa: SLF001
        ahead._display = lambda screen, r: (frames.append(screen), display(screen, r))[1]  # noqa: SLF001
        stacks = ahead._screen_stacks  # noqa: SLF001
        await pilot.pause(0.3)
        for mode, (screen, *_) in stacks.items():
            if mode != "servers":
                assert screen._compositor.widgets, mode  # noqa: SLF001 (laid out)
                assert screen not in frames, mode  # (nothing of it displayed)
        for key, mode in (("2", "tasks"), ("3", "peers"), ("4", "chat"), ("5", "wire")):
            await pilot.press("escape", key)
            await until(pilot, lambda: ahead.current_mode == mode and settled(ahead))  # noqa: B023
            await pilot.pause(0.2)
            shown[mode] = on_view(ahead)
        await pilot.press("ctrl+q")
    async with late.run_test(size=(120, 40)) as pilot:
        for key, mode in (("2", "tasks"), ("3", "peers"), ("4", "chat"), ("5", "wire")):
            await pilot.press("escape", key)
            await until(pilot, lambda: late.current_mode == mode and settled(late))  # noqa: B023
            await pilot.pause(0.2)
            assert on_view(late) == shown[mode], mode
        await pilot.press("ctrl+q")


async def test_the_hidden_wire_follows_the_log_in_idle_time():
    """The Wire, hidden, set its 2,000 rows and the exchange under its cursor when first shown,
    and laid the screen out three times (its first visit the slowest key left). In idle time (no
    key for a second) its rows follow the log, the exchange under the cursor is drawn and the
    screen laid out and drawn unseen; its first visit shows the log as it is."""
    from toolnexus.hosting import demo_spec  # noqa: PLC0415  # (this test's server alone)

    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()), timeout=30)
        await built(app, pilot)
        url = app.workspace.get("demo-desk").url
        wire = app._screen_stacks["wire"][0]  # noqa: SLF001
        table = wire.query_one("#wire")
        exchange = wire.query_one("#exchange", Static)
        async with httpx.AsyncClient() as http:
            for i in range(12):
                await http.get(url + f"/.well-known/agent-card.json?n={i}")
        await until(pilot, lambda: sum("?n=" in ev.url for ev in app.book.traffic) == 12)
        await until(pilot, lambda: table.row_count == len(app.book.traffic), timeout=15)
        await until(pilot, lambda: "GET " in str(exchange.render()), timeout=15)
        assert app.current_mode == "servers"  # never shown
        await pilot.press("5")
        await until(pilot, lambda: app.screen is wire and settled(app))
        await pilot.pause(0.3)
        assert "?n=11" in "\n".join(on_view(app)) and table.row_count == len(app.book.traffic)
        await pilot.press("ctrl+q")
