"""An OAuth 2 authorization server for the tests, written from RFC 6749, RFC 8628, RFC 7636,
RFC 9068 and OpenID Connect Discovery 1.0; one provider for both sides of the tests, the client's
flows and the resource server's checks of its tokens.

``GET /.well-known/openid-configuration`` names its endpoints. ``POST /token`` takes the
client-credentials grant with the client authenticated by HTTP basic (§2.3.1: id and secret
form-urlencoded, then base64; ``client_id`` None: any client id with the secret) and answers a
bearer token (§5.1) or ``invalid_client`` (401) / ``unsupported_grant_type`` (400) (§5.2). The
token is ``token`` when one is given, else a JWT access token (RFC 9068) for ``sub`` the client
with the scopes asked for, signed with keys made here (EC P-256 and RSA, by ``cryptography``),
published at ``GET /jwks`` (each fetch counted); :meth:`AuthorizationServer.mint` signs any token
a test wants (another audience, expired, another key, another algorithm).

The public client's flows (``public_id``, no secret): the device code flow (RFC 8628:
``POST /device`` gives a device code, a user code and where to enter it; ``/token`` answers
``authorization_pending`` until :meth:`AuthorizationServer.approve` is called, or the ``pending``
polls given have passed, then the token; ``slow_down`` once when ``slow`` is set), and the
authorization code flow with PKCE (RFC 7636: ``GET /authorize`` redirects to the client's
``redirect_uri`` with a code and the ``state`` it was given, keeping the S256 ``code_challenge``;
``/token`` gives the token for that code only with the verifier whose hash is the challenge).
Either may give a refresh token (``refresh``), which ``/token`` takes back (RFC 6749 §6)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import secrets
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route

from toolnexus.http.server import AsgiServer

SECRET = "issuer-s3cret"
"""The client secret when a test names none."""
AUDIENCE = "https://agent.example/"
"""The audience of the JWTs it signs, unless a test says otherwise."""


def new_key(kind: str = "EC") -> Any:
    if kind == "RSA":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def public_jwk(kid: str, key: Any) -> dict[str, Any]:
    if isinstance(key, rsa.RSAPrivateKey):
        jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig"}


def _basic(client: str, secret: str) -> str:
    """HTTP basic as §2.3.1 has a client send it: id and secret form-urlencoded, then base64."""
    pair = f"{urllib.parse.quote(client, safe='')}:{urllib.parse.quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


@dataclass
class AuthorizationServer:
    client_id: str | None = None
    """The confidential client's id (None: any id, with the secret)."""
    client_secret: str = SECRET
    token: str | None = None
    """The access token it gives (None: a JWT it signs)."""
    expires_in: int = 3600
    url: str = ""
    keys: dict[str, Any] = field(default_factory=dict)
    """The keys published, by kid; the last is the one tokens are signed with."""
    fetches: int = 0
    """How many times the key set was fetched."""
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
    device_scope: str = ""
    polls: int = 0

    def __post_init__(self) -> None:
        self.rotate()

    def rotate(self, kind: str = "EC", keep_old: bool = False) -> str:
        """A new signing key, published (the old ones dropped unless ``keep_old``); its kid."""
        kid = f"k-{uuid.uuid4().hex[:8]}"
        if not keep_old:
            self.keys.clear()
        self.keys[kid] = new_key(kind)
        return kid

    @property
    def kid(self) -> str:
        return list(self.keys)[-1]

    def mint(
        self,
        sub: str = "ada",
        scope: str = "",
        *,
        aud: str = AUDIENCE,
        iss: str | None = None,
        expires_in: int = 300,
        key: Any = None,
        kid: str | None = None,
        alg: str | None = None,
        **claims: Any,
    ) -> str:
        kid = kid or self.kid
        key = key if key is not None else self.keys[kid]
        alg = alg or ("RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256")
        now = int(time.time())
        body = {"iss": iss or self.url, "sub": sub, "aud": aud, "iat": now, "exp": now + expires_in}
        if scope:
            body["scope"] = scope
        return jwt.encode({**body, **claims}, key, algorithm=alg, headers={"kid": kid})

    def approve(self) -> None:
        """The user entered the code and approved."""
        self.approved = True

    async def _jwks(self, request: Request) -> JSONResponse:
        self.fetches += 1
        return JSONResponse({"keys": [public_jwk(k, v) for k, v in self.keys.items()]})

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

    async def _device(self, request: Request) -> JSONResponse:
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        if form.get("client_id") != self.public_id:
            return JSONResponse({"error": "invalid_client"}, 401)
        self.user_code, self.device_scope = "WDJB-MJHT", form.get("scope", "")
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

    def _issued(self, sub: str, scope: str) -> JSONResponse:
        token = self.token or self.mint(sub, scope, expires_in=self.expires_in)
        answer: dict[str, object] = {
            "access_token": token,
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
            return self._issued(self.public_id, self.device_scope)
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
            return self._issued(self.public_id, asked.get("scope", ""))
        if kind == "refresh_token":
            if not self.refresh or form.get("refresh_token") != self.refresh:
                return JSONResponse({"error": "invalid_grant"}, 400)
            return self._issued(self.public_id, form.get("scope", ""))
        return None

    def _client(self, given: str) -> str | None:
        """The confidential client that HTTP basic ``given`` authenticates, or None: its secret,
        its id when one is set, both encoded as §2.3.1 says (a client that does not escape them
        is refused)."""
        try:
            pair = base64.b64decode(given.removeprefix("Basic "), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        client = urllib.parse.unquote(pair.partition(":")[0])
        if self.client_id is not None and client != self.client_id:
            return None
        return client if given == _basic(client, self.client_secret) else None

    async def _token(self, request: Request) -> JSONResponse:
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        self.grants.append(form)
        if form.get("client_id") == self.public_id:
            answer = self._public(form)
            if answer is not None:
                return answer
        client = self._client(request.headers.get("authorization", ""))
        if client is None:
            return JSONResponse(
                {"error": "invalid_client"}, 401, headers={"WWW-Authenticate": "Basic"}
            )
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, 400)
        return self._issued(client, form.get("scope", ""))


@contextlib.asynccontextmanager
async def authorization_server(
    client_id: str | None = None,
    client_secret: str = SECRET,
    token: str | None = None,
    expires_in: int = 3600,
    *,
    refresh: str | None = None,
    pending: int = 1_000_000,
    slow: bool = False,
) -> AsyncIterator[AuthorizationServer]:
    """The server on a loopback port (``client_id`` None: any client with ``client_secret``;
    ``token`` None: JWTs it signs)."""
    server = AuthorizationServer(
        client_id, client_secret, token, expires_in, refresh=refresh, pending=pending, slow=slow
    )
    app = Starlette(
        routes=[
            Route("/token", server._token, methods=["POST"]),
            Route("/device", server._device, methods=["POST"]),
            Route("/authorize", server._authorize),
            Route("/jwks", server._jwks),
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
