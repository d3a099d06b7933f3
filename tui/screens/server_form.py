"""The form that starts a hosted server; a failure stays in the form, never a crash."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from toolnexus.hosting import DEMO_DESCRIPTION, EXAMPLE_SKILLS, ServerSpec, Workspace
from toolnexus.stores import STORE_FORMS

from ..saved import NameTaken
from ..widgets.footer import ModeFooter
from ..widgets.safe import SafeStatic
from .base import Desk


class ServerForm(ModalScreen[str | None]):
    """Name, skills folder, address, model, store, profiles, exposed MCP tools and auth."""

    AUTO_FOCUS = "#f-name"
    """The name box has focus once the form is composed, before it is mounted or shown: the keys
    typed right after ``n`` go to it (the app holds them till the form is mounted)."""
    BINDINGS = [
        Binding("ctrl+s", "start", "Start", id="form-start-key"),  # enter in a field does too
        Binding("escape", "cancel", "Cancel", id="form-cancel"),
    ]

    def __init__(
        self, workspace: Workspace, spec: ServerSpec | None = None, *, replacing: str | None = None
    ) -> None:
        """A new server's form, or (``spec`` and ``replacing``) the form that edits a server."""
        super().__init__()
        self.workspace = workspace
        self.initial = spec
        self.replacing = replacing

    def compose(self) -> ComposeResult:
        s = self.initial or ServerSpec(
            name=self._free_name(),
            skills=[str(EXAMPLE_SKILLS)] if EXAMPLE_SKILLS.is_dir() else [],
            mcp=True,
        )
        style, _, model = s.model.partition(":")
        with VerticalScroll(id="server-form"):
            yield Label(
                f"Edit {self.replacing}" if self.replacing else "Start a server", id="form-title"
            )
            with Grid(id="form-grid"):
                yield Label("name")
                yield Input(s.name, id="f-name", compact=True)
                yield Label("skills folder")
                yield Input(s.skills[0] if s.skills else "", id="f-skills", compact=True)
                yield Label("host")
                yield Input(s.host, id="f-host", compact=True)
                yield Label("port")
                yield Input(str(s.port), id="f-port", type="integer", compact=True)
                yield Label("model")
                yield Select(
                    [
                        ("demo (offline)", "demo"),
                        ("OpenAI-style", "openai"),
                        ("Anthropic-style", "anthropic"),
                    ],
                    value=style if style in ("demo", "openai", "anthropic") else "demo",
                    allow_blank=False,
                    id="f-style",
                    compact=True,
                )
                yield Label("model name")
                yield Input(
                    model, placeholder="e.g. gpt-4o-mini, llama3", id="f-model", compact=True
                )
                yield Label("base URL")
                yield Input(
                    s.base_url or "",
                    placeholder="default for the style; any OpenAI-compatible server",
                    id="f-base-url",
                    compact=True,
                )
                yield Label("API key env var")
                yield Input(
                    s.api_key_env or "",
                    placeholder="e.g. OPENAI_API_KEY (the key itself is never stored)",
                    id="f-key-env",
                    compact=True,
                )
                yield Label("store")
                yield Input(s.store, placeholder=STORE_FORMS, id="f-store", compact=True)
                yield Label("profiles")
                with Horizontal():
                    yield Checkbox("A2A", s.a2a, id="f-a2a", compact=True)
                    yield Checkbox("MCP", s.mcp, id="f-mcp", compact=True)
                yield Label("MCP tools")
                yield Input(
                    ", ".join(s.mcp_tools or []),
                    placeholder="blank: all but bash/write/edit; or a comma list",
                    id="f-mcp-tools",
                    compact=True,
                )
                yield Label("auth token env var")
                yield Input(
                    s.auth_token_env or "",
                    placeholder="blank: no auth; else require Bearer $VAR",
                    id="f-auth-env",
                    compact=True,
                )
            yield SafeStatic("", id="form-note")
            yield SafeStatic("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Start", variant="primary", id="form-start", compact=True)
                yield Button("Cancel", id="form-cancel-button", compact=True)
        yield ModeFooter(compact=True)  # the form's keys, not the screen's below

    def on_mount(self) -> None:
        if self.focused is None:  # (AUTO_FOCUS waits for the terminal's focus: not this)
            self.set_focus(self.query_one("#f-name", Input))

    def _free_name(self) -> str:
        """``desk-N``, N the first from the number of servers + 1 that no server has and no task
        of the book was seen under: the book counts tasks by server name and keeps a deleted
        server's, so a new server named so would show them at once as its own."""
        book = cast(Desk, self.app).book  # the form is pushed by the ToolnexusApp only
        n = len(self.workspace.servers) + 1
        while self._taken(f"desk-{n}") or book.held(f"desk-{n}"):
            n += 1
        return f"desk-{n}"

    @on(Input.Changed, "#f-name")
    def _name_changed(self, event: Input.Changed) -> None:
        """A name typed that the book holds tasks under (a deleted server's) says they come with
        it, before it starts, rather than surprise in the server's row."""
        name = event.value.strip()
        held = cast(Desk, self.app).book.held(name) if name != self.replacing else 0
        held = held if name not in self.workspace.servers else 0  # (taken: said at start)
        note = self.query_one("#form-note", Static)
        note.set_class(bool(held), "shown")
        note.update(
            f"{held} task{'s' if held != 1 else ''} seen under {name} "
            f"show{'s' if held == 1 else ''} with it (another name starts empty)"
            if held
            else ""
        )

    def _taken(self, name: str) -> str:
        """Why this form's server cannot be named ``name``: a server here or saved has it,
        whoever runs it (another toolnexus-tui's, failed here, would have its saved spec and
        port replaced); ``""`` when it may."""
        if name == self.replacing:
            return ""
        book = cast(Desk, self.app).server_book  # the form is pushed by the ToolnexusApp only
        book.poll_quietly()  # as the file is now: another window may have saved it
        server = self.workspace.servers.get(name)
        if server is None and name not in book.specs:
            return ""
        pid = book.served_by(name)
        where = (
            f"another toolnexus-tui (pid {pid}) serves it"
            if pid is not None
            else f"it is {server.state} here"
            if server is not None
            else "it is saved"
        )
        return f"name: a server named {name!r} exists ({where}); choose another name (e edits it)"

    def spec(self) -> ServerSpec:
        def value(id: str) -> str:
            return self.query_one(f"#{id}", Input).value.strip()

        style = str(self.query_one("#f-style", Select).value)
        model = "demo" if style == "demo" else f"{style}:{value('f-model')}"
        port_text = value("f-port") or "0"
        tools = [t.strip() for t in value("f-mcp-tools").split(",") if t.strip()]
        more_skills = self.initial.skills[1:] if self.initial else []  # the field shows the first
        shown: dict[str, Any] = {
            "name": value("f-name") or "toolnexus-agent",
            "skills": [value("f-skills"), *more_skills] if value("f-skills") else [],
            "host": value("f-host") or "127.0.0.1",
            "port": int(port_text) if port_text.isdigit() else -1,
            "model": model,
            "base_url": value("f-base-url") or None,
            "api_key_env": value("f-key-env") or None,
            "store": value("f-store") or "memory",
            "a2a": self.query_one("#f-a2a", Checkbox).value,
            "mcp": self.query_one("#f-mcp", Checkbox).value,
            "mcp_tools": tools or None,
            "auth_token_env": value("f-auth-env") or None,
        }
        if self.initial is None:
            return ServerSpec(**shown)
        # an edit changes what the form shows and keeps the rest (a config file, the builtins, the
        # description, metrics): the demo's description was dropped so; but the demo's words go
        # once what they describe is changed (its card said "the toolnexus demo agent" of one's
        # own skills): serve builds a description from the skills
        told = (shown["skills"], shown["model"]) != (self.initial.skills, self.initial.model)
        if told and self.initial.description == DEMO_DESCRIPTION:
            shown["description"] = ""
        return replace(self.initial, **shown)

    def action_start(self) -> None:
        self.start()

    @on(Button.Pressed, "#form-start")
    @on(Input.Submitted)
    def start(self) -> None:
        self.query_one("#form-error", Static).update("starting…")
        self._start(self.spec())

    @work(exclusive=True, group="form")
    async def _start(self, spec: ServerSpec) -> None:
        if not 0 <= spec.port <= 65535:
            self._error("port must be a number from 0 to 65535")
            return
        taken = self._taken(spec.name)
        if taken:
            self._error(taken)
            return
        try:
            if self.replacing is not None and self.replacing in self.workspace.servers:
                old = self.workspace.get(self.replacing)
                if old.state == "running":
                    await self.workspace.stop(self.replacing)
                if spec.name != self.replacing:
                    self.workspace.remove(self.replacing)
                self.replacing = spec.name if spec.name in self.workspace.servers else None
            await self.workspace.start(spec)
        except (
            Exception
        ) as exc:  # the reason of this attempt (a running namesake has no error of its own)
            held = cast(Desk, self.app).port_held(spec, exc)
            self._error(f"host/port: {held}" if held else _field_reason(spec, exc))
            return
        desk = cast(Desk, self.app)  # the form is pushed by the ToolnexusApp only
        started = self.workspace.get(spec.name).spec
        try:
            desk.remember_server(
                started,
                self.initial.name if self.initial else None,
                port_typed=self.initial is not None and spec.port != self.initial.port,
            )
        except NameTaken as exc:  # saved by another toolnexus-tui while this one started
            await self.workspace.stop(spec.name)
            self.workspace.remove(spec.name)
            desk.servers_changed.publish(None)
            self._error(f"name: {exc} (by another toolnexus-tui); choose another name")
            return
        desk.servers_changed.publish(None)
        self.notify(f"{spec.name} running at {self.workspace.get(spec.name).url}")
        self.dismiss(spec.name)

    def _error(self, text: str) -> None:
        self.query_one("#form-error", Static).update(f"✘ {text}")

    @on(Button.Pressed, "#form-cancel-button")
    def action_cancel(self) -> None:
        self.dismiss(None)


def _field_reason(spec: ServerSpec, exc: BaseException) -> str:
    """The reason a start failed, naming the field it concerns where there is one."""
    if isinstance(exc, OSError):
        return f"host/port: cannot listen on {spec.host}:{spec.port}: {exc.strerror or exc}"
    text = str(exc).strip() or type(exc).__name__
    if spec.name in text and "already running" in text:
        return f"name: {text}"
    return text
