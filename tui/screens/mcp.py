"""Mode 6, MCP: any MCP endpoint (a hosted server's /mcp, a URL with headers, or a stdio server
started from a command line): its tools, a form made from a tool's input schema (or raw JSON
arguments), the result; every exchange (each stdio JSON-RPC message too) lands in the Wire."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Header, Input, Label, Static, TextArea

from toolnexus.display import printable
from toolnexus.mcp_client import call_remote_tool, remote_tools
from toolnexus.secrets import expand_env

from ..peers import parse_headers
from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.safe import SafeStatic, SafeTable
from ..widgets.textbox import TextBox
from .base import ModeScreen


def field_value(text: str, schema: dict[str, Any]) -> Any:
    """A form field's text as the JSON value its schema wants (strings stay strings)."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and not text.startswith(("{", "[")):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _kind(schema: dict[str, Any]) -> str:
    """An argument's type as a schema gives it: ``integer``, ``string | null``, ``array of string``,
    one of its ``enum`` values, or ``any``."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"][:8])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"].get("type"):
        return f"array of {schema['items']['type']}"
    if isinstance(kind, str):
        return kind
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and all(isinstance(o, dict) for o in options):
        return " | ".join(_kind(o) for o in options)
    return "any"


class MCPScreen(ModeScreen):
    BINDINGS = [
        # ctrl+enter reaches few terminals (not tmux, xterm or VS Code's): ctrl+r and F5 do everywhere
        Binding("ctrl+r", "call", "Call", id="mcp-call-r", priority=True),
        Binding("f5", "call", "Call", show=False, id="mcp-call-f5", priority=True),
        Binding("ctrl+enter", "call", "Call", show=False, id="mcp-call", priority=True),
        Binding("ctrl+j", "toggle_raw", "Raw JSON", id="mcp-raw"),
        Binding("ctrl+l", "list_tools", "List tools", id="mcp-list"),
        # Esc: from a text box to the tool list, from the tool list to the endpoint
        Binding("escape", "leave_input", "Back", show=False, id="mcp-back"),
        # inside the argument form, Tab goes round its fields (it went on to the URL box, and the
        # next keystroke replaced the endpoint); elsewhere Tab moves focus as everywhere (the
        # binding, refused by check_action outside the form, swallowed Tab in the tool list)
        Binding("tab", "next_argument(1)", show=False, priority=True),
        Binding("shift+tab", "next_argument(-1)", show=False, priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.tools: list[dict[str, Any]] = []
        self.raw_mode = False
        self._form_lock = asyncio.Lock()

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("mcp")
        with Horizontal(id="mcp-where"):
            # focus never selects the endpoint: the next keystroke would replace it
            yield TextBox(
                placeholder="MCP endpoint URL, or a command starting a stdio server (uvx some-mcp); enter lists",
                id="mcp-url",
                select_on_focus=False,
            )
            yield TextBox(
                placeholder="headers: Authorization: Bearer ${TOKEN}",
                id="mcp-headers",
                select_on_focus=False,
            )
        with Horizontal(id="mcp-body"):
            yield SafeTable(id="mcp-tools", cursor_type="row")
            with Vertical(id="mcp-right"):
                yield VerticalScroll(id="mcp-form")
                yield TextArea("{}", id="mcp-raw-args", classes="hidden", language="json")
                yield VerticalScroll(SafeStatic(id="mcp-result"))
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        # Tab from the tool list goes to the first argument, not to the box that holds them
        self.query_one("#mcp-form", VerticalScroll).can_focus = False
        table = self.query_one("#mcp-tools", DataTable)
        table.add_column("tool", key="tool", width=24)
        table.add_column("description", key="description", width=30)

    _entered = False

    def on_screen_resume(self) -> None:
        """The first time the mode is shown (its screen may be built ahead, unseen): a hosted
        server's /mcp filled in and its tools listed."""
        if self._entered or not self.is_current:
            return
        self._entered = True
        hosted = [s for s in self.tn.workspace.running() if s.spec.mcp and s.url]
        url = self.query_one("#mcp-url", Input)
        if hosted and not url.value:
            url.value = hosted[0].url + "/mcp"
            self.action_list_tools()

    def _arguments_shown(self) -> list[Input]:
        return list(self.query_one("#mcp-form", VerticalScroll).query(Input))

    def action_next_argument(self, step: int) -> None:
        fields, at = self._arguments_shown(), self.focused
        if isinstance(at, Input) and at in fields:
            fields[(fields.index(at) + step) % len(fields)].focus()
        elif step > 0:
            self.focus_next()
        else:
            self.focus_previous()

    @on(DataTable.RowSelected, "#mcp-tools")
    def _tool_chosen(self) -> None:
        """Enter on a tool: into its first argument (the raw JSON in raw mode); a tool that takes
        none is called."""
        if self.raw_mode:
            self.query_one("#mcp-raw-args", TextArea).focus()
        elif fields := self._arguments_shown():
            fields[0].focus()
        else:
            self.action_call()

    def _target(self) -> str | list[str] | None:
        """The endpoint as typed: a URL, or a stdio server's command line (split as a shell would)."""
        text = self.query_one("#mcp-url", Input).value.strip()
        if not text or text.startswith(("http://", "https://")):
            return text or None
        try:
            return shlex.split(text)
        except ValueError as exc:
            self.query_one("#mcp-result", Static).update(Text(f"✘ the command line: {exc}", "red"))
            return None

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

    def action_leave_input(self) -> None:
        """Escape leaves a text box for the tool list, where the mode keys work, and the tool list
        for the endpoint."""
        tools = self.query_one("#mcp-tools", DataTable)
        if self.focused is tools:
            self.query_one("#mcp-url", Input).focus()
        else:
            tools.focus()

    @on(Input.Submitted, "#mcp-url, #mcp-headers")
    def _submit_url(self) -> None:
        self.action_list_tools()

    def action_list_tools(self) -> None:
        target = self._target()
        if target:
            self._list(target)

    @work(exclusive=True, group="mcp")
    async def _list(self, url: str | list[str]) -> None:
        result = self.query_one("#mcp-result", Static)
        result.update(f"listing {url if isinstance(url, str) else shlex.join(url)} …")
        table = self.query_one("#mcp-tools", DataTable)
        try:
            self.tools = await remote_tools(
                url, headers=self._headers(url), bus=self.tn.workspace.events, timeout=15
            )
        except Exception as exc:  # nothing of the previous endpoint stays on screen
            self.tools = []
            table.clear()
            await self._form(None)
            result.update(Text(f"✘ {exc}", "red"))
            return
        table.clear()
        for tool in self.tools:
            table.add_row(
                tool["name"],
                tool["description"].splitlines()[0] if tool["description"] else "",
                key=tool["name"],
            )
        result.update(f"{len(self.tools)} tools")
        if self.tools:
            table.focus()
            await self._form(self.tools[0])

    def _tool(self) -> dict[str, Any] | None:
        table = self.query_one("#mcp-tools", DataTable)
        if not table.row_count:
            return None
        name = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        return next((t for t in self.tools if t["name"] == name), None)

    async def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        tool = self._tool()
        if tool is not None:
            await self._form(tool)

    async def _form(self, tool: dict[str, Any] | None) -> None:
        """Build the argument form of ``tool`` (None: empty it). One build at a time: the listing
        and a row highlight both ask for one, and interleaved builds mounted the same ids twice."""
        async with self._form_lock:
            await self._build_form(tool)

    async def _build_form(self, tool: dict[str, Any] | None) -> None:
        form = self.query_one("#mcp-form", VerticalScroll)
        await form.remove_children()
        if tool is None:
            return
        props = (tool["input_schema"] or {}).get("properties") or {}
        required = set((tool["input_schema"] or {}).get("required") or [])
        widgets: list[Any] = [SafeStatic(Text(f"{tool['name']}", "bold"))]
        for i, (name, schema) in enumerate(props.items()):
            schema = schema if isinstance(schema, dict) else {}
            kind = printable(_kind(schema), 120)  # enum values, type names: the peer's text
            label = Text(printable(str(name), 80), "bold")
            label.append(f"  {kind}" + ("  required" if name in required else "  optional"), "cyan")
            described = printable(str(schema.get("description") or ""), 200)
            if described:
                label.append(f"\n{described}", "grey62")
            widgets.append(SafeStatic(label))
            default = schema.get("default")
            hint = (
                f"{kind}, required"
                if name in required
                else (f"{kind}, optional: empty leaves it out")
            )
            widgets.append(
                Input(
                    ""
                    if default is None
                    else (default if isinstance(default, str) else json.dumps(default)),
                    placeholder=hint,
                    id=f"arg-{i}",
                    compact=True,
                )
            )
        if not props:
            widgets.append(Label("no arguments"))
        await form.mount_all(widgets)
        self.query_one("#mcp-raw-args", TextArea).text = json.dumps(
            {n: s.get("default") for n, s in props.items() if "default" in s}, indent=2
        )

    def arguments(self, tool: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments from the form (or the raw JSON); ValueError names the required ones
        left empty: such a call is not sent (it went out as ``{}`` and the tool said why)."""
        schema_of = tool["input_schema"] or {}
        if self.raw_mode:
            value = json.loads(self.query_one("#mcp-raw-args", TextArea).text or "{}")
            if not isinstance(value, dict):
                raise ValueError("the raw arguments must be a JSON object")
            args = value
        else:
            props = schema_of.get("properties") or {}
            args = {}
            for i, (name, schema) in enumerate(
                props.items()
            ):  # ids by position: a name is the peer's text
                text = self.query_one(f"#arg-{i}", Input).value
                if text != "":
                    args[name] = field_value(text, schema if isinstance(schema, dict) else {})
        missing = [str(n) for n in schema_of.get("required") or [] if n not in args]
        if missing:
            raise ValueError(
                f"fill in the required argument{'s' if len(missing) > 1 else ''}: "
                + ", ".join(printable(n, 80) for n in missing)
                + " (nothing was sent)"
            )
        return args

    def action_toggle_raw(self) -> None:
        self.raw_mode = not self.raw_mode
        self.query_one("#mcp-raw-args").set_class(not self.raw_mode, "hidden")
        self.query_one("#mcp-form").set_class(self.raw_mode, "hidden")

    def action_call(self) -> None:
        tool = self._tool()
        if tool is None:
            self.notify("list the tools first (enter on the URL)", severity="warning")
            return
        try:
            args = self.arguments(tool)
        except ValueError as exc:
            self.query_one("#mcp-result", Static).update(Text(f"✘ {exc}", "red"))
            return
        target = self._target()
        if target:
            self._call(target, tool["name"], args)

    @work(exclusive=True, group="mcp")
    async def _call(self, url: str | list[str], name: str, args: dict[str, Any]) -> None:
        result = self.query_one("#mcp-result", Static)
        result.update(f"calling {name} …")
        try:
            outcome = await call_remote_tool(
                url,
                name,
                args,
                headers=self._headers(url),
                bus=self.tn.workspace.events,
                timeout=60,
            )
        except Exception as exc:
            result.update(Text(f"✘ {exc}", "red"))
            return
        self.last_result = outcome
        text = Text()
        text.append(f"{name} {json.dumps(args)}\n", "bold")
        text.append(
            "error\n" if outcome.is_error else "ok\n", "red" if outcome.is_error else "green"
        )
        text.append(outcome.output)
        result.update(text)
