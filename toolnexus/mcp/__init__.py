"""MCP, in one place. The client side: MCP servers as toolkit tools (``client``), the session an
inspector keeps open with any MCP server (``session``), the forms an inspector draws (``forms``),
how the client reaches a server, every exchange recorded (``transport``), and OAuth for it
(``auth``). The server side: the toolkit served as an MCP server, the ``/mcp`` profile and stdio
(``server``). The doctor and the replay of an MCP server stand beside their A2A twins in
:mod:`toolnexus.debug`.

The client's names are here; the server is imported from ``toolnexus.mcp.server`` (it loads the MCP
SDK's server, which ``import toolnexus`` does not)."""

from __future__ import annotations

from .client import (
    MCPConnection,
    MCPServerSpec,
    call_remote_tool,
    connect_all,
    parse_servers,
    read_servers,
    remote_tools,
    servers_file,
)
from .forms import (
    Field,
    choice_text,
    expand_template,
    field_value,
    form_fields,
    form_values,
    prompt_fields,
    split_command,
    template_fields,
)
from .session import (
    LOG_LEVELS,
    Content,
    Elicitation,
    MCPSession,
    Notice,
    Page,
    Reply,
    Sampling,
    TaskState,
)
from .transport import mcp_failure

__all__ = [
    "call_remote_tool",
    "choice_text",
    "connect_all",
    "Content",
    "Elicitation",
    "expand_template",
    "Field",
    "field_value",
    "form_fields",
    "form_values",
    "mcp_failure",
    "MCPConnection",
    "MCPServerSpec",
    "MCPSession",
    "Notice",
    "TaskState",
    "LOG_LEVELS",
    "Page",
    "parse_servers",
    "read_servers",
    "servers_file",
    "prompt_fields",
    "remote_tools",
    "Reply",
    "Sampling",
    "split_command",
    "template_fields",
]
