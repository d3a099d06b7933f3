"""The footer of every mode screen: Textual's, recomposed only when what it shows changed.

Textual's ``Footer`` rebuilds all of its keys (new widgets, styled and mounted) every time its
screen's bindings may have changed: each focus change, each ``refresh_bindings`` and each switch
back to the screen, about five times a mode switch, which made a third of a switch's time
(``bench/tui_bench.py``). This one rebuilds only when the keys it would show (key, label, enabled)
differ from those it shows.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer

__all__ = ["ModeFooter"]


class ModeFooter(Footer):
    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> tuple[Any, ...]:
        """What the footer would show now: each shown binding's key, label and whether it is enabled."""
        return tuple(
            (binding.key, binding.description, enabled, tooltip)
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show
        )

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if (
            self.is_attached
            and screen is self.screen
            and self._bindings_ready
            and self._keys() == self._shown
        ):
            return
        super().bindings_changed(screen)

    def compose(self) -> Any:
        if self._bindings_ready:
            self._shown = self._keys()
        return super().compose()
