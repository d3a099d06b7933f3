"""The client reads the whole card (issue 62 item 3), against the official a2a-sdk 1.3 server: what
``toolnexus card`` prints of it (provider, documentation and icon URLs, the schemes and what each
call must carry, the extensions, each skill's modes and security), and ListTasks' time and history
filters on every binding."""

from __future__ import annotations

import asyncio
import datetime

import pytest

import toolnexus as tn
from toolnexus.client.transports import CUSTOM, JsonRpcTransport

from .helpers import arun_cli
from .peers.sdk_server import sdk_server

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXTENSION = "https://toolnexus.example/ext/depth/v1"


def everything(card: pb.AgentCard) -> None:
    """Give the SDK's card every field a client should show: a provider, documentation and icon,
    four schemes and what the card and one skill ask for, an extension, a skill's own modes."""
    card.provider.CopyFrom(pb.AgentProvider(organization="Echo Works", url="https://echo.example"))
    card.documentation_url = "https://echo.example/docs"
    card.icon_url = "https://echo.example/icon.png"
    card.capabilities.extensions.append(
        pb.AgentExtension(uri=EXTENSION, required=True, description="a depth every call carries")
    )
    schemes = {
        "bearer": pb.SecurityScheme(
            http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme="Bearer")
        ),
        "key": pb.SecurityScheme(
            api_key_security_scheme=pb.APIKeySecurityScheme(location="header", name="X-Echo-Key")
        ),
        "device": pb.SecurityScheme(
            oauth2_security_scheme=pb.OAuth2SecurityScheme(
                flows=pb.OAuthFlows(
                    device_code=pb.DeviceCodeOAuthFlow(
                        device_authorization_url="https://echo.example/device",
                        token_url="https://echo.example/token",
                        scopes={"ledger": "read the ledger"},
                    )
                )
            )
        ),
        "mtls": pb.SecurityScheme(mtls_security_scheme=pb.MutualTlsSecurityScheme()),
    }
    for name, scheme in schemes.items():
        card.security_schemes[name].CopyFrom(scheme)
    for name in ("bearer", "key"):
        card.security_requirements.add().schemes[name].SetInParent()
    ledger = card.skills.add(
        id="ledger",
        name="Ledger",
        description="Reads the ledger",
        tags=["books"],
        input_modes=["application/json"],
        output_modes=["text/csv", "application/json"],
    )
    need = ledger.security_requirements.add()
    need.schemes["device"].list.append("ledger")
    need.schemes["mtls"].SetInParent()


async def test_toolnexus_card_prints_the_whole_card():
    async with sdk_server(shaped=everything) as url:
        code, out, err = await arun_cli("card", url)
    assert code == 0, err
    lines = [line.strip() for line in out.splitlines()]
    for expected in (
        "provider Echo Works (https://echo.example)",
        "documentation https://echo.example/docs",
        "icon https://echo.example/icon.png",
        "scheme bearer: http bearer",
        "scheme key: apiKey in header X-Echo-Key",
        "scheme device: oauth2 (deviceCode)",
        "scheme mtls: mutualTLS",
        "security bearer (http bearer) or key (apiKey in header X-Echo-Key)",
        f"extension {EXTENSION} (required): a depth every call carries",
        "modes in text/plain; out text/plain",  # the echo skill: the card's defaults
        "modes in application/json; out text/csv, application/json",
        "security device (oauth2 (deviceCode)) [ledger] and mtls (mutualTLS)",
    ):
        assert expected in lines, (expected, out)
    # the skill's security line follows its own skill, and only the skill that names one has it
    at = lines.index("skill ledger: Reads the ledger  [books]")
    assert lines[at + 2].startswith("security device")
    assert sum(line.startswith("security ") for line in lines) == 2


async def test_a_card_read_in_either_sdk_lines_shape():
    """0.3's ``security`` and ``type`` spellings read as 1.0's."""
    card = tn.AgentCard(
        {
            "name": "old",
            "securitySchemes": {
                "k": {"type": "apiKey", "in": "header", "name": "X-K"},
                "o": {"type": "openIdConnect", "openIdConnectUrl": "https://id.example/.wk"},
            },
            "security": [{"k": []}, {"o": ["a", "b"]}],
            "skills": [{"id": "s", "security": [{"o": ["c"]}], "inputModes": ["image/png"]}],
            "defaultOutputModes": ["text/plain"],
        }
    )
    assert card.requirements() == [{"k": []}, {"o": ["a", "b"]}]
    assert card.requirements("s") == [{"o": ["c"]}]
    assert card.requirements("no-such-skill") == card.requirements()
    assert card.security_text() == "k (apiKey in header X-K) or o (openIdConnect) [a b]"
    assert card.modes("s") == (["image/png"], ["text/plain"])
    assert card.modes() == ([], ["text/plain"])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_list_tasks_by_status_time_and_with_a_history_length(binding):
    """``statusTimestampAfter`` leaves out the tasks whose status last changed before it;
    ``historyLength`` cuts each task's history; the SDK's server on each binding."""
    async with sdk_server(binding=binding) as url:
        async with tn.A2AClient(url) as client:
            first = await client.send("echo one", blocking=True)
            await asyncio.sleep(0.01)  # the SDK stamps in its own clock: past the first's stamp
            between = datetime.datetime.now(datetime.UTC)
            await asyncio.sleep(0.01)
            second = await client.send("echo two", blocking=True)
            everything_ = await client.list_tasks()
            after = await client.list_tasks(status_timestamp_after=between)
            as_text = await client.list_tasks(status_timestamp_after=between.isoformat())
            cut = await client.list_tasks(history_length=0)
            whole = await client.list_tasks(history_length=5)
    assert {t.id for t in everything_["tasks"]} == {first.id, second.id}
    assert [t.id for t in after["tasks"]] == [second.id]
    assert [t.id for t in as_text["tasks"]] == [second.id]
    assert all(not t.history for t in cut["tasks"])
    assert all(t.history for t in whole["tasks"])


def modes(card: pb.AgentCard) -> None:
    """The echo skill takes text only (the card's default); a skill "look" takes PNG images."""
    del card.default_input_modes[:]
    card.default_input_modes.append("text/plain")
    card.skills.add(id="look", name="Look", description="Looks", tags=["img"]).input_modes.extend(
        ["text/plain", "image/png"]
    )


async def test_a_send_carries_only_what_the_skill_takes_and_says_so_first(tmp_path):
    """The SDK's server refuses a part whose media type its card does not name (-32005): our
    client leaves such a part out, saying so before it sends, and sends what the skill takes."""
    table, picture = tmp_path / "t.csv", tmp_path / "p.png"
    table.write_text("a,b\n1,2\n")
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    async with sdk_server(shaped=modes, check_modes=True) as url:
        async with tn.A2AClient(url) as client:
            kept, notes = client.fitting(
                [tn.Part.of_text("hi"), tn.Part.of_file(table)], "echo", ["text/csv"]
            )
            assert [p.kind for p in kept] == ["text"]
            assert notes == [
                "the skill echo takes text/plain: file t.csv (text/csv, 8 B) (text/csv) is not sent",
                "the skill echo answers in text/plain, none of which you accept (text/csv): the "
                "agent may refuse the task",
            ]
            assert [e.method for e in client.traffic.events] == ["GET"]  # nothing sent yet
            task = await client.send("hi", skill="echo", files=[table], blocking=True)
            assert task.reply == "echo: hi" and client.warnings == notes[:1]
            look = await client.send("see", skill="look", files=[picture, table], blocking=True)
            assert look.reply == "echo: see (+1 parts)"  # the PNG went, the CSV did not
        code, out, err = await arun_cli("send", url, "hi", "--file", str(table), "--skill", "echo")
    assert code == 0, err
    assert out.strip() == "echo: hi"
    assert err.count("is not sent") == 1, err


TAGGED = "https://toolnexus.example/bindings/tagged-jsonrpc/v1"


class Tagged(JsonRpcTransport):
    """A binding of a library user's own: JSON-RPC, each call tagged with a header of its own."""

    calls = 0

    def request(self, op, params, stream=False):  # type: ignore[no-untyped-def]
        Tagged.calls += 1
        method, verb, url, body, headers = super().request(op, params, stream)
        return method, verb, url, body, {**headers, "x-tagged": "yes"}


def tagged_first(card: pb.AgentCard) -> None:
    """The agent lists the tagged binding first, at its JSON-RPC route."""
    first = pb.AgentInterface(
        url=card.supported_interfaces[0].url, protocol_binding=TAGGED, protocol_version="1.0"
    )
    card.supported_interfaces.insert(0, first)


async def test_a_binding_a_library_user_registers():
    heard: list[dict[str, str]] = []
    async with sdk_server(shaped=tagged_first, heard=heard) as url:
        async with tn.A2AClient(url) as client:  # not registered: the standard one it knows
            assert (await client.send("echo", blocking=True)).reply == "echo: echo"
            assert client.binding.value == "JSONRPC" and "x-tagged" not in heard[-1]
        with pytest.raises(ValueError, match="registered one"):
            tn.A2AClient(url, binding=TAGGED)
        tn.register_binding(TAGGED, Tagged)
        try:
            async with tn.A2AClient(url) as client:  # the card's first, now spoken
                task = await client.send("echo tagged", blocking=True)
                assert TAGGED in client.dialect_reason
            async with tn.A2AClient(url, binding=TAGGED) as client:  # or asked for by name
                again = await client.get(task.id)
        finally:
            del CUSTOM[TAGGED]
    assert task.reply == "echo: echo tagged" and again.id == task.id
    assert Tagged.calls == 2 and heard[-1]["x-tagged"] == "yes"
    with pytest.raises(ValueError, match="a URI of its own"):
        tn.register_binding("GRPC", Tagged)
