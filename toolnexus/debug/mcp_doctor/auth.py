"""The server's auth over HTTP: a wrong token refused, and the protected-resource and
authorization-server metadata a client signs in with."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import httpx

from ...events import TrafficEvent
from ...mcp.session import MCPSession
from ...traffic import TrafficRecorder, recorded_exchange
from ..features import Finder, evidence
from ..report import Finding
from .lines import MAX_ANSWER
from .rpc import initialize_body, loopback, raw


async def auth(
    url: str, session: MCPSession, headers: dict[str, str], timeout: float, find: Finder
) -> None:
    recorder = session.recorder
    refused = next((e for e in recorder.events if e.status == 401 and e.url == url), None)
    if refused is None:
        if not any(k.lower() == "authorization" for k in headers):
            find.found(
                "info" if loopback(url) else "warning",
                "auth",
                "answers without any credentials"
                + ("" if loopback(url) else ", on an address others can reach"),
                fix="" if loopback(url) else "require a token (the MCP authorization spec: OAuth)",
                at=url,
            )
        else:
            await _wrong_token(url, recorder, headers, timeout, find)
        return
    await _auth_metadata(url, refused, session.challenge, recorder, timeout, find)


async def _wrong_token(
    url: str, recorder: TrafficRecorder, headers: dict[str, str], timeout: float, find: Finder
) -> None:
    before = find.mark()
    wrong = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    wrong["Authorization"] = "Bearer toolnexus-doctor-wrong-token"
    answer = await raw(url, recorder, wrong, timeout, initialize_body())
    if answer is None:
        return
    status, _ = answer
    if status in (401, 403):
        find.found("ok", "auth", f"a wrong token is refused ({status})", at=url)
    else:
        find.found(
            "error",
            "auth",
            f"a wrong bearer token is answered {status}",
            before,
            ["everyone who trusts the token to keep others out"],
            "check the token on every request",
            at=url,
        )


async def _auth_metadata(
    url: str,
    refused: TrafficEvent,
    challenge: str,
    recorder: TrafficRecorder,
    timeout: float,
    find: Finder,
) -> None:
    """A 401's way to a token (``challenge``: its WWW-Authenticate, which the wire log masks)."""
    found = re.search(r'resource_metadata="?([^",\s]+)"?', challenge)
    parts = urlsplit(url)
    prm_url = (
        found.group(1)
        if found
        else f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    )
    if not found:
        find.add(
            Finding(
                "warning",
                "auth",
                "the 401 names no resource_metadata in WWW-Authenticate"
                + (f" ({challenge!r})" if challenge else ""),
                [evidence(refused)],
                ["MCP clients that run OAuth (they look at the well-known path next)"],
                'answer 401 with WWW-Authenticate: Bearer resource_metadata="<its URL>"',
                at=url,
            )
        )
    prm = await _get_json(prm_url, recorder, timeout)
    if not isinstance(prm, dict):
        find.found(
            "error",
            "auth",
            f"no protected-resource metadata at {prm_url}",
            len(recorder.events) - 1,
            ["MCP clients that run OAuth"],
            "serve the protected-resource metadata (RFC 9728) naming the authorization server",
            at=prm_url,
        )
        return
    servers = prm.get("authorization_servers")
    resource = prm.get("resource")
    if resource not in (url, url.rstrip("/"), f"{parts.scheme}://{parts.netloc}"):
        find.found(
            "warning",
            "auth",
            f"the metadata's resource {resource!r} is not this server ({url})",
            breaks=["the official SDKs' clients (they refuse a token for another resource)"],
            fix="set resource to the MCP endpoint's URL",
            at=prm_url,
        )
    if not isinstance(servers, list) or not servers:
        find.found(
            "error",
            "auth",
            "the protected-resource metadata names no authorization server",
            breaks=["MCP clients that run OAuth"],
            fix="list the authorization server in authorization_servers",
            at=prm_url,
        )
        return
    await _authorization_server(url, str(servers[0]).rstrip("/"), recorder, timeout, find)


async def _authorization_server(
    url: str, issuer: str, recorder: TrafficRecorder, timeout: float, find: Finder
) -> None:
    """What the authorization server the protected-resource metadata names tells a client."""
    meta = await _get_json(f"{issuer}/.well-known/oauth-authorization-server", recorder, timeout)
    if not isinstance(meta, dict):
        meta = await _get_json(f"{issuer}/.well-known/openid-configuration", recorder, timeout)
    if not isinstance(meta, dict):
        find.found(
            "error",
            "auth",
            f"the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID)",
            breaks=["MCP clients that run OAuth"],
            fix="serve /.well-known/oauth-authorization-server",
            at=issuer,
        )
        return
    if "S256" not in (meta.get("code_challenge_methods_supported") or []):
        find.found(
            "error",
            "auth",
            "the authorization server does not say it supports PKCE S256",
            breaks=["MCP clients (the spec: they refuse to go on without it)"],
            fix="list S256 in code_challenge_methods_supported",
            at=issuer,
        )
    if not meta.get("registration_endpoint") and not meta.get(
        "client_id_metadata_document_supported"
    ):
        find.found(
            "warning",
            "auth",
            "the authorization server offers neither dynamic client registration nor "
            "client ID metadata documents",
            breaks=["clients that were not registered by hand"],
            fix="offer a registration_endpoint (RFC 7591)",
            at=issuer,
        )
    find.found(
        "ok",
        "auth",
        f"OAuth: a 401 leads to {issuer} (authorization code with PKCE); sign in with "
        "toolnexus-tui's MCP mode to check the rest",
        at=url,
    )


async def _get_json(url: str, recorder: TrafficRecorder, timeout: float) -> Any:
    async with httpx.AsyncClient(timeout=timeout) as http:
        try:
            r, data = await recorded_exchange(
                recorder, http, "GET", url, headers={}, limit=MAX_ANSWER, timeout=timeout
            )
        except Exception:  # noqa: BLE001 - on the wire log, with why
            return None
    if r.status_code != 200:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None
