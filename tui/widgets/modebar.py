"""The row of modes at the top of every screen: the current one highlighted, each clickable."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

MODES = [
    ("servers", "1 Servers"),
    ("tasks", "2 Tasks"),
    ("peers", "3 Peers"),
    ("chat", "4 Chat"),
    ("wire", "5 Wire"),
    ("mcp", "6 MCP"),
]


class ModeBar(Horizontal):
    """Tabs for the app's modes; ``current`` is the screen's own mode."""

    DEFAULT_CSS = """
    ModeBar { height: 1; background: $panel; }
    ModeBar Label { padding: 0 2; }
    ModeBar Label.current { background: $accent; color: $text; text-style: bold; }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        available = set(self.app.MODES)
        for mode, label in MODES:
            if mode in available:
                yield Label(
                    label, id=f"mode-{mode}", classes="current" if mode == self.current else ""
                )

    def on_click(self, event: object) -> None:
        widget = getattr(event, "widget", None)
        if isinstance(widget, Label) and widget.id and widget.id.startswith("mode-"):
            self.app.switch_mode(widget.id[5:])
