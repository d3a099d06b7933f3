"""``%toolnexus mcp``: the MCP inspector as a notebook widget, drawn from the same
:class:`~toolnexus.mcp.MCPSession` as the TUI's MCP mode: what was negotiated, tabs for the
tools (a form from the schema), resources and templates (a read with its MIME type, a
subscription and its updates), prompts (the arguments, the messages), the server's notifications,
the doctor's report on it, the server itself (capabilities, instructions, the roots we declare)
and a stdio server's stderr as it comes. As the TUI's MCP mode: the transport and era chosen
(``transport=``, ``mode=``), an OAuth client id for a server that registers none, lists read a
page at a time (``next page`` shows the server's cursor), a call in flight cancelled, the log
level asked, ping with its round trip, a prompt's arguments and a template's variables completed
as they are typed (the server's suggestions offered in the box), a form's booleans as checkboxes and enums as choices, an MCP
App's ``ui://`` resources marked. What the server asks shows above the tabs: an elicitation as a
form (accept, decline, cancel), a sampling request to approve before the toolkit's model answers
it (or answered with a reply the user writes), an OAuth sign-in as a link. Every peer string is
escaped; every exchange is on the notebook's bus (the Wire)."""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets as w

from toolnexus.debug.mcp_doctor import mcp_doctor
from toolnexus.display import error_html, printable
from toolnexus.errors import PeerError
from toolnexus.hosting import build_client
from toolnexus.mcp import (
    LOG_LEVELS,
    Content,
    Elicitation,
    Field,
    MCPSession,
    Notice,
    Reply,
    Sampling,
    choice_text,
    expand_template,
    form_fields,
    form_values,
    prompt_fields,
    template_fields,
)

from .widgets import REDRAW_EVERY, STYLE, _failure, _schedule, _track

__all__ = ["MCPWidget"]

NOTICES_SHOWN = 200
"""The newest notices the widget's table shows (the session keeps more)."""
TEXT_SHOWN = 20000
"""Characters of a resource's text or a result shown."""
STDERR_SHOWN = 200
"""The last lines of a stdio server's stderr shown (the session keeps more)."""
APP_SCHEME = "ui://"
"""The scheme of an MCP App's resources (the MCP Apps extension: HTML a host draws)."""
LISTS = {"tools": ("tools",), "resources": ("resources", "templates"), "prompts": ("prompts",)}
"""Each tab's listings, as the session names them."""


def _pre(text: str) -> str:
    return f"<pre>{html.escape(printable(text, TEXT_SHOWN))}</pre>"


async def _suggest(complete: Complete, f: Field, box: Any) -> None:
    """The server's suggestions for what ``box`` holds now, offered in it (a failure: none)."""
    typed = box.value
    try:
        values = await complete(f.name, typed)
    except Exception:  # noqa: BLE001 - a suggestion that failed is none
        return
    if box.value == typed:  # not typed on meanwhile
        box.options = [printable(v, 200) for v in values if isinstance(v, str)][:SUGGESTED]


def _control(f: Field) -> Any:
    """A field's control (:attr:`Field.control <toolnexus.mcp.Field.control>`): a checkbox, a
    choice (with a blank: left out, when it may be), else a text box."""
    common = {"description": printable(f.name, 40), "style": {"description_width": "initial"}}
    if f.control == "checkbox":
        return w.Checkbox(value=f.schema.get("default") is True, tooltip=f.description, **common)
    if f.control == "choice":
        options = [(printable(choice_text(v), 80), n) for n, v in enumerate(f.options)]
        default = f.schema.get("default")
        at = next(
            (n for n, v in enumerate(f.options) if "default" in f.schema and v == default), None
        )
        blank = [] if f.required and at is not None else [("", None)]
        return w.Dropdown(options=blank + options, value=at, tooltip=f.description, **common)
    return w.Text(value=f.default, placeholder=f.hint, tooltip=f.description, **common)


def _text(f: Field, box: Any) -> str:
    """What a control holds, as the text :func:`~toolnexus.mcp.form_values` reads."""
    if isinstance(box, w.Checkbox):
        return "true" if box.value else "false"
    if isinstance(box, w.Dropdown):
        return choice_text(f.options[box.value]) if isinstance(box.value, int) else ""
    return str(box.value)


Complete = Callable[[str, str], Awaitable[list[str]]]
"""What the server suggests for an argument (its name) as its text is typed (``completion/complete``)."""
SUGGESTED = 20
"""The most suggestions a box offers."""


class _Form(w.VBox):
    """A form's fields (a tool's arguments, a prompt's, a template's variables): text boxes,
    checkboxes and choices; with ``complete``, a text box offers what the server suggests for
    the text typed (a prompt's arguments, a template's variables)."""

    def __init__(self) -> None:
        super().__init__([])
        self.fields: list[Field] = []
        self.boxes: list[Any] = []

    def show(self, fields: list[Field], complete: Complete | None = None) -> None:
        self.fields = fields
        self.boxes = []
        for f in fields:
            box = _control(f)
            if complete is not None and isinstance(box, w.Text):
                box = w.Combobox(
                    value=box.value,
                    placeholder=box.placeholder,
                    tooltip=box.tooltip,
                    description=box.description,
                    style={"description_width": "initial"},
                    ensure_option=False,
                )
                box.observe(
                    lambda _, f=f, box=box: _schedule(_suggest(complete, f, box)), names="value"
                )
            self.boxes.append(box)
        self.children = self.boxes

    def fill(self, **texts: Any) -> None:
        """Fill the fields by name (for code and tests): a text box's text, a checkbox's bool, a
        choice's value (as :attr:`Field.options` has it)."""
        for f, box in zip(self.fields, self.boxes, strict=True):
            if f.name not in texts:
                continue
            value = texts[f.name]
            box.value = f.options.index(value) if isinstance(box, w.Dropdown) else value

    def values(self) -> dict[str, Any]:
        return form_values(
            self.fields, [_text(f, b) for f, b in zip(self.fields, self.boxes, strict=True)]
        )


class MCPWidget(w.VBox):
    """An MCP session in a notebook; ``await widget.ready()`` once it connected (or failed:
    :attr:`error`). ``target``: a URL, or a stdio server's command line as a list."""

    def __init__(
        self,
        target: str | list[str],
        *,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        bus: Any = None,
        roots: list[str] | None = None,
        model: Any = None,
        transport: str = "auto",
        mode: str = "auto",
        client_id: str | None = None,
    ) -> None:
        self.target = target
        self.error = ""
        self.model = model or build_client()
        self.session = MCPSession(
            target,
            headers=headers,
            env=env,
            bus=bus,
            roots=roots,
            elicit=self._elicit,
            model=self.model,
            approve=self._approve,
            authorize=self._authorize,
            client_id=client_id,
            on_stderr=self._stderr,
            mode=mode,
            transport=transport,
        )
        self.cursors: dict[str, str | None] = {}
        """Each listing's cursor of the pages not read yet (the server's ``nextCursor``)."""
        self.ping_ms: float | None = None
        self.tools: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.shown_uri = ""
        self.status = w.HTML(f"<i>connecting to {html.escape(self.session.where)}…</i>")
        self.asking = w.VBox([])
        self.report: Any = None
        self._target = (target, headers, env)
        self._stderr_pending = False
        # a list's next page, per tab
        self.more = {kind: w.Button(description="next page") for kind in LISTS}
        self.more_said = {kind: w.HTML() for kind in LISTS}
        for kind, more in self.more.items():
            more.layout.display = "none"
            more.on_click(lambda _, k=kind: self.next_page(k))
        controls = self._session_controls()
        self.notices = w.HTML("<i>nothing yet</i>")
        self.stderr = w.HTML(
            "<i>a stdio server's stderr shows here as it comes</i>"
            if not isinstance(target, str)
            else "<i>an HTTP server's stderr is its own: a stdio server's shows here</i>"
        )
        tabs = {
            "Tools": self._tools_tab(),
            "Resources": self._resources_tab(),
            "Prompts": self._prompts_tab(),
            "Notifications": self.notices,
            "Doctor": self._doctor_tab(),
            "Server": self._server_tab(roots),
            "Stderr": self.stderr,
        }
        self.tabs = w.Tab(children=list(tabs.values()))
        for i, title in enumerate(tabs):
            self.tabs.set_title(i, title)
        super().__init__([self.status, controls, self.asking, self.tabs])
        self.add_class("toolnexus-w")
        self._redraw_pending = False
        _track(self)
        self._start = _schedule(self._connect())

    def __repr__(self) -> str:
        return "<MCPWidget (shown above)>"

    def _session_controls(self) -> Any:
        """The session's own row: ping, the log level, cancel what runs."""
        self.ping_button = w.Button(description="ping")
        self.level = w.Dropdown(
            options=[("log level: not asked", None), *((lv, lv) for lv in LOG_LEVELS)],
            value=None,
        )
        self.cancel_button = w.Button(description="cancel what runs")
        self.said = w.HTML()
        self.ping_button.on_click(lambda _: self.ping())
        self.level.observe(lambda c: c.get("new") and self.set_level(c["new"]), names="value")
        self.cancel_button.on_click(lambda _: self.cancel())
        return w.HBox([self.ping_button, self.level, self.cancel_button, self.said])

    def _tools_tab(self) -> Any:
        self.tool = w.Dropdown(options=[], description="tool")
        self.tool_form = _Form()
        self.call_button = w.Button(description="call", button_style="primary")
        self.result = w.HTML()
        self.tool.observe(lambda _: self._tool_chosen(), names="value")
        self.call_button.on_click(lambda _: self.call())
        return w.VBox(
            [
                w.HBox([self.tool, self.more["tools"], self.more_said["tools"]]),
                self.tool_form,
                self.call_button,
                self.result,
            ]
        )

    def _resources_tab(self) -> Any:
        self.resource = w.Dropdown(options=[], description="resource", layout=w.Layout(width="70%"))
        self.template_form = _Form()
        self.read_button = w.Button(description="read", button_style="primary")
        self.subscribe_button = w.ToggleButton(description="subscribed", value=False)
        self.content = w.HTML()
        self.resource.observe(lambda _: self._resource_chosen(), names="value")
        self.read_button.on_click(lambda _: self.read())
        self.subscribe_button.observe(self._subscribe_toggled, names="value")
        return w.VBox(
            [
                w.HBox([self.resource, self.subscribe_button]),
                w.HBox([self.more["resources"], self.more_said["resources"]]),
                self.template_form,
                self.read_button,
                self.content,
            ]
        )

    def _prompts_tab(self) -> Any:
        self.prompt = w.Dropdown(options=[], description="prompt")
        self.prompt_form = _Form()
        self.get_button = w.Button(description="get", button_style="primary")
        self.messages = w.HTML()
        self.prompt.observe(lambda _: self._prompt_chosen(), names="value")
        self.get_button.on_click(lambda _: self.get_prompt())
        return w.VBox(
            [
                w.HBox([self.prompt, self.more["prompts"], self.more_said["prompts"]]),
                self.prompt_form,
                self.get_button,
                self.messages,
            ]
        )

    def _doctor_tab(self) -> Any:
        self.doctor_button = w.Button(description="run the doctor")
        self.doctor_view = w.HTML(
            "<i>the doctor probes this server: version negotiation, capabilities against what "
            "answers, each tool's schemas, errors as the spec has them, the Origin check and "
            "auth over HTTP, stdout over stdio (nothing is called)</i>"
        )
        self.doctor_button.on_click(lambda _: self.doctor())
        return w.VBox([self.doctor_button, self.doctor_view])

    def _server_tab(self, roots: list[str] | None) -> Any:
        """What the server said of itself, and the roots this client declares."""
        self.server = w.HTML()
        self.roots = w.Text(
            value=", ".join(roots or []),
            description="roots",
            placeholder="paths or file:// URIs, comma-separated",
        )
        self.roots_button = w.Button(description="declare")
        self.roots_button.on_click(lambda _: self.declare_roots())
        return w.VBox([w.HBox([self.roots, self.roots_button]), self.server])

    # -- the session ---------------------------------------------------------------------------------
    async def ready(self) -> MCPSession:
        await asyncio.shield(self._start)
        return self.session

    async def _connect(self) -> None:
        try:
            await self.session.start()
        except Exception as exc:
            self.error = str(_failure(exc))
            self.status.value = error_html(self.error)
            self.asking.children = []
            return
        self.asking.children = []
        self.session.watch(self._heard)
        self._draw_server()
        await self.relist()

    def disconnect(self, reason: str) -> None:
        """The kernel is going away: the session ends with it."""
        _schedule(self.session.close())
        self.status.value = error_html(reason)

    async def aclose(self) -> None:
        """End the session (the widget stays, as it was last drawn)."""
        await self.session.close()

    async def _fetch(self, kind: str, shown: int) -> list[dict[str, Any]]:
        """A listing from its start, a page at a time, as many items as ``shown`` (at least a
        page); the cursor left kept for :meth:`next_page`."""
        page = await self.session.listing(kind, limit=max(1, shown))
        self.cursors[kind] = page.next_cursor
        return page.items

    async def relist(self) -> None:
        """Every list the server offers, as many items as are shown (the first page at first)."""
        caps = self.session.capabilities
        try:
            if "tools" in caps or not caps:
                self._draw_tools(await self._fetch("tools", len(self.tools)))
            if "resources" in caps:
                res = [r for r in self.resources if not r["template"]]
                listed = [
                    {**r, "template": False} for r in await self._fetch("resources", len(res))
                ]
                try:  # a server may serve resources and refuse templates/list
                    tpl = await self._fetch("templates", len(self.resources) - len(res))
                except PeerError:
                    tpl = []
                self._draw_resources(listed + [{**t, "template": True} for t in tpl])
            if "prompts" in caps:
                self._draw_prompts(await self._fetch("prompts", len(self.prompts)))
        except Exception as exc:
            self.result.value = error_html(str(_failure(exc)))
        self._tool_chosen()
        self._resource_chosen()
        self._prompt_chosen()

    def _draw_tools(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.tool.options = [(printable(t["name"], 80), i) for i, t in enumerate(tools)]
        self._draw_more("tools")

    def _draw_resources(self, listed: list[dict[str, Any]]) -> None:
        self.resources = listed
        self.resource.options = [
            (
                ("[app] " if str(r.get("uri", "")).startswith(APP_SCHEME) else "")
                + printable(r.get("uri_template") if r["template"] else r["uri"], 120),
                i,
            )
            for i, r in enumerate(listed)
        ]
        self._draw_more("resources")

    def _draw_prompts(self, prompts: list[dict[str, Any]]) -> None:
        self.prompts = prompts
        self.prompt.options = [(printable(p["name"], 80), i) for i, p in enumerate(prompts)]
        self._draw_more("prompts")

    def _draw_more(self, tab: str) -> None:
        """The tab's ``next page`` button and the server's cursor, while it has more."""
        cursor = next((self.cursors[k] for k in LISTS[tab] if self.cursors.get(k)), None)
        self.more[tab].layout.display = None if cursor else "none"
        self.more_said[tab].value = (
            f"<span class='toolnexus-muted'>more on the server (cursor "
            f"<code>{html.escape(printable(cursor, 200))}</code>)</span>"
            if cursor
            else ""
        )

    def next_page(self, tab: str) -> asyncio.Task[Any]:
        """The next page of a tab's list (``tools``, ``resources``: its resources, then its
        templates, ``prompts``), added to what is shown."""
        return _schedule(self._next_page(tab))

    async def _next_page(self, tab: str) -> None:
        kind = next((k for k in LISTS[tab] if self.cursors.get(k)), None)
        if kind is None:
            return
        try:
            page = await self.session.page(kind, self.cursors[kind])
        except Exception as exc:
            self.more_said[tab].value = error_html(str(_failure(exc)))
            return
        self.cursors[kind] = page.next_cursor
        if tab == "tools":
            self._draw_tools(self.tools + page.items)
        elif tab == "prompts":
            self._draw_prompts(self.prompts + page.items)
        else:
            res = [r for r in self.resources if not r["template"]]
            tpl = [r for r in self.resources if r["template"]]
            if kind == "resources":
                res += [{**r, "template": False} for r in page.items]
            else:
                tpl += [{**t, "template": True} for t in page.items]
            self._draw_resources(res + tpl)

    def _draw_server(self) -> None:
        s = self.session
        era = "2026-07-28 era" if s.modern else "handshake era"
        who = html.escape(f"{s.server_name} {s.server_version}".strip() or "an anonymous server")
        oauth = f" · OAuth: {html.escape(s.oauth.state)}" if s.oauth is not None else ""
        over = " over HTTP+SSE" if s.transport == "sse" else ""
        level = f" · log level {html.escape(s.log_level)}" if s.log_level else ""
        ping = f" · ping {self.ping_ms:.1f} ms" if self.ping_ms is not None else ""
        self.status.value = (
            f"{STYLE}<b>● {who}</b> · MCP {html.escape(s.protocol_version)} ({era}){over} · "
            f"{html.escape(', '.join(sorted(s.capabilities)) or 'no capabilities')} · "
            f"<span class='toolnexus-muted'>we offer {', '.join(s.offered)}{oauth}{level}{ping}"
            "</span>"
        )
        self.server.value = (
            "<b>capabilities</b>"
            + _pre(json.dumps(s.capabilities, indent=2))
            + (f"<b>instructions</b>{_pre(s.instructions)}" if s.instructions else "")
            + f"<b>roots</b>: {html.escape(', '.join(s.roots) or 'none')}"
        )

    def _heard(self, notice: Notice) -> None:
        if notice.method.endswith("/list_changed"):
            _schedule(self.relist())
        elif notice.method == "notifications/resources/updated" and isinstance(notice.params, dict):
            if notice.params.get("uri") == self.shown_uri:
                self.read(self.shown_uri, updated=True)
        if not self._redraw_pending:  # at most ten redraws a second, however fast they come
            self._redraw_pending = True
            asyncio.get_running_loop().call_later(REDRAW_EVERY, self._draw_notices)

    def _draw_notices(self) -> None:
        self._redraw_pending = False
        rows = "".join(
            f"<tr><td>{n.clock}</td><td>{html.escape(n.kind)}</td><td>{html.escape(n.method)}</td>"
            f"<td>{html.escape(n.summary)}</td></tr>"
            for n in list(self.session.notices)[-NOTICES_SHOWN:]
        )
        self.notices.value = (
            STYLE + "<table><tr><th>time</th><th>kind</th><th>method</th><th>what</th></tr>"
            f"{rows}</table>"
        )

    # -- what the server asks -----------------------------------------------------------------------
    async def _elicit(self, request: Elicitation) -> Reply:
        answered: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        form = _Form()
        form.show(request.fields)
        error = w.HTML()

        def reply(action: str) -> None:
            if action == "accept":
                try:
                    values = form.values()
                except ValueError as exc:
                    error.value = error_html(str(exc))
                    return
                answered.set_result(Reply("accept", values))
            elif not answered.done():
                answered.set_result(Reply(action))  # type: ignore[arg-type]  # decline | cancel

        buttons = []
        for action, style in (("accept", "primary"), ("decline", ""), ("cancel", "")):
            button = w.Button(description=action, button_style=style)
            button.on_click(lambda _, a=action: reply(a))
            buttons.append(button)
        url = (
            f"<br>It asks you to visit <code>{html.escape(request.url)}</code>"
            if request.url
            else ""
        )
        self.asking.children = [
            w.HTML(f"<b>The server asks</b>: {html.escape(request.message)}{url}"),
            form,
            w.HBox(buttons),
            error,
        ]
        self.elicitation = form
        try:
            return await answered
        finally:
            self.asking.children = []

    async def _approve(self, request: Sampling) -> bool | str:
        """True: the model answers; False: refused; a text: the reply the user wrote."""
        answered: asyncio.Future[bool | str] = asyncio.get_running_loop().create_future()
        said = "".join(
            f"<div><b>{html.escape(role)}</b>: {html.escape(text)}</div>"
            for role, text in request.messages
        )
        system = (
            f"<div class='toolnexus-muted'>system prompt: {html.escape(request.system)}</div>"
            if request.system
            else ""
        )
        approve = w.Button(description="approve", button_style="primary")
        refuse = w.Button(description="refuse")
        reply = w.Textarea(placeholder="or write the reply yourself, and send it")
        send = w.Button(description="send my reply")
        error = w.HTML()

        def sent(_: Any) -> None:
            if not reply.value.strip():
                error.value = error_html(
                    "nothing written: write the reply (approve lets the model answer)"
                )
            elif not answered.done():
                answered.set_result(reply.value)

        approve.on_click(lambda _: answered.done() or answered.set_result(True))
        refuse.on_click(lambda _: answered.done() or answered.set_result(False))
        send.on_click(sent)
        model = html.escape(str(getattr(self.model, "model", "the model")))
        self.asking.children = [
            w.HTML(
                f"<b>The server asks your model ({model}) to answer</b>, at most "
                f"{request.max_tokens} tokens{system}{said}"
            ),
            w.HBox([approve, refuse]),
            reply,
            send,
            error,
        ]
        self.approve_button, self.refuse_button = approve, refuse
        self.reply_box, self.send_button = reply, send
        try:
            return await answered
        finally:
            self.asking.children = []

    async def _authorize(self, url: str) -> None:
        cancel = w.Button(description="cancel the sign-in")
        cancel.on_click(lambda _: self.session.oauth.cancel() if self.session.oauth else None)
        self.sign_in_url = url
        self.asking.children = [
            w.HTML(
                f"<b>This MCP server needs you to sign in (OAuth)</b>: "
                f"<a href='{html.escape(url, quote=True)}' target='_blank' rel='noopener'>"
                "open the sign-in page</a>; this goes on once you signed in."
            ),
            cancel,
        ]

    # -- what the user does -------------------------------------------------------------------------
    def _tool_chosen(self) -> None:
        i = self.tool.value
        self.tool_form.show(form_fields(self.tools[i]["input_schema"]) if i is not None else [])

    def call(self) -> asyncio.Task[Any] | None:
        i = self.tool.value
        if i is None:
            return None
        try:
            args = self.tool_form.values()
        except ValueError as exc:
            self.result.value = error_html(str(exc))
            return None
        return _schedule(self._call(self.tools[i]["name"], args))

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        self.result.value = f"<i>calling {html.escape(name)}…</i>"
        try:
            outcome = await self.session.call(name, args)
        except Exception as exc:
            self.result.value = error_html(str(_failure(exc)))
            return None
        mark = (
            "<b style='color:var(--jp-error-color1,#c00)'>error</b>"
            if outcome.is_error
            else "<b>ok</b>"
        )
        structured = outcome.metadata.get("structured")
        self.result.value = (
            STYLE
            + mark
            + _pre(outcome.output)
            + (
                f"<b>structured content</b>{_pre(json.dumps(structured, indent=2))}"
                if structured is not None
                else ""
            )
        )
        return outcome

    def _resource_chosen(self) -> None:
        i = self.resource.value
        chosen = self.resources[i] if i is not None else None
        template = chosen.get("uri_template", "") if chosen and chosen["template"] else ""
        self.template_form.show(
            template_fields(template) if template else [],
            complete=lambda arg, typed: self.session.complete("template", template, arg, typed),
        )
        uri = chosen.get("uri") if chosen and not chosen["template"] else None
        self.subscribe_button.disabled = uri is None
        self.subscribe_button.value = uri in self.session.subscribed if uri else False

    def read(self, uri: str | None = None, *, updated: bool = False) -> asyncio.Task[Any] | None:
        if uri is None:
            i = self.resource.value
            if i is None:
                return None
            chosen = self.resources[i]
            if chosen["template"]:
                try:
                    values = self.template_form.values()
                except ValueError as exc:
                    self.content.value = error_html(str(exc))
                    return None
                uri = expand_template(
                    chosen["uri_template"], {k: str(v) for k, v in values.items()}
                )
            else:
                uri = str(chosen["uri"])
        return _schedule(self._read(uri, updated))

    async def _read(self, uri: str, updated: bool) -> list[Content] | None:
        try:
            contents = await self.session.read(uri)
        except Exception as exc:
            self.content.value = error_html(str(_failure(exc)))
            return None
        self.shown_uri = uri
        parts = [f"<b>{html.escape(uri)}</b>" + (" <i>updated just now</i>" if updated else "")]
        if uri.startswith(APP_SCHEME):
            parts.append(
                "<div class='toolnexus-muted'>an MCP App's HTML (the MCP Apps extension: a host "
                "draws it beside a tool's result), shown as text</div>"
            )
        for c in contents:
            parts.append(
                f"<div class='toolnexus-muted'>{html.escape(c.mime or 'no MIME type')}, "
                f"{c.size:,} bytes</div>"
            )
            if c.text is not None:
                parts.append(_pre(c.text))
            elif c.data is not None:
                parts.append(f"<code>binary: {c.data[:32].hex(' ')}</code>")
        self.content.value = STYLE + "".join(parts)
        return contents

    def _subscribe_toggled(self, change: dict[str, Any]) -> None:
        i = self.resource.value
        if i is None or self.resources[i]["template"]:
            return
        uri = self.resources[i]["uri"]
        if bool(change.get("new")) != (uri in self.session.subscribed):
            _schedule(self._subscribe(uri, bool(change.get("new"))))

    async def _subscribe(self, uri: str, on: bool) -> None:
        try:
            await (self.session.subscribe(uri) if on else self.session.unsubscribe(uri))
        except Exception as exc:
            self.content.value = error_html(str(_failure(exc)))
            self.subscribe_button.value = uri in self.session.subscribed

    def _prompt_chosen(self) -> None:
        i = self.prompt.value
        name = self.prompts[i]["name"] if i is not None else ""
        self.prompt_form.show(
            prompt_fields(self.prompts[i].get("arguments") or []) if i is not None else [],
            complete=lambda arg, typed: self.session.complete("prompt", name, arg, typed),
        )

    def get_prompt(self) -> asyncio.Task[Any] | None:
        i = self.prompt.value
        if i is None:
            return None
        try:
            values = self.prompt_form.values()
        except ValueError as exc:
            self.messages.value = error_html(str(exc))
            return None
        return _schedule(self._get(self.prompts[i]["name"], {k: str(v) for k, v in values.items()}))

    async def _get(self, name: str, args: dict[str, str]) -> Any:
        try:
            described, messages = await self.session.prompt(name, args)
        except Exception as exc:
            self.messages.value = error_html(str(_failure(exc)))
            return None
        self.messages.value = (
            STYLE
            + (f"<div class='toolnexus-muted'>{html.escape(described)}</div>" if described else "")
            + "".join(f"<b>{html.escape(role)}</b>{_pre(text)}" for role, text in messages)
        )
        return messages

    def doctor(self) -> asyncio.Task[Any]:
        """``toolnexus doctor --mcp`` on this server, its findings drawn as they come; the task
        gives the :class:`~toolnexus.debug.report.DoctorReport`."""
        return _schedule(self._doctor())

    async def _doctor(self) -> Any:
        target, headers, env = self._target
        self.doctor_view.value = "<i>probing…</i>"

        def found(report: Any) -> None:
            self.report = report
            self.doctor_view.value = STYLE + report.html()

        try:
            return await mcp_doctor(target, headers=headers, env=env, on_finding=found)
        except Exception as exc:
            self.doctor_view.value = error_html(str(_failure(exc)))
            return None

    def declare_roots(self) -> asyncio.Task[Any]:
        roots = [r.strip() for r in self.roots.value.split(",") if r.strip()]
        return _schedule(self._declare(roots))

    async def _declare(self, roots: list[str]) -> None:
        try:
            await self.session.set_roots(roots)
        except Exception as exc:
            self.server.value = error_html(str(_failure(exc)))
            return
        self._draw_server()

    # -- the session: ping, the log level, cancel, stderr ---------------------------------------------
    def ping(self) -> asyncio.Task[Any]:
        """``ping``; its round trip on the status line (2026-07-28 has none: said)."""
        return _schedule(self._ping())

    async def _ping(self) -> float | None:
        try:
            took = await self.session.ping()
        except Exception as exc:
            self.said.value = error_html(str(_failure(exc)))
            return None
        self.ping_ms = took * 1000
        self.said.value = f"ping answered in {self.ping_ms:.1f} ms"
        self._draw_server()
        return took

    def set_level(self, level: str) -> asyncio.Task[Any]:
        """Ask for the server's log lines at ``level`` and above (:data:`LOG_LEVELS`)."""
        return _schedule(self._set_level(level))

    async def _set_level(self, level: str) -> None:
        try:
            await self.session.set_level(level)
        except Exception as exc:
            self.said.value = error_html(str(_failure(exc)))
            return
        self.said.value = f"log level: {html.escape(level)} and above"
        self._draw_server()

    def cancel(self) -> list[str]:
        """Cancel every call, read or prompt in flight (the server is told); what was cancelled."""
        cancelled = self.session.cancel()
        self.said.value = (
            html.escape("cancelled: " + ", ".join(printable(c, 80) for c in cancelled))
            if cancelled
            else "nothing in flight to cancel"
        )
        return cancelled

    def _stderr(self, line: str) -> None:
        """A stdio server's stderr line: the tab redrawn at most ten times a second."""
        if not self._stderr_pending:
            self._stderr_pending = True
            asyncio.get_running_loop().call_later(REDRAW_EVERY, self._draw_stderr)

    def _draw_stderr(self) -> None:
        self._stderr_pending = False
        lines = list(self.session.console)[-STDERR_SHOWN:]
        self.stderr.value = _pre("\n".join(lines))
