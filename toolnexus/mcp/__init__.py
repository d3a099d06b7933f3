"""MCP, in one place: MCP servers as toolkit tools and the session an inspector keeps open with any
MCP server (``client``), OAuth for that client (``auth``), and the toolkit served as an MCP server
(``server``, the ``/mcp`` profile and stdio). The doctor and the replay of an MCP server stand
beside their A2A twins in :mod:`toolnexus.debug`.

The client's names are here; the server is imported from ``toolnexus.mcp.server`` (it loads the MCP
SDK's server, which ``import toolnexus`` does not)."""

from __future__ import annotations

from .client import (
    Content,
    Elicitation,
    Field,
    MCPConnection,
    MCPServerSpec,
    MCPSession,
    Notice,
    Reply,
    Sampling,
    call_remote_tool,
    connect_all,
    expand_template,
    field_value,
    form_fields,
    form_values,
    mcp_failure,
    parse_servers,
    prompt_fields,
    remote_tools,
    split_command,
    template_fields,
)

__all__ = [
    "MCPServerSpec",
    "MCPConnection",
    "parse_servers",
    "connect_all",
    "remote_tools",
    "call_remote_tool",
    "MCPSession",
    "Notice",
    "Elicitation",
    "Reply",
    "Sampling",
    "Content",
    "Field",
    "form_fields",
    "prompt_fields",
    "form_values",
    "field_value",
    "template_fields",
    "expand_template",
    "split_command",
    "mcp_failure",
]
