"""The footer of every mode screen: Textual's, rebuilt only when what it shows changed.

Textual's ``Footer`` rebuilds all of its keys (new widgets, styled and mounted) every time its
screen's bindings may have changed: each focus change, each ``refresh_bindings`` and each switch
back to the screen, about five times a mode switch, which made a third of a switch's time
(``bench/tui_bench.py``). This one rebuilds only when the keys it would show (key, label, enabled)
differ from those it shows, and when they are some of those it has, in their order (a text box
focused hides ``i`` and ``?`` in Chat, Escape shows them again), it hides and shows those instead:
a rebuild was ~10 ms of a switch to Chat, twice (``bench/tui_bench.py``).
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["ModeFooter"]


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
