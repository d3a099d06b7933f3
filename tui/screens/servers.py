"""Mode 1, Servers: the hosted servers, their state and counts, and the form to start one."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Header, Static

from toolnexus.monitor import STATE_STYLE
from toolnexus.protocol.card import CARD_PATH
from toolnexus.protocol.model import TaskState

from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.safe import SafeStatic, SafeTable
from .base import ModeScreen
from .export import Confirm
from .server_form import ServerForm

COUNTED = (TaskState.COMPLETED, TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.FAILED)


_HELLO = (  # broken between JSON tokens (a newline inside the quotes is JSON's whitespace)
    """'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params":\n"""
    """    {"message": {"kind": "message", "messageId": "m1", "role": "user",\n"""
    """     "parts": [{"kind": "text", "text": "hello"}]}}}'"""
)


def hello_curl(url: str, token_env: str | None = None) -> str:
    """A shell command that says hello to the agent at ``url`` (a message/send), in lines that
    fit 80 columns, so it is read whole and pasted whole."""
    lines = [f"curl -s {url}/", "  -H 'Content-Type: application/json'"]
    if token_env:
        lines.append(f'  -H "Authorization: Bearer ${token_env}"')
    return " \\\n".join(lines + ["  -d " + _HELLO.replace("\n", "\n  ")])


class ServersScreen(ModeScreen):
    """The hosted servers, the selected one's details, and its live tasks below."""

    BINDINGS = [
        Binding("n", "new_server", "New server", id="server-new"),
        Binding("s", "toggle_server", "Start/stop", id="server-toggle"),
        Binding(
            "r", "restart", "Restart", id="server-restart", show=False
        ),  # in ? and the palette: the footer fits 80 columns
        Binding("c", "copy_url", "Copy URL", id="server-copy-url"),
        Binding(
            "C", "copy_curl", "Copy curl", id="server-copy-curl", show=False
        ),  # in ?, the palette and the pane, by its curl line
        Binding("e", "edit", "Edit", id="server-edit"),
        Binding("d", "delete", "Delete", id="server-delete"),
        Binding("enter", "show_tasks", "Tasks", id="server-tasks"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("servers")
        with Vertical(id="servers-body"):
            yield SafeTable(id="servers", cursor_type="row", zebra_stripes=True)
            yield SafeStatic(id="server-detail")
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#servers", DataTable)
        table.add_columns("", "name", "url", "profiles", "auth", "store", "✔", "⟳", "?", "✘")
        self.tn.servers_changed.subscribe(self, self._refresh)
        self._refresh(None)

    def _selected(self) -> str | None:
        table = self.query_one("#servers", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def on_screen_resume(self) -> None:
        self._refresh(None)

    def _refresh(self, _: Any) -> None:
        if not self.is_current:
            return  # redrawn when it is shown again
        table = self.query_one("#servers", DataTable)
        chosen = self._selected()
        table.clear()
        for name, server in self.tn.workspace.servers.items():
            counts = self.tn.book.counts(name)
            dot = {
                "running": Text("●", "green"),
                "starting": Text("◌", "yellow"),
                "failed": Text("✘", "red"),
            }.get(server.state, Text("○", "grey50"))
            url = server.url or server.state
            cells = [
                dot,
                name,
                url,
                " ".join(server.spec.profiles),
                "on" if server.auth else "off",
                server.spec.store,
            ]
            for state in COUNTED:
                symbol, style = STATE_STYLE[state]
                cells.append(Text(str(counts.get(state, 0)), style))
            table.add_row(*cells, key=name)
        if chosen and chosen in self.tn.workspace.servers:
            table.move_cursor(row=table.get_row_index(chosen))
        self._detail()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def _detail(self) -> None:
        name = self._selected()
        detail = self.query_one("#server-detail", Static)
        if name is None:
            detail.update("No servers yet. Press n to start one.")
            return
        server = self.tn.workspace.servers.get(name)
        if server is None:  # deleted since the table was drawn: its deletion's redraw comes next
            return
        lines = Text()
        lines.append(f"{name}  ", "bold")
        lines.append(server.url or server.state)
        lines.append("\n")
        if server.spec.a2a and server.url:
            lines.append(f"card  {server.url}{CARD_PATH}\n")
        if server.state == "running":
            lines.append(f"skills: {', '.join(server.skills()) or 'none'}")
            if server.spec.mcp:
                lines.append(f"   MCP tools: {len(server.mcp_tools())}  ({server.url}/mcp)")
            lines.append("\n")
        lines.append(f"model {server.spec.model}   store {server.spec.store}\n")
        for warning in server.warnings():
            lines.append(f"⚠ {warning}\n", "yellow")
        if server.error:
            lines.append(f"✘ {server.error}\n", "red")
        hint = server.state == "running" and server.hint
        if hint:
            lines.append(f"\n{server.hint}\n", "bold")
        if server.state == "running" and server.spec.a2a and server.url:
            # one line at 80 columns, right under the hint, so that the curl line below stays
            # whole in a 40-row terminal
            lines.append(
                ("" if hint else "\n")
                + "next: 4 chats with it, 2 shows its tasks; from a shell (C copies it):\n",
                "bold",
            )
            lines.append(hello_curl(server.url, server.spec.auth_token_env) + "\n", "cyan")
        detail.update(lines)

    # -- actions ----------------------------------------------------------------------------------
    def action_new_server(self) -> None:
        self.app.push_screen(ServerForm(self.tn.workspace))

    def action_edit(self) -> None:
        name = self._selected()
        if name:
            self.app.push_screen(
                ServerForm(self.tn.workspace, self.tn.workspace.get(name).spec, replacing=name)
            )

    def action_delete(self) -> None:
        """Delete the selected server, once the user says yes: it stops, and is forgotten here and
        for the next launch (what cannot be undone is asked first); one toolnexus-tui starts at
        launch (the demo) comes back then, as at first."""
        name = self._selected()
        if not name:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.tn.delete_server(name)

        running = self.tn.workspace.get(name).state == "running"
        again = any(spec.name == name for spec in self.tn.start_specs)  # the demo, --spec
        self.app.push_screen(
            Confirm(
                f"Delete {name}? It {'stops and ' if running else ''}is forgotten, "
                + (
                    "with its edits; toolnexus-tui starts it again at the next launch, as at first."
                    if again
                    else "here and at the next launch."
                )
            ),
            answered,
        )

    def action_toggle_server(self) -> None:
        name = self._selected()
        if name:
            self.tn.toggle_server(name)

    def action_restart(self) -> None:
        name = self._selected()
        if name:
            self.tn.restart_server(name)

    def action_copy_url(self) -> None:
        name = self._selected()
        if name and self.tn.workspace.get(name).url:
            self.tn.copy_text(self.tn.workspace.get(name).url, f"URL of {name}")

    def action_copy_curl(self) -> None:
        name = self._selected()
        server = self.tn.workspace.get(name) if name else None
        if server is not None and server.url and server.spec.a2a:
            self.tn.copy_text(hello_curl(server.url, server.spec.auth_token_env), "curl command")

    def action_show_tasks(self) -> None:
        self.tn.selected_server = self._selected()
        self.app.switch_mode("tasks")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_show_tasks()
