"""An OAuth 2 authorization server for the tests, written from RFC 6749, RFC 8628, RFC 7636 and
OpenID Connect Discovery 1.0: ``POST /token`` takes the client-credentials grant with the client
authenticated by HTTP basic (§2.3.1: id and secret form-urlencoded, then base64) and answers a
bearer token (§5.1) or ``invalid_client`` (401) / ``unsupported_grant_type`` (400) (§5.2);
``GET /.well-known/openid-configuration`` names its endpoints.

The public client's flows (``public_id``, no secret): the device code flow (RFC 8628:
``POST /device`` gives a device code, a user code and where to enter it; ``/token`` answers
``authorization_pending`` until :meth:`TokenServer.approve` is called, or the ``pending`` polls
given have passed, then the token; ``slow_down`` once when ``slow`` is set), and the
authorization code flow with PKCE (RFC 7636: ``GET /authorize`` redirects to the client's
``redirect_uri`` with a code and the ``state`` it was given, keeping the S256 ``code_challenge``;
``/token`` gives the token for that code only with the verifier whose hash is the challenge).
Either may give a refresh token (``refresh``), which ``/token`` takes back (RFC 6749 §6)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
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
    public_id: str = "terminal"
    pending: int = 1_000_000
    """Device code polls answered ``authorization_pending`` before the token, unless approved."""
    slow: bool = False
    refresh: str | None = None
    approved: bool = False
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    """Authorization codes given, with the request that got each."""
    user_code: str = ""
    polls: int = 0

    def approve(self) -> None:
        """The user entered the code and approved."""
        self.approved = True

    async def _device(self, request: Request) -> JSONResponse:
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        if form.get("client_id") != self.public_id:
            return JSONResponse({"error": "invalid_client"}, 401)
        self.user_code = "WDJB-MJHT"
        answer = {
            "device_code": "dev-" + secrets.token_urlsafe(8),
            "user_code": self.user_code,
            "verification_uri": self.url + "/device/enter",
            "expires_in": 60,
            "interval": 0.05,  # the tests' pace (RFC 8628 would say 5)
        }
        return JSONResponse(answer)

    async def _authorize(self, request: Request) -> RedirectResponse | JSONResponse:
        asked = dict(request.query_params)
        if (
            asked.get("client_id") != self.public_id
            or asked.get("response_type") != "code"
            or asked.get("code_challenge_method") != "S256"
            or not asked.get("code_challenge")
            or not asked.get("redirect_uri", "").startswith("http://127.0.0.1:")
        ):
            return JSONResponse({"error": "invalid_request"}, 400)
        code = secrets.token_urlsafe(12)
        self.codes[code] = asked
        back = {"code": code, "state": asked.get("state", "")}
        return RedirectResponse(asked["redirect_uri"] + "?" + urllib.parse.urlencode(back), 302)

    def _issued(self) -> JSONResponse:
        answer: dict[str, object] = {
            "access_token": self.token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
        }
        if self.refresh:
            answer["refresh_token"] = self.refresh
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    def _public(self, form: dict[str, str]) -> JSONResponse | None:
        """The public client's grants, or None for a grant of the confidential client."""
        kind = form.get("grant_type")
        if kind == "urn:ietf:params:oauth:grant-type:device_code":
            self.polls += 1
            if self.slow and self.polls == 1:
                return JSONResponse({"error": "slow_down"}, 400)
            if not self.approved and self.polls <= self.pending:
                return JSONResponse({"error": "authorization_pending"}, 400)
            return self._issued()
        if kind == "authorization_code":
            asked = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
            if (
                asked is None
                or asked["code_challenge"] != challenge
                or asked["redirect_uri"] != form.get("redirect_uri")
            ):
                return JSONResponse({"error": "invalid_grant"}, 400)
            return self._issued()
        if kind == "refresh_token":
            if not self.refresh or form.get("refresh_token") != self.refresh:
                return JSONResponse({"error": "invalid_grant"}, 400)
            return self._issued()
        return None

    async def _token(self, request: Request) -> JSONResponse:
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        self.grants.append(form)
        if form.get("client_id") == self.public_id:
            answer = self._public(form)
            if answer is not None:
                return answer
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
                "device_authorization_endpoint": self.url + "/device",
                "authorization_endpoint": self.url + "/authorize",
                "jwks_uri": self.url + "/jwks",
            }
        )


@contextlib.asynccontextmanager
async def token_server(
    client_id: str,
    client_secret: str,
    token: str,
    expires_in: int = 3600,
    *,
    refresh: str | None = None,
    pending: int = 1_000_000,
    slow: bool = False,
) -> AsyncIterator[TokenServer]:
    server = TokenServer(
        client_id, client_secret, token, expires_in, refresh=refresh, pending=pending, slow=slow
    )
    app = Starlette(
        routes=[
            Route("/token", server._token, methods=["POST"]),
            Route("/device", server._device, methods=["POST"]),
            Route("/authorize", server._authorize),
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
