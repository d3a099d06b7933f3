"""An OAuth 2 authorization server that issues JWT access tokens (RFC 9068), for the tests: keys
made here (EC P-256 and RSA, by ``cryptography``), published at ``GET /jwks`` (each fetch
counted), named by ``GET /.well-known/openid-configuration``; ``POST /token`` takes the
client-credentials grant (any client id, HTTP basic with the secret ``SECRET``) and answers a JWT
for ``sub`` the client id with the scopes asked for. :meth:`Issuer.mint` signs any token a test
wants (another audience, expired, another key, another algorithm)."""

from __future__ import annotations

import base64
import contextlib
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
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolnexus.http.server import AsgiServer

SECRET = "issuer-s3cret"
AUDIENCE = "https://agent.example/"


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


@dataclass
class Issuer:
    url: str = ""
    keys: dict[str, Any] = field(default_factory=dict)
    """The keys published, by kid; the last is the one tokens are signed with."""
    fetches: int = 0
    """How many times the key set was fetched."""

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

    async def _jwks(self, request: Request) -> JSONResponse:
        self.fetches += 1
        return JSONResponse({"keys": [public_jwk(k, v) for k, v in self.keys.items()]})

    async def _discovery(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": self.url,
                "token_endpoint": self.url + "/token",
                "jwks_uri": self.url + "/jwks",
                "device_authorization_endpoint": self.url + "/device",
                "authorization_endpoint": self.url + "/authorize",
            }
        )

    async def _token(self, request: Request) -> JSONResponse:
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        kind, _, value = request.headers.get("authorization", "").partition(" ")
        try:
            client, _, secret = base64.b64decode(value).decode().partition(":")
        except ValueError:
            client, secret = "", ""
        if kind != "Basic" or urllib.parse.unquote(secret) != SECRET:
            return JSONResponse({"error": "invalid_client"}, 401)
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, 400)
        token = self.mint(urllib.parse.unquote(client), form.get("scope", ""))
        return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 300})


@contextlib.asynccontextmanager
async def jwt_issuer() -> AsyncIterator[Issuer]:
    issuer = Issuer()
    app = Starlette(
        routes=[
            Route("/jwks", issuer._jwks),
            Route("/.well-known/openid-configuration", issuer._discovery),
            Route("/token", issuer._token, methods=["POST"]),
        ]
    )
    host = AsgiServer(app)
    await host.start()
    issuer.url = host.url
    try:
        yield issuer
    finally:
        await host.stop()
