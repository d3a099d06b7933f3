"""An MCP session's cassette replayed: served as an MCP server, or diffed against a live one.

A cassette (see :mod:`toolnexus.debug.cassette`) holds an MCP session when it was recorded by an
:class:`~toolnexus.mcp.MCPSession` (``record=``; the TUI's and notebook's MCP inspector
save it with the Wire's ``k``; ``toolnexus doctor --mcp --record``): over streamable HTTP each
POST with its answer (a JSON body, or SSE frames: the server's notifications and requests, then
the answer), over stdio each JSON-RPC message (method ``STDIO``). Both eras the official SDK
speaks are read alike: the handshake era (``initialize``, a session id, the server's questions
asked during a call) and 2026-07-28 (``server/discover``, each request on its own, questions as
``input_required`` results).

**As a server** (:class:`MCPReplay`, ``toolnexus replay session.jsonl`` and ``--stdio``): each
JSON-RPC request finds its recorded call, matched as :mod:`toolnexus.debug.replay` matches A2A
(``strict``, ``lenient``, ``method``: the method and the tool, prompt or resource it names),
``_meta`` (a progress token, the 2026-07-28 envelope) set aside as the ids a client makes anew;
and it gets what the server sent for it, in order: its notifications (a progress token made the
live request's), its requests to the client (each waits for the client's answer, up to
``answer_wait`` seconds), then the answer with the live request's id. Over HTTP on ``/mcp`` (and
the recorded path), behind the same Host/Origin guard as every served thing: an answer recorded
as SSE is served as SSE, else as JSON with its recorded status; ``initialize`` is answered with a
session id the replay makes (a recorded one was masked, and is never served); a GET opens the
stream of what the server said outside any request, kept open until the client goes; DELETE ends
the session. Of the recorded headers none is served: the content type is the replay's
(``application/json`` or ``text/event-stream``), with ``nosniff``; never a recorded cookie, CORS
header, refresh or location. Over stdio: one JSON-RPC message a line, nothing else on stdout. A
``ping`` is answered whether recorded or not; any other request that matches nothing gets the
JSON-RPC error -32603 naming it and is listed in :attr:`MCPReplay.misses`.

**Against a live server** (:func:`mcp_diff`, ``toolnexus replay session.jsonl --against URL``,
or a command line): a session in the recorded era asks the live server what was asked, the
server's questions answered as the user answered them then, and reports what changed: the server
(name, era, capabilities), the tools (added, removed, each input and output schema), resources,
templates and prompts (added, removed, changed), and each answer by its shape (keys and types;
``isError`` and error codes by value).
"""

from __future__ import annotations

from .against import mcp_diff
from .calls import Call, mcp_servers
from .server import ANSWER_WAIT, MCPReplay
from .tape import MCPTape

__all__ = ["MCPReplay", "MCPTape", "Call", "mcp_diff", "mcp_servers", "ANSWER_WAIT"]
