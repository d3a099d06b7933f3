"""Mode 6, MCP: an inspector for any MCP server (a hosted server's /mcp, a URL with headers, or a
stdio server started from a command line, ``NAME=value`` words before it its environment). One
session stays open (:class:`~toolnexus.mcp.MCPSession`): the line under the endpoint says
what was negotiated (the server, the protocol version and era, its capabilities, what we offer,
the OAuth state); tabs show its Tools (a form from the tool's input schema, or raw JSON; the
result with its structured content), Resources (resources and templates; a read with its MIME
type; a subscription and its updates), Prompts (the arguments filled in, the messages), its
MCP Tasks (``tasks/list`` a page at a time; one cancelled by id, its result fetched), the
Notifications it sent (and the requests it made, and how they were answered), the Doctor's
report on it (``toolnexus doctor --mcp``), and the Server (its capabilities and instructions, the
roots we declare, the OAuth client id where it registers none), and a stdio server's stderr as
it comes (Stderr, its last lines). Servers are saved by name (``ctrl+s``, ``o`` lists them:
connect, delete, import and export the ``mcpServers`` JSON of desktop hosts and the official
Inspector; a secret only as an ``${ENV}`` reference). A server's elicitation is
answered in a form, its sampling by the toolkit's model once approved (or by a reply the user
writes), its OAuth sign-in run in the browser; every exchange (each stdio JSON-RPC message too)
lands in the Wire. All of it by keyboard."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import shlex
import urllib.parse
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.suggester import Suggester
from textual.widget import Widget
from textual.widgets import (
    DataTable,
    Header,
    Input,
    Label,
    Log,
    Static,
    TabbedContent,
    TabPane,
    TextArea,
)
from textual.worker import get_current_worker

from toolnexus.debug.mcp_doctor import mcp_doctor
from toolnexus.display import printable
from toolnexus.errors import PeerError
from toolnexus.hosting import build_client
from toolnexus.mcp import (
    LOG_LEVELS,
    Content,
    Elicitation,
    Field,
    MCPServerSpec,
    MCPSession,
    Notice,
    Reply,
    Sampling,
    TaskState,
    expand_template,
    form_fields,
    form_values,
    prompt_fields,
    split_command,
    template_fields,
)
from toolnexus.mcp.session import MAX_ITEMS, MAX_PAGES, eras
from toolnexus.mcp.transport import MAX_STDERR_LINE, MAX_STDERR_LINES, TRANSPORTS
from toolnexus.secrets import expand_env

from ..peers import config_dir, parse_headers
from ..saved import MCPBook
from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.safe import SafeStatic, SafeTable
from ..widgets.textbox import TextBox, TextPad
from .base import ModeScreen
from .export import Confirm
from .mcp_dialogs import (
    FIELDS,
    ElicitDialog,
    SamplingDialog,
    SavedServersDialog,
    SignInDialog,
    ask_save,
    field_text,
    field_widget,
)
from .peers import doctor_text

__all__ = ["MCPScreen"]

TABS = {
    "d": "mcp-tab-doctor",
    "t": "mcp-tab-tools",
    "r": "mcp-tab-resources",
    "p": "mcp-tab-prompts",
    "k": "mcp-tab-tasks",
    "n": "mcp-tab-notices",
    "i": "mcp-tab-server",
    "e": "mcp-tab-stderr",
}
TAB_WORDS = {
    "d": "Doctor tab",
    "t": "Tools tab",
    "r": "Resources tab",
    "p": "Prompts tab",
    "k": "Tasks tab",
    "n": "Notifications tab",
    "i": "Server tab",
    "e": "Stderr tab",
}
"""What ``?`` says of each tab's key."""
DOCTOR_SAYS = (
    "d probes the endpoint above: version negotiation, capabilities against what answers, each "
    "tool's schemas, errors as the spec has them, the Origin check and auth over HTTP, stdout over "
    "stdio (toolnexus doctor --mcp; nothing is called)"
)
"""The Doctor tab before its first probe of the endpoint connected to."""
SESSION_WORK = (
    "mcp",
    "mcp-read",
    "mcp-relist",
    "mcp-doctor",
    "mcp-ping",
    "mcp-level",
    "mcp-task-result",
    "mcp-task-cancel",
)
"""The groups of the workers that talk to a session (or probe its endpoint): cancelled when
another connection starts."""
NAME_SHOWN = 60
"""The most characters of a server's name and version the status line shows."""
CURSOR_SHOWN = 1000
"""The most characters of a server's cursor shown (the rest is said to exist)."""
COUNTED = ("tools", "resources", "templates", "prompts")
"""The listings the Tools tab's summary counts (the session's names), and says the server has
more of."""
NAME_WIDTH = 24
"""The widest a tool's or prompt's name column gets (a longer name is cut)."""
DESCRIPTION_WIDTH = 200
"""A description's column: wider than the list, whose edge cuts it (no horizontal scrolling)."""
APP_SCHEME = "ui://"
"""The scheme of an MCP App's resources (the MCP Apps extension: HTML a host draws)."""
SHOWN_BYTES = 64 * 1024
"""The most characters of a read resource's text shown (the rest is said to exist)."""
TASK_COLUMNS = [
    ("task", 34),
    ("status", 14),
    ("message", 30),
    ("created", 8),
    ("updated", 8),
    ("poll", 7),
    ("tool", 16),
]
"""The Tasks tab's columns: a task id of the TypeScript SDK's store is 32 characters."""
TASK_ROW = "task:"
"""A task's row key is its id after this (never the key of the row saying there are more)."""
TASK_STYLES = {
    "working": "yellow",
    "input_required": "magenta",
    "completed": "green",
    "failed": "red",
    "cancelled": "grey62",
}


class MCPScreen(ModeScreen):
    BINDINGS = [
        # ctrl+enter reaches few terminals (not tmux, xterm or VS Code's): ctrl+r and F5 do everywhere
        Binding("ctrl+r", "call", "Call", id="mcp-call-r", priority=True),
        Binding("f5", "call", "Call", show=False, id="mcp-call-f5", priority=True),
        Binding("ctrl+enter", "call", "Call", show=False, id="mcp-call", priority=True),
        Binding("ctrl+j", "toggle_raw", "Raw JSON", id="mcp-raw"),
        Binding("ctrl+l", "list_tools", "Connect", id="mcp-list"),
        Binding("s", "subscribe", "Subscribe", id="mcp-subscribe", show=False),
        # in the Tasks tab: the task highlighted cancelled (tasks/cancel), as x in the Tasks mode;
        # its result is ctrl+r's there (or enter), as a tool's call is in the Tools tab
        Binding("x", "cancel_task", "Cancel task", id="mcp-task-cancel", show=False),
        # the tabs, from anywhere but a text box (where the letters type)
        *(Binding(k, f"tab('{tab}')", TAB_WORDS[k], show=False, id=tab) for k, tab in TABS.items()),
        # Esc: from a text box to its tab's list, from a list to the endpoint only while no
        # session is open (with one, Esc then a tab's letter typed it into the endpoint, and
        # Enter there reconnected, losing the session): u goes there
        Binding("escape", "leave_input", "Back to the list", show=False, id="mcp-back"),
        Binding("u", "endpoint", "Endpoint", id="mcp-endpoint"),
        # inside an argument form, Tab goes round its fields (it went on to the URL box, and the
        # next keystroke replaced the endpoint); elsewhere Tab moves focus as everywhere (the
        # binding, refused by check_action outside the form, swallowed Tab in the tool list)
        # Home and End in a list: its first and last row (the table's own go to the first and last
        # column, and only ctrl+home / ctrl+end to the rows)
        Binding("home", "list_edge(True)", "First row", show=False, priority=True),
        Binding("end", "list_edge(False)", "Last row", show=False, priority=True),
        Binding("tab", "next_argument(1)", "Next field", show=False, priority=True),
        # a list's next page (the server's nextCursor), and every page left (bounded); a request
        # in flight cancelled (ctrl+x cuts in a text box while nothing runs); ping; the log level
        Binding("m", "more(False)", "Next page", id="mcp-more", show=False),
        Binding("M", "more(True)", "All pages", id="mcp-all", show=False),
        Binding("ctrl+x", "cancel", "Cancel", id="mcp-cancel", priority=True),
        Binding("g", "ping", "Ping", id="mcp-ping", show=False),
        Binding("l", "log_level", "Log level", id="mcp-log-level", show=False),
        # how the next connection goes: the transport of a URL, the protocol era
        Binding("ctrl+t", "choose('transport')", "Transport", id="mcp-transport", show=False),
        Binding("ctrl+o", "choose('era')", "Era", id="mcp-era", show=False),
        # the saved servers: ctrl+s saves the endpoint typed (from its box too), o lists them
        Binding("ctrl+s", "save_server", "Save server", id="mcp-save", show=False, priority=True),
        Binding("o", "saved_servers", "Saved servers", id="mcp-saved", show=False),
        Binding("shift+tab", "next_argument(-1)", "Previous field", show=False, priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.tools: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.session: MCPSession | None = None
        self.raw_mode = False
        self.shown_uri = ""
        self._form_lock = asyncio.Lock()
        self._signin: SignInDialog | None = None
        self._pending: MCPSession | None = None
        self._model: Any = None
        self._unwatch: Any = lambda: None
        self._form_of: tuple[str, str] | None = None
        """The tool whose argument form is shown (its name and schema): a highlight of the same
        tool (a list refreshed) leaves the form, and what was typed in it, as it is."""
        self._results: dict[str, Text] = {}
        """Each tool's last call (its progress, then its result), shown while that tool is
        highlighted: a call that ends after the cursor moved never shows under another tool."""
        self._result_of: str | None = None
        """The tool whose call the result pane shows (None: the pane says something else)."""
        self._typed = ("", "", "")
        """The endpoint of the last connection (as a command line or URL), and the endpoint and
        headers boxes as they were then: a reconnection refused puts them back."""
        self._cursors: dict[str, str | None] = {}
        """Each listing's cursor of the pages not read yet (the server's ``nextCursor``)."""
        self.transport, self.era = "auto", "auto"
        """How the next connection goes (ctrl+t, ctrl+o): :data:`TRANSPORTS`, :func:`eras`."""
        self._shown: dict[str, int] = {}
        """How many items of each listing were read: a list-changed refresh reads as many."""
        self.book = MCPBook(config_dir())
        """The saved servers (``o``, ``ctrl+s``), in the user's config folder."""
        self._cwd: tuple[str, str | None] = ("", None)
        """A saved stdio server's working folder, for its command line as it was loaded."""
        self.task_rows: dict[str, TaskState] = {}
        """The Tasks tab's rows: each task listed (``tasks/list``) or run here, by id, in order,
        as last heard of (a task's notice updates its row)."""
        self._task_said: dict[str, Text] = {}
        """Each task's result as fetched (or why it could not be), shown while it is highlighted."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("mcp")
        with Horizontal(id="mcp-where"):
            # focus never selects the endpoint: the next keystroke would replace it
            yield TextBox(
                placeholder="MCP endpoint URL, or a command starting a stdio server "
                "(NAME=value uvx some-mcp); enter connects",
                id="mcp-url",
                select_on_focus=False,
            )
            yield TextBox(
                placeholder="headers: Authorization: Bearer ${TOKEN}",
                id="mcp-headers",
                select_on_focus=False,
            )
        yield SafeStatic(_unconnected("auto", "auto"), id="mcp-status")
        with TabbedContent(id="mcp-tabs"):
            with TabPane("[b]t[/b] Tools", id="mcp-tab-tools"):
                with Horizontal(id="mcp-body"):
                    yield SafeTable(id="mcp-tools", cursor_type="row")
                    with Vertical(id="mcp-right"):
                        yield VerticalScroll(id="mcp-form")
                        yield TextPad("{}", id="mcp-raw-args", classes="hidden", language="json")
                        yield VerticalScroll(SafeStatic(id="mcp-result"))
            with TabPane("[b]r[/b] Resources", id="mcp-tab-resources"):
                with Horizontal(classes="mcp-pane"):
                    yield SafeTable(id="mcp-resources", cursor_type="row")
                    with Vertical(classes="mcp-side"):
                        yield VerticalScroll(id="mcp-template-form", classes="mcp-fields")
                        yield VerticalScroll(SafeStatic(id="mcp-resource"))
            with TabPane("[b]p[/b] Prompts", id="mcp-tab-prompts"):
                with Horizontal(classes="mcp-pane"):
                    yield SafeTable(id="mcp-prompts", cursor_type="row")
                    with Vertical(classes="mcp-side"):
                        yield VerticalScroll(id="mcp-prompt-form", classes="mcp-fields")
                        yield VerticalScroll(SafeStatic(id="mcp-prompt-view"))
            with TabPane("[b]k[/b] Tasks", id="mcp-tab-tasks"):
                with Vertical(classes="mcp-pane"):
                    yield SafeTable(id="mcp-tasks", cursor_type="row")
                    yield VerticalScroll(SafeStatic(id="mcp-task"), id="mcp-task-box")
            with TabPane("[b]n[/b] Notices", id="mcp-tab-notices"):
                with Vertical(classes="mcp-pane"):
                    yield SafeTable(id="mcp-notices", cursor_type="row")
                    yield VerticalScroll(SafeStatic(id="mcp-notice"), id="mcp-notice-box")
            with TabPane("[b]d[/b] Doctor", id="mcp-tab-doctor"):
                yield VerticalScroll(SafeStatic(DOCTOR_SAYS, id="mcp-doctor"), id="mcp-doctor-box")
            with TabPane("[b]i[/b] Server", id="mcp-tab-server"):
                with VerticalScroll(id="mcp-server-box"):
                    yield TextBox(
                        placeholder="roots we declare: paths or file:// URIs, comma-separated; "
                        "enter declares them",
                        id="mcp-roots",
                        select_on_focus=False,
                    )
                    yield TextBox(
                        placeholder="OAuth client id, for a server that registers no client "
                        "(empty: the client registers itself); enter connects with it",
                        id="mcp-client-id",
                        select_on_focus=False,
                    )
                    yield SafeStatic(id="mcp-server")
            with TabPane("[b]e[/b] Stderr", id="mcp-tab-stderr"):
                # a stdio server's stderr as it comes, its last lines (plain text, never markup)
                yield Log(id="mcp-stderr", max_lines=MAX_STDERR_LINES)
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        # the tabs are keys (t r p n i): Tab goes from the endpoint straight to the tool list
        self.query_one("#mcp-tabs ContentTabs").can_focus = False
        # Tab from a list goes to the first argument, not to the box that holds them
        for box in ("#mcp-form", "#mcp-template-form", "#mcp-prompt-form"):
            self.query_one(box, VerticalScroll).can_focus = False
        columns = {
            "#mcp-resources": [("", 2), ("uri", 34), ("name", 14), ("type", 16)],
            "#mcp-notices": [("time", 8), ("kind", 12), ("method", 34), ("what", 60)],
            "#mcp-tasks": TASK_COLUMNS,
        }
        for table_id, cols in columns.items():
            table = self.query_one(table_id, DataTable)
            for label, width in cols:
                table.add_column(label, key=label or "mark", width=width)
        _named_columns(self.query_one("#mcp-tools", DataTable), "tool", [])
        self._tasks_tab()
        _named_columns(self.query_one("#mcp-prompts", DataTable), "prompt", [])

    _entered = False

    def on_screen_resume(self) -> None:
        """The first time the mode is shown (its screen may be built ahead, unseen): a hosted
        server's /mcp filled in and connected."""
        if self._entered or not self.is_current:
            return
        self._entered = True
        hosted = [s for s in self.tn.workspace.running() if s.spec.mcp and s.url]
        url = self.query_one("#mcp-url", Input)
        if hosted and not url.value:
            url.value = hosted[0].url + "/mcp"
            self.action_list_tools()

    async def on_unmount(self) -> None:
        self._unwatch()
        if self.session is not None:
            await self.session.close()

    # -- keys ---------------------------------------------------------------------------------------
    def _tab(self) -> str:
        return self.query_one("#mcp-tabs", TabbedContent).active

    def action_tab(self, tab: str) -> None:
        if tab == "mcp-tab-tasks":
            if not self._lists_tasks():
                self.notify("the server lists no MCP tasks (its capabilities say so)", timeout=3)
                return
            self._list_tasks()  # the server's tasks as they are now, each time
        self.query_one("#mcp-tabs", TabbedContent).active = tab
        if tab == "mcp-tab-doctor":
            self.query_one("#mcp-doctor-box").focus()
            target = self._target()
            if target:
                self._doctor(*target)
            return
        first = {
            "mcp-tab-tools": "#mcp-tools",
            "mcp-tab-resources": "#mcp-resources",
            "mcp-tab-prompts": "#mcp-prompts",
            "mcp-tab-tasks": "#mcp-tasks",
            "mcp-tab-notices": "#mcp-notices",
            # its view, not the roots box: the next tab's letter was typed there (Tab goes in)
            "mcp-tab-server": "#mcp-server-box",
            "mcp-tab-stderr": "#mcp-stderr",
        }[tab]
        self.query_one(first).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in (
            "tab",
            "subscribe",
            "endpoint",
            "more",
            "ping",
            "log_level",
            "saved_servers",
            "cancel_task",
        ) and isinstance(self.focused, Input):
            return False  # the letter types
        if action == "cancel_task":
            return self._tab() == "mcp-tab-tasks"
        if action == "cancel":
            return bool(self.session is not None and self.session.running)
        if action == "list_edge" and not isinstance(self.focused, DataTable):
            return False  # a text box's own Home and End
        return True

    def _fields_shown(self) -> list[Widget]:
        """The shown form's fields, in order: text boxes, checkboxes and choices."""
        box = {
            "mcp-tab-tools": "#mcp-form",
            "mcp-tab-resources": "#mcp-template-form",
            "mcp-tab-prompts": "#mcp-prompt-form",
        }.get(self._tab())
        return list(self.query_one(box, VerticalScroll).query(FIELDS)) if box else []

    def action_next_argument(self, step: int) -> None:
        fields, at = self._fields_shown(), self.focused
        if at is not None and at in fields and len(fields) == 1:
            self.action_leave_input()  # a form of one field: Tab leaves it, as Esc does
        elif at is not None and at in fields:
            fields[(fields.index(at) + step) % len(fields)].focus()
        elif step > 0:
            self.focus_next()
        else:
            self.focus_previous()

    def action_leave_input(self) -> None:
        """Escape leaves a text box for its tab's list (the Server tab's: its scrolling view), where
        the mode keys work, and a list for the endpoint while no session is open."""
        lists = {
            "mcp-tab-tools": "#mcp-tools",
            "mcp-tab-resources": "#mcp-resources",
            "mcp-tab-prompts": "#mcp-prompts",
            "mcp-tab-tasks": "#mcp-tasks",
            "mcp-tab-notices": "#mcp-notices",
            "mcp-tab-doctor": "#mcp-doctor-box",
            "mcp-tab-server": "#mcp-server-box",
            "mcp-tab-stderr": "#mcp-stderr",
        }
        listing = self.query_one(lists[self._tab()])
        if self.focused is not listing:
            listing.focus()
        elif self.session is None:
            self.action_endpoint()
        else:
            self.notify("the session stays open: u goes to the endpoint", timeout=3)

    def action_list_edge(self, first: bool) -> None:
        listing = self.focused
        if isinstance(listing, DataTable) and listing.row_count:
            listing.move_cursor(row=0 if first else listing.row_count - 1)

    def action_endpoint(self) -> None:
        """The endpoint box, to connect elsewhere."""
        self.query_one("#mcp-url", Input).focus()

    # -- the endpoint -------------------------------------------------------------------------------
    def _target(self) -> tuple[str | list[str], dict[str, str] | None] | None:
        """The endpoint as typed: a URL, or a stdio server's command line (split as a shell would,
        its leading ``NAME=value`` words its environment)."""
        text = self.query_one("#mcp-url", Input).value.strip()
        if not text or text.startswith(("http://", "https://")):
            return (text, None) if text else None
        try:
            argv, env = split_command(text)
        except ValueError as exc:
            self._say(Text(f"✘ the command line: {exc}", "red"))
            return None
        if not argv:
            self._say(Text("✘ no command to run", "red"))
            return None
        return argv, env or None

    def _headers(self, target: str | list[str]) -> dict[str, str] | None:
        """The headers typed in (``${ENV}`` expanded), and a hosted server's own credential for its
        /mcp (read from its token variable); a stdio server gets none."""
        if not isinstance(target, str):
            return None
        headers = {
            k: expand_env(v)
            for k, v in parse_headers(self.query_one("#mcp-headers", Input).value).items()
        }
        for server in self.tn.workspace.running():
            env = server.spec.auth_token_env
            if env and server.url and target.startswith(server.url + "/") and os.environ.get(env):
                headers.setdefault("Authorization", f"Bearer {os.environ[env]}")
        return headers or None

    @on(Input.Submitted, "#mcp-url, #mcp-headers, #mcp-client-id")
    def _submit_url(self) -> None:
        """Enter connects. With a session open, to the same endpoint or to one that is the same
        with something added (letters meant for the tabs typed into it: ``…server.py2nn``), it
        asks first (Enter there closed the session); no puts the endpoint and headers back as they
        were and goes back to the list. Another endpoint connects at once."""
        session, target = self.session, self._target()
        if session is None or session.status != "connected" or not target:
            self.action_list_tools()
            return
        where = target[0] if isinstance(target[0], str) else shlex.join(target[0])
        was = self._typed[0]
        if where != was and not where.startswith(was):
            self.action_list_tools()
            return
        question = (
            f"Connect to {printable(where, 200)} again? The session open now closes."
            if where == was
            else f"Close the session with {printable(session.where, 200)} and connect to "
            f"{printable(where, 200)} (the same with {printable(where[len(was) :], 40)!r} "
            "added: typed there by mistake?)"
        )

        def chosen(yes: bool | None) -> None:
            if yes:
                self._connect(*target)
                return
            self.query_one("#mcp-url", Input).value = self._typed[1]
            self.query_one("#mcp-headers", Input).value = self._typed[2]
            self.action_leave_input()

        self.app.push_screen(Confirm(question), chosen)

    def action_list_tools(self) -> None:
        """Connect to the endpoint typed (a new session) and list everything it has."""
        target = self._target()
        if target:
            self._connect(*target)

    def _connect(self, target: str | list[str], env: dict[str, str] | None) -> None:
        """What is connected to is what the next Enter compares with from now on, not from when
        the connection's worker starts: an Enter on another endpoint right after (the worker not
        yet run) asked whether to connect "again" to the one still open."""
        self._typed = (
            target if isinstance(target, str) else shlex.join(target),
            self.query_one("#mcp-url", Input).value,
            self.query_one("#mcp-headers", Input).value,
        )
        self._connecting(target, env)

    @work(exclusive=True, group="mcp-connect")
    async def _connecting(self, target: str | list[str], env: dict[str, str] | None) -> None:
        where = target if isinstance(target, str) else shlex.join(target)
        self._say(f"connecting to {where} …")
        self._status(Text(f"connecting to {printable(where, 200)} …", "yellow"))
        old, self.session = self.session, None
        self._unwatch()
        for group in SESSION_WORK:  # an answer of the last session never lands in this one's views
            self.workers.cancel_group(self, group)
        if old is not None:
            await old.close()
        await self._forget()  # nothing of the last session shows while this one connects
        console = self.query_one("#mcp-stderr", Log)
        console.clear()
        console.write_line(
            f"stderr of {printable(where, 400)}, as it comes:"
            if not isinstance(target, str)
            else "an HTTP server's stderr is its own: a stdio server's shows here"
        )
        session = MCPSession(
            target,
            headers=self._headers(target),
            env=env,
            cwd=self._cwd[1] if self._typed[1] == self._cwd[0] else None,
            bus=self.tn.workspace.events,
            timeout=15,
            roots=self._roots(),
            elicit=self._elicit,
            model=self._sampler(),
            approve=self._approve,
            authorize=self._authorize,
            client_id=self.query_one("#mcp-client-id", Input).value.strip() or None,
            on_stderr=self._stderr,
            mode=self.era,
            transport=self.transport,
        )
        self._pending = session
        try:
            await session.start()
        except Exception as exc:  # nothing of the previous endpoint stays on screen
            self._close_signin()
            said = Text(f"✘ {exc}", "red")
            if "registers no client" in str(exc):
                said.append("\n  i: the Server tab has the OAuth client id box", "yellow")
            self._say(said)
            self._status(Text(f"✘ not connected: {exc}", "red"))
            return
        self._close_signin()
        self.session = session
        self._unwatch = session.watch(self._heard)
        self._tasks_tab()
        for notice in session.notices:
            self._heard(notice)
        self._show_server()
        await self._list_all(focus=True)

    def _stderr(self, line: str) -> None:
        """A line of the stdio server's stderr, shown as it comes (made printable)."""
        try:
            self.query_one("#mcp-stderr", Log).write_line(printable(line, MAX_STDERR_LINE))
        except NoMatches:  # the screen is going
            return

    async def _forget(self) -> None:
        """Nothing of the last session anywhere: its lists, each tab's side view (a read, a
        prompt's messages, a task, a notice, the server, the doctor's report), the forms and the
        raw arguments, the round trip of its ping, the resource whose updates are followed."""
        self.tools, self.resources, self.prompts = [], [], []
        self._results.clear()
        self._cursors.clear()
        self._shown.clear()
        self.task_rows.clear()
        self._task_said.clear()
        self.shown_uri, self.ping_ms = "", None
        for table in ("#mcp-tools", "#mcp-resources", "#mcp-prompts", "#mcp-tasks", "#mcp-notices"):
            self.query_one(table, DataTable).clear()
        views = ("#mcp-task", "#mcp-resource", "#mcp-prompt-view", "#mcp-notice", "#mcp-server")
        for view in views:
            self.query_one(view, SafeStatic).update("")
        self.query_one("#mcp-doctor", SafeStatic).update(DOCTOR_SAYS)
        self.query_one("#mcp-raw-args", TextArea).text = "{}"
        await self._form(None)
        async with self._form_lock:
            for box in ("#mcp-template-form", "#mcp-prompt-form"):
                await self.query_one(box, VerticalScroll).remove_children()
        self._tasks_tab()

    def _status(self, text: Text) -> None:
        self.query_one("#mcp-status", SafeStatic).update(text)

    def _show_server(self) -> None:
        s = self.session
        if s is None:
            return
        line = Text()
        line.append("● ", "green")
        named = f"{s.server_name or 'an anonymous server'} {s.server_version}".strip()
        line.append(printable(named, NAME_SHOWN), "bold")  # the line is at most 3 rows
        era = "no handshake" if s.modern else "initialize handshake"
        line.append(f"  MCP {s.protocol_version} ({era})")
        line.append("  over HTTP+SSE  " if s.transport == "sse" else "  ")
        line.append(" ".join(_capability_words(s.capabilities)) or "no capabilities", "cyan")
        line.append(f"  · we offer {', '.join(s.offered)}", "grey62")
        if s.oauth is not None and s.oauth.state != "not signed in":
            line.append(f"  · OAuth: {s.oauth.state}", "green")
        if s.log_level is not None:
            line.append(f"  · log level {s.log_level}", "grey62")
        if self.ping_ms is not None:
            line.append(f"  · ping {self.ping_ms:.1f} ms", "grey62")
        self._status(line)
        info = Text()
        info.append("server  ", "bold")
        info.append(f"{s.server_name} {s.server_version}\n")
        info.append("protocol  ", "bold")
        info.append(f"{s.protocol_version} ({era})\n")
        info.append("we offer  ", "bold")
        info.append(", ".join(s.offered) + "\n")
        info.append("log level  ", "bold")
        info.append((s.log_level or "not asked (l asks)") + "\n")
        info.append("ping  ", "bold")
        info.append(
            (f"{self.ping_ms:.1f} ms" if self.ping_ms is not None else "not sent (g pings)") + "\n"
        )
        info.append("roots  ", "bold")
        info.append((", ".join(s.roots) or "none") + "\n")
        if s.oauth is not None:
            info.append("OAuth  ", "bold")
            info.append(s.oauth.state + " (the token is never shown)\n")
        info.append("\ncapabilities\n", "bold")
        info.append(json.dumps(s.capabilities, indent=2, ensure_ascii=False) + "\n")
        if s.instructions:
            info.append("\ninstructions\n", "bold")
            info.append(s.instructions)
        self.query_one("#mcp-server", SafeStatic).update(info)

    async def _list_all(self, focus: bool = False) -> None:
        """Every list the server offers (what it declares no capability for is not asked)."""
        s = self.session
        if s is None:
            return
        caps = s.capabilities
        try:
            if "tools" in caps or not caps:
                await self._list_tools(focus)
            if "resources" in caps:
                await self._list_resources()
            if "prompts" in caps:
                await self._list_prompts()
            await self._task_page(more=False)
        except Exception as exc:
            self._say(Text(f"✘ {exc}", "red"))
            return
        self._say_counts()

    def _say_counts(self) -> None:
        """How much of each list is shown, and whether the server has more (after a connection
        and after each next page), unless a call made meanwhile keeps its result shown."""
        if self._result_of is not None:
            return
        # the lists it counts: the tasks' next page is the Tasks tab's (its own row says so)
        more = [k for k in COUNTED if self._cursors.get(k)]
        counts = ", ".join(
            _count(n, what)
            for n, what in (
                (len(self.tools), "tool"),
                (len(self.resources), "resource or template"),
                (len(self.prompts), "prompt"),
            )
        )
        if more:
            kinds = ", ".join(more[:-1]) + " and " + more[-1] if len(more) > 1 else more[0]
            counts += f" (the server has more {kinds}: m reads the next page)"
        self._say(counts)

    async def _fetch(self, kind: str, items: list[dict[str, Any]] | None = None) -> list[Any]:
        """A listing of the session (``kind``: :data:`toolnexus.mcp.session.LISTS`) as the user
        reads it, a page at a time: with no ``items``, from the start, as many pages as were read
        before (the first, on a new session); with ``items`` (those shown), the next page after
        them. The cursor left is kept for ``m`` and ``M``."""
        assert self.session is not None
        if items is None:
            page = await self.session.listing(kind, limit=max(1, self._shown.get(kind, 1)))
            items = []
        else:
            page = await self.session.page(kind, self._cursors.get(kind))
        listed = items + page.items
        self._cursors[kind], self._shown[kind] = page.next_cursor, len(listed)
        return listed

    async def _fetch_all(self, kind: str, items: list[dict[str, Any]]) -> list[Any]:
        """Every page left of a listing after ``items``, up to the session's bound."""
        assert self.session is not None
        page = await self.session.listing(
            kind, self._cursors.get(kind), limit=max(1, MAX_ITEMS - len(items))
        )
        listed = items + page.items
        self._cursors[kind], self._shown[kind] = page.next_cursor, len(listed)
        return listed

    def _more_of(self, kinds: tuple[str, ...]) -> tuple[str, str] | None:
        """The first of ``kinds`` the server has more of, and its cursor (None: none)."""
        return next(((k, c) for k in kinds if (c := self._cursors.get(k))), None)

    def _more_row(self, table: DataTable[Any], *kinds: str) -> None:
        """The row under a list the server has more of: the keys that read on, in words short
        enough for the list at 80 columns (its cursor is the side view's when it is highlighted:
        :meth:`_more_said`)."""
        if self._more_of(kinds) is None:
            return
        cells = ["…", Text("more: m next page, M all", "italic")]
        if table.id == "mcp-tasks":  # the message's column, third
            cells = ["…", "", cells[1]]
        table.add_row(*cells, *[""] * (len(table.columns) - len(cells)), key="more")

    def _more_said(self, table: DataTable[Any], *kinds: str) -> Text | None:
        """What the side view says while the row saying the server has more is highlighted: which
        list, its cursor whole (a server's cursor is opaque, of any length: the row cut it), the
        keys (None: another row is)."""
        more = self._more_of(kinds)
        if more is None or not table.row_count:
            return None
        if table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value != "more":
            return None
        said = Text(f"more {more[0]} on the server\n", "bold")
        said.append("cursor ", "grey62")
        said.append(printable(more[1], CURSOR_SHOWN))
        said.append("\nenter or m reads the next page, M every page left\n", "italic grey62")
        return said

    def action_more(self, every: bool) -> None:
        """``m``: the next page of the list shown; ``M``: every page left (up to a bound)."""
        kinds = {
            "mcp-tab-tools": ("tools",),
            "mcp-tab-resources": ("resources", "templates"),
            "mcp-tab-prompts": ("prompts",),
            "mcp-tab-tasks": ("tasks",),
        }.get(self._tab())
        if self.session is None or kinds is None:
            return
        if not any(self._cursors.get(k) for k in kinds):
            self.notify("the server has no more of this list", timeout=3)
            return
        self._read_on(kinds, every)

    @work(group="mcp-relist")
    async def _read_on(self, kinds: tuple[str, ...], every: bool) -> None:
        read = self._fetch_all if every else self._fetch
        try:
            if kinds == ("tasks",):
                await self._task_page(more=True, every=every)
            elif kinds == ("tools",):
                await self._list_tools(listed=await read("tools", self.tools))
            elif kinds == ("prompts",):
                await self._list_prompts(listed=await read("prompts", self.prompts))
            else:
                res = [r for r in self.resources if not r["template"]]
                tpl = [r for r in self.resources if r["template"]]
                for kind, items in (("resources", res), ("templates", tpl)):
                    if self._cursors.get(kind):
                        got = await read(kind, [_plain(r) for r in items])
                        if kind == "resources":
                            res = [{**r, "template": False} for r in got]
                        else:
                            tpl = [{**t, "template": True} for t in got]
                        if not every:
                            break
                self.resources = res + tpl
                self._draw_resources()
        except Exception as exc:  # noqa: BLE001 - said where the lists are
            self.notify(f"MCP: the next page failed: {exc}", severity="error")
            return
        self._say_counts()

    def _on_more(self, table: DataTable[Any]) -> bool:
        """Whether the highlighted row is the one saying the server has more (Enter reads on)."""
        if not table.row_count:
            return False
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key != "more":
            return False
        self.action_more(False)
        return True

    def action_choose(self, what: str) -> None:
        """ctrl+t: the next transport of a URL (auto, streamable HTTP, HTTP+SSE); ctrl+o: the next
        era (auto, the handshake, 2026-07-28). Either is for the next connection (ctrl+l)."""
        if what == "transport":
            self.transport = TRANSPORTS[(TRANSPORTS.index(self.transport) + 1) % len(TRANSPORTS)]
        else:
            known = eras()
            self.era = (
                known[(known.index(self.era) + 1) % len(known)] if self.era in known else "auto"
            )
        said = f"transport {self.transport} · era {self.era}: the next connection (ctrl+l)"
        self.notify(said, timeout=3)
        if self.session is None:
            self._status(Text(_unconnected(self.transport, self.era), "grey62"))

    # -- the saved servers ----------------------------------------------------------------------------
    def _spec_here(self, name: str) -> MCPServerSpec | None:
        """The endpoint as typed (``${ENV}`` references kept), with the headers, the transport,
        the era and the OAuth client id, as a server named ``name``; None when nothing is typed."""
        text = self.query_one("#mcp-url", Input).value.strip()
        if not text:
            return None
        era = self.era if self.era in ("auto", "legacy") else "modern"
        client_id = self.query_one("#mcp-client-id", Input).value.strip() or None
        if text.startswith(("http://", "https://")):
            headers = parse_headers(self.query_one("#mcp-headers", Input).value)
            return MCPServerSpec(
                name,
                url=text,
                headers=headers,
                transport=self.transport,
                era=era,
                client_id=client_id,
            )
        try:
            argv, env = split_command(text, expand=False)
        except ValueError:
            return None
        if not argv:
            return None
        cwd = self._cwd[1] if self._cwd[0] == self.query_one("#mcp-url", Input).value else None
        return MCPServerSpec(
            name,
            command=argv[0],
            args=argv[1:],
            env=env or None,
            cwd=cwd,
            era=era,
            client_id=client_id,
        )

    def _name_here(self) -> str:
        """The name offered when saving: the server's own, else the endpoint's host or command."""
        if self.session is not None and self.session.server_name:
            return printable(self.session.server_name, 60)
        spec = self._spec_here("")
        if spec is None:
            return ""
        if spec.url:
            return urllib.parse.urlsplit(spec.url).netloc or "server"
        return os.path.basename(spec.args[-1] if spec.args else spec.command or "") or "server"

    def action_save_server(self) -> None:
        """ctrl+s: the endpoint typed saved under a name asked for."""
        ask_save(
            self.app,
            self.book,
            self._spec_here,
            self._name_here(),
            lambda said: self.notify(
                said.plain, severity="error" if said.plain[:1] == "✘" else "information"
            ),
        )

    def action_saved_servers(self) -> None:
        """o: the saved servers; the one chosen is put in the boxes and connected."""

        def chosen(name: str | None) -> None:
            spec = self.book.get(name) if name else None
            if spec is not None:
                self._load(spec)

        self.app.push_screen(
            SavedServersDialog(self.book, self._spec_here, self._name_here()), chosen
        )

    def _load(self, spec: MCPServerSpec) -> None:
        """A saved server into the endpoint, headers and client id boxes, its transport and era
        chosen, and connected."""
        if spec.url:
            endpoint = spec.url
            headers = "; ".join(f"{k}: {v}" for k, v in spec.headers.items())
        else:
            words = [f"{k}={v}" for k, v in (spec.env or {}).items()]
            endpoint = " ".join(
                [*map(shlex.quote, words), shlex.join([spec.command or "", *spec.args])]
            )
            headers = ""
        self.query_one("#mcp-url", Input).value = endpoint
        self.query_one("#mcp-headers", Input).value = headers
        self.query_one("#mcp-client-id", Input).value = spec.client_id or ""
        self._cwd = (endpoint, spec.cwd)
        self.transport = spec.transport if spec.transport in TRANSPORTS else "auto"
        modern = [e for e in eras() if e not in ("auto", "legacy")]
        self.era = (
            spec.era
            if spec.era in eras()
            else modern[-1]
            if spec.era == "modern" and modern
            else "auto"
        )
        self.action_list_tools()

    # -- cancel, ping, the log level ----------------------------------------------------------------
    def action_cancel(self) -> None:
        """ctrl+x: every request of the user in flight (a call, a read, a prompt) cancelled; the
        server is told."""
        s = self.session
        if s is None:
            return
        cancelled = s.cancel()
        if cancelled:
            self.notify(f"cancelled: {', '.join(cancelled)}", timeout=4)
        self.refresh_bindings()

    def action_ping(self) -> None:
        if self.session is None:
            self.notify("connect first", severity="warning")
            return
        self._ping()

    @work(group="mcp-ping")
    async def _ping(self) -> None:
        s = self.session
        if s is None:
            return
        try:
            took = await s.ping()
        except Exception as exc:  # noqa: BLE001 - said in a toast
            self.notify(str(exc), severity="warning")
            return
        self.ping_ms = took * 1000
        self.notify(f"ping: answered in {self.ping_ms:.1f} ms", timeout=4)
        self._show_server()

    ping_ms: float | None = None

    def action_log_level(self) -> None:
        """``l``: the next log level (debug first, round again after emergency), asked of the
        server."""
        s = self.session
        if s is None:
            self.notify("connect first", severity="warning")
            return
        at = LOG_LEVELS.index(s.log_level) + 1 if s.log_level in LOG_LEVELS else 0
        self._set_level(LOG_LEVELS[at % len(LOG_LEVELS)])

    @work(group="mcp-level", exclusive=True)
    async def _set_level(self, level: str) -> None:
        s = self.session
        if s is None:
            return
        try:
            await s.set_level(level)
        except Exception as exc:  # noqa: BLE001 - said in a toast
            self.notify(str(exc), severity="warning")
            return
        self.notify(f"log level: {level} and above", timeout=3)
        self._show_server()

    async def _list_tools(self, focus: bool = False, listed: list[Any] | None = None) -> None:
        """List the tools again, the cursor on the tool it was on (a list-changed refresh moved it
        to the first, whose form then showed the last result). The highlighted tool's form is
        built before the rows show, and ``focus`` (a new session) takes the list from the
        endpoint box in the same step: a key pressed as soon as the tools show is never lost nor
        sent to a form still empty (a call went out without its arguments). An endpoint typed
        meanwhile keeps the box: its Enter went to the list, and the next Enter on the box asked
        to connect "again" to the one typed before."""
        assert self.session is not None
        if listed is None:
            listed = await self._fetch("tools")
        table = self.query_one("#mcp-tools", DataTable)
        was = self._tool()
        names = [t["name"] for t in listed]
        row = names.index(was["name"]) if was and was["name"] in names else 0
        if was is None or was["name"] not in names:
            row = max(0, min(table.cursor_row, len(listed) - 1))
        await self._form(listed[row] if listed else None)
        self.tools = listed
        _named_columns(table, "tool", names)
        for i, tool in enumerate(listed):
            table.add_row(
                tool["name"],
                tool["description"].splitlines()[0] if tool["description"] else "",
                key=str(i),
            )
        self._more_row(table, "tools")
        if listed:
            table.move_cursor(row=row)
        at = self.focused
        typing = self.query_one("#mcp-url", Input).value != self._typed[1]  # another endpoint
        if focus and listed and (at is None or at.id in ("mcp-url", "mcp-headers")) and not typing:
            table.focus()

    async def _list_resources(self) -> None:
        assert self.session is not None
        listed = [{**r, "template": False} for r in await self._fetch("resources")]
        try:  # a server may serve resources and refuse templates/list (the paged test server)
            listed += [{**t, "template": True} for t in await self._fetch("templates")]
        except PeerError as exc:
            self.notify(f"MCP: no resource templates: {exc}", severity="warning", timeout=4)
        self.resources = listed
        self._draw_resources()
        await self._template_form()

    def _draw_resources(self) -> None:
        table = self.query_one("#mcp-resources", DataTable)
        at = table.cursor_row
        table.clear()
        subscribed = self.session.subscribed if self.session is not None else set()
        for i, r in enumerate(self.resources):
            uri = r.get("uri_template") if r["template"] else r.get("uri")
            mark = "T" if r["template"] else ("●" if uri in subscribed else _app_mark(uri or ""))
            table.add_row(mark, uri or "", r.get("name", ""), r.get("mime_type", ""), key=str(i))
        self._more_row(table, "resources", "templates")
        if table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1))

    async def _list_prompts(self, listed: list[Any] | None = None) -> None:
        assert self.session is not None
        if listed is None:
            listed = await self._fetch("prompts")
        table = self.query_one("#mcp-prompts", DataTable)
        was = self._prompt()
        names = [p["name"] for p in listed]
        self.prompts = listed
        _named_columns(table, "prompt", names)
        for i, p in enumerate(listed):
            described = p.get("description") or ""
            table.add_row(p["name"], described.splitlines()[0] if described else "", key=str(i))
        self._more_row(table, "prompts")
        if was is not None and was["name"] in names:  # the cursor stays on its prompt
            table.move_cursor(row=names.index(was["name"]))
        await self._prompt_form()

    # -- what the server tells and asks -------------------------------------------------------------
    def _heard(self, notice: Notice) -> None:
        try:
            table = self.query_one("#mcp-notices", DataTable)
        except NoMatches:  # the screen is going (the app quits while the session ends)
            return
        key = str(table.row_count)
        style = {
            "request": "magenta",
            "log": "grey62",
            "progress": "cyan",
            "session": "yellow",
            "task": "blue",
        }
        table.add_row(
            notice.clock,
            Text(notice.kind, style.get(notice.kind, "")),
            notice.method,
            notice.summary,
            key=key,
        )
        if table.cursor_row == table.row_count - 2 or table.row_count == 1:
            table.move_cursor(row=table.row_count - 1)  # follow the newest unless looking back
        if notice.kind == "task":
            self._draw_tasks()
        if notice.method.endswith("/list_changed"):
            self._relist(notice.method)
        elif notice.method == "notifications/resources/updated" and isinstance(notice.params, dict):
            if notice.params.get("uri") == self.shown_uri:
                self._read(self.shown_uri, updated=True)

    @work(group="mcp-relist")
    async def _relist(self, method: str) -> None:
        try:
            if "tools" in method:
                await self._list_tools()
            elif "prompts" in method:
                await self._list_prompts()
            elif "resources" in method:
                await self._list_resources()
        except Exception as exc:  # noqa: BLE001 - said where the lists are
            self.notify(f"MCP: listing again failed: {exc}", severity="warning")

    async def _elicit(self, request: Elicitation) -> Reply:
        answered: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()

        def chosen(reply: Reply | None) -> None:
            if not answered.done():
                answered.set_result(reply or Reply("cancel"))

        self.app.push_screen(ElicitDialog(request), chosen)
        return await answered

    async def _approve(self, request: Sampling) -> bool | str:
        """True: the model answers; False: refused; a text: the reply the user wrote."""
        answered: asyncio.Future[bool | str] = asyncio.get_running_loop().create_future()

        def chosen(approved: bool | str | None) -> None:
            if not answered.done():
                answered.set_result(approved if isinstance(approved, str) else bool(approved))

        model = getattr(self._model, "model", "the model")
        self.app.push_screen(SamplingDialog(request, str(model)), chosen)
        return await answered

    async def _authorize(self, url: str) -> None:
        """The sign-in address of the session connecting: shown until the sign-in comes back."""
        session = self._pending

        def give_up() -> None:
            if session is not None and session.oauth is not None:
                session.oauth.cancel()

        self._close_signin()
        self._signin = SignInDialog(url, give_up)
        self.app.push_screen(self._signin)

    def _close_signin(self) -> None:
        dialog, self._signin = self._signin, None
        if dialog is not None and dialog.is_attached:
            dialog.dismiss(None)

    def _sampler(self) -> Any:
        """The toolkit's model: the first running hosted server's, else the demo model."""
        hosted = list(self.tn.workspace.running())
        try:
            spec = hosted[0].spec if hosted else None
            self._model = (
                build_client(spec.model, spec.base_url, spec.api_key_env)
                if spec is not None
                else build_client()
            )
        except Exception:  # noqa: BLE001 - a model that cannot be built answers no sampling
            self._model = build_client()
        return self._model

    def _roots(self) -> list[str]:
        text = self.query_one("#mcp-roots", Input).value
        return [r.strip() for r in text.split(",") if r.strip()]

    @on(Input.Submitted, "#mcp-roots")
    def _declare_roots(self) -> None:
        self._send_roots(self._roots())

    @work(group="mcp")
    async def _send_roots(self, roots: list[str]) -> None:
        if self.session is None:
            self.notify("the roots go to the next server you connect to")
            return
        try:
            await self.session.set_roots(roots)
        except Exception as exc:  # noqa: BLE001
            self.notify(f"MCP: the roots were not sent: {exc}", severity="error")
            return
        self._show_server()
        self.notify(f"roots declared: {', '.join(self.session.roots) or 'none'}")

    # -- tools --------------------------------------------------------------------------------------
    @on(DataTable.RowSelected, "#mcp-tools")
    def _tool_chosen(self) -> None:
        """Enter on a tool: into its first argument (the raw JSON in raw mode); a tool that takes
        none is called; the row saying the server has more reads its next page."""
        if self._on_more(self.query_one("#mcp-tools", DataTable)):
            return
        if self.raw_mode:
            self.query_one("#mcp-raw-args", TextArea).focus()
        elif fields := self._fields_shown():
            fields[0].focus()
        else:
            self.action_call()

    @on(Input.Submitted, "#mcp-form Input")
    def _argument_submitted(self, event: Input.Submitted) -> None:
        """Enter in an argument: on to the next one; in the last, the call."""
        fields = self._fields_shown()
        if event.input is fields[-1]:
            self.action_call()
        else:
            fields[fields.index(event.input) + 1].focus()

    def _tool(self) -> dict[str, Any] | None:
        return _row_of(self.query_one("#mcp-tools", DataTable), self.tools)

    @on(DataTable.RowHighlighted, "#mcp-tools")
    async def _tool_highlighted(self) -> None:
        tool = self._tool()
        if tool is not None:
            self._show_result(tool["name"])
            await self._form(tool)
        else:  # the row saying the server has more: its words where the form was
            tools = self.query_one("#mcp-tools", DataTable)
            await self._form(None, self._more_said(tools, "tools"))

    def _show_result(self, name: str, text: Text | str | None = None) -> None:
        """Keep ``text`` as tool ``name``'s last call (None: keep what it has) and show it if that
        tool is the one highlighted; a tool never called leaves the pane to what it says."""
        if text is not None:
            self._results[name] = Text(text) if isinstance(text, str) else text
        tool = self._tool()
        if tool is None or tool["name"] != name:
            return
        kept = self._results.get(name)
        if kept is not None:
            self._result_of = name
            self.query_one("#mcp-result", Static).update(kept)
        elif self._result_of is not None:  # another tool's result: not this one's
            self._result_of = None
            self.query_one("#mcp-result", Static).update("")

    def _say(self, text: Text | str) -> None:
        """The result pane says something of no tool (connecting, the lists, an error)."""
        self._result_of = None
        self.query_one("#mcp-result", Static).update(text)

    async def _form(self, tool: dict[str, Any] | None, note: Text | None = None) -> None:
        """Build the argument form of ``tool`` (None: empty it, or ``note`` in it); the form of the tool already shown
        (same name and schema) is left as it is, with what was typed. One build at a time: the
        listing and a row highlight both ask for one, and interleaved builds mounted the same ids
        twice."""
        async with self._form_lock:
            key = (
                (tool["name"], json.dumps(tool.get("input_schema"), sort_keys=True, default=str))
                if tool
                else None
            )
            if key is not None and key == self._form_of:
                return
            self._form_of = key
            form = self.query_one("#mcp-form", VerticalScroll)
            fields = form_fields((tool or {}).get("input_schema"))
            title = Text(tool["name"], "bold") if tool else note
            if tool and tool.get("output_schema"):
                title.append("  returns structured content", "grey62")  # type: ignore[union-attr]
            await _build(form, title, fields, "arg", "no arguments" if tool else "")
            if tool is not None:
                self.query_one("#mcp-raw-args", TextArea).text = json.dumps(
                    {f.name: f.schema["default"] for f in fields if "default" in f.schema},
                    indent=2,
                )

    def arguments(self, tool: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments from the form (or the raw JSON); ValueError names the required ones
        left empty: such a call is not sent (it went out as ``{}`` and the tool said why)."""
        fields = form_fields(tool["input_schema"])
        if not self.raw_mode:
            texts = [
                field_text(self.query_one(f"#arg-{i}"), field) for i, field in enumerate(fields)
            ]
            return form_values(fields, texts)
        value = json.loads(self.query_one("#mcp-raw-args", TextArea).text or "{}")
        if not isinstance(value, dict):
            raise ValueError("the raw arguments must be a JSON object")
        missing = [f.name for f in fields if f.required and f.name not in value]
        if missing:
            raise ValueError(
                f"fill in the required argument{'s' if len(missing) > 1 else ''}: "
                + ", ".join(printable(n, 80) for n in missing)
                + " (nothing was sent)"
            )
        return value

    def action_toggle_raw(self) -> None:
        self.raw_mode = not self.raw_mode
        self.query_one("#mcp-raw-args").set_class(not self.raw_mode, "hidden")
        self.query_one("#mcp-form").set_class(self.raw_mode, "hidden")

    def action_call(self) -> None:
        """ctrl+r: call the tool, read the resource (a template's filled in), get the prompt or
        fetch the task's result, as the tab shown says."""
        tab = self._tab()
        if tab == "mcp-tab-resources":
            self._read_chosen()
            return
        if tab == "mcp-tab-prompts":
            self._get_prompt()
            return
        if tab == "mcp-tab-tasks":
            self._result_chosen()
            return
        tool = self._tool()
        if tool is None:
            self.notify("connect first (enter on the URL)", severity="warning")
            return
        try:
            args = self.arguments(tool)
        except ValueError as exc:
            self._show_result(tool["name"], Text(f"✘ {exc}", "red"))
            return
        self._call(tool["name"], args)

    @work(exclusive=True, group="mcp")
    async def _call(self, name: str, args: dict[str, Any]) -> None:
        session = self.session
        if session is None:
            self._show_result(name, Text("✘ not connected", "red"))
            return
        self._show_result(name, f"calling {name} … (ctrl+x cancels)")
        self.call_after_refresh(self.refresh_bindings)  # ctrl+x in the footer while it runs

        async def progress(p: Any) -> None:
            amount = f"{p.done:g}" + (f"/{p.total:g}" if p.total is not None else "")
            self._show_result(name, f"calling {name} … {amount} {p.message or ''} (ctrl+x cancels)")

        task: list[TaskState] = []

        def on_task(state: TaskState) -> None:
            task[:] = [state]
            if not state.done:
                self._show_result(name, Text(f"{name}: {state.summary} (ctrl+x cancels)"))

        try:
            outcome = await session.call(name, args, progress=progress, on_task=on_task)
        except Exception as exc:
            said = Text(f"✘ {exc}", "red")
            if task:  # the task's last state: cancelled (ctrl+x), or what it was when it failed
                said.append(f"\n{session.tasks.get(task[0].task_id, task[0]).summary}")
            self._show_result(name, said)
            return
        finally:
            self.refresh_bindings()
        self.last_result = outcome
        ran_as = f"ran as {task[0].summary}" if task else ""
        self._show_result(name, _outcome_text(f"{name} {json.dumps(args)}", outcome, ran_as))
        shown = self._tool()
        if shown is None or shown["name"] != name:
            self.notify(f"{name} answered: its result shows under {name}", timeout=4)

    # -- tasks --------------------------------------------------------------------------------------
    def _lists_tasks(self) -> bool:
        """Whether the session's server lists its tasks (``tasks.list``, the handshake era)."""
        s = self.session
        return bool(s and not s.modern and "list" in (s.capabilities.get("tasks") or {}))

    def _tasks_tab(self) -> None:
        """The Tasks tab only for a server that lists its tasks, as the official Inspector offers
        what the server has (the strip fits 80 columns with it too: bc15e9d)."""
        tabs = self.query_one("#mcp-tabs", TabbedContent)
        if self._lists_tasks():
            tabs.show_tab("mcp-tab-tasks")
            return
        if tabs.active == "mcp-tab-tasks":
            self.action_tab("mcp-tab-tools")
        tabs.hide_tab("mcp-tab-tasks")

    @work(group="mcp-relist")
    async def _list_tasks(self) -> None:
        try:
            await self._task_page(more=False)
        except Exception as exc:  # noqa: BLE001 - said where the tasks are
            self.query_one("#mcp-task", SafeStatic).update(Text(f"✘ {exc}", "red"))

    async def _task_page(self, *, more: bool, every: bool = False) -> None:
        """The server's tasks (``tasks/list``): from the first page (as many pages as were read
        before), or with ``more`` the next page after those shown (``every``: all left, up to
        :data:`MAX_ITEMS`)."""
        s = self.session
        if s is None or not self._lists_tasks():
            return
        cursor = self._cursors.get("tasks") if more else None
        listed = dict(self.task_rows) if more else {}
        want = len(listed) + 1 if more else max(1, self._shown.get("tasks", 1))
        for _ in range(MAX_PAGES):
            states, cursor = await s.list_tasks(cursor)
            listed.update((t.task_id, t) for t in states)
            if not cursor or len(listed) >= MAX_ITEMS or (not every and len(listed) >= want):
                break
        self._cursors["tasks"], self._shown["tasks"] = cursor, len(listed)
        self.task_rows = dict(list(listed.items())[:MAX_ITEMS])
        self._draw_tasks(again=True)

    def _draw_tasks(self, again: bool = False) -> None:
        """The Tasks tab's rows as last heard of: each row updated in place (a task's notice), a
        task run here since the list was read added at its end (when all of it was read);
        ``again``: the rows drawn afresh, the cursor kept on its task."""
        s, table = self.session, self.query_one("#mcp-tasks", DataTable)
        if s is None:
            return
        changed = []
        for task_id, shown in self.task_rows.items():
            heard = s.tasks.get(task_id)
            if heard is not None and heard != shown:
                self.task_rows[task_id] = heard
                changed.append(heard)
        new = [t for i, t in s.tasks.items() if i not in self.task_rows and t.tool]
        if new and not self._cursors.get("tasks") and len(self.task_rows) < MAX_ITEMS:
            self.task_rows.update((t.task_id, t) for t in new)
            again = True
        if not again:
            for state in changed:
                if TASK_ROW + state.task_id in table.rows:
                    for column, cell in zip(TASK_COLUMNS, _task_cells(state), strict=True):
                        table.update_cell(TASK_ROW + state.task_id, column[0], cell)
            self._task_highlighted()
            return
        was = self._task_shown()
        table.clear()
        for task_id, state in self.task_rows.items():
            table.add_row(*_task_cells(state), key=TASK_ROW + task_id)
        self._more_row(table, "tasks")
        ids = list(self.task_rows)
        if was is not None and was.task_id in ids:
            table.move_cursor(row=ids.index(was.task_id))
        self._task_highlighted()

    def _task_shown(self) -> TaskState | None:
        """The task of the highlighted row (None: no task, or the row saying there are more)."""
        table = self.query_one("#mcp-tasks", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value or ""
        return self.task_rows.get(key.removeprefix(TASK_ROW)) if key.startswith(TASK_ROW) else None

    @on(DataTable.RowHighlighted, "#mcp-tasks")
    def _task_highlighted(self) -> None:
        """The highlighted task's details, and its result once fetched."""
        state = self._task_shown()
        if state is None:
            more = self._more_said(self.query_one("#mcp-tasks", DataTable), "tasks")
            self.query_one("#mcp-task", SafeStatic).update(more or "")
            return
        text = Text()
        text.append(f"task {state.task_id}\n", "bold")
        text.append(state.status, TASK_STYLES.get(state.status, ""))
        text.append(f": {state.message}\n" if state.message else "\n")
        for label, value in (
            ("created", state.created),
            ("updated", state.updated),
            ("poll every", _poll_text(state.poll_interval)),
            ("runs", state.tool and f"a call of {state.tool}"),
        ):
            if value:
                text.append(f"{label}  ", "grey62")
                text.append(f"{value}\n")
        said = self._task_said.get(state.task_id)
        if said is not None:
            text.append("\n")
            text.append_text(said)
        elif state.status != "cancelled":
            text.append(
                "\nctrl+r (or enter) fetches its result (tasks/result)"
                + ("" if state.done else ", once it ended; x cancels it"),
                "italic grey62",
            )
        self.query_one("#mcp-task", SafeStatic).update(text)

    @on(DataTable.RowSelected, "#mcp-tasks")
    def _task_chosen(self) -> None:
        if not self._on_more(self.query_one("#mcp-tasks", DataTable)):
            self._result_chosen()

    def _result_chosen(self) -> None:
        state = self._task_shown()
        if state is None:
            self.notify("no task to fetch the result of: k lists them", severity="warning")
            return
        self._task_result(state.task_id)

    @work(group="mcp-task-result")
    async def _task_result(self, task_id: str) -> None:
        """``tasks/result``: the server answers once the task ended (asking meanwhile what the task
        needs: the forms and dialogs of elicitation and sampling); ctrl+x stops waiting."""
        s = self.session
        if s is None:
            return
        self._task_said[task_id] = Text(
            "waiting for its result (tasks/result) … (ctrl+x stops waiting)", "yellow"
        )
        self._task_highlighted()
        self.call_after_refresh(self.refresh_bindings)
        try:
            outcome = await s.task_result(task_id)
        except Exception as exc:  # noqa: BLE001 - said under the task
            self._task_said[task_id] = Text(f"✘ {exc}", "red")
        else:
            self._task_said[task_id] = _outcome_text("result (tasks/result)", outcome)
        finally:
            self.refresh_bindings()
        self._draw_tasks()

    def action_cancel_task(self) -> None:
        """x in the Tasks tab: the highlighted task cancelled (``tasks/cancel``, by its id)."""
        state = self._task_shown()
        if state is None:
            self.notify("no task to cancel: k lists them", severity="warning")
            return
        self._cancel_task(state.task_id)

    @work(group="mcp-task-cancel")
    async def _cancel_task(self, task_id: str) -> None:
        s = self.session
        if s is None:
            return
        try:
            state = await s.cancel_task(task_id)
        except Exception as exc:  # noqa: BLE001 - said in a toast: the server refused
            self.notify(f"task {task_id} was not cancelled: {exc}", severity="warning")
            return
        self.notify(f"task {task_id}: {state.status}", timeout=4)
        self._draw_tasks()

    # -- resources ----------------------------------------------------------------------------------
    def _resource(self) -> dict[str, Any] | None:
        return _row_of(self.query_one("#mcp-resources", DataTable), self.resources)

    @on(DataTable.RowHighlighted, "#mcp-resources")
    async def _resource_highlighted(self) -> None:
        await self._template_form()

    async def _template_form(self) -> None:
        async with self._form_lock:
            chosen = self._resource()
            box = self.query_one("#mcp-template-form", VerticalScroll)
            if chosen is None or not chosen["template"]:
                table = self.query_one("#mcp-resources", DataTable)
                said = None if chosen else self._more_said(table, "resources", "templates")
                await _build(box, said, [], "tvar", "")
                return
            template = chosen.get("uri_template", "")
            await _build(
                box,
                Text(template, "bold"),
                template_fields(template),
                "tvar",
                "",
                lambda f: Completion(self, "template", template, f.name),
            )

    @on(DataTable.RowSelected, "#mcp-resources")
    def _resource_chosen(self) -> None:
        if self._on_more(self.query_one("#mcp-resources", DataTable)):
            return
        fields = self._fields_shown()
        if fields:
            fields[0].focus()
        else:
            self._read_chosen()

    @on(Input.Submitted, "#mcp-template-form Input")
    def _template_submitted(self, event: Input.Submitted) -> None:
        fields = self._fields_shown()
        if event.input is fields[-1]:
            self._read_chosen()
        else:
            fields[fields.index(event.input) + 1].focus()

    def _read_chosen(self) -> None:
        chosen = self._resource()
        if chosen is None:
            self.notify("no resource to read: connect first", severity="warning")
            return
        if not chosen["template"]:
            self._read(chosen["uri"])
            return
        template = chosen.get("uri_template", "")
        fields = template_fields(template)
        texts = [field_text(w, f) for w, f in zip(self._fields_shown(), fields, strict=False)]
        try:
            values = form_values(fields, texts)
        except ValueError as exc:
            self.query_one("#mcp-resource", SafeStatic).update(Text(f"✘ {exc}", "red"))
            return
        self._read(expand_template(template, {k: str(v) for k, v in values.items()}))

    @work(group="mcp-read")
    async def _read(self, uri: str, updated: bool = False) -> None:
        view = self.query_one("#mcp-resource", SafeStatic)
        if self.session is None:
            return
        if not updated:
            view.update(f"reading {uri} …")
        try:
            contents = await self.session.read(uri)
        except Exception as exc:
            view.update(Text(f"✘ {exc}", "red"))
            return
        self.shown_uri = uri
        view.update(_contents_text(uri, contents, self.session.subscribed, updated))

    def action_subscribe(self) -> None:
        if self._tab() != "mcp-tab-resources":
            return
        chosen = self._resource()
        uri = chosen["uri"] if chosen is not None and not chosen["template"] else self.shown_uri
        if uri:
            self._subscribe(uri)

    @work(group="mcp")
    async def _subscribe(self, uri: str) -> None:
        s = self.session
        if s is None:
            return
        try:
            if uri in s.subscribed:
                await s.unsubscribe(uri)
                self.notify(f"unsubscribed from {uri}")
            else:
                await s.subscribe(uri)
                self.notify(f"subscribed to {uri}: its updates show as they come")
        except Exception as exc:
            self.notify(str(exc), severity="error")
            return
        self._draw_resources()

    # -- prompts ------------------------------------------------------------------------------------
    def _prompt(self) -> dict[str, Any] | None:
        return _row_of(self.query_one("#mcp-prompts", DataTable), self.prompts)

    @on(DataTable.RowHighlighted, "#mcp-prompts")
    async def _prompt_highlighted(self) -> None:
        await self._prompt_form()

    async def _prompt_form(self) -> None:
        async with self._form_lock:
            chosen = self._prompt()
            box = self.query_one("#mcp-prompt-form", VerticalScroll)
            fields = prompt_fields(chosen.get("arguments") or []) if chosen else []
            table = self.query_one("#mcp-prompts", DataTable)
            title = Text(chosen["name"], "bold") if chosen else self._more_said(table, "prompts")
            await _build(
                box,
                title,
                fields,
                "parg",
                "no arguments" if chosen else "",
                lambda f: Completion(self, "prompt", chosen["name"], f.name) if chosen else None,
            )

    @on(DataTable.RowSelected, "#mcp-prompts")
    def _prompt_chosen(self) -> None:
        if self._on_more(self.query_one("#mcp-prompts", DataTable)):
            return
        fields = self._fields_shown()
        if fields:
            fields[0].focus()
        else:
            self._get_prompt()

    @on(Input.Submitted, "#mcp-prompt-form Input")
    def _prompt_submitted(self, event: Input.Submitted) -> None:
        fields = self._fields_shown()
        if event.input is fields[-1]:
            self._get_prompt()
        else:
            fields[fields.index(event.input) + 1].focus()

    def _get_prompt(self) -> None:
        chosen = self._prompt()
        if chosen is None:
            self.notify("no prompt to get: connect first", severity="warning")
            return
        fields = prompt_fields(chosen.get("arguments") or [])
        try:
            shown = self._fields_shown()
            texts = [field_text(w, f) for w, f in zip(shown, fields, strict=False)]
            values = form_values(fields, texts)
        except ValueError as exc:
            self.query_one("#mcp-prompt-view", SafeStatic).update(Text(f"✘ {exc}", "red"))
            return
        self._fill_prompt(chosen["name"], {k: str(v) for k, v in values.items()})

    @work(group="mcp")
    async def _fill_prompt(self, name: str, args: dict[str, str]) -> None:
        view = self.query_one("#mcp-prompt-view", SafeStatic)
        if self.session is None:
            return
        view.update(f"getting {name} …")
        try:
            described, messages = await self.session.prompt(name, args)
        except Exception as exc:
            view.update(Text(f"✘ {exc}", "red"))
            return
        text = Text()
        if described:
            text.append(described + "\n", "grey62")
        for role, said in messages:
            text.append(f"\n{role}\n", "bold magenta" if role == "user" else "bold green")
            text.append(said + "\n")
        view.update(text)

    # -- the doctor ---------------------------------------------------------------------------------
    @work(exclusive=True, group="mcp-doctor")
    async def _doctor(self, target: str | list[str], env: dict[str, str] | None) -> None:
        view = self.query_one("#mcp-doctor", SafeStatic)
        where = target if isinstance(target, str) else shlex.join(target)
        view.update(f"probing {where} …")
        worker = get_current_worker()

        def found(report: Any) -> None:  # not once cancelled: the report's end is said even then
            if not worker.is_cancelled:
                view.update(doctor_text(report))

        try:  # each finding shown as it comes
            await mcp_doctor(
                target,
                headers=self._headers(target),
                env=env,
                bus=self.tn.workspace.events,
                on_finding=found,
            )
        except Exception as exc:  # a probe that failed in a way the doctor did not foresee
            view.update(Text(f"✘ the doctor could not finish: {exc}", "red"))

    # -- notifications ------------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#mcp-notices")
    def _notice_highlighted(self) -> None:
        table = self.query_one("#mcp-notices", DataTable)
        s = self.session
        if s is None or not table.row_count:
            return
        notices = list(s.notices)
        row = table.cursor_row
        if 0 <= row < len(notices):
            n = notices[row]
            shown = Text(f"{n.clock} {n.kind} {n.method}\n", "bold")
            shown.append(n.summary + "\n")
            if n.params is not None:
                shown.append(json.dumps(n.params, indent=2, ensure_ascii=False, default=str))
            self.query_one("#mcp-notice", SafeStatic).update(shown)


def _outcome_text(title: str, outcome: Any, ran_as: str = "") -> Text:
    """A call's (or a task's) result: ``title``, how it ran, ok or error, its text, its structured
    content."""
    text = Text()
    text.append(f"{title}\n", "bold")
    if ran_as:
        text.append(f"{ran_as}\n", "grey62")
    text.append("error\n" if outcome.is_error else "ok\n", "red" if outcome.is_error else "green")
    text.append(outcome.output)
    structured = outcome.metadata.get("structured")
    if structured is not None:
        text.append("\n\nstructured content\n", "bold")
        text.append(json.dumps(structured, indent=2, ensure_ascii=False))
    return text


def _task_cells(state: TaskState) -> list[Any]:
    """A task's row (:data:`TASK_COLUMNS`): its texts are the peer's, shown as text."""
    return [
        state.task_id,
        Text(state.status, TASK_STYLES.get(state.status, "")),
        state.message.splitlines()[0] if state.message else "",
        _clock(state.created),
        _clock(state.updated),
        _poll_text(state.poll_interval),
        state.tool,
    ]


def _clock(iso: str) -> str:
    """An ISO 8601 time of the server's as the local time of day; as it came when not one (or
    one out of the local clock's range: year 9999 in a zone west of UTC overflows)."""
    try:
        return datetime.datetime.fromisoformat(iso).astimezone().strftime("%H:%M:%S")
    except (ValueError, OverflowError):
        return iso


def _poll_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:g} s"


def _row_of(table: DataTable[Any], items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The item of a table's highlighted row (rows are keyed by position: a name is the peer's)."""
    if not table.row_count:
        return None
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    index = int(key) if key is not None and key.isdigit() else -1
    return items[index] if 0 <= index < len(items) else None


async def _build(
    box: VerticalScroll,
    title: Text | None,
    fields: list[Field],
    prefix: str,
    empty: str,
    suggest: Callable[[Field], Suggester | None] | None = None,
) -> None:
    """A form in ``box``: a label and an input (``#<prefix>-<i>``) per field, each with what
    ``suggest`` gives it to complete what is typed."""
    await box.remove_children()
    widgets: list[Any] = [SafeStatic(title)] if title is not None else []
    for i, field in enumerate(fields):
        label = Text(printable(field.name, 80), "bold")
        label.append(f"  {field.kind}" + ("  required" if field.required else "  optional"), "cyan")
        if field.description:
            label.append(f"\n{field.description}", "grey62")
        widgets.append(SafeStatic(label))
        widgets.append(
            field_widget(field, f"{prefix}-{i}", suggest(field) if suggest is not None else None)
        )
    if not fields and empty:
        widgets.append(Label(empty))
    if widgets:
        await box.mount_all(widgets)


class Completion(Suggester):
    """What the server suggests for one argument of a prompt or a resource template as it is
    typed (``completion/complete``): the first value that goes on from the text shows after it,
    and → (or End) takes it. A server that declares no completions is not asked; a failure
    suggests nothing."""

    def __init__(self, screen: MCPScreen, ref: str, name: str, argument: str) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.inspector, self.ref, self.name, self.argument = screen, ref, name, argument

    async def get_suggestion(self, value: str) -> str | None:
        session = self.inspector.session
        if session is None:
            return None
        try:
            values = await session.complete(self.ref, self.name, self.argument, value)
        except Exception:  # noqa: BLE001 - a suggestion that failed is none
            return None
        return next((v for v in values if v.startswith(value) and v != value), None)


def _named_columns(table: DataTable[Any], label: str, names: list[str]) -> None:
    """Empty ``table`` and give it a name column as wide as its longest name (at most
    :data:`NAME_WIDTH`) and a description column for the rest (at 80 columns a name column of 24
    left descriptions 9 characters); what does not fit is cut at the list's edge."""
    table.clear(columns=True)
    widest = max((len(n) for n in names), default=0)
    table.add_column(label, key=label, width=max(len(label), min(widest, NAME_WIDTH)))
    table.add_column("description", key="description", width=DESCRIPTION_WIDTH)


def _unconnected(transport: str, era: str) -> str:
    return (
        f"not connected: enter an endpoint above · transport {transport} (ctrl+t) · "
        f"era {era} (ctrl+o)"
    )


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """A listed resource or template as the session gave it (without the row's own mark)."""
    return {k: v for k, v in item.items() if k != "template"}


def _count(n: int, what: str) -> str:
    if n == 1:
        return f"1 {what}"
    return f"{n} " + ("resources and templates" if what == "resource or template" else what + "s")


def _capability_words(caps: dict[str, Any]) -> list[str]:
    words = []
    for name in ("tools", "resources", "prompts", "completions", "logging", "tasks"):
        if name in caps:
            extra = [k for k, v in (caps[name] or {}).items() if v is True]
            words.append(name + (f" ({', '.join(extra)})" if extra else ""))
    return words


def _app_mark(uri: str) -> str:
    """``A`` for an MCP App's resource (``ui://``), else nothing."""
    return "A" if uri.startswith(APP_SCHEME) else ""


def _contents_text(uri: str, contents: list[Content], subscribed: set[str], updated: bool) -> Text:
    text = Text()
    text.append(uri, "bold")
    if uri in subscribed:
        text.append("  subscribed", "green")
    if updated:
        text.append("  updated just now", "yellow")
    if uri.startswith(APP_SCHEME):
        text.append(
            "\nan MCP App: a ui:// resource, the HTML a host draws beside a tool's result; "
            "shown here as its text (no app host in a terminal)",
            "magenta",
        )
    for c in contents:
        text.append(f"\n{c.mime or 'no MIME type'}, {c.size:,} bytes\n", "cyan")
        if c.text is not None:
            shown = c.text[:SHOWN_BYTES]
            text.append(shown)
            if len(c.text) > SHOWN_BYTES:
                text.append(f"\n… {len(c.text) - SHOWN_BYTES:,} more characters", "italic")
        elif c.data is not None:
            text.append(f"binary: {c.data[:32].hex(' ')}{' …' if c.size > 32 else ''}", "grey62")
    return text
