"""OAuth 2 for an A2A client, run from the agent card's ``securitySchemes``: the client-credentials
grant (RFC 6749 §4.4), its token endpoint named by an ``oauth2`` scheme's ``clientCredentials``
flow or found by OpenID Connect discovery (an ``openIdConnect`` scheme's ``openIdConnectUrl``,
its ``token_endpoint``), in either SDK line's card shape.

The client's secret goes only where the user meant it to: to the token endpoint the user named
(``ClientCredentials(token_url=...)``), or to one the card names on the host of the agent the
user named (any port), over https unless that host is loopback; a card that names another host
is refused, saying which, so the user can name it. The client authenticates with HTTP basic
(RFC 6749 §2.3.1). The token is kept in memory only, used until shortly before it expires
(``expires_in``), then fetched again; a call refused with 401 fetches it again once. The secret,
the token and the basic header are secrets of the client's wire log (masked wherever they appear);
every read is bounded in size and time (``http.fetch.exchange``).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from .. import _json
from ..errors import PeerError
from ..http.fetch import MAX_CARD, exchange, why
from ..http.guard import is_loopback
from ..secrets import basic_authorization
from ..traffic import TrafficRecorder

__all__ = ["ClientCredentials", "TokenSource", "token_endpoint", "EARLY"]

EARLY = 30.0
"""Seconds before its expiry a token is fetched again (a call must not carry a token that expires
on its way)."""
TIMEOUT = 15.0
"""Seconds a token endpoint or a discovery document may take to answer whole."""


@dataclass
class ClientCredentials:
    """The client-credentials grant: who the client is to the authorization server.

    Attributes:
        client_id, client_secret: the client's credentials (the secret is never shown).
        scopes: the scopes asked for (none: the server's default).
        token_url: the token endpoint; None: the one the card names (see the module's doc).
    """

    client_id: str
    client_secret: str = field(repr=False)
    scopes: Sequence[str] = ()
    token_url: str | None = None


def token_endpoint(card: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kind, url)`` the card's schemes name for client credentials: ``("token", tokenUrl)`` of
    an OAuth 2 client-credentials flow, else ``("discovery", openIdConnectUrl)``; None for none."""
    schemes = card.get("securitySchemes")
    if not _json.is_object(schemes):
        return None
    found: tuple[str, str] | None = None
    for scheme in schemes.values():
        if not _json.is_object(scheme):
            continue
        oauth = scheme.get(
            "oauth2SecurityScheme", scheme if scheme.get("type") == "oauth2" else None
        )
        if _json.is_object(oauth) and _json.is_object(oauth.get("flows")):
            flow = oauth["flows"].get("clientCredentials")
            if _json.is_object(flow) and isinstance(flow.get("tokenUrl"), str):
                return "token", flow["tokenUrl"]
        oidc = scheme.get(
            "openIdConnectSecurityScheme", scheme if scheme.get("type") == "openIdConnect" else None
        )
        if _json.is_object(oidc) and isinstance(oidc.get("openIdConnectUrl"), str):
            found = found or ("discovery", oidc["openIdConnectUrl"])
    return found


class TokenSource:
    """A client's bearer token for one agent: fetched when first needed, kept until shortly before
    it expires, fetched again then (or after a 401)."""

    def __init__(self, grant: ClientCredentials, traffic: TrafficRecorder) -> None:
        self.grant = grant
        self.traffic = traffic
        traffic.secret("authorization", basic_authorization(grant.client_id, grant.client_secret))
        traffic.secret("authorization", grant.client_secret)
        self._token: str | None = None
        self._until = 0.0
        self.fetched = 0
        """How many tokens it fetched."""

    def __repr__(self) -> str:
        return f"TokenSource(client_id={self.grant.client_id!r}, token={'held' if self._token else 'none'})"

    def forget(self) -> None:
        """Drop the token (a call was refused with it): the next call fetches another."""
        self._token = None

    async def header(self, http: httpx.AsyncClient, card: Mapping[str, Any], named: str) -> str:
        """``Bearer <token>`` for the agent whose ``card`` was fetched from ``named`` (the URL
        the user gave)."""
        if self._token is None or time.monotonic() >= self._until:
            url = self.grant.token_url or await self._from_card(http, card, named)
            await self._fetch(http, url)
        return f"Bearer {self._token}"

    async def _from_card(self, http: httpx.AsyncClient, card: Mapping[str, Any], named: str) -> str:
        found = token_endpoint(card)
        if found is None:
            raise PeerError(
                "the agent's card names no OAuth 2 client-credentials flow and no OpenID Connect "
                "discovery: give ClientCredentials(token_url=...)"
            )
        kind, url = found
        _check(url, named)
        if kind == "token":
            return url
        document = await self._json(http, "GET", url, {}, b"")
        endpoint = document.get("token_endpoint")
        if not isinstance(endpoint, str):
            raise PeerError(
                f"the OpenID Connect discovery document at {url} names no token_endpoint"
            )
        _check(endpoint, named)
        return endpoint

    async def _fetch(self, http: httpx.AsyncClient, url: str) -> None:
        form = {"grant_type": "client_credentials"}
        if self.grant.scopes:
            form["scope"] = " ".join(self.grant.scopes)
        headers = {
            "authorization": basic_authorization(
                urllib.parse.quote(self.grant.client_id, safe=""),
                urllib.parse.quote(self.grant.client_secret, safe=""),
            ),
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        }
        answer = await self._json(http, "POST", url, headers, urllib.parse.urlencode(form).encode())
        token, kind = answer.get("access_token"), answer.get("token_type", "Bearer")
        if (
            not isinstance(token, str)
            or not token
            or not isinstance(kind, str)
            or kind.lower() != "bearer"
        ):
            raise PeerError(f"the token endpoint {url} answered no bearer access_token")
        self.traffic.secret("authorization", token)
        lifetime = answer.get("expires_in")
        seconds = (
            float(lifetime)
            if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool)
            else 3600.0
        )
        self._token, self._until = token, time.monotonic() + seconds - EARLY
        self.fetched += 1

    async def _json(
        self, http: httpx.AsyncClient, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> dict[str, Any]:
        started = time.perf_counter()
        status, content, error = None, b"", None
        try:
            r, content = await exchange(
                http, method, url, headers=headers, content=body, limit=MAX_CARD, timeout=TIMEOUT
            )
            status = r.status_code
        except httpx.HTTPError as exc:
            error = why(exc)
        self.traffic.record(
            direction="out",
            method=method,
            url=url,
            status=status,
            started=started,
            request_headers=headers,
            request_body=body,
            response_body=content,
            rpc_method="oauth",
            error=error,
            peer=url,
        )
        if error is not None:
            raise PeerError(f"the token endpoint {url} could not be reached: {error}")
        if status != 200:
            raise PeerError(f"{url} answered HTTP {status}: check the client id and secret")
        try:
            data = _json.loads(content)
        except _json.JSONDecodeError:
            data = None
        if not _json.is_object(data):
            raise PeerError(f"{url} answered something that is not a JSON object")
        return data


def _check(url: str, named: str) -> None:
    """Refuse a URL from a card that the client's secret must not go to (see the module's doc)."""
    parts, agent = urllib.parse.urlsplit(url), urllib.parse.urlsplit(named)
    host = (parts.hostname or "").lower()
    if host != (agent.hostname or "").lower():
        raise PeerError(
            f"the card's token endpoint {url} is not on {agent.hostname}, the host you named: the "
            "client secret is not sent there; give ClientCredentials(token_url=...) to send it"
        )
    if parts.scheme != "https" and not (parts.scheme == "http" and is_loopback(host)):
        raise PeerError(f"the card's token endpoint {url} is not https: the secret is not sent")
