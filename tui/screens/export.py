"""The prompt every export goes through: where to write, with a default under the user's data
folder; Enter writes there and says where it went, Escape cancels."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

__all__ = ["ExportPrompt", "default_export_dir"]


def default_export_dir() -> Path:
    """``$TOOLNEXUS_EXPORT_DIR``, else the platform's user data folder for toolnexus, ``/exports``."""
    import os

    override = os.environ.get("TOOLNEXUS_EXPORT_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir("toolnexus")) / "exports"


class ExportPrompt(ModalScreen[Path | None]):
    """Ask where to write ``what``; dismissed with the chosen path, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="export-cancel")]

    def __init__(self, what: str, default: Path) -> None:
        super().__init__()
        self.what = what
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="export-prompt"):
            yield Label(f"Export {self.what} to (enter writes, escape cancels):")
            yield Input(str(self.default), id="export-path")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    @on(Input.Submitted, "#export-path")
    def _chosen(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(Path(text).expanduser() if text else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
