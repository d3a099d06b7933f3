"""One-line prompts: where an export goes (a default under the user's data folder; Enter writes
there and the app says where it went, Escape cancels), a task id to attach to, ...; and a yes or
no before what cannot be undone (``Confirm``)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from ..widgets.footer import ModeFooter

__all__ = ["Confirm", "Prompt", "ExportPrompt", "default_export_dir"]


def default_export_dir() -> Path:
    """``$TOOLNEXUS_EXPORT_DIR``, else the platform's user data folder for toolnexus, ``/exports``."""

    override = os.environ.get("TOOLNEXUS_EXPORT_DIR")
    if override:
        return Path(override)

    return Path(platformdirs.user_data_dir("toolnexus")) / "exports"


class Prompt(ModalScreen[str | None]):
    """Ask for one line of text; dismissed with it (stripped), or None when empty or cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, question: str, default: str = "", *, box_id: str = "prompt-text") -> None:
        super().__init__()
        self.question = question
        self.default = default
        self.box_id = box_id

    def compose(self) -> ComposeResult:
        with Vertical(id="export-prompt"):
            yield Label(f"{self.question} (enter confirms, escape cancels):")
            yield Input(self.default, id=self.box_id)

    def on_mount(self) -> None:
        self.query_one(f"#{self.box_id}", Input).focus()

    @on(Input.Submitted)
    def _chosen(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ExportPrompt(Prompt):
    """Ask where to write ``what``; dismissed with the chosen path (as text), or None."""

    def __init__(self, what: str, default: Path) -> None:
        super().__init__(f"Export {what} to", str(default), box_id="export-path")


class Confirm(ModalScreen[bool]):
    """Ask before what cannot be undone: ``y`` (or enter) goes ahead, ``n`` or escape does not."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm-no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="export-prompt"):
            yield Label(self.question, id="confirm-question", markup=False)
            yield Label("y yes · n no (escape)", markup=False)
        yield ModeFooter(compact=True)  # the question's keys, not the screen's below

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
