"""A toolkit as an MCP server on the official ``mcp`` SDK, carried two ways: ``/mcp`` of a served
toolkit (streamable HTTP, :class:`MCPProfile`) and stdio, as desktop MCP hosts start a
server (:func:`serve_stdio`, ``toolnexus mcp``). Both run the same :class:`MCPToolkit`, in both
eras the SDK speaks: the ``initialize`` handshake (2025-11-25 and before) and 2026-07-28's
per-request envelope.

**Tools.** ``tools/list`` gives one entry per exposed tool (its name, description and input schema
verbatim); ``tools/call`` runs ``Tool.execute``, whose output becomes one text content with
``isError`` kept. Exposed: the tools named in ``MCPServeConfig.tools``, or, when none are named,
every tool except the builtins that run commands or write files (``bash``, ``write``, ``edit``).
A caller that sends a progress token hears the tool's :class:`~toolnexus.tools.Progress` as
``notifications/progress`` (at most one every :data:`PROGRESS_EVERY`, its message cut to
:data:`MAX_PROGRESS_MESSAGE`). A tool that asks for input (a remote agent's ``input-required``) is
asked of the user through MCP elicitation when the client offers it, and the call goes on with the
answer: in the handshake era as an ``elicitation/create`` request during the call (stdio and an
HTTP session; stateless HTTP, with ``--workers``, has no channel for it), on 2026-07-28 as the call's ``input_required`` result, which the
client answers by calling again with the answer and the ``requestState`` it was given (any
carrier, stateless HTTP included; the state is sealed by the SDK's ``RequestStateBoundary`` with
a key of this process's, so with ``--workers`` the answer must reach the worker that asked). A
client that offers no elicitation gets a tool error that says what was asked.

**Skills** (``MCPServeConfig.skills``, on by default). Each skill is a prompt (its instructions,
the arguments it declares, ``${name}`` filled in) and each file of its folder a read-only resource,
``skill://<skill>/<path>``, with one template per skill (``skill://<skill>/{+path}``): confined to
the folder (no ``..``, no symlink out, no hidden file), at most
:data:`~toolnexus.skills.MAX_FOLDER_FILES` a skill and :data:`~toolnexus.skills.MAX_FILE_BYTES` a
read, UTF-8 as text, anything else as a base64 blob, the MIME type guessed from the name.

**Completions.** ``completion/complete`` offers what a skill prompt's argument may be (the
``values`` and ``values-from`` its ``SKILL.md`` declares: the weather skill's ``city`` from its own
climate table) and, for a skill's template, the files of its folder whose path begins with what
was typed.

**Changes.** When the toolkit changes (``Toolkit.add_tool``, ``add_agent``, ``reload_skills``,
which is called by itself when the skills folders change on disk: their files' sizes and times
looked at every :data:`SKILLS_POLL` seconds off the loop, no file read)
the lists are announced as changed, and a skill file whose size or time moved as updated: on
2026-07-28 to every ``subscriptions/listen`` stream that asked for them (over ``/mcp`` and stdio);
in the handshake era as ``notifications/*/list_changed`` and, for the URIs it subscribed to,
``notifications/resources/updated``: on stdio, and over ``/mcp`` on the client's session's GET
stream (the SDK's stateful session manager: ``Mcp-Session-Id`` given by ``initialize``, at most
:data:`MAX_SESSIONS` open, one idle for :data:`SESSION_IDLE` seconds closed, DELETE ends one).
With ``toolnexus serve --workers N`` a session cannot be kept (the next request may reach another
process), so ``/mcp`` stays stateless there and says so: no ``listChanged`` in the handshake era.

Every ``tools/call``, ``prompts/get`` and ``resources/read`` is published on the bus as a
:class:`~toolnexus.events.ToolCallEvent` (its ``method`` says which) and handed to ``on_call``.

Over HTTP, Host and Origin are checked for the whole app (``http.guard``); the serve options'
``auth`` applies here too. Over stdio nothing but the protocol goes to stdout (the SDK points fd 1
at stderr while it serves, so a stray print cannot corrupt the stream), and logs go to stderr.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import mimetypes
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    StreamableHTTPSessionManager,
)
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from ..errors import InvalidParamsError
from ..events import EventBus, Hook, ToolCallEvent
from ..serve.config import Auth, AuthRefused, MCPServeConfig
from ..skills import MAX_SUGGESTIONS, SkillDef, ToolkitLike
from ..tools import REJECT, Answer, Progress, ProgressFn, Request, Tool, ToolContext, ToolResult

__all__ = ["MCPProfile", "MCPToolkit", "serve_stdio"]

MAX_QUESTIONS = 10
"""The most questions one tool call may ask the user (a remote agent that keeps asking is stopped)."""
PROGRESS_EVERY = 0.1
"""Seconds between two progress notifications of one call: a remote agent reports its text at
every chunk, and a caller needs to see it move, not every token (a report that completes the
numbers is always sent)."""
MAX_PROGRESS_MESSAGE = 2000
"""The most characters of a progress message sent (its end: the text so far's newest words)."""
PAGE = 500
"""Resources per ``resources/list`` page."""
MAX_SESSIONS = DEFAULT_MAX_SESSIONS // 10
"""The most handshake-era sessions ``/mcp`` keeps open at once (the SDK's default, 10,000, over
ten: a served toolkit's clients are hosts and inspectors, each session is told of every change,
and one initialized and listed holds about 40 KiB: 40 MB at this bound, 400 MB at the SDK's,
measured with 500); one more is answered 503 until one ends or expires."""
SESSION_IDLE = DEFAULT_SESSION_IDLE_TIMEOUT
"""Seconds after which a session with no request in flight and no GET stream open is closed (the
SDK's default, 30 minutes); its id is then answered 404 and the client initializes again."""
SKILLS_POLL = 1.0
"""Seconds between two looks at the skills folders (a skill added or edited on disk is served
within about this long)."""
_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string", "title": "Your answer"}},
}
SCHEME = "skill"

log = logging.getLogger("toolnexus.serve.mcp")

OnCall = Callable[[dict[str, Any]], Any]


class _AsgiEndpoint:
    """A raw ASGI endpoint (Starlette would treat a bound method as a request/response function)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Any]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def skill_uri(skill: str, relative: str) -> str:
    """The resource URI of one file of a skill's folder."""
    return f"{SCHEME}://{quote(skill, safe='')}/{quote(relative, safe='/')}"


class _Server(Server[Any]):
    """The SDK's lowlevel server, whose handshake declares the change notifications its carrier
    sends (``notifications``): the SDK's session manager answers ``initialize`` with
    ``create_initialization_options()`` as it is, and has no way to be given them."""

    notifications = NotificationOptions()

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or self.notifications, experimental_capabilities, extensions
        )


class MCPToolkit:
    """One toolkit as the SDK's lowlevel MCP ``Server`` (``app``), whatever carries it: its exposed
    tools, its skills as prompts and their files as resources; every call is published on ``bus``
    and handed to ``on_call``. ``duplex``: the carrier keeps a channel to each client (stdio, an
    HTTP session), so handshake-era clients are told of changes and may subscribe to resources."""

    def __init__(
        self,
        toolkit: ToolkitLike,
        config: MCPServeConfig,
        *,
        bus: EventBus,
        server: str,
        on_call: OnCall | None,
        duplex: bool = False,
    ) -> None:
        self.toolkit = toolkit
        self.config = config
        self.bus = bus
        self.server_name = server
        self.on_call = Hook(on_call, "on_call")
        self.tools = config.exposed(toolkit.tools())
        self._by_name = {t.name: t for t in self.tools}
        self.events = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.events)
        self._clients: OrderedDict[str | None, _Client] = OrderedDict()
        self._files = self._snapshot()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unwatch: Callable[[], None] | None = None
        self._pending: set[asyncio.Task[None]] = set()
        skills: dict[str, Any] = {}
        if config.skills:
            skills = {
                "on_list_prompts": self._list_prompts,
                "on_get_prompt": self._get_prompt,
                "on_list_resources": self._list_resources,
                "on_list_resource_templates": self._list_templates,
                "on_read_resource": self._read,
                "on_completion": self._complete,
            }
            if duplex:
                skills |= {
                    "on_subscribe_resource": self._subscribe,
                    "on_unsubscribe_resource": self._unsubscribe,
                }
        self.app = _Server(
            config.name,
            version=config.version,
            on_list_tools=self._list,
            on_call_tool=self._call,
            on_subscriptions_listen=self._listen,
            **skills,
        )
        # the 2026-07-28 requestState a question rides on comes back from the client: sealed
        self.app.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=config.name)
        )
        self.app.notifications = NotificationOptions(
            prompts_changed=duplex and config.skills,
            resources_changed=duplex and config.skills,
            tools_changed=duplex,
        )
        self.options = self.app.create_initialization_options()

    # -- life ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Listen to the toolkit's changes (on the running loop, which serves)."""
        self._loop = asyncio.get_running_loop()
        watch = getattr(self.toolkit, "watch", None)
        if watch is not None:
            self._unwatch = watch(self._toolkit_changed)
        stamp = getattr(self.toolkit, "skills_stamp", None)
        reload = getattr(self.toolkit, "reload_skills", None)
        if self.config.skills and stamp is not None and reload is not None:
            task = asyncio.ensure_future(self._follow_skills(stamp, reload))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _follow_skills(self, stamp: Callable[[], Any], reload: Callable[[], Any]) -> None:
        """Pick up a skill added, removed or edited on disk (``reload_skills``, whose change is
        announced as any other): the folders' metadata looked at every :data:`SKILLS_POLL`
        seconds, off the loop."""
        last = await asyncio.to_thread(stamp)
        while True:
            await asyncio.sleep(SKILLS_POLL)
            try:
                now = await asyncio.to_thread(stamp)
                if now != last:
                    last = now
                    reload()
            except Exception:  # noqa: BLE001 - a folder that cannot be read is tried again
                log.warning("the skills folders could not be looked at", exc_info=True)

    def closing(self) -> None:
        """End every ``subscriptions/listen`` stream gracefully (each sends its last frame): the
        server is stopping, and a listen stream never ends by itself."""
        self._listen.close()

    async def stop(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        self._listen.close()
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        await self.on_call.close()

    def _toolkit_changed(self, what: frozenset[str]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._spawn, what)

    def _spawn(self, what: frozenset[str]) -> None:
        task = asyncio.ensure_future(self._announce(what))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _announce(self, what: frozenset[str]) -> None:
        """Tell every listener what changed (best effort: a client gone is skipped)."""
        events: list[ServerEvent] = []
        if "tools" in what:
            self.tools = self.config.exposed(self.toolkit.tools())
            self._by_name = {t.name: t for t in self.tools}
            events.append(ToolsListChanged())
        if self.config.skills and "prompts" in what:
            events.append(PromptsListChanged())
        if self.config.skills and "resources" in what:
            before, self._files = self._files, self._snapshot()
            events.append(ResourcesListChanged())
            events += [
                ResourceUpdated(uri=uri)
                for uri, stamp in self._files.items()
                if uri in before and before[uri] != stamp
            ]
        for event in events:
            await self.events.publish(event)
        for client in list(self._clients.values()):
            for event in events:
                with contextlib.suppress(Exception):  # the client gone: nobody to tell
                    await client.tell(event)

    def _met(self, ctx: Any) -> _Client | None:
        """The handshake-era client this request came from, when the carrier is that client's
        own channel (stdio: one client a process; HTTP: its session, by ``Mcp-Session-Id``), kept
        to be told of changes later (the :data:`MAX_SESSIONS` latest: a session the SDK closed
        for idling is forgotten as newer ones come, or when it is deleted)."""
        session = getattr(ctx, "session", None)
        caps = self.options.capabilities.tools
        if (
            not isinstance(session, ServerSession)
            or session.protocol_version in MODERN_PROTOCOL_VERSIONS
            or caps is None
            or not caps.list_changed
        ):
            return None
        request = getattr(ctx, "request", None)
        key = request.headers.get(MCP_SESSION_ID_HEADER) if request is not None else None
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = _Client(session)
            while len(self._clients) > MAX_SESSIONS:
                self._clients.popitem(last=False)
        self._clients.move_to_end(key)
        client.session = session
        return client

    def _forget(self, key: str) -> None:
        """A session ended (DELETE): nobody to tell any more."""
        self._clients.pop(key, None)

    # -- tools --------------------------------------------------------------------------------------
    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self._met(ctx)
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
                for t in self.tools
            ]
        )

    async def _call(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        tool = self._by_name.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        args = params.arguments or {}
        started = time.perf_counter()
        result: ToolResult | None = None
        progress = _progress_to(ctx)
        modern = getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
        answered, canceled = _answered(params)
        try:
            result = await tool.execute(args, ToolContext(answer=answered, on_progress=progress))
            if canceled:  # the remote question was withdrawn (as declined); the call ends here
                result = ToolResult.error(f"{tool.name}: the question was canceled")
            for _ in range(MAX_QUESTIONS):
                request = result.pending
                if request is None:
                    break
                if request.kind == REJECT:  # a refusal is no question: the call ends with it
                    result = ToolResult.error(result.output)
                    break
                if modern and _can_elicit(
                    ctx
                ):  # asked as the call's result: the client calls again
                    return _input_required(request)
                answer = await self._ask(ctx, tool, request)
                if isinstance(answer, ToolResult):
                    result = answer
                    break
                result = await tool.execute(args, ToolContext(answer=answer, on_progress=progress))
            else:
                if result.pending is not None:
                    result = ToolResult.error(
                        f"{tool.name} asked {MAX_QUESTIONS} questions in one call; stopped"
                    )
        finally:
            outcome = result or ToolResult.error(f"{tool.name}: canceled by the client")
            self._report("tools/call", tool.name, tool.source, args, outcome, _ms(started))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.output)], is_error=outcome.is_error
        )

    async def _ask(self, ctx: Any, tool: Tool, request: Request) -> Answer | ToolResult:
        """What the user answers to ``request``, through a handshake-era elicitation request; a
        tool error when the client cannot ask (no elicitation capability, or stateless HTTP) or
        the user cancels."""
        question = request.prompt or "the tool needs your input"
        session = getattr(ctx, "session", None)
        if session is None or not _can_elicit(ctx):
            return ToolResult.error(
                f"{tool.name} asks: {question} -- this MCP client cannot answer questions "
                "(it offers no elicitation), so the call stops here"
            )
        reply = await session.elicit_form(
            message=question,
            requested_schema=_ANSWER_SCHEMA,
            related_request_id=getattr(ctx, "request_id", None),
        )
        answer = _answer(request.id, reply)
        if answer is None:
            return ToolResult.error(f"{tool.name} asked: {question} -- the question was canceled")
        return answer

    # -- skills as prompts --------------------------------------------------------------------------
    def _skills(self) -> dict[str, SkillDef]:
        return {s.name: s for s in self.toolkit.skills()}

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        self._met(ctx)
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=s.name,
                    description=s.description or None,
                    arguments=[
                        types.PromptArgument(
                            name=a.name, description=a.description or None, required=a.required
                        )
                        for a in s.arguments
                    ],
                )
                for s in self.toolkit.skills()
            ]
        )

    async def _get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        started = time.perf_counter()
        args = dict(params.arguments or {})
        skill = self._skills().get(params.name)
        try:
            if skill is None:
                raise InvalidParamsError(f"Unknown prompt: {params.name}")
            text = skill.prompt(args)
            if skill.path is not None:
                text += (
                    f"\n\nThe files of this skill are MCP resources: "
                    f"{skill_uri(skill.name, '')}<relative path>."
                )
        except InvalidParamsError as exc:
            self._report(
                "prompts/get", params.name, "skill", args, ToolResult.error(str(exc)), _ms(started)
            )
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        self._report("prompts/get", skill.name, "skill", args, ToolResult(text), _ms(started))
        return types.GetPromptResult(
            description=skill.description or None,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )

    async def _complete(
        self, ctx: Any, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """What a skill prompt's argument may be (its ``values`` and ``values-from``), or which
        files of a skill's folder a template's ``path`` may name, beginning with what was typed."""
        ref, typed = params.ref, params.argument.value
        values: list[str] = []
        total = 0
        if isinstance(ref, types.PromptReference):
            skill = self._skills().get(ref.name)
            if skill is not None:
                values, total = await asyncio.to_thread(skill.suggest, params.argument.name, typed)
        elif params.argument.name == "path":
            skill = next(
                (
                    s
                    for s in self.toolkit.skills()
                    if s.path is not None and ref.uri == skill_uri(s.name, "") + "{+path}"
                ),
                None,
            )
            if skill is not None:
                files = await asyncio.to_thread(skill.folder)
                found = [f.relative for f in files if f.relative.startswith(typed)]
                values, total = found[:MAX_SUGGESTIONS], len(found)
        return types.CompleteResult(
            completion=types.Completion(values=values, total=total, has_more=total > len(values))
        )

    # -- skill files as resources -------------------------------------------------------------------
    def _snapshot(self) -> dict[str, tuple[int, int]]:
        """Every served file's URI and (size, time), to tell which ones an edit touched."""
        if not self.config.skills:
            return {}
        return {
            skill_uri(s.name, f.relative): (f.size, f.mtime_ns)
            for s in self.toolkit.skills()
            for f in s.folder()
        }

    async def _list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self._met(ctx)
        start = _cursor(params)
        listed = await asyncio.to_thread(self._resources)
        page = listed[start : start + PAGE]
        more = str(start + PAGE) if start + PAGE < len(listed) else None
        return types.ListResourcesResult(resources=page, next_cursor=more)

    def _resources(self) -> list[types.Resource]:
        return [
            types.Resource(
                uri=skill_uri(s.name, f.relative),
                name=f"{s.name}/{f.relative}",
                mime_type=_mime(f.relative),
                size=f.size,
            )
            for s in self.toolkit.skills()
            for f in s.folder()
        ]

    async def _list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=skill_uri(s.name, "") + "{+path}",
                    name=f"{s.name} files",
                    description=f"A file of the {s.name} skill's folder, by its relative path",
                )
                for s in self.toolkit.skills()
                if s.path is not None
            ]
        )

    async def _read(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        started = time.perf_counter()
        uri = str(params.uri)
        try:
            skill, relative = self._locate(uri)
            data = await asyncio.to_thread(skill.read, relative)
        except InvalidParamsError as exc:
            self._report(
                "resources/read",
                uri,
                "skill",
                {"uri": uri},
                ToolResult.error(str(exc)),
                _ms(started),
            )
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        mime = _mime(relative)
        contents: types.TextResourceContents | types.BlobResourceContents
        try:
            contents = types.TextResourceContents(
                uri=uri, mime_type=mime, text=data.decode("utf-8")
            )
        except UnicodeDecodeError:
            contents = types.BlobResourceContents(
                uri=uri, mime_type=mime, blob=base64.b64encode(data).decode("ascii")
            )
        summary = ToolResult(f"{mime or 'unknown type'}, {len(data):,} bytes")
        self._report("resources/read", uri, "skill", {"uri": uri}, summary, _ms(started))
        return types.ReadResourceResult(contents=[contents])

    def _locate(self, uri: str) -> tuple[SkillDef, str]:
        """The skill and relative path a ``skill://`` URI names.

        Raises:
            InvalidParamsError: not one of ours.
        """
        parts = urlsplit(uri)
        skill = self._skills().get(unquote(parts.netloc)) if parts.scheme == SCHEME else None
        relative = unquote(parts.path).lstrip("/")
        if skill is None or not relative or parts.query or parts.fragment:
            raise InvalidParamsError(f"Unknown resource: {uri}")
        return skill, relative

    async def _subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        client = self._met(ctx)
        if client is not None:
            client.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: Any, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        client = self._met(ctx)
        if client is not None:
            client.subscribed.discard(str(params.uri))
        return types.EmptyResult()

    # -- what was done ------------------------------------------------------------------------------
    def _report(
        self, method: str, name: str, source: str, args: Any, result: ToolResult, ms: float
    ) -> None:
        self.bus.publish(
            ToolCallEvent(
                self.server_name,
                name,
                source,
                args,
                result.output,
                result.is_error,
                ms,
                method=method,
            )
        )
        self.on_call.fire(
            {
                "method": method,
                "name": name,
                "source": source,
                "ms": ms,
                "is_error": result.is_error,
                "args": args,
                "output": result.output,
            }
        )


class _Client:
    """A handshake-era client with a channel of its own: its latest session (any request's
    session sends a notification that belongs to no request on the connection's channel) and the
    resources it subscribed to."""

    def __init__(self, session: ServerSession) -> None:
        self.session = session
        self.subscribed: set[str] = set()

    async def tell(self, event: ServerEvent) -> None:
        if isinstance(event, ToolsListChanged):
            await self.session.send_tool_list_changed()
        elif isinstance(event, PromptsListChanged):
            await self.session.send_prompt_list_changed()
        elif isinstance(event, ResourcesListChanged):
            await self.session.send_resource_list_changed()
        elif event.uri in self.subscribed:
            await self.session.send_resource_updated(event.uri)


_QUESTION = "answer"
"""The key of the one question a 2026-07-28 ``input_required`` result asks."""


def _can_elicit(ctx: Any) -> bool:
    session = getattr(ctx, "session", None)
    return session is not None and session.check_client_capability(
        types.ClientCapabilities(elicitation=types.ElicitationCapability())
    )


def _input_required(request: Request) -> types.InputRequiredResult:
    """A tool's question as a 2026-07-28 call result: one form with one answer, and the request's
    id as the state the client sends back (sealed on the way out, checked on the way in)."""
    return types.InputRequiredResult(
        input_requests={
            _QUESTION: types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=request.prompt or "the tool needs your input",
                    requested_schema=_ANSWER_SCHEMA,
                )
            )
        },
        request_state=request.id,
    )


def _answered(params: types.CallToolRequestParams) -> tuple[Answer | None, bool]:
    """The answer a 2026-07-28 client sent with its call again, for the request its state names,
    and whether the user canceled (the tool is then told no, as for a decline, so a remote agent's
    task does not wait for ever)."""
    reply = (params.input_responses or {}).get(_QUESTION)
    if not params.request_state or not isinstance(reply, types.ElicitResult):
        return None, False
    answer = _answer(params.request_state, reply)
    return answer or Answer(params.request_state, False, None), answer is None


def _answer(request_id: str, reply: types.ElicitResult) -> Answer | None:
    """An elicitation's result as the tool's :class:`Answer` (None: the user canceled)."""
    if reply.action == "accept":
        given = dict(reply.content or {}).get("answer")
        return Answer(request_id, True, "" if given is None else str(given))
    if reply.action == "decline":
        return Answer(request_id, False, None)
    return None


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _mime(name: str) -> str | None:
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed is None and name.rsplit("/", 1)[-1].lower().endswith((".md", ".markdown")):
        return "text/markdown"
    return guessed


def _cursor(params: types.PaginatedRequestParams | None) -> int:
    cursor = params.cursor if params is not None else None
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor[:40]}")
    return int(cursor)


def _progress_to(ctx: Any) -> ProgressFn | None:
    """A tool's progress as this request's ``notifications/progress`` (the SDK sends nothing when
    the caller gave no progress token): the tool's numbers, or a count of its reports when it
    gives words only; at most one every :data:`PROGRESS_EVERY`."""
    session = getattr(ctx, "session", None)
    if session is None:
        return None
    sent = [0, float("-inf")]  # reports sent, when the last one went

    async def report(p: Progress) -> None:
        now = time.monotonic()
        complete = p.done is not None and p.total is not None and p.done >= p.total
        if not complete and now - sent[1] < PROGRESS_EVERY:
            return
        sent[0] += 1
        sent[1] = now
        message = p.message
        if message is not None and len(message) > MAX_PROGRESS_MESSAGE:
            message = "\u2026" + message[-(MAX_PROGRESS_MESSAGE - 1) :]
        done = p.done if p.done is not None else float(sent[0])
        await session.report_progress(done, p.total, message)

    return report


class MCPProfile(MCPToolkit):
    """``/mcp`` for one served toolkit: streamable HTTP, behind the serve options' auth.
    ``sessions``: keep a session for each handshake-era client (its GET stream hears changes);
    False (several processes serve the port) serves every request on its own."""

    def __init__(
        self,
        toolkit: ToolkitLike,
        config: MCPServeConfig,
        *,
        bus: EventBus,
        server: str,
        on_call: OnCall | None,
        auth: Auth | None,
        sessions: bool = True,
    ) -> None:
        super().__init__(toolkit, config, bus=bus, server=server, on_call=on_call, duplex=sessions)
        self.auth = auth
        self.sessions = sessions
        self._manager: StreamableHTTPSessionManager | None = None

    def routes(self) -> list[Route]:
        return [
            Route("/mcp", endpoint=_AsgiEndpoint(self._asgi), methods=["GET", "POST", "DELETE"])
        ]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncGenerator[None, None]:
        # Host/Origin are checked for the whole app by http.guard.HostGuard, in front of this
        self._manager = StreamableHTTPSessionManager(
            app=self.app,
            stateless=not self.sessions,
            json_response=False,
            max_sessions=MAX_SESSIONS,
            session_idle_timeout=SESSION_IDLE,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.start()
        try:
            async with self._manager.run():
                yield
        finally:
            await self.stop()

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.auth is not None:
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1")
                for k, v in scope.get("headers", [])
            }
            try:
                await self.auth.admit(headers)
            except AuthRefused as refused:
                answer = JSONResponse({"error": str(refused)}, refused.status, refused.headers)
                await answer(scope, receive, send)
                return
        assert self._manager is not None, "the MCP lifespan has not started"
        ended = dict(scope.get("headers", [])).get(MCP_SESSION_ID_HEADER.encode())
        if scope.get("method") != "DELETE" or ended is None:
            await self._manager.handle_request(scope, receive, send)
            return
        status = 0

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self._manager.handle_request(scope, receive, sent)
        if 200 <= status < 300:  # the session's own credential ended it
            self._forget(ended.decode("latin-1"))


async def serve_stdio(
    toolkit: ToolkitLike,
    config: MCPServeConfig | dict[str, Any] | bool | None = None,
    *,
    on_call: OnCall | None = None,
    events: EventBus | None = None,
    stdin: Any = None,
    stdout: Any = None,
) -> None:
    """Serve ``toolkit`` (its tools, its skills as prompts and resources) as MCP over stdio until
    the client closes stdin (as Claude Desktop, VS Code, Cursor and other desktop hosts start a
    server). ``config``: the ``mcpServer`` block (name, version, the tools to expose), else the
    toolkit config's, else the defaults. ``stdin`` / ``stdout``: other streams than the process's
    (anyio text files), for embedding."""

    if config is None:
        config = toolkit.config.get("mcpServer")
    cfg = MCPServeConfig.from_config(config if config is not None and config is not False else None)
    served = MCPToolkit(
        toolkit, cfg, bus=events or EventBus(), server=cfg.name, on_call=on_call, duplex=True
    )
    served.start()
    try:
        async with stdio_server(stdin, stdout) as (read, write):
            await served.app.run(read, write, served.options)
    finally:
        await served.stop()
