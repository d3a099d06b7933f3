"""A table of any number of rows that draws only the lines on screen (the Tasks mode's).

Textual's ``DataTable`` keeps every cell of every row and lays them out again as rows change; with
thousands of tasks moving hundreds of times a second, a key press waited behind that work. Here a
row is only its key: its cells are asked of ``cells(key)`` when its line is drawn, so a change to
a row off screen costs nothing, 10,000 rows cost a list of keys, and ages that follow the clock are
a repaint. Cells are shown as :mod:`.safe` shows them: never markup, never terminal control.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .safe import CELL_CAP, safe

__all__ = ["RowTable"]

DRAWN_KEPT = 512
"""Lines a table keeps drawn (a few screens' worth; a line is redrawn as one row moves and as the
clock ticks, its neighbours unchanged), forgotten all at once when full."""


class RowTable(ScrollView, can_focus=True):
    """Rows by key, a header line, a row cursor; cells made when their line is drawn.

    Args:
        cells: the cells of a row's line, given its key (a ``Text`` keeps its style; anything
            else is shown as plain text).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"row-table--header", "row-table--cursor"}
    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .row-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
        & > .row-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .row-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    class Highlighted(Message):
        """The cursor is on another row (``key``), or on none (None: the table is empty)."""

        def __init__(self, table: RowTable, key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(
        self,
        cells: Callable[[str], Sequence[Any]],
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._cells = cells
        self._keys: list[str] = []
        self._index: dict[str, int] = {}
        self._columns: list[tuple[str, str, int]] = []
        self._padding = 1
        self._flex: str | None = None
        self.cursor_row = 0
        self._told: str | None = None  # the key the last Highlighted named
        self._style: Style | None = None  # the table's own style, until its styles change
        self._drawn: dict[tuple[Any, ...], Strip] = {}  # a line drawn, by its cells and place

    # -- columns and rows --------------------------------------------------------------------------
    def set_columns(
        self, columns: Iterable[tuple[str, str, int]], padding: int = 1, flex: str | None = None
    ) -> None:
        """``(label, key, width)`` per column; ``padding`` blank cells on each side of each (with
        none, a cell's last character is the gap: its text is cut one short); the column keyed
        ``flex`` also takes whatever width the table has left."""
        self._columns = list(columns)
        self._padding = padding
        self._drawn.clear()
        self._flex = flex
        self._resize()

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def rows(self) -> dict[str, int]:
        """Row index by key (read only)."""
        return self._index

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self.cursor_row] if self._keys else None

    def get_row_index(self, key: str) -> int:
        return self._index[key]

    def get_row_at(self, row: int) -> list[Any]:
        return list(self._cells(self._keys[row]))

    def get_cell(self, key: str, column: str) -> Any:
        at = next(i for i, (_, k, _) in enumerate(self._columns) if k == column)
        return self._cells(key)[at]

    def set_rows(self, keys: Iterable[str]) -> None:
        """Show these rows, in this order; the cursor stays on its row when that row is kept (else
        it goes to the first)."""
        self._replace(list(keys), 0)

    def add_rows(self, keys: Iterable[str]) -> None:
        """Append rows (a key already shown is left where it is)."""
        start = len(self._keys)
        self._keys.extend(k for k in keys if k not in self._index)
        self._reindex(start)
        self._resize()
        if start < len(self._keys) and self._on_screen(start, len(self._keys) - 1):
            self.refresh()
        if start == 0:
            self._tell()

    def remove_rows(self, keys: Iterable[str]) -> None:
        gone = {k for k in keys if k in self._index}
        if gone:  # the cursor stays on its row, or where its row was
            self._replace([k for k in self._keys if k not in gone], self.cursor_row)

    def refresh_rows(self, keys: Iterable[str]) -> None:
        """Redraw these rows' lines, those on screen (their cells changed)."""
        top, lines = int(self.scroll_offset.y), self._lines()
        for key in keys:
            row = self._index.get(key)
            if row is not None and top <= row < top + lines:
                self.refresh_line(row + 1)

    def move_cursor(self, row: int, scroll: bool = True) -> None:
        """The cursor on ``row``: the two lines it leaves and reaches drawn again, or every line
        when the table scrolled (a key up or down drew all 40 lines, ``bench/tui_bench.py``)."""
        before, top = self.cursor_row, self.scroll_offset.y
        self.cursor_row = row
        self._clamp()
        if scroll:
            self._scroll_to_cursor()
        if self.scroll_offset.y == top and before < len(self._keys):
            self.refresh_line(before + 1)  # (line 0 is the header)
            self.refresh_line(self.cursor_row + 1)
        else:
            self.refresh()
        self._tell()

    def _replace(self, keys: list[str], fallback: int) -> None:
        """All rows anew; the cursor on its key's new row when the key is kept, else at ``fallback``."""
        kept = self.cursor_key
        self._keys = keys
        self._reindex(0)
        self.cursor_row = self._index.get(kept, fallback) if kept is not None else 0
        self._clamp()
        self._resize()
        self.refresh()
        self._tell()

    def _reindex(self, start: int) -> None:
        if start == 0:
            self._index = {}
        for i in range(start, len(self._keys)):
            self._index[self._keys[i]] = i

    def _clamp(self) -> None:
        self.cursor_row = max(0, min(self.cursor_row, len(self._keys) - 1))

    def _width(self) -> int:
        return sum(w + 2 * self._padding for _, _, w in self._columns)

    def _widths(self) -> list[int]:
        """Each column's width now: as set, the flex column widened to the table's width."""
        widths = [w for _, _, w in self._columns]
        spare = self.scrollable_content_region.width - self._width()
        if self._flex is not None and spare > 0:
            at = next(i for i, (_, k, _) in enumerate(self._columns) if k == self._flex)
            widths[at] += spare
        return widths

    def _resize(self) -> None:
        self.virtual_size = Size(self._width(), len(self._keys) + 1)

    def _lines(self) -> int:
        """Rows that fit under the header."""
        return max(1, self.scrollable_content_region.height - 1)

    def _on_screen(self, first: int, last: int) -> bool:
        top = int(self.scroll_offset.y)
        return first < top + self._lines() and last >= top

    def _scroll_to_cursor(self) -> None:
        top, lines = int(self.scroll_offset.y), self._lines()
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + lines:
            self.scroll_to(y=self.cursor_row - lines + 1, animate=False, immediate=True)

    def _tell(self) -> None:
        key = self.cursor_key
        if key != self._told:
            self._told = key
            self.post_message(self.Highlighted(self, key))

    # -- keys and the mouse ------------------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step * self._lines())

    def action_edge(self, last: int) -> None:
        self.move_cursor(len(self._keys) - 1 if last else 0)

    def on_click(self, event: events.Click) -> None:
        row = int(self.scroll_offset.y) + event.y - 1
        if event.y >= 1 and 0 <= row < len(self._keys):
            self.move_cursor(row, scroll=False)

    def on_resize(self) -> None:
        self._scroll_to_cursor()

    # -- drawing ---------------------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style = None
        self._drawn.clear()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self._style is None:  # worked out from every ancestor's styles: once, not per line
            self._style = self.rich_style
        base = self._style
        row = int(self.scroll_offset.y) + y - 1 if y else -1
        if y == 0:
            cells: Sequence[Any] = [Text(label) for label, _, _ in self._columns]
        elif row >= len(self._keys):
            return Strip.blank(width, base)
        else:
            cells = self._cells(self._keys[row])
        cursor = row == self.cursor_row
        widths = self._widths()
        x = int(self.scroll_offset.x)
        key = (
            tuple(
                (c.plain, c.style, tuple(c.spans)) if isinstance(c, Text) else str(c) for c in cells
            ),
            tuple(widths),
            y == 0,
            cursor,
            x,
            width,
        )
        strip = self._drawn.get(key)
        if strip is None:  # the same cells at the same place are drawn once
            if len(self._drawn) >= DRAWN_KEPT:
                self._drawn.clear()
            style, post = base, None
            if y == 0:
                style = base + self.get_component_rich_style("row-table--header")
            elif cursor:  # the cursor's colours over the cells' own, as DataTable's
                post = self.get_component_rich_style("row-table--cursor")
            segments = list(Segment.apply_style(self._draw(cells, widths), style, post))
            strip = self._drawn[key] = Strip(segments).crop_extend(
                x, x + width, style if post is None else style + post
            )
        return strip

    def _draw(self, cells: Sequence[Any], widths: list[int]) -> list[Segment]:
        console = self.app.console
        pad = " " * self._padding
        out: list[Segment] = []
        for at, (width, cell) in enumerate(zip(widths, cells, strict=False)):
            text = safe(cell if isinstance(cell, Text) else Text(str(cell)), CELL_CAP)
            gap = 0 if self._padding or at == len(widths) - 1 else 1  # none after the last
            text.truncate(width - gap, overflow="ellipsis")
            text.pad_right(width - text.cell_len)
            text.no_wrap = True
            if pad:
                out.append(Segment(pad))
            out.extend(
                Segment.apply_style(text.render(console), console.get_style(text.style))
            )  # its own style
            if pad:
                out.append(Segment(pad))
        return out
