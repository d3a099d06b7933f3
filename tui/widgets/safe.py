"""Widgets that show what peers send as plain text: never markup, never terminal control.

A card's name, a task's reply or a wire body is the peer's text: ``[/bold]`` in it must not raise
``MarkupError``, and ``\\x1b[2J`` must not reach the terminal. :class:`SafeStatic` and
:class:`SafeTable` turn every string they are given into a ``Text`` (no markup parsing) and pass
every ``Text`` through :func:`toolnexus.display.printable`, keeping its styles; long content is cut
at ``VIEW_CAP`` characters. Screens use them wherever peer text can appear.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static

from toolnexus.display import printable

__all__ = ["SafeStatic", "SafeTable", "safe", "VIEW_CAP", "CELL_CAP"]

VIEW_CAP = 200_000
"""The most characters one view shows."""
CELL_CAP = 500
"""The most characters one table cell shows."""


def safe(content: Any, limit: int = VIEW_CAP) -> Any:
    """``content`` made safe to show: a str becomes a plain ``Text``, a ``Text`` keeps its styles
    with its characters made printable; anything else (a renderable of our own) is kept."""
    if isinstance(content, Text):
        if len(content) > limit:
            more = len(content) - limit
            content = content[:limit]
            content.append(f"… [{more:,} more characters]", "italic")
        clean = Text(
            printable(content.plain),
            style=content.style,
            justify=content.justify,
            no_wrap=content.no_wrap,
            overflow=content.overflow,
            end=content.end,
        )
        clean.spans = list(content.spans)
        return clean
    if isinstance(content, str):
        return Text(printable(content, limit))
    return content


class SafeStatic(Static):
    """A Static that never parses markup and shows only printable text."""

    def __init__(self, content: Any = "", **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        self._shown: Any = safe(content)
        super().__init__(self._shown, **kwargs)

    def update(self, content: Any = "", **kwargs: Any) -> None:
        """Show ``content``; the same content again changes nothing (an update lays the screen out
        anew: screens redraw their views on every visit and every event, most often unchanged)."""
        shown = safe(content)
        if (
            not kwargs
            and type(shown) is type(self._shown)
            and isinstance(shown, (str, Text))
            and shown == self._shown
        ):
            return
        self._shown = shown
        super().update(shown, **kwargs)


class SafeTable(DataTable):
    """A DataTable whose cells are never parsed as markup and show only printable text."""

    def add_row(self, *cells: Any, **kwargs: Any) -> Any:
        return super().add_row(*(safe(c, CELL_CAP) for c in cells), **kwargs)

    def update_cell(self, row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell(row_key, column_key, safe(value, CELL_CAP), **kwargs)

    def update_cell_at(self, coordinate: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell_at(coordinate, safe(value, CELL_CAP), **kwargs)
