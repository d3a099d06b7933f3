"""An OAuth 2 authorization server for the tests, written from RFC 6749 and OpenID Connect
Discovery 1.0: ``POST /token`` takes the client-credentials grant with the client authenticated
by HTTP basic (§2.3.1: id and secret form-urlencoded, then base64) and answers a bearer token
(§5.1) or ``invalid_client`` (401) / ``unsupported_grant_type`` (400) (§5.2);
``GET /.well-known/openid-configuration`` names the token endpoint."""

from __future__ import annotations

import base64
import contextlib
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolnexus.http.server import AsgiServer


@dataclass
class TokenServer:
    client_id: str
    client_secret: str
    token: str
    expires_in: int = 3600
    url: str = ""
    grants: list[dict[str, str]] = field(default_factory=list)
    """Each token request's form, in order."""

    async def _token(self, request: Request) -> JSONResponse:
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        self.grants.append(form)
        given = request.headers.get("authorization", "")
        pair = f"{urllib.parse.quote(self.client_id, safe='')}:{urllib.parse.quote(self.client_secret, safe='')}"
        if given != "Basic " + base64.b64encode(pair.encode()).decode():
            return JSONResponse(
                {"error": "invalid_client"}, 401, headers={"WWW-Authenticate": "Basic"}
            )
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, 400)
        answer = {"access_token": self.token, "token_type": "Bearer", "expires_in": self.expires_in}
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    async def _discovery(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": self.url,
                "token_endpoint": self.url + "/token",
                "jwks_uri": self.url + "/jwks",
            }
        )


@contextlib.asynccontextmanager
async def token_server(
    client_id: str, client_secret: str, token: str, expires_in: int = 3600
) -> AsyncIterator[TokenServer]:
    server = TokenServer(client_id, client_secret, token, expires_in)
    app = Starlette(
        routes=[
            Route("/token", server._token, methods=["POST"]),
            Route("/.well-known/openid-configuration", server._discovery),
        ]
    )
    host = AsgiServer(app)
    await host.start()
    server.url = host.url
    try:
        yield server
    finally:
        await host.stop()
