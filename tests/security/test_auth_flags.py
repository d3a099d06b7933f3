"""The server's OAuth 2, OpenID Connect and mutual TLS schemes from ``toolnexus serve``'s flags
(``--auth-oauth2``, ``--auth-openid``, ``--auth-mtls``: the ``a2a.auth`` block as KEY=VALUE, read
as a config file's), served by the real command and called over loopback: the card declares the
scheme, a token from the test's authorization server (``tests/peers/authorization_server.py``) or
the CA's client certificate gets through, none gets nothing; a mistake is one line, exit 2."""

from __future__ import annotations

import asyncio
import subprocess

import httpx
import pytest

import toolnexus as tn

from ..helpers import read_until, run_cli, started_cli
from ..peers.authorization_server import AUDIENCE, authorization_server
from ..peers.tls import make_pki

SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "greet Ada"}]}
    },
}


async def _ready(proc: subprocess.Popen[str]) -> str:
    """The served URL, read off the loop (the issuer the server fetches keys from runs on it)."""
    return (await asyncio.to_thread(read_until, proc, "ready"))[0]["url"]


async def _call(url: str, token: str | None) -> httpx.Response:
    headers = {"A2A-Version": "1.0"} | ({"Authorization": f"Bearer {token}"} if token else {})
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url + "/", json=SEND, headers=headers)


async def test_serve_auth_oauth2_takes_the_issuers_tokens_and_its_card_says_where_to_get_one():
    async with authorization_server() as issuer:
        value = (
            f"issuer={issuer.url},audience={AUDIENCE},jwksUrl={issuer.url}/jwks,scopes=a2a,"
            f"flows.clientCredentials.tokenUrl={issuer.url}/token,"
            f"flows.clientCredentials.scopes.a2a=Call the agent"
        )
        with started_cli("serve", "--auth-oauth2", value, "--json") as proc:
            url = await _ready(proc)
            async with httpx.AsyncClient(timeout=30) as http:
                card = (await http.get(url + "/.well-known/agent-card.json")).json()
            flows = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["flows"]
            assert flows["clientCredentials"] == {
                "tokenUrl": f"{issuer.url}/token",
                "scopes": {"a2a": "Call the agent"},
            }
            done = await _call(url, issuer.mint("ada", "a2a"))
            assert done.status_code == 200 and "Ada" in str(done.json()["result"])
            assert (await _call(url, None)).status_code == 401
            assert (await _call(url, issuer.mint("ada", "a2a", aud="x"))).status_code == 401
            assert (await _call(url, issuer.mint("ada", "other"))).status_code == 403
            # our client gets its token by the card's flow
            grant = tn.ClientCredentials("agent-client", "issuer-s3cret", scopes=["a2a"])
            async with tn.A2AClient(url, oauth=grant) as peer:
                assert (await peer.send("greet Ada", blocking=True)).state.value == "completed"


async def test_serve_auth_openid_finds_the_keys_by_the_discovery_document():
    async with authorization_server() as issuer:
        discovery = f"{issuer.url}/.well-known/openid-configuration"
        value = f"url={discovery},issuer={issuer.url},audience={AUDIENCE}"
        with started_cli("serve", "--auth-openid", value, "--json") as proc:
            url = await _ready(proc)
            async with httpx.AsyncClient(timeout=30) as http:
                card = (await http.get(url + "/.well-known/agent-card.json")).json()
            scheme = card["securitySchemes"]["openIdConnect"]["openIdConnectSecurityScheme"]
            assert scheme["openIdConnectUrl"] == discovery
            assert (await _call(url, issuer.mint("ada"))).status_code == 200
            assert (await _call(url, None)).status_code == 401
            assert issuer.fetches >= 1


async def test_serve_auth_mtls_takes_only_the_cas_certificates(tmp_path):
    pki = make_pki(tmp_path)
    value = f"ca={pki.ca},cert={pki.server_cert},key={pki.server_key}"
    with started_cli("serve", "--auth-mtls", value, "--grpc", "127.0.0.1:0", "--json") as proc:
        url = await _ready(proc)
        assert url.startswith("https://127.0.0.1:")
        certificate = tn.ClientCertificate(pki.client_cert, pki.client_key, ca=pki.ca)
        for binding in ("jsonrpc", "rest", "grpc"):
            async with tn.A2AClient(url, certificate=certificate, binding=binding) as peer:
                assert (await peer.send("greet Ada", blocking=True)).state.value == "completed"
        stranger = tn.ClientCertificate(pki.stranger_cert, pki.stranger_key, ca=pki.ca)
        with pytest.raises(tn.PeerError, match="cannot fetch the agent card"):
            async with tn.A2AClient(url, certificate=stranger) as peer:
                await peer.send("greet Ada", blocking=True)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--auth-oauth2", "issuer=https://i.example,audience=a"],
            "needs issuer, audience and jwksUrl",
        ),
        (["--auth-oauth2", "nonsense"], "'nonsense' is not KEY=VALUE"),
        (["--auth-openid", "url=ftp://x,issuer=i,audience=a"], "must be an http(s) URL"),
        (["--auth-mtls", "ca=/nowhere.pem,cert=/x,key=/y"], "is not a readable PEM file"),
        (
            ["--auth-mtls", "ca=a", "--auth-token-env", "T"],
            "--auth-token-env and --auth-mtls: choose one",
        ),
    ],
)
def test_a_mistake_in_an_auth_flag_is_one_line(args, said):
    done = run_cli("serve", *args)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
