"""The toolnexus-tui application: modes, the bus pump, the command palette, start and quit."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.signal import Signal
from textual.widget import AwaitMount, Widget
from textual.widgets import DataTable, HelpPanel

from toolnexus._fs import write_whole
from toolnexus.client.conversation import Conversation
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.debug.cassette import save
from toolnexus.display import printable
from toolnexus.events import (
    RemoteCallEvent,
    ServerEvent,
    TaskEvent,
    TextEvent,
    ToolCallEvent,
    TrafficEvent,
)
from toolnexus.hosting import HostedServer, ServerSpec, Workspace, demo_spec
from toolnexus.http.server import GC_THRESHOLD, listening_socket, serving_gc
from toolnexus.monitor import TaskBook

from .clipboard import clipboard_doubt
from .peers import Peer, PeerBook
from .saved import ServerBook
from .screens.base import Desk
from .screens.chat import ChatScreen
from .screens.export import ExportPrompt, default_export_dir
from .screens.mcp import MCPScreen
from .screens.peers import PeersScreen
from .screens.server_form import ServerForm
from .screens.servers import ServersScreen
from .screens.tasks import TasksScreen
from .screens.wire import WireScreen
from .web import serve_web
from .widgets.footer import KeysPanel
from .widgets.rowtable import RowTable

__all__ = ["ToolnexusApp", "main"]

log = logging.getLogger("toolnexus.tui")

FLUSH_EVERY = 0.25
"""Seconds over which task updates are gathered into one redraw (bursts cost one redraw)."""
COLLECT_EVERY = 0.05
"""Seconds between two looks of the app at the collector, which it runs itself (``tune_gc``: see
:meth:`ToolnexusApp._collect`)."""
MIDDLE_EVERY = 1
"""Young collections before one that takes the middle generation too and sets what survived aside."""
HELD_BACK = 10
"""A collection waits for a key's frame while fewer than this many young thresholds' worth of
objects (``GC_THRESHOLD``) are waiting: past that, memory first."""
FULL_IDLE = 3.0
"""Seconds without a key before a full collection (everything set aside walked again: ~1 s at
10,000 tasks) is run, once what is set aside has grown by FULL_GROWTH since the last one."""
FULL_GROWTH = 1.5
"""What is set aside may grow by this factor before a full collection looks through it again for
cycles that died there."""
FULL_FORCED = 4.0
"""Grown by this factor, a full collection does not wait for FULL_IDLE seconds without a key, only
for FORCED_IDLE: between two keys, never inside one (a key queued or not yet drawn), so that
memory stays bounded for a user who never pauses 3 s (at x2.25, forced inside a key, one took
1.87 s there: ``bench/README.md``)."""
FORCED_IDLE = 0.5
"""Seconds without a key before a full collection forced by FULL_FORCED runs."""
FULL_CAP = FULL_FORCED**2
"""Grown by this factor, a full collection waits for no moment without a key, only for the key
under way to be drawn: a key held down (auto-repeat) never leaves FORCED_IDLE free, and what is
set aside would grow for as long as it is held."""
STALLED = 0.3
"""Seconds without the app's look at the collector (its loop held: a long handler) after which a
watch thread collects the young itself once HELD_BACK thresholds' worth wait (as the app would,
keys or not): the hosted servers' thread keeps making garbage meanwhile, and with Python's
automatic collection off nothing else would collect it."""
TEXTUAL_PRIVATE = {
    "app": ("_display",),
    "screen": (
        "_layout_required",
        "_scroll_required",
        "_repaint_required",
        "_recompose_required",
        "_dirty_widgets",
    ),
}
"""What the collector and the hosted servers' hold read of Textual's insides (no public hook says a
frame was drawn, or that a screen is settled): ``App._display`` draws a frame (overridden here to
note it), the screen's flags say something is left to lay out or paint. A Textual without one of
them leaves the collector to Python, as ``toolnexus serve`` does
(:meth:`ToolnexusApp._take_the_collector`), and a hold on the servers to end when the app's thread
idles or at its cap (``hosting.ServersHold``)."""
PREBUILD_EVERY = 0.3
"""Seconds between building one mode's screen ahead and the next, so that no first visit to a
mode builds its screen while the user waits (``bench/tui_bench.py``); each waits for a second
without a key press (a build holds the loop up to ~130 ms here)."""
PREBUILD_IDLE = 1.0
"""Seconds without a key press before work that holds the loop (a screen built ahead, the book
set aside from the collector) is done: a key is never answered behind it."""
COPY_SHOWN = 100
"""Characters of a copy's first line that its toast shows."""
SIGN_IN_SHOWN = 600.0
"""Seconds an OAuth sign-in's notification stays (a device code lives minutes)."""
KEYS_WAIT = 2.0
"""Seconds at most the keys typed after a key that opened a screen wait for it to be mounted
(:meth:`ToolnexusApp._hand_keys_over`): past that they go to it as it is."""
SAVED_WATCH = 1.0
"""Seconds between two looks at the saved servers file, for what another toolnexus-tui changed
(a ``stat``; the file is read only when it changed)."""


def _as_text(line: str) -> str:
    """A palette line as plain text: the palette reads its lines as markup, and they carry peers'
    card names and URLs, which must show as sent (control characters made visible)."""
    return escape(printable(line, 300))


class ToolnexusCommands(Provider):
    """Every action of the app in the command palette."""

    async def discover(self) -> Hits:
        """Shown before anything is typed: every command (Textual shows only its own otherwise)."""
        app = self.app
        assert isinstance(app, ToolnexusApp)
        for title, help_text, callback in app.palette_commands():
            yield DiscoveryHit(_as_text(title), callback, help=_as_text(help_text))

    async def search(self, query: str) -> Hits:
        app = self.app
        assert isinstance(app, ToolnexusApp)
        matcher = self.matcher(query)
        for title, help_text, callback in app.palette_commands():
            shown = _as_text(title)
            score = matcher.match(shown)
            if score > 0:
                yield Hit(score, matcher.highlight(shown), callback, help=_as_text(help_text))


class ToolnexusApp(App[None]):
    """Host servers and watch every task's lifecycle live.

    Args:
        workspace: the hosted servers (by default a new one whose servers run on a thread of their
            own, so that neither the screen nor the servers wait for the other).
        specs: servers to start at launch (the demo by default; pass ``[]`` for none).
        now: the clock (injected by tests for fixed ages on screen).
        export_dir: where exported tasks are written.
    """

    TITLE = "toolnexus"
    CSS_PATH = Path(__file__).parent / "toolnexus.tcss"
    COMMANDS = App.COMMANDS | {ToolnexusCommands}
    MODES = {
        "servers": ServersScreen,
        "tasks": TasksScreen,
        "peers": PeersScreen,
        "chat": ChatScreen,
        "wire": WireScreen,
        "mcp": MCPScreen,
    }
    DEFAULT_MODE = "servers"
    BINDINGS = [
        Binding(
            "1", "switch_mode('servers')", "Servers", id="mode-servers", show=False
        ),  # the mode bar shows 1-6
        Binding("2", "switch_mode('tasks')", "Tasks", id="mode-tasks", show=False),
        Binding("3", "switch_mode('peers')", "Peers", id="mode-peers", show=False),
        Binding("4", "switch_mode('chat')", "Chat", id="mode-chat", show=False),
        Binding("5", "switch_mode('wire')", "Wire", id="mode-wire", show=False),
        Binding("6", "switch_mode('mcp')", "MCP", id="mode-mcp", show=False),
        # from every screen, a text box included (where 1-6 type): alt+digit, also what a terminal
        # or the browser sends for escape then a digit typed quickly (ESC 2), which Textual reads
        # as the character a Mac's Option+digit types (™ for 2): those are bound too
        *(
            Binding(
                f"alt+{n},{named}",
                f"switch_mode('{mode}')",
                f"{label} (from a text box too)",
                show=False,
                priority=True,
                key_display=f"alt+{n}",  # both keys shown as one, never as the sign's name
                id=f"mode-alt-{mode}",
            )
            for n, named, mode, label in (
                (1, "inverted_exclamation_mark", "servers", "Servers"),
                (2, "trade_mark_sign", "tasks", "Tasks"),
                (3, "pound_sign", "peers", "Peers"),
                (4, "cent_sign", "chat", "Chat"),
                (5, "infinity", "wire", "Wire"),
                (6, "section_sign", "mcp", "MCP"),
            )
        ),
        Binding("question_mark", "toggle_help", "Help", id="help"),
        # only while the panel is open
        Binding("escape", "close_help", "Close this help", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
    ]

    def notify(self, message: str, *, title: str = "", markup: bool = False, **kwargs: Any) -> None:
        """Notifications carry peers' text (errors, names): never parsed as markup, always printable."""
        super().notify(
            printable(message, 2000), title=printable(title, 200), markup=False, **kwargs
        )

    def action_help_quit(self) -> None:
        """ctrl+c (which copies in a text box) says how to quit, in words: Textual's own says it in
        markup, which :meth:`notify` shows as it is (``Press [b]ctrl+q[/b] to quit``)."""
        keys = [
            k for k, b in self.active_bindings.items() if b.binding.action in ("quit", "app.quit")
        ]
        self.notify(f"Press {keys[0] if keys else 'ctrl+q'} to quit", title="Do you want to quit?")

    def __init__(
        self,
        workspace: Workspace | None = None,
        specs: Iterable[ServerSpec] | None = None,
        *,
        now: Callable[[], datetime] | None = None,
        export_dir: str | Path | None = None,
        peers: PeerBook | None = None,
        servers: ServerBook | None = None,
        tune_gc: bool = False,
    ) -> None:
        super().__init__()
        self.tune_gc = tune_gc
        """Run this process's garbage collector from the app (``main`` does: the process is the
        app's). See :meth:`_collect`."""
        self._set_aside = 0  # objects set aside from the collector after its last full collection
        self._set_aside_since = (
            0  # and since (``gc.get_freeze_count`` walks them all: not per look)
        )
        self._warmed: set[str] = set()  # the modes whose screen is built and laid out ahead
        self.workspace = workspace or Workspace(
            thread=True
        )  # the servers never wait for the screen
        self.book = TaskBook()
        self.start_specs = list(specs) if specs is not None else [demo_spec()]
        self._edits_start = specs is None
        """Started as plain ``toolnexus-tui`` (the demo, no spec given): a server of the same name
        saved by an edit (``e``) starts in its place, as edited; a spec given is started as given."""
        for spec in self.start_specs:  # on the first screen as starting, never "no servers yet"
            if spec.name not in self.workspace.servers:
                self.workspace.starting(spec)
        self.now = now or (lambda: datetime.now(UTC))
        self.export_dir = Path(export_dir) if export_dir else default_export_dir()
        self.last_copy: tuple[str, str] | None = None
        """What was copied last, and what it was (``"curl command"``): for "Save the last copy to a file"."""
        self.tasks_changed: Signal[frozenset[str]] = Signal(self, "tasks-changed")
        self.servers_changed: Signal[None] = Signal(self, "servers-changed")
        self.calls_changed: Signal[None] = Signal(self, "calls-changed")
        self.peers_changed: Signal[None] = Signal(self, "peers-changed")
        self.traffic_changed: Signal[None] = Signal(self, "traffic-changed")
        self.peer_book = peers or PeerBook()
        self.server_book = servers or ServerBook(self.peer_book.folder)
        self.chat_peer: str | None = None
        self.conversation = Conversation()
        self.conversations: dict[str, Conversation] = {}  # the others, by peer URL
        self._dirty: set[str] = set()
        self._flush_timer: Any = None
        self.selected_server: str | None = None
        self.handler_errors: list[BaseException] = []
        self._tn_up = False
        self.webhook: WebhookReceiver | None = None
        """Where peers deliver the push notifications asked for in Chat (started on first use)."""

    strict_handlers = False
    """True: an exception in a handler ends the app, as Textual does by default (the tests set it,
    so that a bug cannot hide behind a notification)."""

    def _handle_exception(self, error: Exception) -> None:
        """An exception in a handler or worker, once the app is up, is shown where the user looks
        (a notification naming it) and logged; the app, and the servers it hosts, stay up."""
        if self.strict_handlers or not self._tn_up or not self.is_running:
            super()._handle_exception(error)
            return
        cause = getattr(error, "error", None) or error  # a failed worker wraps the exception
        self.handler_errors.append(cause)
        log.error("toolnexus-tui: a handler failed", exc_info=cause)
        self.notify(
            f"{type(cause).__name__}: {cause}",
            title="That action failed (the app keeps running)",
            severity="error",
            timeout=10,
        )

    async def on_mount(self) -> None:
        self.peer_book.load()
        self.pump()
        saved = self.server_book.load()
        edits = {spec.name: spec for spec in saved} if self._edits_start else {}
        for (
            spec
        ) in self.start_specs:  # the demo (or --spec) on the port it had last time, when free
            edited = edits.get(spec.name)  # the demo as edited, on its own port all the same
            if self.server_book.served_by(spec.name) is not None:  # another window serves it
                edited = None  # as edited, its store with it: here as at first, not twice
            self.start_server(replace(edited, port=0) if edited else spec, at_launch=True)
        named = {spec.name for spec in self.start_specs}
        for spec in saved:  # the servers created last time, on the ports they had
            if spec.name not in named:
                self.start_server(spec)
        for peer in list(self.peer_book.peers.values()):
            if peer.client is None:
                self.connect_peer(peer)
        self.servers_changed.subscribe(self, lambda _: self._sync_hosted_peers())
        self.servers_changed.subscribe(self, lambda _: self._say_serving())
        self.set_interval(SAVED_WATCH, self._saved_changed)
        self.set_interval(SAVED_WATCH, self._saved_peers_changed)
        if self.tune_gc:  # after the first screen (a full collection first)
            self.call_after_refresh(self._take_the_collector)
        if self.prebuild:
            self.set_timer(PREBUILD_IDLE, self._prebuild)
        self._tn_up = True

    prebuild = True
    """Build every mode's screen ahead, unseen, one every PREBUILD_EVERY seconds from a second
    after launch, then lay each out and draw it unseen, one a step, each while no key has been
    pressed for PREBUILD_IDLE seconds."""

    def _prebuild(self) -> None:
        """Build the next mode's screen not built yet (composed and mounted, not shown); once
        all are, lay out and draw the next one not shown yet, unseen (:meth:`warm`): a first
        visit then costs what a switch back costs. Its ``on_screen_resume`` runs then with
        ``is_current`` false; the screens act only when shown."""
        if self._tn_closing or not self.is_running:  # shutting down
            return
        if not self.keys_idle():  # the user is at the keys: later
            self.set_timer(PREBUILD_EVERY, self._prebuild)
            return
        for mode in self.MODES:
            if mode not in self._screen_stacks:  # noqa: SLF001 (Textual builds a mode's screen here)
                self._init_mode(mode)  # noqa: SLF001 (one screen: up to ~130 ms of the loop)
                # Textual re-read all CSS for it just now, then marks only the current screen's
                # widgets as styled by it: the first visit would re-read it all again (~100 ms)
                self._screen_stacks[mode][0]._css_update_count = self._css_update_count  # noqa: SLF001
                self.set_timer(PREBUILD_EVERY, self._prebuild)
                return
        for mode, (screen, *_) in self._screen_stacks.items():  # noqa: SLF001 (all built: warmed)
            if mode not in self._warmed:
                if not screen.is_mounted:  # mounting still: the next step
                    self.set_timer(PREBUILD_EVERY, self._prebuild)
                    return
                self._warmed.add(mode)
                if screen is not self.screen:
                    self.warm(screen)
                    self.set_timer(PREBUILD_EVERY, self._prebuild)
                    return

    def keys_idle(self) -> bool:
        """No key pressed for PREBUILD_IDLE seconds: work that holds the loop may be done."""
        return time.monotonic() - self._last_key >= PREBUILD_IDLE

    def warm(self, screen: Screen[Any]) -> None:
        """Lay out and draw a screen built ahead, unseen (nothing displayed): what it shows first
        is then ready, its widgets' sizes known and their lines drawn, so that its first visit
        lays out and draws only what changed since (the first visits were the slowest keys:
        30-46 ms of CPU, a first layout of every widget and every line drawn, ``bench/
        tui_bench.py``). The Wire does it again as its hidden rows follow the log. Not once the
        app closes: its screens popped, Textual's ``screen`` raises (a Wire timer due then did)."""
        if self._tn_closing or not screen.is_mounted or screen.is_current:
            return
        screen._refresh_layout(self.size)  # noqa: SLF001 (Textual's layout; unseen: no frame)
        screen._compositor.render_update(full=True)  # noqa: SLF001 (each widget's lines, kept)

    _last_key = 0.0

    def switch_mode(self, mode: str) -> AwaitMount:
        """Textual's switch, less its fixed wait when the mode's screen is built: Textual holds
        every frame for 50 ms (``delay_update``) to hide a screen being built; a screen built
        ahead (:meth:`_prebuild`) and mounted has nothing to hide, so its frames are held only
        until it has taken its ``ScreenResume`` (what the screen does when shown is in the first
        frame, as before). A quiet switch to Tasks took 105 ms of wall for 50 of CPU
        (``bench/tui_bench.py``)."""
        stack = self._screen_stacks.get(mode)  # noqa: SLF001 (Textual's screens by mode)
        self._switching_built = bool(stack) and stack[-1].is_mounted
        try:
            return super().switch_mode(mode)
        finally:
            self._switching_built = False
            # held here (delay_update): after the ScreenResume it posted, the frames go on
            if self.holding_frames and not self.screen.call_later(self._switched):
                self._switched()

    _switching_built = False

    holding_frames = False
    """A switch to a built screen holds its frames till the screen is resumed (:meth:`switch_mode`):
    its layout draws nothing meanwhile, the whole screen is drawn once after (``ModeScreen``)."""

    def delay_update(self, delay: float = 0.05) -> None:
        if self._switching_built:  # a built screen: held only until it is resumed (switch_mode)
            self._begin_batch()
            self.holding_frames = True
        else:
            super().delay_update(delay)

    def _switched(self) -> None:
        """The switch to a built screen ends its hold on frames, as ``delay_update`` does."""
        self.holding_frames = False
        self._end_batch()
        if not self._batch_count:
            self.screen.refresh()

    _tn_closing = False  # (Textual has a `_closing` of its own)

    def exit(
        self,
        result: None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        """Textual's exit, once no screen or widget is mounting (:meth:`_mounted`; no build ahead
        starts from here on). From ``exit`` on, Textual mounts nothing: a ``compose`` after it
        gives no children (``Widget.mount_all``), and a widget composing then runs its
        ``on_mount`` over panes never made. The Tasks screen built ahead as the app quit failed so
        (NoMatches '#timeline', Textual's ``ContentTabs``: "No Tab with id", at the end of tests
        under load), as would a mode's first visit or a form pushed just before a quit."""
        self._tn_closing = True
        if self._exit_after_mounts is not None and not self._exit_after_mounts.done():
            return  # a second quit (q twice) while the first waits: the first one ends it
        if not self._mounting():
            super().exit(result, return_code, message)
            return

        async def once_mounted() -> None:
            await self._mounted()
            super(ToolnexusApp, self).exit(result, return_code, message)

        self._exit_after_mounts = asyncio.ensure_future(once_mounted())

    _exit_after_mounts: asyncio.Future[None] | None = None
    """The exit waiting for the mounts (held here: asyncio keeps only a weak reference to a task)."""

    async def _shutdown(self) -> None:
        """A close without an exit (``run_test``'s end) waits for what is mounting too: Textual's
        ``_shutdown`` marks the app not running first thing, and a widget registered after that
        is never started (not composed, its mount not waited for)."""
        self._tn_closing = True
        await self._mounted()
        # Textual removes a screen's widgets before it closes the screen, and cancels a node's
        # workers only as the node closes: a worker awaiting its server then (the MCP listing)
        # resumed among removed widgets (NoMatches, a traceback at the exit). They end first.
        self.workers.cancel_all()
        if self.tune_gc:  # nothing runs the collector after the app: Python's rule again
            gc.enable()
        await super()._shutdown()

    def _mounting(self) -> list[Widget]:
        """The screens of every mode (and those pushed on them) and their widgets not mounted yet."""
        return [
            widget
            for stack in self._screen_stacks.values()  # noqa: SLF001 (Textual's screens by mode)
            for screen in stack
            for widget in screen.walk_children(Widget, with_self=True)
            if not widget.is_mounted
        ]

    async def _mounted(self) -> None:
        """Until nothing is mounting (:meth:`_mounting`), 5 s at most."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                while mounting := self._mounting():
                    await asyncio.gather(*(w._mounted_event.wait() for w in mounting))  # noqa: SLF001

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self._last_key, self._shown_since_key = time.monotonic(), False
            self.workspace.hold_servers()  # the hosted servers wait till it is shown
            if not event.is_forwarded:  # from the terminal
                if self._held_keys is not None:  # after a key whose screen or box is not ready
                    self._held_keys.append(event)
                    return
                if await self._command(event):
                    return
        await super().on_event(event)

    _held_keys: deque[events.Key] | None = None
    """The keys typed after a key answered by :meth:`_command`, until what it opened or focused
    takes them (:meth:`_hand_keys_over`); None: none held."""
    _held_since = 0.0

    async def _command(self, key: events.Key) -> bool:
        """Answer ``key`` here, at once, when it is a key of the focused list (or of the screen,
        nothing focused) and a binding takes it; the keys typed after it then wait for what it
        opened or focused (:meth:`_hand_keys_over`). Textual hands a key to the focused widget and
        takes the next from the terminal before that one is answered: ``n`` then ``desk-3`` typed
        at once sent ``d`` to the Servers list behind the form ``n`` was opening (delete), and the
        rest to the form before its name box had focus (lost), and in Peers ``n`` then a URL gave
        ``h`` to the peers list (the Auth tab). Keys of a text box (a widget that reads keys
        itself) take Textual's way."""
        focused = self.focused
        if (
            not self.app_focus
            or self.screen.maximized is not None
            or not (focused is None or isinstance(focused, (DataTable, RowTable)))
        ):
            return False
        if not (
            await self._check_bindings(key.key, priority=True)  # Textual's own order
            or await self._check_bindings(key.key)
        ):
            return False
        if self._held_keys is None:
            self._held_keys, self._held_since = deque(), time.monotonic()
            self.call_later(self._hand_keys_over)  # after what the action asked of the loop
        return True

    async def _hand_keys_over(self) -> None:
        """The keys held after a command, in order, to what it opened (once mounted, at most
        KEYS_WAIT seconds) or focused; one that is a command itself holds the rest again."""
        held = self._held_keys
        if held is None:
            return
        if not self.screen.is_mounted and time.monotonic() - self._held_since < KEYS_WAIT:
            self.set_timer(0.01, self._hand_keys_over)
            return
        self._held_keys = None
        while held:
            key = held.popleft()
            if await self._command(key):
                assert self._held_keys is not None
                self._held_keys.extend(held)
                return
            await super().on_event(key)

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        super()._display(screen, renderable)
        self._shown_since_key = True
        if self.workspace.servers_hold is not None and self.workspace.servers_hold.asked:
            # once this frame's pass has cleared the screen's flags (after this call)
            asyncio.get_running_loop().call_soon(self._key_shown)

    def _key_shown(self) -> None:
        """The servers held for a key (:meth:`on_event`) run again once it is shown."""
        if not self._answering():
            self.workspace.release_servers()

    _shown_since_key = True
    """A frame was drawn since the last key (see :meth:`_answering`)."""

    def _answering(self) -> bool:
        """A key is being answered: pressed less than PREBUILD_IDLE seconds ago, and no frame drawn
        since, or its screen not settled (something left to lay out or paint: a switch lays the
        new screen out after the frame it was pressed in)."""
        if time.monotonic() - self._last_key >= PREBUILD_IDLE:
            return False
        screen = self.screen
        return not self._shown_since_key or any(  # Textual's own test of a settled screen
            getattr(screen, flag, False) for flag in TEXTUAL_PRIVATE["screen"]
        )

    # -- the bus pump: the only reader of library events ------------------------------------------
    @work(exclusive=True, group="bus-pump")
    async def pump(self) -> None:
        async for event in self.workspace.events.subscribe(replay=True, max_queue=5000):
            if isinstance(event, TaskEvent):
                self.book.apply(event)
                self._changed(event.task_id)
            elif isinstance(event, TextEvent):  # a reply as the model says it
                if self.book.words(event) is not None:
                    self._changed(event.task_id)
            elif isinstance(
                event, RemoteCallEvent
            ):  # a hosted task's call to another agent: part of its view
                self.book.remote(event)
                self._changed(event.task_id)
            elif isinstance(event, ToolCallEvent):
                self.book.calls.append(event)
                self.calls_changed.publish(None)
            elif isinstance(event, TrafficEvent):
                self.book.traffic.append(event)
                self.traffic_changed.publish(None)
            elif isinstance(event, ServerEvent):
                if event.state == "started":
                    self._show_kept(event.server)
                self.servers_changed.publish(None)

    @work(group="kept-tasks")
    async def _show_kept(self, server: str) -> None:
        """What a hosted server's store kept from before (a file or PostgreSQL store, a relaunch)
        into the book and its counts, a page at a time (``Workspace.kept``)."""
        async for tasks in self.workspace.kept(server):
            for task_id in self.book.keep(tasks, server):
                self._changed(task_id)

    def _changed(self, task_id: str) -> None:
        """A task's view moved: redrawn with the others of the next flush."""
        self._dirty.add(task_id)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_EVERY, self._flush_tasks)

    def _flush_tasks(self) -> None:
        self._flush_timer = None
        if self._dirty:
            dirty, self._dirty = frozenset(self._dirty), set()
            self.tasks_changed.publish(dirty)
            self.servers_changed.publish(None)  # counts per server moved

    def _take_the_collector(self) -> None:
        """The collector as ``toolnexus serve`` sets it (start-up set aside, the young collected
        after 20,000 new objects), but run by the app between keys rather than by whichever thread
        passes the threshold. Left to itself it ran inside 9-18 of 92 keys (``bench/tui_bench.py``),
        in the app's thread or in the hosted servers' (holding the interpreter meanwhile), and its
        middle collections walked the survivors of 10-20 young ones (100,000 objects at 10,000
        tasks, the book growing: 100-160 ms of CPU)."""
        serving_gc(collect=False)  # its own collector, below
        missing = [f"App.{name}" for name in TEXTUAL_PRIVATE["app"] if not hasattr(App, name)]
        missing += [
            f"Screen.{name}" for name in TEXTUAL_PRIVATE["screen"] if not hasattr(self.screen, name)
        ]
        if missing:  # a Textual that renamed them: Python's collector, as toolnexus serve has it
            log.warning("toolnexus-tui: Python runs the collector (Textual has no %s)", missing)
            return
        gc.disable()
        self._set_aside = gc.get_freeze_count()
        self._looked = time.monotonic()
        self.set_interval(COLLECT_EVERY, self._collect)
        threading.Thread(target=self._watch_the_collector, name="tn-gc-watch", daemon=True).start()

    _looked = 0.0
    """When the app last looked at the collector (:meth:`_collect`)."""

    def _watch_the_collector(self) -> None:
        """While the app's loop is held past STALLED (a long handler), the young are collected
        here once HELD_BACK thresholds' worth wait: the hosted servers' thread keeps making
        garbage meanwhile, and nothing else would collect it (a loop only slow, the machine
        loaded, looks before that much waits)."""
        while not self._tn_closing:
            time.sleep(STALLED / 3)
            stalled = time.monotonic() - self._looked > STALLED
            if stalled and gc.get_count()[0] >= HELD_BACK * GC_THRESHOLD[0] and not gc.isenabled():
                gc.collect(0)

    def _collect(self) -> None:
        """Every COLLECT_EVERY seconds: once GC_THRESHOLD's young objects are waiting, collect them,
        unless a key is waiting or not yet shown (then up to HELD_BACK thresholds' worth, or
        PREBUILD_IDLE seconds). Every other collection (MIDDLE_EVERY) takes the middle generation
        too and sets what survived aside (``gc.freeze``): what outlived a collection and is still
        alive at the next (the book's tasks, kept for the app's life, half of what is young here)
        is never walked again, so a collection walks only what came since the one before.

        What is set aside and later dies is freed by its reference count, unless it is in a cycle
        (Textual's rendered lines are: each caches itself): those are found by a full collection,
        everything set aside walked again, run after FULL_IDLE seconds without a key once what is
        set aside grew by FULL_GROWTH since the last one (``bench/tui_bench.py --soak``), or
        after FORCED_IDLE seconds once it grew by FULL_FORCED, between two keys past FULL_CAP;
        never while a key waits."""
        self._looked = time.monotonic()
        young, middle, _ = gc.get_count()
        idle = self._looked - self._last_key
        waiting = self.message_queue_size or self._answering()  # (a key queued goes first)
        grown = 1 + self._set_aside_since / max(1, self._set_aside)
        quiet = FULL_IDLE if grown < FULL_FORCED else FORCED_IDLE if grown < FULL_CAP else 0.0
        if not waiting and grown >= FULL_GROWTH and idle >= quiet:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self._set_aside, self._set_aside_since = gc.get_freeze_count(), 0
            return
        if young < GC_THRESHOLD[0] or (waiting and young < HELD_BACK * GC_THRESHOLD[0]):
            return
        if middle >= MIDDLE_EVERY:
            gc.collect(1)
            self._set_aside_since += len(gc.get_objects(2))  # what survived: only this one's
            gc.freeze()
        else:
            gc.collect(0)

    # -- peers -------------------------------------------------------------------------------------------
    def _sync_hosted_peers(self) -> None:
        """Hosted servers serving A2A appear as peers, so you can talk to your own agent."""
        running = {s.url: s for s in self.workspace.running() if s.spec.a2a and s.url}
        for url, peer in list(self.peer_book.peers.items()):
            if peer.hosted and url not in running:
                self.peer_book.remove(url)
                self.peers_changed.publish(None)
        for url, server in running.items():
            if url not in self.peer_book.peers:  # its own credential, by reference: never a literal
                env = server.spec.auth_token_env
                headers = {"Authorization": f"Bearer ${{{env}}}"} if env else None
                self.connect_peer(self.peer_book.add(url, headers, hosted=True))

    @work(group="peers")
    async def connect_peer(self, peer: Peer) -> None:
        peer.state = "checking"
        self.peers_changed.publish(None)
        await peer.connect(self.workspace.events, lambda text: self._sign_in(peer, text))
        self.peers_changed.publish(None)

    def _sign_in(self, peer: Peer, text: str) -> None:
        """An OAuth sign-in of ``peer`` needs the user (a code to enter, an address to open):
        said in a notification that stays, and in the Auth tab until the next one; the browser
        kind's address is opened too."""
        address = printable(text)
        if peer.auth.kind == "browser":  # told the address alone
            self.open_url(text)
            address = f"To sign in, open {address} (opened in your browser)"
        peer.sign_in = address
        self.notify(address, title=f"sign in to {peer.name}", timeout=SIGN_IN_SHOWN, markup=False)
        self.peers_changed.publish(None)

    def _session_path(self, suffix: str = ".json") -> Path:
        return self.export_dir / f"toolnexus-session-{self.now().strftime('%Y%m%d-%H%M%S')}{suffix}"

    def ask_export_session(self) -> None:
        events, chat = (
            list(self.book.traffic),
            self.conversation.to_dict(),
        )  # as they are now, on the loop
        self.ask_export(
            "the session (wire log and chat)",
            self._session_path(),
            lambda path: _write_session(path, events, chat),
        )

    def ask_save_cassette(self) -> None:
        """The wire log as a cassette (``toolnexus replay`` serves it, or diffs it against a live peer)."""

        events = list(self.book.traffic)  # the log as it is now, on the loop
        self.ask_export(
            "the wire as a cassette (toolnexus replay FILE)",
            self._session_path(".jsonl"),
            lambda path: save(events, path),
        )

    def ask_export(self, what: str, default: Path, write: Callable[[Path], Any]) -> None:
        """Ask where to export ``what`` (``default`` offered), write it there with ``write`` in a
        thread (a wire log of 2,000 exchanges is seconds of JSON and disk: never on the screen's
        loop; ``write`` reads only what was taken from the app beforehand), and say where it went,
        or why it could not be written."""

        def chosen(text: str | None) -> None:
            if text is not None:
                self._export(Path(text).expanduser(), write)

        self.push_screen(ExportPrompt(what, default), chosen)

    @work(thread=True, group="export")
    def _export(self, path: Path, write: Callable[[Path], Any]) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path)
        except OSError as exc:
            self.call_from_thread(
                self.notify, f"cannot write {path}: {exc.strerror or exc}", severity="error"
            )
            return
        self.call_from_thread(self.notify, f"exported to {path.resolve()}")

    # -- server control (used by screens and the palette) ------------------------------------------
    @work(group="servers")
    async def start_server(self, spec: ServerSpec, at_launch: bool = False) -> None:
        """Start a server; shown, never a crash, when it fails. ``at_launch``: one the app starts
        by itself (the demo, ``--spec``): on any free port the first time, then on that same port
        at every launch (a copied curl line, a saved peer, a desktop MCP config keep working),
        unless another program has it now, which is said."""
        kept = self.server_book.ports.get(spec.name) if at_launch and spec.port == 0 else None
        sock = None
        keep = at_launch
        if kept is not None:
            try:
                sock = listening_socket(spec.host, kept)
                spec = replace(spec, port=kept)
            except OSError:
                holder = self.server_book.holder(kept)
                keep = holder is None  # another window's: the port stays this server's home
                self.notify(
                    f"{spec.name}: port {kept}, its port last time, is held by another "
                    f"toolnexus-tui (pid {holder}); here it starts on another port this time"
                    if holder is not None
                    else f"{spec.name}: port {kept}, its port last time, is taken now; it starts on another",
                    title="New port",
                    severity="warning",
                )
        try:
            server = await self.workspace.start(spec, sock=sock)
            if keep:
                self.server_book.keep_port(spec.name, server.spec.port)
        except Exception as exc:  # shown, never a crash
            self._start_failed(spec, exc, "Server failed to start")
        self.servers_changed.publish(None)

    def _start_failed(self, spec: ServerSpec, exc: BaseException, title: str) -> None:
        """Say why a server did not start: when its port is another toolnexus-tui's, whose."""
        held = self.port_held(spec, exc)
        server = self.workspace.servers.get(spec.name)
        if held and server is not None:
            server.error = held
        self.notify(
            f"{spec.name}: {held or exc}", title=title, severity="warning" if held else "error"
        )

    def port_held(self, spec: ServerSpec, exc: BaseException) -> str:
        """``port N is held by another toolnexus-tui (pid P)`` when that is why ``exc`` (an
        ``Address already in use``) happened, as the saved servers file says; else ``""``."""
        if not (isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE and spec.port):
            return ""
        holder = self.server_book.holder(spec.port)
        if holder is None:
            return ""
        return f"port {spec.port} is held by another toolnexus-tui (pid {holder})"

    def _say_serving(self) -> None:
        """Say in the saved servers file which ports this window serves (for another window)."""
        self.server_book.serving(
            {s.spec.port: s.name for s in self.workspace.running() if s.spec.port}
        )

    def _saved_changed(self) -> None:
        """Another toolnexus-tui changed the saved servers: show it here and say so."""
        change = self.server_book.poll()
        if change is None:
            return
        who = f"another toolnexus-tui (pid {change.by})"
        for name in change.removed:
            server = self.workspace.servers.get(name)
            if server is None:
                continue
            if server.state in ("running", "starting"):
                self.notify(f"{name} was deleted in {who}; it runs here until you stop it")
            else:
                self.workspace.remove(name)
                self.notify(f"{name} was deleted in {who}")
        for name, spec in (change.added | change.edited).items():
            server = self.workspace.servers.get(name)
            self.workspace.add(spec)  # a running server keeps the spec it runs with
            if server is None:
                there = self.server_book.served_by(name)
                said = (
                    "; s starts it here"
                    if there is None
                    else ", which serves it"
                    if there == change.by
                    else f"; another toolnexus-tui (pid {there}) serves it"
                )
                self.notify(f"{name} was added in {who}{said}")
            elif server.state in ("running", "starting"):
                self.notify(
                    f"{name} was edited in {who}; here it runs as it was, the change applies at "
                    "the next launch"
                )
            elif name in change.edited:
                self.notify(f"{name} was edited in {who}")
        self.servers_changed.publish(None)

    def _saved_peers_changed(self) -> None:
        """Another toolnexus-tui added, changed or removed a saved peer: the same here (a peer
        added or changed dialled again), and said."""
        change = self.peer_book.poll()
        if change is None:
            return
        who = f"another toolnexus-tui (pid {change.by})"
        for url in change.added:
            self.connect_peer(self.peer_book.peers[url])
            self.notify(f"peer {url} was added in {who}", markup=False)
        for url, said in change.edited.items():
            self.connect_peer(self.peer_book.peers[url])
            self.notify(f"peer {url} was changed in {who}: {'; '.join(said)}", markup=False)
        for url in change.removed:
            self.notify(f"peer {url} was removed in {who}", markup=False)
        self.peers_changed.publish(None)

    def remember_server(
        self, spec: ServerSpec, old_name: str | None = None, *, port_typed: bool = False
    ) -> None:
        """Keep a server created or edited here (its spec and port) for the next launch. One this
        app starts at launch (the demo) comes back on a port of its own (:meth:`start_server`),
        not its saved spec's; a port typed in its form (``port_typed``) becomes that port. The
        file says this window serves it before it has it (another window, told of it, says who)."""
        self._say_serving()
        self.server_book.put(spec, old_name)
        if port_typed and any(s.name == spec.name for s in self.start_specs):
            self.server_book.keep_port(spec.name, spec.port)

    @work(group="servers")
    async def delete_server(self, name: str) -> None:
        """Stop (if running) and forget a server, here and for the next launch."""
        try:
            if self.workspace.get(name).state == "running":
                await self.workspace.stop(name)
            self.workspace.remove(name)
            self.server_book.drop(name)
            self.notify(f"{name} deleted")
        except Exception as exc:
            self.notify(f"{name}: {exc}", title="Delete failed", severity="error")
        self.servers_changed.publish(None)

    @work(group="servers")
    async def toggle_server(self, name: str) -> None:
        server = self.workspace.get(name)
        try:
            if server.state == "running":
                await self.workspace.stop(name)
                self.notify(f"{name} stopped")
            else:
                await self.workspace.start(server.spec)
                self.notify(f"{name} running at {self.workspace.get(name).url}")
        except Exception as exc:
            self._start_failed(server.spec, exc, "Server failed")
        self.servers_changed.publish(None)

    @work(group="servers")
    async def restart_server(self, name: str) -> None:
        try:
            await self.workspace.restart(name)
            self.notify(f"{name} restarted at {self.workspace.get(name).url}")
        except Exception as exc:
            self._start_failed(self.workspace.get(name).spec, exc, "Restart failed")
        self.servers_changed.publish(None)

    # -- actions ---------------------------------------------------------------------------------------
    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_show_help_panel(self) -> None:
        """The ``?`` panel, ours (the app's keys first: ``KeysPanel``), and the screen's footer
        hidden while it is open: the panel lists every key the footer shows, and the footer,
        squeezed beside it at 80 columns, drew its keys over each other (``^p palettee``)."""
        if not self.screen.query(HelpPanel):
            self.screen.mount(KeysPanel())
        self.screen.add_class("-keys-open")

    def action_hide_help_panel(self) -> None:
        self.screen.query(HelpPanel).remove()
        self.screen.remove_class("-keys-open")

    def action_close_help(self) -> None:
        self.action_hide_help_panel()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape closes the ``?`` panel while it is open; otherwise it is the mode's own key."""
        if action == "close_help":
            return bool(self.screen.query("HelpPanel"))
        return True

    async def ensure_webhook(self) -> WebhookReceiver:
        """The app's webhook receiver on 127.0.0.1, started if it is not: its deliveries are on the
        Wire (← rows) and on each task's timeline, like every other exchange."""
        if self.webhook is None:
            self.webhook = WebhookReceiver(bus=self.workspace.events, name="push")
        await self.webhook.start()
        return self.webhook

    async def _close_hosted(self) -> None:
        """The hosted servers stopped, the peers' connections and the webhook closed (its name is
        not Textual's ``App._close_all``, which closes every screen at shutdown: this one, named
        so, stood in for it, and the screens were never closed)."""
        await self.workspace.close()
        self.server_book.serving({})
        await self.peer_book.close()
        if self.webhook is not None:
            await self.webhook.stop()

    async def action_quit(self) -> None:
        await self._close_hosted()
        self.exit()

    async def on_unmount(self) -> None:
        """However the app ends, hosted servers stop, peer connections and the webhook close (all idempotent)."""
        await self._close_hosted()

    def palette_commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        out: list[tuple[str, str, Callable[[], Any]]] = [
            ("Servers", "show the hosted servers (1)", partial(self.switch_mode, "servers")),
            ("Tasks", "show every task, live (2)", partial(self.switch_mode, "tasks")),
            (
                "Peers",
                "remote agents, their cards and diagnostics (3)",
                partial(self.switch_mode, "peers"),
            ),
            ("Chat", "talk to a peer (4)", partial(self.switch_mode, "chat")),
            ("Wire", "every HTTP exchange with peers (5)", partial(self.switch_mode, "wire")),
            (
                "MCP",
                "list and call the tools of any MCP endpoint (6)",
                partial(self.switch_mode, "mcp"),
            ),
            ("Export session", "the wire log and the chat as JSON", self.ask_export_session),
            (
                "Save cassette",
                "the wire log as a cassette to replay (k on Wire)",
                self.ask_save_cassette,
            ),
            (
                "Save the last copy to a file",
                "for a terminal that did not take the copy (tmux, screen, ssh)",
                self.ask_save_copy,
            ),
            ("New server", "start a server from a form (n on Servers)", self._palette_new_server),
            ("Quit", "stop every hosted server and leave (ctrl+q)", self.action_quit),
        ]
        screen = (
            self.screen if not isinstance(self.screen, CommandPalette) else self.screen_stack[-2]
        )
        out += getattr(screen, "palette_commands", list)()  # the mode's own (Tasks: its tabs)
        out += self._keys_of(screen, {title for title, _, _ in out})
        for url, peer in self.peer_book.peers.items():
            out.append(
                (f"Chat with {peer.name}", f"{url} ({peer.state})", partial(self.chat_with, url))
            )
        for name, server in self.workspace.servers.items():
            out += self._server_commands(name, server)
        out.append(
            (
                "Open in a browser",
                "run toolnexus-tui --web: this app in a browser, behind a token",
                partial(
                    self.notify,
                    "In a shell: toolnexus-tui --web  (it prints the URL to open, with its "
                    "token; pip install 'toolnexus[web]')",
                    timeout=10,
                ),
            )
        )
        return out

    def _keys_of(self, screen: Any, seen: set[str]) -> list[tuple[str, str, Callable[[], Any]]]:
        """Every key of the mode in view not already titled in ``seen``, with its key."""
        out: list[tuple[str, str, Callable[[], Any]]] = []
        for binding in getattr(screen, "BINDINGS", ()):
            if (
                not isinstance(binding, Binding)
                or not binding.description
                or binding.description in seen
            ):
                continue
            seen.add(binding.description)
            key = self.get_key_display(binding)
            out.append(
                (
                    binding.description,
                    f"{key} in this mode",
                    partial(screen.run_action, binding.action),
                )
            )
        return out

    def _server_commands(
        self, name: str, server: HostedServer
    ) -> list[tuple[str, str, Callable[[], Any]]]:
        """A hosted server's commands: start or stop, restart, its MCP config, its metrics URL."""
        verb = "Stop" if server.state == "running" else "Start"
        out: list[tuple[str, str, Callable[[], Any]]] = [
            (
                f"{verb} server {name}",
                server.url or server.state,
                partial(self.toggle_server, name),
            ),
            (
                f"Restart server {name}",
                server.url or server.state,
                partial(self.restart_server, name),
            ),
            (
                f"Copy desktop MCP config for {name}",
                "its toolkit as `toolnexus mcp` in Claude Desktop, VS Code or Cursor",
                partial(self.copy_mcp_config, name),
            ),
        ]
        metrics = getattr(server.handle, "metrics_url", None) if server.handle is not None else None
        if metrics:
            out.append(
                (
                    f"Copy metrics URL of {name}",
                    metrics,
                    partial(self.copy_text, metrics, "metrics URL"),
                )
            )
        return out

    def chat_with(self, url: str) -> None:
        """Open Chat on the peer at ``url``."""
        self.chat_peer = url
        self.switch_mode("chat")

    def copy_mcp_config(self, name: str) -> None:
        """A desktop MCP host's entry that serves this server's toolkit over stdio (Claude Desktop's
        and Cursor's form; VS Code's takes the same command and args under "servers")."""
        spec = self.workspace.servers[name].spec
        args = [
            "mcp",
            *(a for folder in spec.skills for a in ("--skills", str(Path(folder).resolve()))),
        ]
        if spec.config:
            args += ["--config", str(Path(spec.config).resolve())]
        command = shutil.which("toolnexus") or str(Path(sys.executable).parent / "toolnexus")
        entry = {"mcpServers": {name: {"command": command, "args": args}}}
        self.copy_text(json.dumps(entry, indent=2), "desktop MCP config")

    def copy_text(
        self, text: str, what: str, note: str = "", severity: SeverityLevel = "information"
    ) -> None:
        """Put ``text`` on the clipboard (OSC 52, through the terminal) and say what was copied,
        shown as it is (never read as markup), with ``note``; kept for "Save the last copy to a
        file". Whether the terminal took it cannot be seen from here; where it is known not to
        pass (tmux without ``set-clipboard on``, GNU screen), that is said too."""
        self.copy_to_clipboard(text)
        self.last_copy = (what, text)
        self._say_copied(text, what, note, severity)

    @work(group="copy")
    async def _say_copied(self, text: str, what: str, note: str, severity: SeverityLevel) -> None:
        doubt = await asyncio.to_thread(
            clipboard_doubt, dict(os.environ)
        )  # asks tmux: not on the UI loop
        # short, and soon gone: the copy is on the clipboard, not to be read from the toast (a
        # curl command filled 15 lines of it, over the pane, for 10 s)
        lines = text.splitlines() or [""]
        first = lines[0] if len(lines[0]) <= COPY_SHOWN else lines[0][: COPY_SHOWN - 1] + "…"
        more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        said = [f"copied the {what}: {first}{more}"] + ([note] if note else [])
        if doubt:
            said.append(f"{doubt}; ctrl+p → Save the last copy to a file")
        self.notify(
            "\n".join(said),
            timeout=10 if doubt else 4,  # the app's notify never reads markup
            severity="warning" if doubt and severity == "information" else severity,
        )

    def ask_save_copy(self) -> None:
        if self.last_copy is None:
            self.notify("nothing copied yet")
            return
        what, text = self.last_copy
        self.ask_export(
            f"the last copy (the {what})",
            self.export_dir / f"toolnexus-copy-{self.now().strftime('%Y%m%d-%H%M%S')}.txt",
            lambda path: write_whole(path, text + "\n"),
        )

    def _palette_new_server(self) -> None:
        self.switch_mode("servers")
        self.push_screen(ServerForm(self.workspace))


def _write_session(path: Path, events: list[Any], chat: dict[str, Any]) -> Path:
    """A session export: the wire log and the chat, one JSON file, written whole or not at all."""
    return write_whole(
        path,
        json.dumps({"wire": [asdict(ev) for ev in events], "chat": chat}, indent=2, default=str),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="toolnexus-tui",
        description="Host A2A/MCP servers and watch their tasks.",
        epilog="examples:\n"
        "  toolnexus-tui                                   # the demo agent, served and watched\n"
        "  toolnexus-tui --skills ./skills --name my-desk --port 8000\n"
        "  toolnexus-tui --model openai:gpt-4o-mini --api-key-env OPENAI_API_KEY\n"
        "  toolnexus-tui --web                             # in a browser: open the URL it prints",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", help="a toolkit config file to serve")
    parser.add_argument("--skills", action="append", help="a skills folder to serve (repeatable)")
    parser.add_argument("--model", default="demo", help="demo | openai:MODEL | anthropic:MODEL")
    parser.add_argument("--base-url", help="the model endpoint")
    parser.add_argument("--api-key-env", help="the environment variable holding the model key")
    parser.add_argument("--name", default=None, help="the served agent's name")
    parser.add_argument(
        "--port", type=int, default=0, help="port for the served toolkit (default: any)"
    )
    parser.add_argument(
        "--web",
        action="store_true",
        help="serve this app in a browser instead (needs pip install 'toolnexus[web]'): the URL to "
        "open, with its one-time token, is printed",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="with --web: the address to serve on (default 127.0.0.1; beyond it, still the token)",
    )
    parser.add_argument(
        "--web-port", type=int, default=0, help="with --web: the port (default: any free one)"
    )
    given = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(given)
    if args.web:
        app_args = _without_web(given)
        serve_web(
            app_args,
            host=args.host,
            port=args.web_port,
            announce=lambda url: print(
                f"toolnexus-tui in the browser: {url}\n(Ctrl-C to stop)", flush=True
            ),
        )
        return
    if args.config or args.skills:
        spec = ServerSpec(
            name=args.name or "toolnexus-agent",
            skills=args.skills or [],
            config=args.config,
            model=args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            mcp=True,
            port=args.port,
        )
    else:
        spec = demo_spec(args.name or "demo-desk")
        spec.model, spec.base_url, spec.api_key_env, spec.port = (
            args.model,
            args.base_url,
            args.api_key_env,
            args.port,
        )
    named = bool(
        args.config
        or args.skills
        or args.name
        or args.model != "demo"
        or args.base_url
        or args.api_key_env
        or args.port
    )
    app = ToolnexusApp(specs=[spec] if named else None, tune_gc=True)  # None: the demo, as edited
    app.run()
    if app.return_code:
        sys.exit(app.return_code)


def _without_web(argv: list[str]) -> list[str]:
    """The app's own arguments: ``--web``, ``--host`` and ``--web-port`` (and their values) left out."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--web":
            continue
        elif arg in ("--host", "--web-port"):
            skip = True
        elif not arg.startswith(("--host=", "--web-port=")):
            out.append(arg)
    return out


if __name__ == "__main__":  # pragma: no cover
    main()


def _is_a_desk(app: ToolnexusApp) -> Desk:
    """The type checker holds the app to what its screens may use of it (``screens/base.py``)."""
    return app
