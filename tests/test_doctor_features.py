"""Every feature a card declares gets a true finding from the doctor: against the official a2a-sdk
1.3 server with every feature declared (tests/peers/sdk_server.py ``features=True``: a signed card,
a required extension, a tenant, an extended card, five security schemes, push, file input modes),
as it serves them, and behind a bearer proxy (``enforce=True``); each claim is also checked by
asking the peer directly."""

from __future__ import annotations

import asyncio

import httpx
import pytest

import toolnexus as tn
from toolnexus.debug.doctor import doctor

from .peers.sdk_server import BEARER, EXTENSION, TENANT, sdk_server

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

V1 = {"A2A-Version": "1.0"}


def said(report, check: str) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in report.findings if f.check == check]


async def rpc(url: str, method: str, params: dict, headers: dict | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(
            url + "/",
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            headers={**V1, **(headers or {})},
        )


async def test_every_declared_feature_of_the_official_sdk_peer_gets_a_true_finding():
    async with sdk_server(compat=True, features=True) as url:
        report = await doctor(url, send=True, timeout=15)
        # what the findings claim, asked of the peer directly
        unactivated = await rpc(url, "GetTask", {"id": "nope"})
        extended = await rpc(url, "GetExtendedAgentCard", {})
        tenanted = await rpc(url, "GetTask", {"id": "nope", "tenant": TENANT})
    text = report.text()
    assert said(report, "card cache") == [
        ("info", "a conditional request is answered 304 (no Cache-Control)")
    ], text
    [signature] = said(report, "signature")
    assert signature == (
        "ok",
        f"signature 1 (alg 'ES256', kid 'card-key-1') verified with a key from its jku "
        f"{url.rstrip('/')}/jwks.json, over its 1.0 view",
    ), text
    schemes = said(report, "security schemes")
    assert len(schemes) == 5 and all(s == "ok" and "complete" in m for s, m in schemes), text
    assert {m.split(":")[0] for _, m in schemes} == {
        f"scheme {n!r}" for n in ("apikey", "bearer", "oauth", "oidc", "mtls")
    }
    [(severity, enforced), (_, echoed)] = said(report, "extensions")
    assert severity == "warning" and "not enforced" in enforced and EXTENSION in enforced, text
    assert unactivated.json()["error"]["code"] == -32001  # answered, though not activated
    assert "answered without A2A-Extensions" in echoed
    [tenant] = said(report, "tenant")
    assert tenant[0] == "ok" and f"tenant {TENANT!r}" in tenant[1], text
    assert tenanted.json()["error"]["code"] == -32001
    [card] = said(report, "extended card")
    assert card[0] == "warning" and "served to a caller without credentials" in card[1], text
    assert "ledger" in card[1] and "result" in extended.json()  # it is, to anyone
    assert ("ok", "answers with tasks and nextPageToken") in said(report, "ListTasks")
    assert ("ok", "filters by contextId and status, and pages by nextPageToken") in said(
        report, "ListTasks"
    )
    assert said(report, "historyLength") == [("ok", "0 answers no history, 1 at most one message")]
    [push] = said(report, "push")
    assert (
        push[0] == "ok" and "X-A2A-Notification-Token, in 1.0's shape, up to completed" in push[1]
    )
    assert said(report, "file parts") == [
        ("ok", "a file part of application/pdf is taken"),
        ("ok", "a part of an undeclared media type is refused (-32005)"),
    ], text
    [(modes, _)] = said(report, "output modes")
    assert modes == "info"
    assert said(report, "subscribe")  # the echo ends before a subscribe: said so, either way
    assert not [f for f in report.findings if f.severity == "error"], text


async def test_behind_a_bearer_proxy_the_extended_card_and_the_schemes_are_enforced():
    async with sdk_server(compat=True, features=True, enforce=True) as url:
        report = await doctor(url, headers={"Authorization": f"Bearer {BEARER}"}, timeout=15)
    text = report.text()
    assert said(report, "extended card") == [
        ("ok", "refused without credentials, served with yours (1 more skill(s): ledger)")
    ], text
    assert said(report, "auth") == [
        ("ok", "refuses a call without credentials (401), as its security requirements say")
    ], text


async def test_a_plain_card_says_only_what_it_declares_and_our_server_passes_the_probes():
    """No feature declared: unsigned (info), and no extension, tenant or extended card finding;
    our own server passes every probe it can be asked (a subscribe gets the task first)."""
    async with sdk_server(compat=True) as url:
        plain = await doctor(url, timeout=15)
    checks = {f.check for f in plain.findings}
    assert not checks & {"extensions", "tenant", "extended card", "security schemes"}
    assert said(plain, "signature")[0][0] == "info"

    async def thinking(request):  # a second a reply: time for a subscribe to come in
        await asyncio.sleep(1)
        return {"content": "ok"}

    tk = await tn.create_toolkit(builtins=False)
    model = tn.create_in_process_client(thinking)
    async with tk.serve(client=model, a2a=tn.A2AConfig(name="ours")) as handle:
        ours = await doctor(handle.url, send=True, timeout=15)
    for check in ("card cache", "ListTasks", "historyLength", "subscribe", "push"):
        assert {s for s, _ in said(ours, check)} == {"ok"}, ours.text()


async def test_a_wrong_card_has_its_features_named():
    """A scheme without its fields, a requirement naming no scheme, an extended card declared
    but not served, an unreadable signature: each named where it is."""
    from starlette.responses import JSONResponse

    from .peers import on_loopback

    async def card(request):
        base = str(request.base_url)
        return JSONResponse(
            {
                "name": "wrong",
                "description": "features declared wrong",
                "version": "1",
                "supportedInterfaces": [
                    {"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                ],
                "capabilities": {"extendedAgentCard": True},
                "securitySchemes": {"key": {"apiKeySecurityScheme": {"location": "header"}}},
                "securityRequirements": [{"schemes": {"sso": {}}}],
                "signatures": [{"protected": "%%%", "signature": "x"}],
                "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "a", "name": "a", "description": "a", "tags": ["a"]}],
            }
        )

    async def rpc_endpoint(request):
        body = await request.json()
        code = -32001 if body["method"] == "GetTask" else -32004
        return JSONResponse(
            {"jsonrpc": "2.0", "id": body["id"], "error": {"code": code, "message": "no"}}
        )

    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(
        routes=[
            Route("/.well-known/agent-card.json", card),
            Route("/", rpc_endpoint, methods=["POST"]),
        ]
    )
    async with on_loopback(app) as url:
        report = await doctor(url, timeout=15)
    found = {(f.check, f.at): (f.severity, f.message) for f in report.findings}
    assert found[("security schemes", "$.securitySchemes.key")] == (
        "error",
        "scheme 'key' (apiKey) lacks name",
    ), report.text()
    assert found[("security schemes", "$.securityRequirements")][0] == "error"
    assert found[("signature", "$.signatures[0]")] == (
        "error",
        "its protected header is not base64url JSON",
    )
    assert found[("extended card", "")] == ("error", "declared, but not served (-32004)")


async def test_a_signature_that_does_not_verify_is_an_error_naming_why():
    """A card signed, then changed on its way (its key set served at the jku it names): the
    doctor verifies rather than only naming the header, and says which signature and why."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from toolnexus import A2AConfig, SigningKey
    from toolnexus.serve.card import build_card

    from .peers import on_loopback

    key = SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")

    async def card(request):
        base = str(request.base_url)
        signed = key.sign_card(
            build_card(
                A2AConfig(name="n", description="d", version="1", streaming=False),
                base_url=base,
                skills=[],
            ),
            jku=base + "jwks.json",
        )
        return JSONResponse({**signed, "description": "changed on its way"})

    app = Starlette(
        routes=[
            Route("/.well-known/agent-card.json", card),
            Route("/jwks.json", lambda request: JSONResponse(key.jwks)),
        ]
    )
    async with on_loopback(app) as url:
        report = await doctor(url, timeout=15)
    [(severity, message)] = said(report, "signature")
    assert severity == "error", report.text()
    assert message.startswith(
        "signature 1 (alg 'ES256', kid 'k1') does not verify: it does not verify with the key "
        f"'k1' from its jku {url.rstrip('/')}/jwks.json over any canonical form of the card"
    ), message
