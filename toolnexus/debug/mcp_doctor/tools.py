"""The server's tools: their names and schemas (JSON Schema 2020-12, as the spec says)."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

from ...errors import PeerError
from ...mcp.session import MCPSession
from ..features import Finder
from .lines import EVERY_CLIENT, MAX_TOOLS, TOOL_NAME


async def list_tools(session: MCPSession, find: Finder) -> list[dict[str, Any]]:
    if "tools" not in session.capabilities:
        return []
    try:
        tools = await session.tools()
    except PeerError:
        return []  # said by the capabilities
    seen: set[str] = set()
    bad = 0
    for tool in tools[:MAX_TOOLS]:
        name = tool["name"]
        where = f"tools[{name}]"
        if name in seen:
            find.found(
                "error",
                "tools",
                f"two tools are named {name!r}",
                breaks=EVERY_CLIENT,
                fix="give each tool its own name",
                at=where,
            )
        seen.add(name)
        if not TOOL_NAME.match(name):
            bad += 1
            find.found(
                "warning",
                "tools",
                f"the name {name!r} is not 1 to 128 of A-Z a-z 0-9 _ - .",
                breaks=["clients and models that check tool names (OpenAI's, Anthropic's)"],
                fix="rename the tool",
                at=where,
            )
        for key, field in (("input_schema", "inputSchema"), ("output_schema", "outputSchema")):
            schema = tool.get(key)
            if schema is None:
                continue
            problem = _schema_problem(schema)
            if problem:
                bad += 1
                find.found(
                    "error",
                    "tools",
                    f"the {field} {problem}",
                    breaks=EVERY_CLIENT
                    if key == "input_schema"
                    else ["clients that check results"],
                    fix=f"make the {field} a valid JSON Schema of an object",
                    at=f"{where}.{field}",
                )
    if len(tools) > MAX_TOOLS:
        find.found("info", "tools", f"the first {MAX_TOOLS} of {len(tools)} tools were checked")
    if not bad:
        find.found(
            "ok",
            "tools",
            f"{len(tools)} tool{'s' * (len(tools) != 1)}: names and schemas valid "
            f"({sum(1 for t in tools if t.get('output_schema'))} with an output schema)",
        )
    return tools


def _schema_problem(schema: Any) -> str:
    """Why a tool's schema is not a valid JSON Schema of an object ("" when it is); checked
    against its ``$schema``'s meta-schema, else 2020-12's (jsonschema-rs, as the tools' own
    arguments are)."""
    if not isinstance(schema, dict):
        return "is not a JSON object"
    if schema.get("type") != "object":
        return f"has type {schema.get('type')!r}, not 'object'"
    try:
        jsonschema_rs.meta.validate(schema if "$schema" in schema else {**schema, "$schema": _2020})
    except jsonschema_rs.ValidationError as exc:
        path = "/".join(str(p) for p in exc.instance_path)
        return f"is not a valid JSON Schema{f' at {path}' if path else ''}: {exc.message[:200]}"
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        return f"cannot be read as a JSON Schema: {str(exc).splitlines()[0][:200]}"
    return ""


_2020 = "https://json-schema.org/draft/2020-12/schema"
