"""Reading other agents' cards: fetch (card URL or base URL) and validate, with the interop verdict."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

import toolnexus as tn
from toolnexus.http.server import AsgiServer

CARDS = Path(__file__).parent / "fixtures" / "cards"


def card(name: str) -> dict:
    return json.loads((CARDS / name).read_text())


def diags(report) -> set[tuple[str, str]]:
    return {(d.level, d.path) for d in report.diagnostics}


def test_our_own_card_is_clean_and_both_lines_work():
    from toolnexus.serve.card import build_card

    ours = build_card(
        tn.A2AConfig(name="demo", description="d", version="1"),
        base_url="http://127.0.0.1:5000",
        skills=[tn.SkillDef("greet", "says hello")],
    )
    report = tn.validate_card(ours)
    assert report.ok and [d for d in report.diagnostics if d.level != "info"] == []
    assert report.summary == "offers 1.0 and 0.3: each official client line finds its own"
    assert report.verdict["a2a-sdk 0.3"] == "speaks 0.3 at http://127.0.0.1:5000/"


def test_sdk_cards():
    no_compat = tn.validate_card(card("sdk-1x-no-compat.json"))
    assert no_compat.ok
    assert ("warning", "$.url") in diags(no_compat)
    assert (
        no_compat.summary == "offers 1.0 only: the official 1.x client finds it; 0.3 clients do not"
    )
    assert no_compat.verdict["a2a-sdk 0.3"] == "rejects this card (no top-level url)"
    compat = tn.validate_card(card("sdk-1x-compat.json"))
    assert compat.ok and compat.summary.startswith("offers 1.0 and 0.3")


def test_a_rest_only_card_is_spoken_to_over_http_json():
    rest_only = {
        "name": "r",
        "description": "d",
        "version": "1",
        "capabilities": {},
        "skills": [],
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "supportedInterfaces": [
            {
                "url": "http://127.0.0.1:7100/",
                "protocolBinding": "HTTP+JSON",
                "protocolVersion": "1.0",
            }
        ],
    }
    report = tn.validate_card(rest_only)
    assert (
        report.summary
        == "offers 1.0 over HTTP+JSON only: REST clients find it; JSON-RPC clients do not"
    )
    assert report.verdict["a2a-sdk 1.x"].startswith(
        "speaks 1.0 over HTTP+JSON at http://127.0.0.1:7100/ when"
    )
    assert report.verdict["toolnexus"].startswith(
        "speaks 1.0 over HTTP+JSON at http://127.0.0.1:7100/"
    )
    card_ = tn.AgentCard(rest_only)
    assert card_.route()[3] == "HTTP+JSON" and card_.route("JSONRPC")[3] == "JSONRPC"
    # ours offers both: JSON-RPC unless REST is asked for
    from toolnexus.serve.card import build_card

    ours = tn.AgentCard(
        build_card(
            tn.A2AConfig(name="n", description="d", version="1"),
            base_url="http://127.0.0.1:5000",
            skills=[],
        )
    )
    assert ours.route()[3] == "JSONRPC"
    assert ours.route("HTTP+JSON")[:2] == ("1.0", "http://127.0.0.1:5000/")
    assert ours.route("HTTP+JSON", "0.3")[:2] == ("0.3", "http://127.0.0.1:5000/")
    # a 0.3 card that prefers HTTP+JSON and lists no JSONRPC: 0.3's REST routes
    old = tn.AgentCard(
        {
            "name": "o",
            "url": "http://127.0.0.1:7200/",
            "protocolVersion": "0.3.0",
            "preferredTransport": "HTTP+JSON",
        }
    )
    assert old.route() == (
        "0.3",
        "http://127.0.0.1:7200/",
        "the card offers 0.3 over HTTP+JSON and no JSONRPC",
        "HTTP+JSON",
    )
    both = tn.AgentCard(
        {
            **old.raw,
            "additionalInterfaces": [{"url": "http://127.0.0.1:7200/", "transport": "JSONRPC"}],
        }
    )
    assert both.route()[3] == "JSONRPC"


def test_toolnexus_port_card():
    report = tn.validate_card(card("toolnexus-port.json"))
    assert diags(report) == {
        ("error", "$.description"),  # empty: A2A linters fail it (issue 61 item 8)
        ("warning", "$.skills[0].tags"),
        ("info", "$.supportedInterfaces"),
    }
    assert report.summary == (
        "offers 0.3 only: the official 1.x client falls back to its 0.3 compat transport"
        " (but the card has 1 error)"
    )
    assert "falls back to the toolnexus legacy dialect" in report.verdict["toolnexus"]
    assert (
        report.verdict["a2a-sdk 1.x"]
        == "falls back to its 0.3 compat transport at http://127.0.0.1:7000/"
    )


def test_every_diagnostic_on_a_broken_card():
    report = tn.validate_card(card("broken.json"))
    assert not report.ok
    assert diags(report) >= {
        ("error", "$.name"),
        ("error", "$.description"),
        ("error", "$.version"),
        ("error", "$.url"),
        ("warning", "$.protocolVersion"),
        ("info", "$.preferredTransport"),
        ("error", "$.capabilities.streaming"),
        ("error", "$.defaultInputModes"),
        ("warning", "$.defaultOutputModes"),
        ("error", "$.skills[0].description"),
        ("error", "$.skills[0].tags"),
        ("warning", "$.skills[1].description"),
        ("error", "$.skills[1].tags"),
        ("error", "$.skills[1].id"),
        ("error", "$.skills[2]"),
        ("info", "$.supportedInterfaces[0].url"),
        ("warning", "$.supportedInterfaces[0].protocolVersion"),
        ("error", "$.supportedInterfaces[1].url"),
        ("error", "$.supportedInterfaces[1].protocolBinding"),
        ("warning", "$.supportedInterfaces[1].protocolVersion"),
        ("error", "$.supportedInterfaces[2]"),
    }
    assert report.summary == "the card is broken: clients will not use it"
    messages = {d.path: d.message for d in report.diagnostics}
    assert messages["$.skills[1].id"] == "skill id 'a' appears twice"
    for missing in ({"name": "x"}, {}):
        r = tn.validate_card(missing)
        assert ("error", "$.capabilities") in diags(r) and ("error", "$.skills") in diags(r)
        assert ("error", "$.defaultInputModes") in diags(r) and ("error", "$.url") in diags(r)
    assert ("warning", "$.skills") in diags(
        tn.validate_card(card("toolnexus-port.json") | {"skills": []})
    )
    assert ("error", "$") in diags(tn.validate_card([1, 2]))  # type: ignore[arg-type]
    assert ("error", "$.supportedInterfaces") in diags(
        tn.validate_card(card("sdk-1x-compat.json") | {"supportedInterfaces": []})
    )
    assert ("error", "$.capabilities") in diags(
        tn.validate_card(card("toolnexus-port.json") | {"capabilities": 1})
    )
    assert ("error", "$.skills") in diags(
        tn.validate_card(card("toolnexus-port.json") | {"skills": {}})
    )


async def test_fetch_card_from_a_card_url_or_a_base_url():
    hits: list[str] = []

    async def legacy_only(request):
        hits.append(request.url.path)
        return JSONResponse(card("toolnexus-port.json"))

    app = Starlette(
        routes=[
            Route("/.well-known/agent.json", legacy_only),
            Route("/text/.well-known/agent-card.json", lambda r: PlainTextResponse("hello")),
            Route("/list/.well-known/agent-card.json", lambda r: JSONResponse([1])),
            Route("/boom/.well-known/agent-card.json", lambda r: PlainTextResponse("x", 500)),
        ]
    )
    server = AsgiServer(app)
    await server.start()
    try:
        fetched = await tn.fetch_card(server.url)
        assert fetched.name == "weather-desk" and fetched.raw == card("toolnexus-port.json")
        assert fetched.source == server.url + "/.well-known/agent.json"
        assert hits == ["/.well-known/agent.json"]
        for path, needle in (
            ("/text", "is not JSON"),
            ("/list", "not a JSON object"),
            ("/boom", "HTTP 500"),
        ):
            with pytest.raises(tn.PeerError, match=needle):
                await tn.fetch_card(server.url + path)
        with pytest.raises(tn.PeerError, match="answered HTTP 404"):
            await tn.fetch_card(server.url + "/.well-known/agent-card.json")
    finally:
        await server.stop()
    with pytest.raises(tn.PeerError, match="cannot fetch the agent card"):
        await tn.fetch_card("http://127.0.0.1:1")


async def test_wire_log_masks_secrets_and_copies_as_curl():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(auth=tn.Auth.bearer("t0ps3cret"))
    ) as h:
        async with tn.A2AClient(
            h.url, headers={"Authorization": "Bearer t0ps3cret", "x-api-key": "k"}
        ) as client:
            await client.send("hi", blocking=True)
            events = list(client.traffic.events)
        async with httpx.AsyncClient() as http:  # the logged body replays as it is
            replay = await http.post(
                h.url + "/",
                content=events[1].request_body.encode(),
                headers={"authorization": "Bearer t0ps3cret", "content-type": "application/json"},
            )
    assert [e.method for e in events] == ["GET", "POST"]
    post = events[1]
    assert (
        post.request_headers["authorization"] == "Bearer ***"
        and post.request_headers["x-api-key"] == "***"
    )
    assert post.rpc_method == "SendMessage" and post.status == 200 and post.ms > 0
    assert '"You said: hi"' in post.response_body
    curl = tn.traffic.to_curl(post)
    assert curl.startswith("curl -sS -X POST -H 'content-type: application/json'")
    assert "-H 'authorization: Bearer ***'" in curl and "t0ps3cret" not in curl
    assert curl.endswith(f"'{h.url}/'")
    assert replay.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_grpc_interface_is_judged_by_its_host_and_shown_as_its_target():
    def card(target: str) -> tn.AgentCard:
        return tn.AgentCard(
            {
                "name": "g",
                "description": "d",
                "version": "1",
                "capabilities": {},
                "skills": [],
                "defaultInputModes": ["text"],
                "defaultOutputModes": ["text"],
                "supportedInterfaces": [
                    {"url": target, "protocolBinding": "GRPC", "protocolVersion": "1.0"}
                ],
            },
            "http://agent.example:8080/.well-known/agent-card.json",
        )

    same = [d.message for d in tn.validate_card(card("agent.example:50051")).diagnostics]
    assert not any("sends" in m for m in same), same  # its own port, the host named: nothing to say
    other = [d.message for d in tn.validate_card(card("elsewhere.example:50051")).diagnostics]
    [line] = [m for m in other if "sends gRPC calls" in m]
    assert line.startswith(
        "the card sends gRPC calls to elsewhere.example:50051, not to the host agent.example"
    )
    assert ":None" not in " ".join(other)
