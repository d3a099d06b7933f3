"""The read-only tools called (``call=True``): with arguments made from their schemas, and without
the ones they require."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs

from ...errors import PeerError
from ...mcp.session import MCPSession
from ..features import Finder
from .lines import EVERY_CLIENT, MAX_CALLS


async def call_tools(session: MCPSession, tools: list[dict[str, Any]], find: Finder) -> None:
    """The read-only tools called: without their required arguments, then with arguments made
    from their schema; nothing else is ever called."""
    read_only = [t for t in tools if (t.get("annotations") or {}).get("readOnlyHint") is True]
    if not read_only:
        find.found(
            "info",
            "tools",
            "no tool is annotated read-only (readOnlyHint), so none was called",
            fix="annotate the tools that change nothing with readOnlyHint: true",
        )
        return
    for tool in read_only[:MAX_CALLS]:
        name, schema = tool["name"], tool["input_schema"]
        where = f"tools[{name}]"
        required = schema.get("required") or []
        if required:
            await _call_without(session, name, required, where, find)
        args = _example_arguments(schema)
        if args is None:
            find.found(
                "info",
                "tools",
                f"{name} was not called with arguments: its schema gives no default, enum or "
                "example for every required one",
                at=where,
            )
            continue
        await _call_with(session, tool, args, where, find)


async def _call_with(
    session: MCPSession, tool: dict[str, Any], args: dict[str, Any], where: str, find: Finder
) -> None:
    """One read-only tool called with ``args``: a result, which matches its output schema."""
    name = tool["name"]
    before = find.mark()
    try:
        result = await session.call(name, args)
    except PeerError as exc:
        if "structured content" in str(exc) or "output schema" in str(exc):
            # the official client refused the result: it checks it against the schema
            find.found(
                "error",
                "tools",
                f"{name}'s result does not match its output schema: " + str(exc).splitlines()[0],
                before,
                ["clients that check results (the official SDKs' do: they refuse it)"],
                "return structuredContent matching the output schema",
                at=f"{where}.structuredContent",
            )
            return
        find.found(
            "error",
            "tools",
            f"{name} {json.dumps(args)} failed as a protocol error: {exc}",
            before,
            EVERY_CLIENT,
            "report a tool's failure as a result with isError",
            at=where,
        )
        return
    output = tool.get("output_schema")
    structured = result.metadata.get("structured")
    if output and not result.is_error:
        if structured is None:
            find.found(
                "error",
                "tools",
                f"{name} declares an output schema but its result has no structuredContent",
                before,
                ["clients that read structured results"],
                "return structuredContent matching the output schema",
                at=f"{where}.outputSchema",
            )
            return
        try:
            errors = [
                e.message for e in jsonschema_rs.validator_for(output).iter_errors(structured)
            ]
        except (
            jsonschema_rs.ValidationError,
            jsonschema_rs.ReferencingError,
            ValueError,
        ) as exc:
            errors = [f"the output schema cannot be used: {exc}"]
        if errors:
            find.found(
                "error",
                "tools",
                f"{name}'s structuredContent does not match its output schema: {errors[0][:200]}",
                before,
                ["clients that check results (the official SDKs' do)"],
                "return structuredContent matching the output schema",
                at=f"{where}.structuredContent",
            )
            return
    find.found(
        "ok",
        "tools",
        f"{name} {json.dumps(args)[:120]}: "
        + ("a tool error" if result.is_error else "answered")
        + (
            ", structured content matches the output schema"
            if output and structured is not None
            else ""
        ),
        at=where,
    )


async def _call_without(
    session: MCPSession, name: str, required: list[str], where: str, find: Finder
) -> None:
    before = find.mark()
    try:
        result = await session.call(name, {})
    except PeerError as exc:
        find.found(
            "warning",
            "errors",
            f"{name} without its required {', '.join(map(str, required))} is a protocol "
            f"error ({exc}): the model never sees why and cannot correct itself",
            before,
            ["models calling through any client"],
            "report invalid arguments as a tool result with isError (the spec's input "
            "validation errors)",
            at=where,
        )
        return
    if result.is_error:
        find.found("ok", "errors", f"{name} without its required arguments: a tool error", at=where)
    else:
        find.found(
            "warning",
            "tools",
            f"{name} runs without its required {', '.join(map(str, required))}: the input "
            "schema is not honoured",
            before,
            ["models that trust the schema"],
            "check the arguments against the input schema before the tool runs",
            at=where,
        )


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments from the schema's defaults, enums, consts and examples (None when a required one
    has none)."""
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if not isinstance(sub, dict):
            continue
        for key in ("default", "const"):
            if key in sub:
                out[name] = sub[key]
                break
        else:
            if isinstance(sub.get("enum"), list) and sub["enum"]:
                out[name] = sub["enum"][0]
            elif isinstance(sub.get("examples"), list) and sub["examples"]:
                out[name] = sub["examples"][0]
    required = schema.get("required") or []
    return out if all(r in out for r in required) else None
