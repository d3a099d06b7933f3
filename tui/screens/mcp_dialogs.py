"""The MCP mode's dialogs, for what an MCP server asks of the user while a session is open: an
elicitation form (accept with the values, decline, or cancel), a sampling request answered by
the toolkit's model once approved, by a reply the user writes, or refused, and the OAuth sign-in
address; and the saved servers (``o``): connect to one, save the endpoint typed, delete, import
and export the ``mcpServers`` JSON desktop hosts use. Every text in them is the server's (or a
file's): shown as plain text, never markup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widget import Widget
from textual.widgets import Checkbox, DataTable, Input, Label, Select, TextArea

from toolnexus.display import printable
from toolnexus.errors import ConfigError
from toolnexus.mcp import (
    Elicitation,
    Field,
    MCPServerSpec,
    Reply,
    Sampling,
    choice_text,
    form_values,
)

from ..saved import MCPBook
from ..widgets.safe import SafeStatic, SafeTable
from ..widgets.textbox import TextBox
from .base import Desk
from .export import Confirm, Prompt, default_export_dir

__all__ = ["ElicitDialog", "SamplingDialog", "SavedServersDialog", "SignInDialog", "ask_save"]

_DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 90; max-width: 100%; height: auto; max-height: 90%;
    border: thick $accent; background: $surface; padding: 1 2; }}
{name} VerticalScroll {{ height: auto; max-height: 24; }}
{name} Input {{ margin-bottom: 1; }}
{name} .keys {{ width: 100%; color: $text-muted; margin-top: 1; }}
"""


def _asker(said: str, task: str) -> Text:
    """Who asks: the server, for one of its tasks (which waits, ``input_required``) or not."""
    text = Text(said, "bold")
    if task:
        text.append(f" for its task {task}", "bold")
        text.append(" (input_required: it waits for your answer)", "grey62")
    return text


FIELDS = "Input, Checkbox, Select"
"""What a form's fields are (in the order shown)."""
MAX_CHOICES = 200
"""The most values of an ``enum`` a form's choice offers."""


def field_widget(field: Field, widget_id: str, suggester: Suggester | None = None) -> Widget:
    """A form field's widget (:attr:`Field.control <toolnexus.mcp.Field.control>`): a checkbox
    (space toggles it), a choice (or nothing, when it may be left out), else a text box (alt+1-6
    switch modes from it, as from every text box; ``suggester`` completes what is typed)."""
    if field.control == "checkbox":
        checked = field.schema.get("default") is True
        return Checkbox(Text(printable(field.name, 80)), checked, id=widget_id, compact=True)
    if field.control == "choice":
        choices = field.options
        options = [(Text(choice_text(v)), n) for n, v in enumerate(choices[:MAX_CHOICES])]
        chosen = field.schema.get("default")
        has_default = "default" in field.schema
        at = next((n for n, v in enumerate(choices) if has_default and v == chosen), None)
        return Select(
            options,
            prompt="choose one" if field.required else "leave it out",
            allow_blank=not (field.required and at is not None),
            value=Select.NULL if at is None else at,
            id=widget_id,
            compact=True,
        )
    return TextBox(
        field.default, placeholder=field.hint, id=widget_id, compact=True, suggester=suggester
    )


def field_text(widget: Widget, field: Field) -> str:
    """What a form's field holds, as the text :func:`~toolnexus.mcp.form_values` reads: a
    checkbox ``true`` or ``false``, a choice its value (nothing chosen: empty), a box its text."""
    if isinstance(widget, Checkbox):
        return "true" if widget.value else "false"
    if isinstance(widget, Select):
        at = widget.value
        return choice_text(field.options[at]) if isinstance(at, int) else ""
    return widget.value if isinstance(widget, Input) else ""


class ElicitDialog(ModalScreen[Reply]):
    """A server's question as a form, its fields as the tools' forms have them (a checkbox for a
    boolean, a choice for an ``enum``, else a text box): ``ctrl+r`` (or enter on the last text
    box) accepts with the values, ``ctrl+d`` declines, ``escape`` cancels; a required field left empty is said, and
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
            yield SafeStatic(_asker("The server asks", self.request.task))
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
                    yield field_widget(field, f"elicit-{i}")
            yield SafeStatic("", id="elicit-error")
            yield Label("ctrl+r accept · ctrl+d decline · escape cancel", classes="keys")

    def on_mount(self) -> None:
        fields = self._fields()
        if fields:
            fields[0].focus()

    def _fields(self) -> list[Widget]:
        return list(self.query_one("#elicit-fields").query(FIELDS))

    def action_next_field(self, step: int) -> None:
        fields = self._fields()
        if fields and self.focused in fields:
            fields[(fields.index(cast(Widget, self.focused)) + step) % len(fields)].focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        fields = self._fields()
        if event.input is fields[-1]:
            self.action_accept()
        else:
            fields[fields.index(event.input) + 1].focus()

    def action_accept(self) -> None:
        fields = self.request.fields
        texts = [field_text(w, f) for w, f in zip(self._fields(), fields, strict=False)]
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
        shown = _asker("The server asks your model to answer", self.request.task)
        shown.append("\n")
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


def where(spec: MCPServerSpec) -> str:
    """A saved server's endpoint in a few words: its URL, or its command line."""
    return spec.url or " ".join([spec.command or "", *spec.args])


def ask_save(
    app: Any,
    book: MCPBook,
    here: Callable[[str], MCPServerSpec | None],
    offered: str,
    tell: Callable[[Text], None],
    saved: Callable[[str], None] = lambda name: None,
) -> None:
    """Save the endpoint typed in the MCP mode (``here``) under a name asked for (``offered``
    first; a name already saved is replaced only once asked): ``tell`` hears what happened, with
    what the file did not get (kept for the session); ``saved`` the name saved."""
    if here("x") is None:
        tell(Text("✘ no endpoint typed to save (u goes to it)", "red"))
        return

    def named(name: str | None) -> None:
        spec = here(name) if name else None
        if spec is None:
            return
        book.load()
        if spec.name in book.specs:
            question = f"Replace the saved MCP server {printable(spec.name, 100)}?"
            app.push_screen(Confirm(question), lambda yes: put(spec) if yes else None)
        else:
            put(spec)

    def put(spec: MCPServerSpec) -> None:
        try:
            kept = book.put(spec)
        except (ConfigError, OSError) as exc:
            tell(Text(f"✘ not saved: {exc}", "red"))
            return
        saved(spec.name)
        said = Text(f"saved {spec.name} (o lists the saved servers)", "green")
        if kept:
            said.append(f"; kept for this session only, not in the file: {', '.join(kept)}")
            said.append(" (write ${NAME} to save a secret)", "grey62")
        tell(said)

    app.push_screen(Prompt("Save this MCP server as", offered), named)


class SavedServersDialog(ModalScreen[str | None]):
    """The MCP servers saved (:class:`~tui.saved.MCPBook`): ``enter`` connects to the one
    highlighted (dismissed with its name), ``s`` saves the endpoint typed in the mode under a name
    asked for, ``x`` deletes (asked first), ``i`` imports a file of Claude Desktop, Cursor, VS
    Code or the official MCP Inspector, ``e`` exports them all as ``mcpServers`` JSON;
    ``escape`` closes. A file that cannot be read is said, and nothing changes."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="SavedServersDialog") + (
        "SavedServersDialog DataTable { height: auto; max-height: 16; }"
    )
    BINDINGS = [
        Binding("enter", "connect", "Connect", id="saved-connect", priority=True),
        Binding("s", "save", "Save the endpoint", id="saved-save"),
        Binding("x,delete", "delete", "Delete", id="saved-delete"),
        Binding("i", "import_file", "Import", id="saved-import"),
        Binding("e", "export_file", "Export", id="saved-export"),
        Binding("escape", "close", "Close", id="saved-close"),
    ]

    def __init__(
        self, book: MCPBook, here: Callable[[str], MCPServerSpec | None], name: str
    ) -> None:
        super().__init__()
        self.book = book
        self.here = here
        """The endpoint typed in the mode as a spec of the given name (None: nothing typed)."""
        self.name_here = name
        """The name offered when saving it."""

    def compose(self) -> ComposeResult:
        with Vertical(id="saved-servers"):
            yield SafeStatic(Text("Saved MCP servers", "bold"))
            yield SafeTable(id="saved-list", cursor_type="row")
            yield SafeStatic("", id="saved-said")
            yield Label(
                "enter connect · s save the endpoint typed · x delete · i import · e export "
                "(mcpServers JSON) · escape close",
                classes="keys",
            )

    def on_mount(self) -> None:
        table = self.query_one("#saved-list", DataTable)
        table.add_column("name", key="name", width=20)
        table.add_column("transport", key="transport", width=9)
        table.add_column("where", key="where", width=48)
        self.book.load()
        self._draw()
        table.focus()

    def _draw(self, at: str | None = None) -> None:
        table = self.query_one("#saved-list", DataTable)
        table.clear()
        for name in self.book.specs:
            spec = self.book.get(name) or self.book.specs[name]
            kind = "stdio" if spec.command and not spec.url else spec.transport
            table.add_row(printable(name, 100), kind, printable(where(spec), 400), key=name)
        if at in self.book.specs:
            table.move_cursor(row=list(self.book.specs).index(at))
        if self.book.error:
            self._say(Text(f"✘ {self.book.error}", "red"))
        elif not self.book.specs:
            self._say("none saved yet: s saves the endpoint typed, i imports a file")

    def _say(self, said: Text | str) -> None:
        self.query_one("#saved-said", SafeStatic).update(said)

    def _chosen(self) -> str | None:
        table = self.query_one("#saved-list", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def action_connect(self) -> None:
        name = self._chosen()
        if name is not None:
            self.dismiss(name)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        ask_save(self.app, self.book, self.here, self.name_here, self._say, self._draw)

    def action_delete(self) -> None:
        name = self._chosen()
        if name is None:
            return

        def sure(yes: bool | None) -> None:
            if not yes:
                return
            try:
                self.book.drop(name)
            except (ConfigError, OSError) as exc:
                self._say(Text(f"✘ not deleted: {exc}", "red"))
                return
            self._draw()
            self._say(f"deleted {name}")

        self.app.push_screen(Confirm(f"Delete the saved MCP server {printable(name, 100)}?"), sure)

    def action_import_file(self) -> None:
        def chosen(text: str | None) -> None:
            if not text:
                return
            try:
                added = self.book.import_file(Path(text).expanduser())
            except (ConfigError, OSError) as exc:
                why = exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
                self._say(Text(f"✘ nothing imported from {text}: {why}", "red"))
                return
            self._draw(next(iter(added), None))
            said = Text(f"imported {len(added)}: {', '.join(added)}", "green")
            kept = [f"{name}: {', '.join(words)}" for name, words in added.items() if words]
            if kept:
                said.append("\nnot in the file, kept for this session: " + "; ".join(kept))
            self._say(said)

        self.app.push_screen(
            Prompt("Import MCP servers from (Claude Desktop, Cursor, VS Code, Inspector JSON)"),
            chosen,
        )

    def action_export_file(self) -> None:
        cast(Desk, self.app).ask_export(
            "the saved MCP servers (mcpServers JSON)",
            default_export_dir() / "mcp-servers.json",
            self.book.export_file,
        )
