"""OAuth for an MCP client, as the MCP authorization spec has it, on the official SDK's
``OAuthClientProvider``: the server's 401 names its protected-resource metadata, which names the
authorization server; the client registers itself there (dynamic client registration), or uses
the client id that server gave it beforehand (a static one, where it registers no client), sends the
user to sign in (authorization code with PKCE, S256), receives the code on a loopback redirect
and trades it for a token, which then rides every request as ``Authorization: Bearer``.

:class:`OAuthFlow` is what a session (:class:`~toolnexus.mcp.MCPSession`) hands the HTTP
client: the tokens and the registration are kept in memory only (never written anywhere), the
redirect is received at ``http://127.0.0.1:<port>/callback`` (a listener of its own, for this flow
only, up while it waits for the user), and the user is shown the sign-in address through
``authorize`` (the TUI and the notebook show it and open a browser). A token is never shown: the
flow says only whether it holds one (:attr:`OAuthFlow.state`), and the session's wire log masks
its value (see :func:`toolnexus.secrets.body_secrets`).
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse

from ..errors import PeerError
from ..http.guard import HostGuard
from ..http.server import AsgiServer
from .transport import sdk

__all__ = ["OAuthFlow", "SignInError", "SIGN_IN_TIMEOUT"]

SIGN_IN_TIMEOUT = 300.0
"""Seconds the flow waits for the user to sign in and the redirect to come back."""
CLIENT_NAME = "toolnexus"

Authorize = Callable[[str], Awaitable[None]]
"""Shows the user the address where they sign in (and may open a browser there)."""


class SignInError(PeerError):
    """The user did not sign in (in time), or the authorization server refused the sign-in."""


class _Store:
    """The SDK's ``TokenStorage``, in memory: a registration and a token, for one server."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


class OAuthFlow:
    """One MCP server's OAuth sign-in, run when the server asks for it (a 401 that names its
    resource metadata). ``authorize(url)`` is called with the sign-in address; ``scope`` is asked
    for when given (else what the server's 401 or metadata says); ``client_id``: the id the
    authorization server gave this client beforehand (a public client: PKCE, no secret; its
    redirect is a loopback port, which RFC 8252 lets such a server take on any port), else the
    client registers itself."""

    def __init__(
        self,
        authorize: Authorize,
        *,
        scope: str | None = None,
        timeout: float = SIGN_IN_TIMEOUT,
        secret: Callable[[str], None] | None = None,
        client_id: str | None = None,
    ) -> None:
        self.authorize = authorize
        self.client_id = client_id or None
        self.scope = scope
        self.timeout = timeout
        self.secret = secret
        """Told each secret the flow handles (a token, a code), for whoever masks logs."""
        self.store = _Store()
        self.sign_in_url = ""
        self.failure = ""
        """Why the sign-in failed (then it is not asked again: a connection tries several
        requests, and each would send the user to sign in anew)."""
        self._listener: AsgiServer | None = None
        self._code: asyncio.Future[tuple[str, str | None, str | None]] | None = None

    def __repr__(self) -> str:
        return f"OAuthFlow(state={self.state!r})"

    @property
    def state(self) -> str:
        """``signed in``, ``waiting for sign-in`` or ``not signed in`` (never the token)."""
        if self.store.tokens is not None:
            return "signed in"
        return "waiting for sign-in" if self._code is not None else "not signed in"

    async def provider(self, server_url: str) -> Any:
        """The SDK's ``httpx2.Auth`` for ``server_url``, with the loopback redirect listening."""
        OAuthClientProvider = sdk().OAuthClientProvider
        OAuthClientMetadata = sdk().OAuthClientMetadata
        AnyUrl = sdk().AnyUrl

        OAuthClientInformationFull = sdk().OAuthClientInformationFull

        redirect = await self._listen()
        if self.client_id is not None and self.store.client is None:  # no registration
            self.store.client = OAuthClientInformationFull(
                client_id=self.client_id,
                redirect_uris=[AnyUrl(redirect)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
                scope=self.scope,
            )
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=self.scope,
        )
        return OAuthClientProvider(
            server_url=server_url,
            client_metadata=metadata,
            storage=self.store,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
        )

    def cancel(self, reason: str = "the sign-in was canceled") -> None:
        """Give up the sign-in under way (the user closed it): the connection fails with
        ``reason``."""
        self.failure = f"the OAuth sign-in failed: {reason}"
        code = self._code
        if code is not None and not code.done():
            code.set_exception(SignInError(self.failure))

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.stop()
        if self._code is not None and not self._code.done():
            self._code.cancel()

    # -- the redirect -------------------------------------------------------------------------------
    async def _listen(self) -> str:
        if self._listener is None:
            server: AsgiServer | None = None

            def bound() -> tuple[str, int]:
                assert server is not None
                return server.host, server.port

            server = AsgiServer(HostGuard(self._receive, bound), "127.0.0.1:0")
            await server.start()
            self._listener = server
        return self._listener.url + "/callback"

    async def _redirect(self, url: str) -> None:
        if self.failure:
            raise SignInError(self.failure)
        self.sign_in_url = url
        self._code = asyncio.get_running_loop().create_future()
        await self.authorize(url)

    async def _callback(self) -> Any:
        AuthorizationCodeResult = sdk().AuthorizationCodeResult

        code = self._code
        assert code is not None, "the redirect comes after the sign-in address"
        try:
            got, state, iss = await asyncio.wait_for(code, self.timeout)
        except TimeoutError:
            self.failure = f"the OAuth sign-in failed: nobody signed in within {self.timeout:g} s"
            raise SignInError(self.failure) from None
        except SignInError as exc:
            self.failure = str(exc)
            raise
        finally:
            self._code = None
        if self.secret is not None:
            self.secret(got)
        return AuthorizationCodeResult(code=got, state=state, iss=iss)

    async def _receive(self, scope: Any, receive: Any, send: Any) -> None:
        """``GET /callback?code=...&state=...``: hand the code to the waiting flow."""
        if scope["type"] != "http":
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        code = (query.get("code") or [""])[0]
        error = (query.get("error") or [""])[0]
        waiting = self._code
        if scope.get("path") != "/callback" or waiting is None or waiting.done():
            await _page(404, "No sign-in is waiting here.")(scope, receive, send)
            return
        if not code:
            said = (query.get("error_description") or [error or "no code came back"])[0]
            waiting.set_exception(SignInError(f"the OAuth sign-in failed: {said[:300]}"))
            await _page(400, f"The sign-in failed: {said[:300]}")(scope, receive, send)
            return
        state = (query.get("state") or [None])[0]
        iss = (query.get("iss") or [None])[0]
        waiting.set_result((code, state, iss))
        await _page(200, "Signed in. You may close this page and go back to toolnexus.")(
            scope, receive, send
        )


def _page(status: int, text: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><title>toolnexus</title><p>{html.escape(text)}</p>",
        status,
        headers={"Cache-Control": "no-store"},
    )
