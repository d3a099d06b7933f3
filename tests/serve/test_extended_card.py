"""The extended agent card (A2A 1.0 §3.1.11, §13.3): published for authenticated callers with the
skills only they see, per caller when the user gives a function, declared by
``capabilities.extendedAgentCard``; served on every binding and dialect, asked for by our client
(``A2AClient.extended_card``, ``toolnexus card --extended``). The official a2a-sdk 1.3 on the
other side both ways."""

from __future__ import annotations

import json
import os

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import ConfigError, InternalError, UnsupportedOperationError

from ..helpers import arun_cli
from ..peers.sdk_server import sdk_server
from .test_extensions import EVERY_WAY
from .test_tenants import sdk_client

try:
    from a2a.client import ClientCallContext
    from a2a.types import a2a_pb2 as pb
except ImportError as exc:  # a real part missing: CI fails, a laptop skips
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"the extended card tests need a2a-sdk ({exc})", allow_module_level=True)

ALICE, BOB = "alice-token-1", "bob-token-2"
SKILLS = [
    tn.SkillDef("greet", "Says hello", tags=["hello"]),
    tn.SkillDef("ledger", "Reads the ledger: for callers who signed in", tags=["books"]),
]


def for_bob(card: dict, headers: dict) -> dict:
    """Bob (and only Bob) sees one more skill."""
    if headers.get("authorization") != f"Bearer {BOB}":
        return card
    return {**card, "skills": [*card["skills"], {"id": "audit", "name": "audit", "tags": ["x"]}]}


async def _served(extended_card=for_bob):
    tk = await tn.create_toolkit(builtins=False, skills=SKILLS)
    return await tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(
            name="books",
            grpc="127.0.0.1:0",
            auth=tn.Auth.bearer(ALICE, BOB),
            extended_skills=["ledger"],
            extended_card=extended_card,
        ),
    )


def _ids(card) -> list[str]:
    skills = card.skills if hasattr(card, "skills") else card["skills"]
    return [s.id if hasattr(s, "id") else s["id"] for s in skills]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_the_sdk_client_gets_the_extended_card_for_its_caller(binding):
    handle = await _served()
    http = httpx.AsyncClient(timeout=30)
    try:
        async with httpx.AsyncClient() as plain:
            public = (await plain.get(handle.url + "/.well-known/agent-card.json")).json()
        assert _ids(public) == ["greet"]
        assert public["capabilities"]["extendedAgentCard"] is True
        assert public["supportsAuthenticatedExtendedCard"] is True
        client = await sdk_client(handle.url, binding, "", http)
        try:
            for token, skills in (
                (ALICE, ["greet", "ledger"]),
                (BOB, ["greet", "ledger", "audit"]),
            ):
                signed = ClientCallContext(service_parameters={"Authorization": f"Bearer {token}"})
                card = await client.get_extended_agent_card(
                    pb.GetExtendedAgentCardRequest(), context=signed
                )
                assert _ids(card) == skills, (binding, token)
                assert card.capabilities.extended_agent_card
            with pytest.raises(Exception):  # noqa: B017  (each binding's refusal: 401 / UNAUTHENTICATED)
                await client.get_extended_agent_card(pb.GetExtendedAgentCardRequest())
        finally:
            await client.close()
    finally:
        await http.aclose()
        await handle.stop()


async def test_our_client_asks_for_it_on_every_binding_and_dialect_and_may_use_its_skills():
    handle = await _served()
    try:
        for binding, dialect in EVERY_WAY:
            headers = {"Authorization": f"Bearer {BOB}"}
            async with tn.A2AClient(
                handle.url, headers=headers, binding=binding, dialect=dialect
            ) as client:
                assert client.card.extended and _ids(client.card.raw) == ["greet"]
                card = await client.extended_card()
                assert _ids(card.raw) == ["greet", "ledger", "audit"], (binding, dialect)
                assert client.card is card  # used from now on
                task = await client.send("hello", skill="ledger", blocking=True)
                assert task.state is tn.TaskState.COMPLETED, (binding, dialect)
    finally:
        await handle.stop()


async def test_our_client_gets_the_sdk_servers_extended_card():
    async with sdk_server(features=True) as url, tn.A2AClient(url) as client:
        assert client.card.extended and "ledger" not in _ids(client.card.raw)
        card = await client.extended_card(use=False)
        assert "ledger" in _ids(card.raw) and client.card is not card


async def test_a_card_function_that_fails_is_an_internal_error_and_the_agent_serves_on():
    def broken(card: dict, headers: dict) -> dict:
        raise RuntimeError("the directory is down")

    handle = await _served(extended_card=broken)
    try:
        async with tn.A2AClient(handle.url, headers={"Authorization": f"Bearer {ALICE}"}) as c:
            with pytest.raises(InternalError) as raised:
                await c.extended_card()
            assert "directory" not in str(raised.value)  # the detail stays in the server log
            assert (await c.send("still here", blocking=True)).state is tn.TaskState.COMPLETED
    finally:
        await handle.stop()


async def test_no_extended_card_without_auth_and_none_declared_means_unsupported():
    with pytest.raises(ConfigError, match="authenticated"):
        tn.A2AConfig(extended_skills=["ledger"]).check()
    tk = await tn.create_toolkit(builtins=False, skills=SKILLS)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as handle:
        async with tn.A2AClient(handle.url) as client:
            assert not client.card.extended
            with pytest.raises(UnsupportedOperationError):
                await client.extended_card()


async def test_the_cli_prints_the_extended_card():
    handle = await _served()
    try:
        code, out, err = await arun_cli(
            "card", handle.url, "--extended", "--header", f"Authorization: Bearer {ALICE}", "--json"
        )
        assert code == 0, err
        assert _ids(json.loads(out)["card"]) == ["greet", "ledger"]
        code, out, err = await arun_cli("card", handle.url)
        assert code == 0 and "extended card: declared" in out, out
        code, out, err = await arun_cli("card", handle.url, "--extended")  # no credentials
        assert code != 0 and "401" in err and "Traceback" not in err, err
    finally:
        await handle.stop()
