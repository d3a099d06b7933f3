"""The MCP mode's dialogs, for what an MCP server asks of the user while a session is open: an
elicitation form (accept with the values, decline, or cancel), a sampling request answered by
the toolkit's model once approved, by a reply the user writes, or refused, and the OAuth sign-in
address. Every text in them is
the server's: shown as plain text, never markup."""

from __future__ import annotations

from typing import Any, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, TextArea

from toolnexus.mcp import Elicitation, Reply, Sampling, form_values

from ..widgets.safe import SafeStatic
from .base import Desk

__all__ = ["ElicitDialog", "SamplingDialog", "SignInDialog"]

_DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 90; height: auto; max-height: 90%; border: thick $accent;
    background: $surface; padding: 1 2; }}
{name} VerticalScroll {{ height: auto; max-height: 24; }}
{name} Input {{ margin-bottom: 1; }}
{name} .keys {{ color: $text-muted; margin-top: 1; }}
"""


class ElicitDialog(ModalScreen[Reply]):
    """A server's question as a form: ``ctrl+r`` (or enter on the last field) accepts with the
    values, ``ctrl+d`` declines, ``escape`` cancels; a required field left empty is said, and
    nothing is sent. In URL mode the address is shown, and accepting means the user went there."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="ElicitDialog")
    BINDINGS = [
        Binding("ctrl+r", "accept", "Accept", id="elicit-accept", priority=True),
        Binding("ctrl+d", "decline", "Decline", id="elicit-decline", priority=True),
        Binding("escape", "cancel", "Cancel", id="elicit-cancel"),
        Binding("tab", "next_field(1)", show=False, priority=True),
        Binding("shift+tab", "next_field(-1)", show=False, priority=True),
    ]

    def __init__(self, request: Elicitation) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="elicit"):
            yield SafeStatic(Text("The server asks", "bold"))
            yield SafeStatic(self.request.message, id="elicit-message")
            if self.request.url:
                yield SafeStatic(Text(f"\nIt asks you to visit: {self.request.url}", "cyan"))
            with VerticalScroll(id="elicit-fields"):
                for i, field in enumerate(self.request.fields):
                    label = Text(field.title, "bold")
                    label.append(
                        f"  {field.kind}" + ("  required" if field.required else ""), "cyan"
                    )
                    if field.description:
                        label.append(f"\n{field.description}", "grey62")
                    yield SafeStatic(label)
                    yield Input(
                        field.default, placeholder=field.hint, id=f"elicit-{i}", compact=True
                    )
            yield SafeStatic("", id="elicit-error")
            yield Label("ctrl+r accept · ctrl+d decline · escape cancel", classes="keys")

    def on_mount(self) -> None:
        fields = list(self.query(Input))
        if fields:
            fields[0].focus()

    def action_next_field(self, step: int) -> None:
        fields = list(self.query(Input))
        if fields and isinstance(self.focused, Input) and self.focused in fields:
            fields[(fields.index(self.focused) + step) % len(fields)].focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        fields = list(self.query(Input))
        if event.input is fields[-1]:
            self.action_accept()
        else:
            fields[fields.index(event.input) + 1].focus()

    def action_accept(self) -> None:
        texts = [i.value for i in self.query(Input)]
        try:
            values = form_values(self.request.fields, texts, sent="nothing was answered yet")
        except ValueError as exc:
            self.query_one("#elicit-error", SafeStatic).update(Text(f"✘ {exc}", "red"))
            return
        self.dismiss(Reply("accept", values))

    def action_decline(self) -> None:
        self.dismiss(Reply("decline"))

    def action_cancel(self) -> None:
        self.dismiss(Reply("cancel"))


class SamplingDialog(ModalScreen[bool | str]):
    """A server asks the toolkit's model to answer a conversation: ``y`` lets it; ``w`` writes the
    reply instead (a box below the conversation) and ``ctrl+r`` sends what is written, as the
    official Inspector lets a user answer; ``n`` (or ``escape``, out of the box) refuses. The
    server is told either way."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="SamplingDialog") + (
        "SamplingDialog #sampling-reply { height: 6; margin-top: 1; }"
    )
    BINDINGS = [
        Binding("y", "choose(True)", "Approve", id="sampling-approve"),
        Binding("w", "write", "Write the reply", id="sampling-write"),
        Binding("ctrl+r", "send", "Send the reply", id="sampling-send", priority=True),
        Binding("n", "choose(False)", "Refuse", id="sampling-refuse"),
        Binding("escape", "escape", show=False, id="sampling-escape"),
    ]

    def __init__(self, request: Sampling, model: str) -> None:
        super().__init__()
        self.request = request
        self.model = model

    def compose(self) -> ComposeResult:
        shown = Text()
        shown.append("The server asks your model to answer\n", "bold")
        shown.append(f"model: {self.model} · at most {self.request.max_tokens} tokens\n", "cyan")
        if self.request.system:
            shown.append(f"system prompt: {self.request.system}\n", "grey62")
        for role, said in self.request.messages:
            shown.append(f"\n{role}: ", "bold")
            shown.append(said)
        with Vertical(id="sampling"):
            yield VerticalScroll(SafeStatic(shown, id="sampling-view"), id="sampling-box")
            reply = TextArea(id="sampling-reply")
            reply.border_title = "your reply (w writes here, ctrl+r sends it)"
            yield reply
            yield SafeStatic("", id="sampling-error")
            yield Label(
                "y approve (the model answers) · w write the reply, ctrl+r send it · n refuse",
                classes="keys",
            )

    def on_mount(self) -> None:
        self.query_one("#sampling-box").focus()  # the keys, not the reply box

    def action_choose(self, approved: bool) -> None:
        self.dismiss(approved)

    def action_write(self) -> None:
        self.query_one("#sampling-reply", TextArea).focus()

    def action_send(self) -> None:
        written = self.query_one("#sampling-reply", TextArea).text
        if not written.strip():
            self.query_one("#sampling-error", SafeStatic).update(
                Text("✘ nothing written: w writes the reply (y lets the model answer)", "red")
            )
            return
        self.dismiss(written)

    def action_escape(self) -> None:
        """Out of the reply box (what is written stays), else refuse."""
        if isinstance(self.focused, TextArea):
            self.query_one("#sampling-box").focus()
        else:
            self.dismiss(False)


class SignInDialog(ModalScreen[None]):
    """An OAuth sign-in under way: the address where the user signs in (``o`` opens it in the
    browser, ``c`` copies it); it closes by itself when the sign-in comes back; ``escape`` gives
    up the sign-in."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="SignInDialog")
    BINDINGS = [
        Binding("o", "open", "Open", id="signin-open"),
        Binding("c", "copy", "Copy", id="signin-copy"),
        Binding("escape", "give_up", "Cancel", id="signin-cancel"),
    ]

    def __init__(self, url: str, give_up: Any) -> None:
        super().__init__()
        self.url = url
        self.give_up = give_up

    def compose(self) -> ComposeResult:
        with Vertical(id="signin"):
            yield SafeStatic(Text("This MCP server needs you to sign in (OAuth)", "bold"))
            yield SafeStatic(self.url, id="signin-url")
            yield Label(
                "o open in the browser · c copy the address · escape cancel;"
                " this closes when the sign-in comes back",
                classes="keys",
            )

    def action_open(self) -> None:
        self.app.open_url(self.url)

    def action_copy(self) -> None:
        cast(Desk, self.app).copy_text(self.url, "the sign-in address")

    def action_give_up(self) -> None:
        self.give_up()
        self.dismiss(None)
