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

__all__ = ["CELL_CAP", "VIEW_CAP", "HangingStatic", "SafeStatic", "SafeTable", "hang", "safe"]

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


SHORTEST_TAIL = 12
"""A wrapped line's last piece shorter than this takes the word before it along (no lone ``(1.0)``)."""


def hang(content: Any, width: int) -> Any:
    """``content`` (a ``Text``) with each line longer than ``width`` wrapped at its spaces, an
    indented line's continuations two columns past where its text starts (a hanging indent), and
    no last piece shorter than ``SHORTEST_TAIL`` alone when the word before it can go along.
    Anything else, or a width too narrow to indent in, is kept as it is."""
    if not isinstance(content, Text) or width < 4 * SHORTEST_TAIL:
        return content
    out = Text(style=content.style, end=content.end)
    for n, line in enumerate(content.split("\n", allow_blank=True)):
        if n:
            out.append("\n")
        plain = line.plain
        lead = len(plain) - len(plain.lstrip(" "))  # an indented line (a finding) hangs
        indent = min(lead + 2, width // 2) if lead else 0
        start, room = 0, width
        while len(plain) - start > room:
            cut = plain.rfind(" ", start + 1, start + room + 1)
            if cut <= start:  # one word longer than the line: cut in it
                cut = start + room
            elif len(plain) - cut - 1 < SHORTEST_TAIL:  # the last piece: not a word alone
                before = plain.rfind(" ", start + room // 2, cut)
                cut = before if before > start else cut
            piece = line[start:cut]
            piece.rstrip()
            out.append_text(piece)
            out.append("\n" + " " * indent)
            start = cut
            while start < len(plain) and plain[start] == " ":
                start += 1
            room = width - indent
        out.append_text(line[start:])
    return out


class HangingStatic(SafeStatic):
    """A :class:`SafeStatic` whose long lines wrap with a hanging indent (:func:`hang`) at its
    width, again whenever that changes: a wrapped finding reads as one, never as a line of its own.
    Hidden (a tab not shown: no width), it wraps at the width it had."""

    _width = 0

    def __init__(self, content: Any = "", **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.whole: Any = self._shown
        """What it shows, as given: unwrapped."""

    def _hung(self) -> Any:
        self._width = self.content_size.width or self._width
        return hang(self.whole, self._width)

    def update(self, content: Any = "", **kwargs: Any) -> None:
        self.whole = safe(content)
        super().update(self._hung(), **kwargs)

    def on_resize(self) -> None:
        if self.content_size.width:
            super().update(self._hung())
