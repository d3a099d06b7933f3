"""One recorded request of an MCP client and what the server sent for it (:class:`Call`), the MCP
servers a cassette talked to, and what a JSON-RPC message is (its id, an error answering it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cassette import Cassette, Exchange, origin_of
from ..replay.server import MAX_DEPTH

OPENERS = frozenset({"initialize", "server/discover"})
_NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
}


@dataclass
class Call:
    """One recorded request of the client and what the server sent for it."""

    seq: int
    body: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The server's notifications and requests while it ran, in order."""
    answer: dict[str, Any] | None = None
    """The JSON-RPC response (``result`` or ``error``), None when none came."""
    status: int | None = None
    """The HTTP status it was answered with (None over stdio)."""
    streamed: bool = False
    after: list[dict[str, Any]] = field(default_factory=list)
    """What the server said, outside any request, after this answer (over stdio)."""

    @property
    def method(self) -> str:
        return str(self.body.get("method", ""))

    @property
    def params(self) -> dict[str, Any]:
        params = self.body.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def operation(self) -> str:
        """The method and, for a call, read or prompt, what it names: ``tools/call add``."""
        named = _NAMED.get(self.method)
        what = self.params.get(named) if named else None
        return f"{self.method} {what}" if isinstance(what, str) else self.method


def mcp_servers(cassette: Cassette) -> list[str]:
    """The MCP servers a cassette talked to: an HTTP origin whose exchanges open an MCP session
    (``initialize``, ``server/discover``) or carry ``MCP-Protocol-Version``, and each stdio server."""
    found: dict[str, None] = {}
    for x in cassette:
        if x.method == "STDIO" or x.rpc_method in OPENERS or _mcp_headers(x):
            found[server_of(x)] = None
    return list(found)


def _mcp_headers(x: Exchange) -> bool:
    return any(str(k).lower() == "mcp-protocol-version" for k in x.request.get("headers") or {})


def server_of(x: Exchange) -> str:
    return x.url if x.method == "STDIO" else origin_of(x.url)


def server_of_name(name: str) -> str:
    return name if name.startswith("stdio:") else (origin_of(name) or name.rstrip("/"))


def id_of(message: dict[str, Any]) -> str | int | None:
    """A JSON-RPC message's id when it may be one (a string or an integer; a hostile cassette's or
    client's object, array or boolean is none), else None."""
    rpc_id = message.get("id")
    return rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("method"), str)


def answers_to(value: Any, rpc_id: Any) -> bool:
    return (
        isinstance(value, dict)
        and "method" not in value
        and ("result" in value or "error" in value)
        and value.get("id") == rpc_id
    )


SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


TOO_DEEP = f"nests deeper than {MAX_DEPTH} levels: toolnexus replay serves none so deep"


def rpc_error(message: dict[str, Any], code: int, why: str) -> dict[str, Any]:
    """A JSON-RPC error answering ``message``."""
    return {"jsonrpc": "2.0", "id": id_of(message), "error": {"code": code, "message": why}}
