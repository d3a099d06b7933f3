"""The keys a screen shows: its footer, Textual's rebuilt only when what it shows changed, and
the ``?`` panel, the app's own keys first.

Textual's ``Footer`` rebuilds all of its keys (new widgets, styled and mounted) every time its
screen's bindings may have changed: each focus change, each ``refresh_bindings`` and each switch
back to the screen, about five times a mode switch, which made a third of a switch's time
(``bench/tui_bench.py``). This one rebuilds only when the keys it would show (key, label, enabled)
differ from those it shows, and when they are some of those it has, in their order (a text box
focused hides ``i`` and ``?`` in Chat, Escape shows them again), it hides and shows those instead:
a rebuild was ~10 ms of a switch to Chat, twice (``bench/tui_bench.py``).
"""

from __future__ import annotations

import functools
from itertools import groupby
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, HelpPanel, KeyPanel, Markdown
from textual.widgets._footer import FooterKey
from textual.widgets._key_panel import BindingsTable

__all__ = ["KeysPanel", "ModeFooter"]


class ModeFooter(Footer):
    _made: tuple[Any, ...] | None = None
    """The keys of the last rebuild, in order (one FooterKey each, the palette's aside)."""
    _shown: tuple[Any, ...] | None = None
    """The keys on view: ``_made``, or some of them (the others hidden)."""

    def _keys(self) -> tuple[Any, ...]:
        """What the footer would show now: each shown binding's key, label and whether it is enabled."""
        return tuple(
            (binding.key, binding.description, enabled, tooltip)
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show
        )

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen and self._bindings_ready:
            keys = self._keys()
            if keys == self._shown or self._show_only(keys):
                return
        super().bindings_changed(screen)

    def _show_only(self, keys: tuple[Any, ...]) -> bool:
        """Show ``keys`` by hiding the others, when the last rebuild made them all, in this order."""
        made = self._made
        widgets = [k for k in self.query_children(FooterKey) if not k.has_class("-command-palette")]
        wanted = set(keys)
        if (
            made is None
            or len(widgets) != len(made)
            or tuple(k for k in made if k in wanted) != keys
        ):
            return False
        for key, widget in zip(made, widgets, strict=True):
            widget.display = key in wanted
        self._shown = keys
        return True

    async def recompose(self) -> None:
        """Rebuilt (after a refresh: Textual's ``bindings_changed``) unless what it shows is what
        the screen's keys are by now (a focus that came and went)."""
        if self.is_attached and self._bindings_ready and self._shown is not None:
            keys = self._keys()
            if keys == self._shown or self._show_only(keys):
                return
        await super().recompose()

    def compose(self) -> Any:
        if self._bindings_ready:
            self._made = self._shown = self._keys()
        for widget in super().compose():
            if isinstance(widget, FooterKey):  # its class now, not restyled as it is mounted
                widget.set_class(self.compact, "-compact", update=False)
            yield widget


@functools.cache
def _textual_bindings(node_type: type) -> tuple[Binding, ...]:
    """The bindings Textual's own classes give a node of ``node_type`` (a table's cursor and page
    keys, a screen's focus and copy keys), as its bindings map holds them."""
    own = (c for c in node_type.__mro__ if c.__module__.startswith("textual."))
    return tuple(b for c in own for b in Binding.make_bindings(c.__dict__.get("BINDINGS", ())))


class KeysTable(BindingsTable):
    """The ``?`` panel's list: the app's own keys first, as Textual groups them (the focused
    widget's, the screen's, the app's), then those Textual gives any table, text box or screen
    (cursor, page and focus keys, copy), which Textual lists first, by the focused widget: at
    80x24 they filled the panel and the mode's keys were below the fold."""

    def render_bindings_table(self) -> Table:
        table = Table.grid(padding=(0, 1))
        table.add_column(justify="right")
        table.add_column()
        key_style = self.get_component_rich_style("bindings-table--key")
        text_style = self.get_component_rich_style("bindings-table--description")
        active = [a for a in self.screen.active_bindings.values() if not a.binding.system]
        generic = [a.binding in _textual_bindings(type(a.node)) for a in active]
        for textual in (False, True):
            chosen = [a for a, g in zip(active, generic, strict=True) if g is textual]
            for _, rows in groupby(chosen, key=lambda a: a.node):
                by_action: dict[str, list[Binding]] = {}
                for a in rows:
                    by_action.setdefault(a.binding.action, []).append(a.binding)
                for bindings in by_action.values():
                    keys = " ".join(dict.fromkeys(self.app.get_key_display(b) for b in bindings))
                    about = Text(bindings[0].description, end="", style=text_style)
                    if bindings[0].tooltip:
                        about.append(f" {bindings[0].tooltip}", "dim")
                    table.add_row(Text(keys, style=key_style), about)
                table.add_row("", "")  # a line between groups
        return table


class _KeyList(KeyPanel):
    def compose(self) -> ComposeResult:
        yield KeysTable(shrink=True, expand=False)


class KeysPanel(HelpPanel):
    """The ``?`` panel, its keys listed by :class:`KeysTable`."""

    def compose(self) -> ComposeResult:
        yield Markdown(id="widget-help")
        yield _KeyList(id="keys-help")
