"""The toolkit: every source of tools assembled into one list, and the schema adapters.

Assembly order: MCP tools, then remote agents, then ``skill``, then the builtins, then your
tools. Names are deduplicated first-wins, except that a tool you pass shadows a builtin of the
same name.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .builtins import builtin_tools
from .client.agents import connect_agent, parse_agents
from .errors import ConfigError
from .mcp import connect_all, parse_servers
from .skills import SkillDef, Skipped, as_roots, disk_stamp, list_skills, skill_tool, skills_prompt
from .tools import Tool, ToolContext, ToolResult, openai_tools, tool

__all__ = ["Toolkit", "create_toolkit", "load_config", "CONFIG_KEYS"]

log = logging.getLogger("toolnexus.toolkit")

CONFIG_KEYS = ("skills", "builtins", "a2a", "mcpServer", "agents", "mcpServers", "maxConnections")
"""The reserved top-level keys of a toolkit config file."""


class Toolkit:
    """A uniform list of tools built by :func:`create_toolkit`."""

    def __init__(
        self,
        tools: Sequence[Tool],
        skills: Sequence[SkillDef] = (),
        *,
        skipped: Sequence[Skipped] = (),
        config: Mapping[str, Any] | None = None,
        connections: Sequence[Any] = (),
        agents: Sequence[Any] = (),
        roots: Sequence[Any] = (),
    ) -> None:
        self._tools = list(tools)
        self._by_name = {t.name: t for t in self._tools}
        self._skills = list(skills)
        self.skipped = list(skipped)
        """``SKILL.md`` files found but not used, with the reason."""
        self.config: dict[str, Any] = dict(config or {})
        """The config the toolkit was built from (its ``a2a`` and ``mcpServer`` blocks feed serve)."""
        self._prompt = skills_prompt(self._skills)
        self._connections = list(connections)
        self._agents = list(agents)
        self._roots = list(roots)
        self._given_skills = [s for s in self._skills if s.path is None]
        self._watchers: dict[object, Callable[[frozenset[str]], None]] = {}

    def __repr__(self) -> str:
        return f"Toolkit(tools={[t.name for t in self._tools]!r})"

    def tools(self) -> list[Tool]:
        """Every tool, in assembly order."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    async def execute(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run a tool by name. An unknown name is an error result that suggests close names."""
        t = self._by_name.get(name)
        if t is None:
            close = difflib.get_close_matches(name, list(self._by_name), n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            available = ", ".join(self._by_name) or "none"
            return ToolResult.error(f"Unknown tool '{name}'.{hint} Available tools: {available}")
        return await t.execute(args, ctx)

    def skills(self) -> list[SkillDef]:
        return list(self._skills)

    def skills_prompt(self) -> str:
        """The system-prompt catalogue of described skills, or ``""``."""
        return self._prompt

    # -- schema adapters -------------------------------------------------------------------
    def to_openai(self) -> list[dict[str, Any]]:
        """``[{type: "function", function: {name, description, parameters}}]``."""
        return openai_tools(self._tools)

    def to_anthropic(self) -> list[dict[str, Any]]:
        """``[{name, description, input_schema}]``."""
        return [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in self._tools
        ]

    def to_gemini(self) -> list[dict[str, Any]]:
        """``[{functionDeclarations: [{name, description, parameters}]}]`` in Gemini's schema subset."""
        decls = [
            {
                "name": t.name,
                "description": t.description,
                "parameters": _gemini_schema(t.input_schema),
            }
            for t in self._tools
        ]
        return [{"functionDeclarations": decls}]

    def serve(self, addr: str | int | None = "127.0.0.1:0", **options: Any) -> Any:
        """Serve this toolkit over HTTP: A2A (``a2a=``) and/or MCP (``mcp=``) on one port.

        ``await tk.serve(...)`` returns a :class:`~toolnexus.serve.app.ServeHandle` once the socket is
        bound; ``async with tk.serve(...) as handle`` stops it on exit. Options: ``client``, ``a2a``,
        ``on_task``, ``on_text``, ``mcp``, ``on_call``, ``events`` (see
        :func:`toolnexus.serve.app.serve`).
        """
        from .serve.app import ServeCall, serve  # noqa: PLC0415  # start-up: the serving stack, loaded when served

        return ServeCall(serve(self, addr, **options))

    def serve_in_thread(self, addr: str | int | None = "127.0.0.1:0", **options: Any) -> Any:
        """Like :meth:`serve`, on its own event loop in a daemon thread, for code with no running loop."""
        from .serve.app import serve_in_thread  # noqa: PLC0415  # start-up: the serving stack, loaded when served

        return serve_in_thread(self, addr, **options)

    async def serve_stdio(self, mcp: Any = None, **options: Any) -> None:
        """Serve this toolkit's tools as MCP over stdio until the client closes stdin (desktop MCP
        hosts start a server this way); ``mcp``: the ``mcpServer`` block, else the config's. Options:
        ``on_call``, ``events`` (see :func:`toolnexus.mcp.server.serve_stdio`)."""
        from .mcp.server import serve_stdio  # noqa: PLC0415  # start-up: the MCP SDK's server

        await serve_stdio(self, mcp, **options)

    def mcp_status(self) -> dict[str, dict[str, Any]]:
        """Each configured MCP server: ``{status: connected | failed | disabled | closed, reason, tools}``."""
        return {
            c.spec.name: {
                "status": c.status,
                "reason": c.reason,
                "tools": [t.name for t in c.tools],
            }
            for c in self._connections
        }

    async def add_agent(self, agent: Any) -> list[Tool]:
        """Connect a remote A2A agent (:class:`~toolnexus.client.agents.Agent`) and add its tools.

        Returns the tools added; an agent that cannot be reached adds none (and is logged). Names
        already taken are skipped, first-wins.
        """
        source = await connect_agent(agent)
        if source is None:
            return []
        self._agents.append(source)
        return self._add([t for t in source.tools if t.name not in self._by_name])

    def add_tool(self, *tools: Tool | Callable[..., Any]) -> list[Tool]:
        """Add tools (:class:`Tool` objects or plain functions) while the toolkit serves; a name
        already taken is skipped, first-wins. Returns the tools added."""
        made = [t if isinstance(t, Tool) else tool(t) for t in tools]
        for t in made:
            if t.name in self._by_name:
                log.warning("duplicate tool name %r from %s: keeping the first", t.name, t.source)
        return self._add([t for t in made if t.name not in self._by_name])

    def reload_skills(self) -> list[SkillDef]:
        """Discover the skills again from the folders the toolkit was made with (skills added,
        removed or edited meanwhile) and return them; what serves the toolkit is told."""
        found = list_skills(self._roots, self._given_skills)
        self._skills, self.skipped = found.skills, found.skipped
        self._prompt = skills_prompt(self._skills)
        names = [t.name for t in self._tools]
        self._tools = [t for t in self._tools if not (t.name == "skill" and t.source == "skill")]
        if self._skills and "skill" not in {t.name for t in self._tools}:
            at = next(
                (i for i, t in enumerate(self._tools) if t.source != "mcp" and t.source != "a2a"),
                len(self._tools),
            )
            self._tools.insert(at, skill_tool(self._skills))
        self._by_name = {t.name: t for t in self._tools}
        tools_moved = names != [t.name for t in self._tools]
        self._changed(frozenset({"prompts", "resources"} | ({"tools"} if tools_moved else set())))
        return self.skills()

    def skills_stamp(self) -> frozenset[tuple[str, int, int]]:
        """What the skills folders hold now (:func:`~toolnexus.skills.disk_stamp`): compared with
        an earlier one, it tells whether :meth:`reload_skills` has anything to pick up."""
        return disk_stamp(self._roots)

    def watch(self, listener: Callable[[frozenset[str]], None]) -> Callable[[], None]:
        """Call ``listener`` with what changed (``tools``, ``prompts``: the skills, ``resources``:
        their files) each time the toolkit changes; returns the call that stops it. A listener
        runs in the thread that changed the toolkit, must not block, and never fails the change."""
        token = object()
        self._watchers[token] = listener
        return lambda: self._watchers.pop(token, None) and None

    def _add(self, added: list[Tool]) -> list[Tool]:
        for t in added:
            self._tools.append(t)
            self._by_name[t.name] = t
        if added:
            self._changed(frozenset({"tools"}))
        return added

    def _changed(self, what: frozenset[str]) -> None:
        for listener in list(self._watchers.values()):
            try:
                listener(what)
            except Exception:  # noqa: BLE001 - a watcher's failure is not the change's
                log.warning("a toolkit watcher failed", exc_info=True)

    def agents(self) -> list[Any]:
        """The connected remote agents (each with its ``client`` and ``tools``)."""
        return list(self._agents)

    async def close(self) -> None:
        """Close every MCP session, child process and agent connection the toolkit holds."""
        for conn in self._connections:
            await conn.close()
        for source in self._agents:
            await source.aclose()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


_GEMINI_DROP = frozenset(
    {
        "additionalProperties",
        "$schema",
        "$defs",
        "default",
        "examples",
        "uniqueItems",
        "prefixItems",
    }
)


def _gemini_schema(schema: Any) -> Any:
    """Gemini takes an OpenAPI subset: no ``additionalProperties``; nullable instead of type lists."""
    if isinstance(schema, list):
        return [_gemini_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _GEMINI_DROP:
            continue
        if key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            out["type"] = kinds[0] if kinds else "string"
            if "null" in value:
                out["nullable"] = True
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _gemini_schema(v) for k, v in value.items()}
        else:
            out[key] = _gemini_schema(value)
    return out


def load_config(
    config: str | os.PathLike[str] | Mapping[str, Any] | None,
) -> tuple[dict[str, Any], Path | None]:
    """Read a toolkit config (a JSON file or a dict); returns it and the folder relative paths start from.

    Raises:
        ConfigError: the file is missing, unreadable, not JSON, or not an object; the message names
            the file and the problem.
    """
    if config is None:
        return {}, None
    if isinstance(config, Mapping):
        data, folder = dict(config), None
    else:
        path = Path(config).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read config file: {exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(
                f"{path}: a toolkit config must be a JSON object, got {type(data).__name__}"
            )
        folder = path.absolute().parent
    unknown = sorted(
        k
        for k in data
        if k not in CONFIG_KEYS and k not in ("servers", "mcp") and not k.startswith("$")
    )
    if unknown:
        log.warning(
            "config: ignoring unknown keys %s (known: %s)",
            ", ".join(unknown),
            ", ".join(CONFIG_KEYS),
        )
    return data, folder


def _config_skill_roots(value: Any, folder: Path | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = value.get("dirs", value.get("paths", value.get("dir")))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError("config: skills must be a folder path or a list of folder paths")
    return [str(folder / v) if folder is not None and not os.path.isabs(v) else v for v in value]


async def create_toolkit(
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    skills: Iterable[SkillDef] = (),
    tools: Iterable[Tool | Callable[..., Any]] = (),
    builtins: bool | Mapping[str, Any] | None = None,
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    root: str | os.PathLike[str] | None = None,
    mcp_servers: Mapping[str, Any] | None = None,
    agents: Iterable[Any] = (),
) -> Toolkit:
    """Assemble a toolkit.

    Args:
        skills_dir: one or more folders searched for ``**/SKILL.md``.
        skills: skills given as data (:class:`SkillDef`).
        tools: your tools: :class:`Tool` objects or plain functions (wrapped with :func:`tool`).
        builtins: ``True`` (default), ``False`` or a builtins config (see ``toolnexus.builtins``);
            overrides the config file's ``builtins``.
        config: a JSON config file or dict with the reserved keys of ``CONFIG_KEYS``.
        root: the working folder of the builtins (default: the current directory).
        mcp_servers: MCP servers whose tools join the toolkit, in the config's ``mcpServers`` form
            (added to the config file's servers); see :mod:`toolnexus.mcp`.
        agents: remote A2A agents (:class:`~toolnexus.client.agents.Agent`) whose skills become tools
            (added to the config file's ``agents``); see :mod:`toolnexus.client.agents`.

    Raises:
        ConfigError: the config cannot be used.
    """
    cfg, folder = load_config(config)
    roots = [*as_roots(skills_dir), *_config_skill_roots(cfg.get("skills"), folder)]
    found = list_skills(roots, skills)
    for s in found.skipped:
        log.warning("skill skipped (%s): %s %s", s.reason, s.path, s.detail)

    mine = [t if isinstance(t, Tool) else tool(t) for t in tools]
    mine_names = {t.name for t in mine}
    builtin_cfg = builtins if builtins is not None else cfg.get("builtins", True)
    if isinstance(builtin_cfg, Mapping) and builtin_cfg.get("root") and folder is not None:
        builtin_cfg = {**builtin_cfg, "root": str(folder / str(builtin_cfg["root"]))}
    native = [t for t in builtin_tools(builtin_cfg, root) if t.name not in mine_names]

    block = next((cfg[k] for k in ("mcpServers", "servers", "mcp") if cfg.get(k) is not None), None)
    specs = parse_servers(block, str(folder) if folder else None) + parse_servers(mcp_servers)
    wanted_agents = [*parse_agents(cfg.get("agents")), *agents]
    (connections, remote), sources = await asyncio.gather(
        connect_all(specs) if specs else _nothing(),
        asyncio.gather(*(connect_agent(a) for a in wanted_agents)),
    )
    agent_sources = [s for s in sources if s is not None]

    ordered: list[Tool] = list(remote) + [t for s in agent_sources for t in s.tools]
    if found.skills:
        ordered.append(skill_tool(found.skills))
    ordered += native
    ordered += mine
    unique: list[Tool] = []
    seen: set[str] = set()
    for t in ordered:
        if t.name in seen:
            log.warning("duplicate tool name %r from %s: keeping the first", t.name, t.source)
            continue
        seen.add(t.name)
        unique.append(t)
    return Toolkit(
        unique,
        found.skills,
        skipped=found.skipped,
        config=cfg,
        connections=connections,
        agents=agent_sources,
        roots=[Path(r).absolute() for r in roots],
    )


async def _nothing() -> tuple[list[Any], list[Tool]]:
    return [], []
