"""What every mode screen shares: typed access to the app through :class:`Desk`, what a screen
may use of it (its workspace, book, peers, signals, the chat, the server and export actions).

The screens know the app only by this protocol, so that ``app.py`` imports the screens and no
screen imports ``app.py``; ``ToolnexusApp`` is checked against it where it is defined."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast

from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.signal import Signal
from textual.widgets import Header

from toolnexus.client.conversation import Conversation
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.hosting import ServerSpec, Workspace
from toolnexus.monitor import TaskBook

from ..peers import Peer, PeerBook
from ..saved import ServerBook


class Desk(Protocol):
    """The app as its screens see it."""

    workspace: Workspace
    book: TaskBook
    peer_book: PeerBook
    server_book: ServerBook
    start_specs: list[ServerSpec]
    selected_server: str | None
    webhook: WebhookReceiver | None
    conversation: Conversation
    conversations: dict[str, Conversation]
    chat_peer: str | None
    export_dir: Path
    now: Callable[[], datetime]
    tasks_changed: Signal[frozenset[str]]
    servers_changed: Signal[None]
    calls_changed: Signal[None]
    peers_changed: Signal[None]
    traffic_changed: Signal[None]
    holding_frames: bool

    # the app's workers (each returns its Worker): they run in the background
    def connect_peer(self, peer: Peer) -> Any: ...
    def delete_server(self, name: str) -> Any: ...
    def toggle_server(self, name: str) -> Any: ...
    def restart_server(self, name: str) -> Any: ...
    def remember_server(
        self, spec: ServerSpec, old_name: str | None = None, *, port_typed: bool = False
    ) -> None: ...
    def port_held(self, spec: ServerSpec, exc: BaseException) -> str: ...
    async def ensure_webhook(self) -> WebhookReceiver: ...
    def keys_idle(self) -> bool: ...
    def warm(self, screen: Screen[Any]) -> None: ...
    def ask_export(self, what: str, default: Path, write: Callable[[Path], Any]) -> None: ...
    def ask_export_session(self) -> None: ...
    def ask_save_cassette(self) -> None: ...
    def copy_text(
        self, text: str, what: str, note: str = "", severity: SeverityLevel = "information"
    ) -> None: ...


def detail_tab_keys(screen: str) -> list[Binding]:
    """``[`` and ``]``: the previous and next tab of a screen's detail pane, round (in ? and the
    palette: the footer fits 80 columns). Its screen has ``action_detail_tab(step)``."""
    return [
        Binding(
            "left_square_bracket",
            "detail_tab(-1)",
            "Detail: previous tab",
            show=False,
            key_display="[",
            id=f"{screen}-detail-previous",
        ),
        Binding(
            "right_square_bracket",
            "detail_tab(1)",
            "Detail: next tab",
            show=False,
            key_display="]",
            id=f"{screen}-detail-next",
        ),
    ]


HEADER_ICON = "≡"
"""The header's icon (it opens the palette): one the common monospace fonts have (DejaVu,
Liberation, Menlo); Textual's own (⭘) is in none of them, a box in a browser."""


class ModeScreen(Screen[None]):
    """A screen of one of the app's modes."""

    def _on_mount(self, event: events.Mount) -> None:
        for header in self.query(Header):
            header.icon = HEADER_ICON

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Switching back to a mode does not restyle its every widget (Textual's default, a third of
        a switch: ``bench/tui_bench.py``): its styles are current. A class set on a widget of a
        suspended screen restyles that widget at once, and a change of the app's CSS or theme is
        caught by the switch itself (``App.refresh_css`` on a stale ``_css_update_count``). Runs
        before ``Screen._on_screen_resume``, which then skips only the restyle."""
        event.refresh_styles = False

    def _screen_resized(self, size: Size) -> None:
        """The layout a switch does answers every request made while the screen was hidden
        (Textual clears their list there), yet left the screen marked as wanting one: the
        next update laid the whole screen out again, and drew it again (a switch to Tasks:
        ``bench/tui_bench.py``). A request made after this one marks it again."""
        laid_out = bool(self.stack_updates and self.is_attached)  # (what Textual tests)
        super()._screen_resized(size)
        if laid_out:
            self._layout_required = False

    def _compositor_refresh(self) -> None:
        """Nothing drawn while a switch holds the frames (``Desk.holding_frames``): the switch
        draws the whole screen when it ends, after the screen took its ``ScreenResume`` (a switch
        drew what its layout changed, then all of it again)."""
        if self.tn.holding_frames and self is self.app.screen:
            self._repaint_required = True
            return
        super()._compositor_refresh()

    @property
    def tn(self) -> Desk:
        return cast(
            Desk, self.app
        )  # a mode screen's app is always the ToolnexusApp (app.py checks it is a Desk)
