"""An MCP server on the official Python SDK (``MCPServer``) with everything an inspector shows, a
real peer for the tests of the MCP mode, the session and the doctor: tools (one with an output
schema, one that fails, one slow with progress and a log line, one that asks the user through
elicitation, one that has the client's model sample, one that lists the client's roots, one that
touches a resource), resources (text, a blob, a template, one that changes), and prompts with
arguments. Both eras the SDK serves: a 2026-07-28 client is asked through ``input_required``
results, a handshake-era one through requests during the call.

``python -m tests.peers.mcp_everything stdio``, or ``... http`` (streamable HTTP, stateful, on a
free loopback port; prints ``MCP <url>``), or ``... sse`` (the legacy HTTP+SSE transport of
2024-11-05, the same way), or ``... oauth`` (the same behind OAuth: it also runs
the authorization server below and prints ``MCP <url>`` and ``AS <url>``), or ``... oauth-static``
(an authorization server that registers no client: only the static id ``inspector-client``).

The authorization server is written for the tests, from the MCP authorization spec and the RFCs
it names: authorization-server metadata (RFC 8414), dynamic client registration (RFC 7591), the
authorization code grant with PKCE (S256 only, RFC 7636) and the resource indicator (RFC 8707).
Its ``/authorize`` signs the user in at once (no page: the test's "user" follows the address) and
redirects back with the code; ``/token`` checks the verifier, the client, the redirect and the
resource, and hands out an opaque bearer token that the MCP server's verifier looks up.

No ``from __future__ import annotations``: the SDK reads the tools' annotations, which name
resolvers local to ``build``.
"""

import asyncio
import base64
import hashlib
import re
import secrets
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlencode

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp_types import ListRootsResult, SamplingMessage, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

LOGO = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Name(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age in years")
    colour: str = Field(default="blue", json_schema_extra={"enum": ["red", "green", "blue"]})


class Sum(BaseModel):
    total: int
    terms: list[int]


def build(auth: AuthSettings | None = None, verifier: Any = None) -> MCPServer:
    server = MCPServer(
        "everything-py",
        version="1.0.0",
        instructions="A server with every MCP feature, for toolnexus' tests.",
        auth=auth,
        token_verifier=verifier,
    )
    state = {"counter": 0}

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def add(a: int = 2, b: int = 3) -> Sum:
        """Add two integers (a structured result, with an output schema)."""
        return Sum(total=a + b, terms=[a, b])

    @server.tool()
    def fail(reason: str) -> str:
        """Fail on purpose: a tool error, as a result."""
        raise ValueError(f"failed on purpose: {reason}")

    @server.tool()
    async def slow(steps: int, ctx: Context) -> str:
        """Count slowly, reporting progress and logging a line."""
        await ctx.info(f"slow starts: {steps} steps")
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            await asyncio.sleep(0.05)
        return f"done in {steps} steps"

    async def ask_name() -> Elicit[Name]:
        return Elicit("Who are you?", Name)

    @server.tool()
    def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
        """Greet the user, whose name is asked through elicitation."""
        return f"Hello {who.name}, {who.age}, who likes {who.colour}!"

    async def sampled(topic: str) -> Sample:
        return Sample(
            [
                SamplingMessage(
                    role="user", content=TextContent(type="text", text=f"A haiku about {topic}")
                )
            ],
            max_tokens=100,
            system_prompt="You are a poet.",
        )

    @server.tool()
    def haiku(topic: str, poem: Annotated[Any, Resolve(sampled)]) -> str:
        """Have the client's model write a haiku (sampling)."""
        content = poem.content
        return f"the model {poem.model} said: {getattr(content, 'text', content)}"

    async def roots() -> ListRoots:
        return ListRoots()

    @server.tool()
    def where(listed: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        """List the client's roots."""
        return ", ".join(str(r.uri) for r in listed.roots) or "no roots"

    @server.tool()
    async def touch(ctx: Context) -> str:
        """Change the counter resource and say so to its subscribers."""
        state["counter"] += 1
        await ctx.notify_resource_updated("note://counter")
        return f"counter is {state['counter']}"

    @server.resource("note://greeting", mime_type="text/plain", description="A greeting")
    def greeting() -> str:
        return "Hello from the Python SDK server."

    @server.resource("note://logo", mime_type="image/png", description="A one-pixel PNG")
    def logo() -> bytes:
        return LOGO

    @server.resource("note://counter", mime_type="application/json", description="Changes on touch")
    def counter() -> str:
        return f'{{"counter": {state["counter"]}}}'

    @server.resource("note://items/{item}", mime_type="text/plain", description="One item by name")
    def item(item: str) -> str:
        return f"item {item}"

    @server.prompt(description="Review some code")
    def review(code: str, language: str = "python") -> list[Any]:
        from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage

        return [
            UserMessage(f"Please review this {language} code:\n{code}"),
            AssistantMessage("I will look at it."),
        ]

    return server


# -- the authorization server ------------------------------------------------------------------------
@dataclass
class Issued:
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)


STATIC_CLIENT = "inspector-client"
"""The client id ``oauth-static``'s authorization server gave out beforehand (it registers none)."""


def authorization_server(
    issuer: str, resource: str, issued: Issued, static: bool = False
) -> Starlette:
    """``static``: no dynamic registration; only :data:`STATIC_CLIENT`, whose redirect may be any
    port of the loopback address (RFC 8252 7.3), as a desktop client's is."""
    if static:
        issued.clients[STATIC_CLIENT] = {"redirect_uris": [], "loopback": True}

    def metadata(request: Request) -> Response:
        registration = {} if static else {"registration_endpoint": f"{issuer}/register"}
        return JSONResponse(
            {
                "issuer": issuer,
                "authorization_endpoint": f"{issuer}/authorize",
                "token_endpoint": f"{issuer}/token",
                **registration,
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["mcp"],
            }
        )

    async def register(request: Request) -> Response:
        if static:
            return JSONResponse({"error": "registration is not offered"}, 404)
        asked = await request.json()
        uris = asked.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return JSONResponse({"error": "invalid_redirect_uri"}, 400)
        client_id = "client-" + secrets.token_hex(8)
        issued.clients[client_id] = asked
        return JSONResponse(
            {
                **asked,
                "client_id": client_id,
                "client_id_issued_at": int(time.time()),
                "token_endpoint_auth_method": "none",
            },
            201,
        )

    def authorize(request: Request) -> Response:
        q = request.query_params
        client = issued.clients.get(q.get("client_id", ""))
        redirect = q.get("redirect_uri") or ""
        loopback = re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect)
        if client is None or (
            redirect not in client["redirect_uris"] and not (client.get("loopback") and loopback)
        ):
            return JSONResponse({"error": "invalid_client"}, 400)
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, 400)
        code = secrets.token_urlsafe(24)
        issued.codes[code] = {
            "client_id": q["client_id"],
            "redirect_uri": q["redirect_uri"],
            "challenge": q.get("code_challenge", ""),
            "resource": q.get("resource"),
        }
        back = urlencode({"code": code, "state": q.get("state", ""), "iss": issuer})
        return RedirectResponse(f"{q['redirect_uri']}?{back}", 302)

    async def token(request: Request) -> Response:
        form = await request.form()
        grant = issued.codes.pop(str(form.get("code", "")), None)
        if form.get("grant_type") != "authorization_code" or grant is None:
            return JSONResponse({"error": "invalid_grant"}, 400)
        verifier = str(form.get("code_verifier", ""))
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
            b"="
        )
        if (
            challenge.decode() != grant["challenge"]
            or form.get("client_id") != grant["client_id"]
            or form.get("redirect_uri") != grant["redirect_uri"]
            or (form.get("resource") or grant["resource"]) not in (None, resource)
        ):
            return JSONResponse({"error": "invalid_grant"}, 400)
        value = "tok-" + secrets.token_urlsafe(24)
        issued.tokens[value] = {"client_id": grant["client_id"], "resource": resource}
        return JSONResponse(
            {"access_token": value, "token_type": "Bearer", "expires_in": 3600, "scope": "mcp"},
            headers={"Cache-Control": "no-store"},
        )

    return Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/register", register, methods=["POST"]),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
        ]
    )


class Verifier:
    """The MCP server's token verifier: a token the authorization server issued for it."""

    def __init__(self, issued: Issued) -> None:
        self.issued = issued

    async def verify_token(self, token: str) -> AccessToken | None:
        known = self.issued.tokens.get(token)
        if known is None:
            return None
        return AccessToken(
            token=token, client_id=known["client_id"], scopes=["mcp"], resource=known["resource"]
        )


def _socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # listening before the URL is printed: a client may connect at once
    return sock


async def _serve(app: Any, sock: socket.socket) -> None:
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


async def main(how: str) -> None:
    if how == "stdio":
        await build().run_stdio_async()
        return
    mcp_sock = _socket()
    mcp_url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    serving = []
    if how in ("oauth", "oauth-static"):
        as_sock = _socket()
        issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
        issued = Issued()
        server = build(
            AuthSettings(issuer_url=issuer, resource_server_url=mcp_url, required_scopes=["mcp"]),
            Verifier(issued),
        )
        static = how == "oauth-static"
        serving.append(_serve(authorization_server(issuer, mcp_url, issued, static), as_sock))
        print(f"AS {issuer}", flush=True)
    else:
        server = build()
    if how == "sse":  # the legacy HTTP+SSE transport (2024-11-05): a stream, and a POST a message
        mcp_url = mcp_url.removesuffix("/mcp") + "/sse"
        serving.append(_serve(server.sse_app(host="127.0.0.1"), mcp_sock))
    else:
        serving.append(_serve(server.streamable_http_app(host="127.0.0.1"), mcp_sock))
    print(f"MCP {mcp_url}", flush=True)
    await asyncio.gather(*serving)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "stdio"))
