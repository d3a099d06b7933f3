"""The doctor's claims about peers from the field (issue 58), each against a real peer that shows
the shape: the official a2a-sdk 1.3 server set up as the framework sets it up, or our own server.
Every claim the doctor makes here is checked against the client it names, run."""

from __future__ import annotations

import httpx
import pytest

import toolnexus as tn
from toolnexus import doctor

from .helpers import v03_send
from .peers.sdk_server import sdk_server

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")


def _said(report, check: str) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in report.findings if f.check.startswith(check)]


async def test_grpc_refusing_credentials_is_a_refusal_not_an_open_peer():
    """Our server behind HTTP basic with gRPC: gRPC's UNAUTHENTICATED is the credentials refused
    (as HTTP's 401), not an internal error, and nothing answered without credentials."""
    tk = await tn.create_toolkit(builtins=False)
    a2a = tn.A2AConfig(auth=tn.Auth.basic("ada:secret"), grpc="127.0.0.1:0")
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        report = await doctor(handle.url, timeout=10)
    assert not _said(report, "auth"), report.text()
    grpc = [f for f in report.findings if f.check.startswith("GRPC")]
    assert grpc and all(f.severity == "info" for f in grpc), report.text()
    assert all(f.message.endswith("without credentials (UNAUTHENTICATED)") for f in grpc), (
        report.text()
    )
    assert all("UNAUTHENTICATED" in f.evidence[0] or f.evidence == [] for f in grpc)


async def test_a_card_promising_0_3_that_the_server_does_not_answer_is_named_so():
    """The official a2a-sdk 1.3 server as Microsoft Agent Framework hosts it: the card's interface
    names no version, so the SDK's card route writes 0.3's url and protocolVersion "0.3" too,
    while its routes answer 1.0 only. It was called "the toolnexus legacy dialect"."""
    async with sdk_server(versioned=False) as url:
        async with httpx.AsyncClient(timeout=10) as http:
            served = (await http.get(url + "/.well-known/agent-card.json")).json()
            v03 = await http.post(
                served["url"], json=v03_send("hello")
            )  # a 0.3 client's first call
        report = await doctor(url, timeout=10)
    assert served["protocolVersion"] == "0.3" and v03.json()["error"]["code"] == -32601
    assert "legacy" not in report.text()
    [promise] = [f for f in report.findings if f.check == "JSONRPC 0.x"]
    assert promise.severity == "error" and promise.message.startswith(
        f"the card promises 0.3 at {url}/ (url, and protocolVersion '0.3'), but the server does "
        "not answer it"
    )
    assert promise.message.endswith("0.3 clients fail on this card")
    assert 'give the interface its protocolVersion "1.0"' in promise.fix
