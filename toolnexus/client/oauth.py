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

The flows a user runs at a terminal, for a client without a secret of its own (a public client):
the device code flow (RFC 8628, :class:`DeviceCode`: the code and the address are shown, the
token endpoint polled at the interval the server asks, for as long as the code lives and
``timeout`` at most) and the authorization code flow with PKCE (RFC 7636, S256,
:class:`AuthorizationCode`: the sign-in address opened in a browser, the code received on a
loopback redirect at ``http://127.0.0.1:<port>/callback``, a listener of its own while it waits,
its ``state`` checked). Their endpoints come from the card's ``deviceCode`` or
``authorizationCode`` flow, or from OpenID Connect discovery (``device_authorization_endpoint``,
``authorization_endpoint``), over https unless loopback; a public client sends no secret, so a
card may name another host (a confidential one, with ``client_secret``, is held to the rule
above). A refresh token, when one comes, gets the next token without the user.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import inspect
import secrets
import sys
import time
import urllib.parse
import webbrowser
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from .. import _json
from ..display import printable
from ..errors import PeerError
from ..http.fetch import MAX_CARD, exchange, why
from ..http.guard import HostGuard, is_loopback
from ..http.server import AsgiServer
from ..secrets import basic_authorization
from ..traffic import TrafficRecorder

__all__ = [
    "ClientCredentials",
    "DeviceCode",
    "AuthorizationCode",
    "Grant",
    "TokenSource",
    "token_endpoint",
    "EARLY",
]

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

    flow = "clientCredentials"


Shown = Callable[[str], Awaitable[None] | None]
"""Tells the user something they must act on (a code to type, an address to open)."""


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class DeviceCode:
    """The device code flow (RFC 8628): the user types :attr:`user code` at an address shown to
    them, on any device, while the client polls.

    Attributes:
        client_id: the client's id at the authorization server.
        scopes: the scopes asked for.
        show: told ``"open URL and enter CODE"`` (default: printed on stderr).
        timeout: seconds to wait for the user at most (the code's own lifetime is kept too).
        client_secret: for a confidential client (then held to the host rule, see the module).
        token_url, device_url: the endpoints; None: the card's (or discovery's).
    """

    client_id: str
    scopes: Sequence[str] = ()
    show: Shown = _say
    timeout: float = 600.0
    client_secret: str | None = field(default=None, repr=False)
    token_url: str | None = None
    device_url: str | None = None

    flow = "deviceCode"


@dataclass
class AuthorizationCode:
    """The authorization code flow with PKCE (RFC 7636, S256): the user signs in in a browser,
    which comes back to a loopback redirect.

    Attributes:
        client_id: the client's id (registered with ``http://127.0.0.1/callback`` as a redirect,
            any port, as RFC 8252 §7.3 has it).
        scopes: the scopes asked for.
        open: given the sign-in address (default: printed on stderr and opened in a browser).
        timeout: seconds to wait for the redirect at most.
        client_secret, token_url, authorization_url: as :class:`DeviceCode`'s.
    """

    client_id: str
    scopes: Sequence[str] = ()
    open: Shown | None = None
    timeout: float = 300.0
    client_secret: str | None = field(default=None, repr=False)
    token_url: str | None = None
    authorization_url: str | None = None

    flow = "authorizationCode"


Grant = ClientCredentials | DeviceCode | AuthorizationCode
"""How the client gets its token."""

_DISCOVERED = {
    "token": "token_endpoint",
    "deviceAuthorizationUrl": "device_authorization_endpoint",
    "authorizationUrl": "authorization_endpoint",
}
"""An OpenID Connect discovery document's name for each endpoint a flow needs."""
_NEEDS = {
    "clientCredentials": ("tokenUrl",),
    "deviceCode": ("deviceAuthorizationUrl", "tokenUrl"),
    "authorizationCode": ("authorizationUrl", "tokenUrl"),
}
"""The endpoints each flow uses, as a card's flow names them."""


def token_endpoint(card: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kind, url)`` the card's schemes name for client credentials: ``("token", tokenUrl)`` of
    an OAuth 2 client-credentials flow, else ``("discovery", openIdConnectUrl)``; None for none."""
    found = flow_endpoints(card.get("securitySchemes"), "clientCredentials")
    if found is None:
        return None
    kind, where = found
    return ("token", where["tokenUrl"]) if isinstance(where, dict) else (kind, where)


def flow_endpoints(
    schemes: Any, flow: str, only: str | None = None
) -> tuple[str, dict[str, str] | str] | None:
    """Where ``flow`` runs, by the card's schemes (``only``: that scheme alone):
    ``("flow", {name: url})`` of an ``oauth2`` scheme that has the flow with every endpoint it
    needs, else ``("discovery", openIdConnectUrl)``; None for neither. Either SDK line's shape."""
    if not _json.is_object(schemes):
        return None
    found: tuple[str, dict[str, str] | str] | None = None
    for name, scheme in schemes.items():
        if not _json.is_object(scheme) or (only is not None and name != only):
            continue
        oauth = scheme.get(
            "oauth2SecurityScheme", scheme if scheme.get("type") == "oauth2" else None
        )
        if _json.is_object(oauth) and _json.is_object(oauth.get("flows")):
            given = oauth["flows"].get(flow)
            if _json.is_object(given) and all(isinstance(given.get(n), str) for n in _NEEDS[flow]):
                return "flow", {n: str(given[n]) for n in _NEEDS[flow]}
        oidc = scheme.get(
            "openIdConnectSecurityScheme", scheme if scheme.get("type") == "openIdConnect" else None
        )
        if _json.is_object(oidc) and isinstance(oidc.get("openIdConnectUrl"), str):
            found = found or ("discovery", oidc["openIdConnectUrl"])
    return found


class TokenSource:
    """A client's bearer token for one agent: fetched when first needed (the grant's flow run),
    kept until shortly before it expires, then refreshed (a refresh token) or fetched again (also
    after a 401)."""

    def __init__(self, grant: Grant, traffic: TrafficRecorder) -> None:
        self.grant = grant
        self.traffic = traffic
        if grant.client_secret:
            traffic.secret("authorization", _basic(grant))
            traffic.secret("authorization", grant.client_secret)
        self._token: str | None = None
        self._refresh: str | None = None
        self._until = 0.0
        self.fetched = 0
        """How many tokens it fetched."""

    def __repr__(self) -> str:
        return f"TokenSource(client_id={self.grant.client_id!r}, token={'held' if self._token else 'none'})"

    def forget(self) -> None:
        """Drop the token (a call was refused with it): the next call fetches another."""
        self._token = None

    async def header(
        self,
        http: httpx.AsyncClient,
        card: Mapping[str, Any],
        named: str,
        scheme: str | None = None,
    ) -> str:
        """``Bearer <token>`` for the agent whose ``card`` was fetched from ``named`` (the URL
        the user gave); ``scheme``: the card's scheme to run it by (None: any that has the flow)."""
        if self._token is None or time.monotonic() >= self._until:
            urls = await self._urls(http, card, named, scheme)
            if not (self._refresh and await self._refreshed(http, urls["tokenUrl"])):
                await self._run(http, urls)
        return f"Bearer {self._token}"

    async def _run(self, http: httpx.AsyncClient, urls: dict[str, str]) -> None:
        grant, token = self.grant, urls["tokenUrl"]
        if isinstance(grant, DeviceCode):
            await self._device(http, urls["deviceAuthorizationUrl"], token)
        elif isinstance(grant, AuthorizationCode):
            await self._authorize(http, urls["authorizationUrl"], token)
        else:
            form = {"grant_type": "client_credentials"}
            if grant.scopes:
                form["scope"] = " ".join(grant.scopes)
            await self._token_from(http, token, form)

    async def _urls(
        self, http: httpx.AsyncClient, card: Mapping[str, Any], named: str, scheme: str | None
    ) -> dict[str, str]:
        """The endpoints the grant's flow needs: the user's, else the card's (checked)."""
        grant, flow = self.grant, self.grant.flow
        given = {"tokenUrl": grant.token_url}
        if isinstance(grant, DeviceCode):
            given["deviceAuthorizationUrl"] = grant.device_url
        elif isinstance(grant, AuthorizationCode):
            given["authorizationUrl"] = grant.authorization_url
        if all(given.values()):
            return {k: str(v) for k, v in given.items()}
        found = flow_endpoints(card.get("securitySchemes"), flow, scheme)
        if found is None:
            what = (
                "no OAuth 2 client-credentials flow"
                if flow == "clientCredentials"
                else (f"no OAuth 2 {flow} flow")
            )
            raise PeerError(
                f"the agent's card names {what} and no OpenID Connect discovery: give "
                f"{type(grant).__name__}(token_url=...)"
            )
        kind, where = found
        if isinstance(where, str):
            self._check(where, named)
            document = await self._document(http, where)
            where = {}
            for name, key in _DISCOVERED.items():
                if isinstance(document.get(key), str):
                    where["tokenUrl" if name == "token" else name] = str(document[key])
            missing = [_DISCOVERED.get(n, "token_endpoint") for n in _NEEDS[flow] if n not in where]
            if missing:
                raise PeerError(
                    f"the OpenID Connect discovery document at {found[1]} names no {missing[0]}"
                )
        urls = {n: str(given.get(n) or where[n]) for n in _NEEDS[flow]}
        for name, url in urls.items():
            if not given.get(name):
                self._check(url, named)
        return urls

    def _check(self, url: str, named: str) -> None:
        """A URL from the card: a secret goes only to the host named; any, only over https
        (unless loopback)."""
        if self.grant.client_secret:
            _check(url, named)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" and not (
            parts.scheme == "http" and is_loopback(parts.hostname or "")
        ):
            raise PeerError(f"the card's OAuth endpoint {url} is not https: it is not used")

    async def _device(self, http: httpx.AsyncClient, device_url: str, token_url: str) -> None:
        """RFC 8628: ask for a code, show it, poll until the user approved (or it is refused,
        expires, or :attr:`DeviceCode.timeout` passes)."""
        grant = self.grant
        assert isinstance(grant, DeviceCode)
        form = self._client_form({"scope": " ".join(grant.scopes)} if grant.scopes else {})
        status, answer = await self._post(http, device_url, form)
        device, user = answer.get("device_code"), answer.get("user_code")
        where = answer.get("verification_uri") or answer.get("verification_url")
        if status != 200 or not isinstance(device, str) or not isinstance(user, str):
            raise PeerError(f"{device_url} gave no device code: {_error(status, answer)}")
        if not isinstance(where, str):
            raise PeerError(f"{device_url} named no address to enter the code at")
        self.traffic.secret("device_code", device)
        complete = answer.get("verification_uri_complete")
        said = f"To sign in, open {where} and enter the code {user}" + (
            f" (or open {complete})" if isinstance(complete, str) else ""
        )
        await _tell(grant.show, printable(said))
        interval = _number(answer.get("interval"), 5.0)
        lives = min(_number(answer.get("expires_in"), grant.timeout), grant.timeout)
        deadline = time.monotonic() + lives
        form = self._client_form(
            {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": device}
        )
        while True:
            await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                raise PeerError(f"nobody entered the code {user} within {lives:g} s")
            status, answer = await self._post(http, token_url, form)
            error = answer.get("error")
            if status == 200:
                self._keep(token_url, answer)
                return
            if error == "authorization_pending":
                continue
            if error == "slow_down":  # §3.5: five seconds more from now on
                interval += 5.0
                continue
            raise PeerError(f"the sign-in with code {user} failed: {_error(status, answer)}")

    async def _authorize(self, http: httpx.AsyncClient, sign_in: str, token_url: str) -> None:
        """RFC 7636 with S256 and a loopback redirect: the browser goes to ``sign_in``, comes back
        with a code and the state sent, and the code and the verifier buy the token."""
        grant = self.grant
        assert isinstance(grant, AuthorizationCode)
        verifier = secrets.token_urlsafe(64)  # 86 characters of [A-Za-z0-9_-] (43 to 128)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        state = secrets.token_urlsafe(24)
        async with Loopback() as back:
            query = {
                "response_type": "code",
                "client_id": grant.client_id,
                "redirect_uri": back.redirect,
                "state": state,
                "code_challenge": challenge.decode().rstrip("="),
                "code_challenge_method": "S256",
            }
            if grant.scopes:
                query["scope"] = " ".join(grant.scopes)
            joiner = "&" if urllib.parse.urlsplit(sign_in).query else "?"
            url = sign_in + joiner + urllib.parse.urlencode(query)
            await _tell(grant.open or _browse, url)
            code, came = await back.code(grant.timeout)
        if came != state:  # another page's redirect (CSRF), or a stale one: never used
            raise PeerError("the sign-in came back with a state this client did not send: refused")
        self.traffic.secret("code", code)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": back.redirect,
            "code_verifier": verifier,
        }
        status, answer = await self._post(http, token_url, self._client_form(form))
        if status != 200:
            raise PeerError(f"{token_url} refused the sign-in's code: {_error(status, answer)}")
        self._keep(token_url, answer)

    async def _refreshed(self, http: httpx.AsyncClient, token_url: str) -> bool:
        """Whether the refresh token got a new token (RFC 6749 §6); if not, it is dropped."""
        form = self._client_form({"grant_type": "refresh_token", "refresh_token": self._refresh})
        self._refresh = None
        status, answer = await self._post(http, token_url, form)
        if status != 200:
            return False
        self._keep(token_url, answer)
        return True

    def _client_form(self, form: Mapping[str, str | None]) -> dict[str, str]:
        """``form`` with the client named: a public client by ``client_id`` (a confidential one
        authenticates by basic, see :meth:`_post`)."""
        out = {k: v for k, v in form.items() if v is not None}
        if not self.grant.client_secret:
            out["client_id"] = self.grant.client_id
        return out

    async def _token_from(self, http: httpx.AsyncClient, url: str, form: dict[str, str]) -> None:
        status, answer = await self._post(http, url, form)
        if status != 200:
            raise PeerError(f"{url} answered HTTP {status}: check the client id and secret")
        self._keep(url, answer)

    def _keep(self, url: str, answer: Mapping[str, Any]) -> None:
        """Keep the token an endpoint answered (and its refresh token), masked from now on."""
        token, kind = answer.get("access_token"), answer.get("token_type", "Bearer")
        if (
            not isinstance(token, str)
            or not token
            or not isinstance(kind, str)
            or kind.lower() != "bearer"
        ):
            raise PeerError(f"the token endpoint {url} answered no bearer access_token")
        self.traffic.secret("authorization", token)
        refresh = answer.get("refresh_token")
        if isinstance(refresh, str) and refresh:
            self.traffic.secret("refresh_token", refresh)
            self._refresh = refresh
        seconds = _number(answer.get("expires_in"), 3600.0)
        self._token, self._until = token, time.monotonic() + seconds - EARLY
        self.fetched += 1

    async def _post(
        self, http: httpx.AsyncClient, url: str, form: Mapping[str, str]
    ) -> tuple[int, dict[str, Any]]:
        """A form POSTed to an authorization server's endpoint: its status and JSON object."""
        headers = {
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        }
        if self.grant.client_secret:
            headers["authorization"] = _basic(self.grant)
        body = urllib.parse.urlencode(form).encode()
        return await self._json(http, "POST", url, headers, body)

    async def _document(self, http: httpx.AsyncClient, url: str) -> dict[str, Any]:
        status, document = await self._json(http, "GET", url, {}, b"")
        if status != 200:
            raise PeerError(f"{url} answered HTTP {status}")
        return document

    async def _json(
        self, http: httpx.AsyncClient, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        started = time.perf_counter()
        status, content, error = None, b"", None
        try:
            r, content = await exchange(
                http, method, url, headers=headers, content=body, limit=MAX_CARD, timeout=TIMEOUT
            )
            status = r.status_code
        except httpx.HTTPError as exc:
            error = why(exc)
        answer = (status, content)
        self.traffic.sent(
            method, url, started, headers, body, answer, error=error, rpc_method="oauth", peer=url
        )
        if error is not None or status is None:
            raise PeerError(f"the OAuth endpoint {url} could not be reached: {error}")
        try:
            data = _json.loads(content)
        except _json.JSONDecodeError:
            data = None
        if not _json.is_object(data):
            if status != 200:
                return status, {}
            raise PeerError(f"{url} answered something that is not a JSON object")
        return status, data


def _basic(grant: Grant) -> str:
    """RFC 6749 §2.3.1: the id and secret form-encoded, then HTTP basic."""
    return basic_authorization(
        urllib.parse.quote(grant.client_id, safe=""),
        urllib.parse.quote(grant.client_secret or "", safe=""),
    )


def _number(value: Any, default: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else default


def _error(status: int, answer: Mapping[str, Any]) -> str:
    """An authorization server's error in words (its ``error`` and description, cut)."""
    said = " ".join(
        str(answer[k])[:200]
        for k in ("error", "error_description")
        if isinstance(answer.get(k), str)
    )
    return printable(said) if said else f"HTTP {status}"


async def _tell(show: Shown, text: str) -> None:
    told = show(text)
    if inspect.isawaitable(told):
        await told


def _browse(url: str) -> None:
    """Print the sign-in address and open it in the user's browser (when there is one)."""
    _say(f"To sign in, open {url}")
    webbrowser.open(url)


class Loopback:
    """The redirect an authorization code comes back to: ``http://127.0.0.1:<port>/callback``,
    listening only while the flow waits (RFC 8252 §7.3). Peer text on its page is escaped."""

    def __init__(self) -> None:
        self._server: AsgiServer | None = None
        self._came: asyncio.Future[tuple[str, str]] | None = None
        self.redirect = ""

    async def __aenter__(self) -> Loopback:
        server: AsgiServer | None = None

        def bound() -> tuple[str, int]:
            assert server is not None
            return server.host, server.port

        server = AsgiServer(HostGuard(self._receive, bound), "127.0.0.1:0")
        self._came = asyncio.get_running_loop().create_future()
        await server.start()
        self._server, self.redirect = server, server.url + "/callback"
        return self

    async def __aexit__(self, *exc: object) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    async def code(self, timeout: float) -> tuple[str, str]:
        """``(code, state)`` the browser brought back, within ``timeout`` seconds."""
        assert self._came is not None
        try:
            return await asyncio.wait_for(self._came, timeout)
        except TimeoutError:
            raise PeerError(f"nobody signed in within {timeout:g} s") from None

    async def _receive(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        came = self._came
        if scope.get("path") != "/callback" or came is None or came.done():
            return await _page(404, "No sign-in is waiting here.", scope, receive, send)
        code, state = (query.get("code") or [""])[0], (query.get("state") or [""])[0]
        if not code:
            error = (query.get("error_description") or query.get("error") or ["no code came"])[0]
            came.set_exception(PeerError(f"the sign-in failed: {printable(error[:300])}"))
            return await _page(400, f"The sign-in failed: {error[:300]}", scope, receive, send)
        came.set_result((code, state))
        await _page(200, "Signed in. You may close this page.", scope, receive, send)


async def _page(status: int, text: str, scope: Any, receive: Any, send: Any) -> None:
    page = f"<!doctype html><title>toolnexus</title><p>{html.escape(text)}</p>".encode()
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": page})


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
