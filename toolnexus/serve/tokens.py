"""An agent behind an OAuth 2 resource server: JWT access tokens (RFC 9068) checked against the
authorization server's published keys (a JWKS URL, or the one its OpenID Connect discovery document
names), its issuer and this agent's audience.

The key set is fetched bounded (:data:`MAX_JWKS` bytes, ``timeout`` seconds), kept for
:data:`KEYS_FOR` seconds, and fetched again early when a token names a key it does not hold (the
server rotated its keys), at most once every :data:`REFETCH_EVERY` seconds, so that tokens naming
made-up keys cannot make the agent hammer the authorization server. Only the algorithms allowed
(asymmetric ones: ``none`` and HMAC never) are accepted. Why a token was refused goes to the server
log; the caller learns only that it was (RFC 6750 ``invalid_token``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
from jwt import PyJWK

from .. import _json
from .._json import is_array, is_object
from ..http.fetch import exchange, why
from ..protocol.signing import ALGORITHMS, KeyError_, KeySet

__all__ = ["AccessTokens", "Granted", "TokenRefused", "MAX_JWKS", "KEYS_FOR", "REFETCH_EVERY"]

log = logging.getLogger("toolnexus.serve")

MAX_JWKS = 256 * 1024
"""The largest key set (or discovery document) read from the authorization server, in bytes."""
KEYS_FOR = 300.0
"""Seconds a fetched key set is used before it is fetched again."""
REFETCH_EVERY = 10.0
"""The shortest time between two fetches of the key set (a token naming an unknown ``kid`` asks
for one): tokens naming made-up keys cannot turn the agent against its authorization server."""
LEEWAY = 30
"""Seconds of clock difference allowed on ``exp``, ``nbf`` and ``iat``."""


class TokenRefused(Exception):
    """An access token this agent does not take; the message (for the server log only) says why."""


@dataclass(frozen=True)
class Granted:
    """A valid token's caller: who (the issuer's ``sub``) and the scopes it was granted."""

    subject: str
    scopes: frozenset[str]
    claims: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())


@dataclass
class AccessTokens:
    """Checks JWT access tokens for one audience from one issuer.

    Attributes:
        issuer: the ``iss`` every token must carry (the authorization server's issuer URL).
        audience: the ``aud`` a token must name (this agent's resource identifier).
        jwks_url: where the issuer's public keys are published; None: read from ``discovery_url``.
        discovery_url: an OpenID Connect discovery (or RFC 8414 metadata) document naming
            ``jwks_uri``; its ``issuer`` must be :attr:`issuer`.
        algorithms: the signature algorithms accepted (a subset of
            :data:`toolnexus.protocol.signing.ALGORITHMS`).
        timeout: seconds a fetch of the key set may take in all.
        keys_for, refetch_every: :data:`KEYS_FOR` and :data:`REFETCH_EVERY`.
    """

    issuer: str
    audience: str
    jwks_url: str | None = None
    discovery_url: str | None = None
    algorithms: Sequence[str] = ("RS256", "ES256", "EdDSA")
    timeout: float = 10.0
    keys_for: float = KEYS_FOR
    refetch_every: float = REFETCH_EVERY
    _keys: KeySet = field(default_factory=KeySet, repr=False)
    _fetched: float = field(default=-1e9, repr=False)
    _lock: asyncio.Lock | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        refused = [a for a in self.algorithms if a not in ALGORITHMS]
        if refused or not self.algorithms:
            raise ValueError(
                f"algorithms {', '.join(map(repr, refused)) or '(none)'} are not accepted: only "
                f"{', '.join(ALGORITHMS)} (asymmetric; never 'none' or HMAC)"
            )
        if not self.jwks_url and not self.discovery_url:
            raise ValueError("a JWKS URL (or a discovery document naming one) is needed")

    async def check(self, token: str) -> Granted:
        """The caller a token names, once it is checked: signed by one of the issuer's keys with
        an allowed algorithm, from :attr:`issuer`, for :attr:`audience`, not expired, with a
        ``sub``.

        Raises:
            TokenRefused: it is not such a token (why, for the log).
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRefused("not a JWT") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:
            raise TokenRefused(f"algorithm {alg!r} is not among {', '.join(self.algorithms)}")
        name = kid if isinstance(kid, str) else None
        keys = (await self._key_set(name)).named(name)
        if not keys:
            raise TokenRefused(f"no key {kid!r} in the issuer's key set")
        last = "the signature does not verify"
        for jwk in keys:
            try:
                claims = jwt.decode(
                    token,
                    PyJWK(jwk, str(alg)).key,
                    algorithms=[str(alg)],
                    audience=self.audience,
                    issuer=self.issuer,
                    leeway=LEEWAY,
                    options={"require": ["exp", "iss", "aud", "sub"]},
                )
            except jwt.InvalidSignatureError:
                continue
            except jwt.PyJWTError as exc:  # expired, another audience or issuer, a claim missing
                raise TokenRefused(str(exc) or type(exc).__name__) from None
            sub = claims.get("sub")
            if not isinstance(sub, str) or not sub:
                raise TokenRefused("its sub is not a string")
            return Granted(sub, _scopes(claims), claims)
        raise TokenRefused(last)

    def owner(self, granted: Granted) -> str:
        """The task space of a token's caller: one per subject of this issuer."""
        who = f"{self.issuer}\n{granted.subject}".encode()
        return "sub-" + hashlib.sha256(who).hexdigest()[:16]

    async def _key_set(self, kid: str | None) -> KeySet:
        """The issuer's keys: those held while fresh and holding ``kid``, else fetched again (at
        most once every :attr:`refetch_every` seconds)."""
        now = time.monotonic()
        fresh = now - self._fetched < self.keys_for
        if fresh and (kid is None or self._keys.named(kid)):
            return self._keys
        if now - self._fetched < self.refetch_every:
            return self._keys
        held = self._fetched
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._fetched == held:  # not fetched by another caller while this one waited
                try:
                    self._keys = await self._fetch()
                except (
                    httpx.HTTPError,
                    OSError,
                    ValueError,
                    KeyError_,
                    *_json.JSONDecodeError,
                ) as exc:
                    log.warning("the access tokens' key set could not be fetched: %s", why(exc))
                finally:
                    self._fetched = time.monotonic()
        return self._keys

    async def _fetch(self) -> KeySet:
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            url = self.jwks_url or await self._discovered(http)
            data = await self._json(http, url)
        return KeySet.load(data)

    async def _discovered(self, http: httpx.AsyncClient) -> str:
        """The ``jwks_uri`` the discovery document names (its issuer checked)."""
        assert self.discovery_url is not None
        document = await self._json(http, self.discovery_url)
        if document.get("issuer") != self.issuer:
            raise ValueError(f"the discovery document's issuer is not {self.issuer}")
        jwks = document.get("jwks_uri")
        if not isinstance(jwks, str) or not jwks.startswith(("https://", "http://")):
            raise ValueError("the discovery document names no jwks_uri")
        self.jwks_url = jwks
        return jwks

    async def _json(self, http: httpx.AsyncClient, url: str) -> dict[str, Any]:
        r, body = await exchange(
            http,
            "GET",
            url,
            headers={"accept": "application/json"},
            limit=MAX_JWKS,
            timeout=self.timeout,
        )
        if r.status_code != 200:
            raise ValueError(f"{url} answered HTTP {r.status_code}")
        data = _json.loads(body)
        if not is_object(data):
            raise ValueError(f"{url} did not answer a JSON object")
        return data


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (RFC 9068: space-separated) or ``scp`` (a list or a
    string, as some issuers write it)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if is_array(value):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()
