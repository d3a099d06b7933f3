"""What every mode screen shares: typed access to the app (its workspace, book, peers, signals)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import Screen

if TYPE_CHECKING:
    from ..app import ToolnexusApp


class ModeScreen(Screen[None]):
    """A screen of one of the app's modes."""

    @property
    def tn(self) -> ToolnexusApp:
        return self.app  # type: ignore[return-value]  # a mode screen's app is always the ToolnexusApp
