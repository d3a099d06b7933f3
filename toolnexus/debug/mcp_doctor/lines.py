"""The MCP doctor's bounds, the clients its findings name, and a name no server knows."""

from __future__ import annotations

import re

MAX_TOOLS = 200
"""The most tools whose schemas are checked (a server may list any number)."""
MAX_CALLS = 20
"""The most read-only tools called with ``call=True``."""
MAX_ANSWER = 1024 * 1024
"""The most bytes of one raw HTTP answer read."""
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
"""A tool name as the spec would have it (1 to 128 of these characters)."""
HANDSHAKE_CLIENTS = ["TypeScript SDK 1.x", "handshake-era hosts"]
EVERY_CLIENT = ["every MCP client"]
UNKNOWN = "toolnexus-doctor-no-such-thing"
