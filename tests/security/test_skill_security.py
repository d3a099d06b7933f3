"""Security per skill, declared and enforced (issue 62 item 2): a skill's security requirements
(``security:`` in its ``SKILL.md``, or ``a2a.skillSecurity``) are on its card entry in both shapes
(1.0's ``securityRequirements``, 0.3's ``security``), a task that asks for the skill from a caller
without the scope is refused with the spec's authorization error on every binding (JSON-RPC
-32000 ``PERMISSION_DENIED``, HTTP 403, gRPC ``PERMISSION_DENIED``) and creates nothing, and no
task's model is offered a skill its caller may not use. The caller holds a JWT from a real local
issuer (``tests/peers/authorization_server.py``); the official a2a-sdk 1.3 client on each binding, and ours."""

from __future__ import annotations

import copy
import os
import uuid

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import ConfigError, PermissionDeniedError, RPCError
from toolnexus.skills import list_skills

from ..helpers import write_skill
from ..peers.authorization_server import AUDIENCE, authorization_server
from ..serve.test_tenants import sdk_client

try:
    from a2a.client import ClientCallContext
    from a2a.client.auth.interceptor import AuthInterceptor
    from a2a.client.card_resolver import parse_agent_card
    from a2a.compat.v0_3 import types as v03
    from a2a.types import a2a_pb2 as pb
except ImportError as exc:  # a real part missing: CI fails, a laptop skips
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"the skill security tests need a2a-sdk ({exc})", allow_module_level=True)

from .test_oauth_resource import _Tokens  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEDGER = "The ledger's secret instructions: count the beans."
SKILLS = [
    tn.SkillDef("greet", "Says hello", content="Say hello."),
    tn.SkillDef(
        "ledger", "Reads the ledger", content=LEDGER, security=[{"oauth2": ["ledger:read"]}]
    ),
]


class Model:
    """A model that loads the ledger skill, then says what loading it gave; it notes the skills
    each run's catalogue offered it."""

    def __init__(self) -> None:
        self.offered: list[str] = []

    def __call__(self, request: dict) -> dict:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return {"content": "loaded: " + str(last["content"])}
        self.offered.append(request["messages"][0]["content"])
        return {"tool_calls": [{"id": "c1", "name": "skill", "arguments": {"name": "ledger"}}]}


async def _served(issuer, model: Model, **a2a):
    tk = await tn.create_toolkit(builtins=False, skills=SKILLS)
    auth = tn.Auth.oauth2(
        issuer=issuer.url,
        audience=AUDIENCE,
        jwks_url=issuer.url + "/jwks",
        flows={
            "clientCredentials": {"tokenUrl": issuer.url + "/token"},
            "deviceCode": {
                "deviceAuthorizationUrl": issuer.url + "/device",
                "tokenUrl": issuer.url + "/token",
            },
        },
    )
    config = tn.A2AConfig(name="books", auth=auth, grpc="127.0.0.1:0", **a2a)
    return await tk.serve("127.0.0.1:0", client=tn.create_in_process_client(model), a2a=config)


def _ask(skill: str | None) -> pb.SendMessageRequest:
    message = pb.Message(
        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="read it")]
    )
    if skill:
        message.metadata.update({"skill": skill})
    return pb.SendMessageRequest(
        message=message, configuration=pb.SendMessageConfiguration(return_immediately=False)
    )


async def test_the_card_lists_each_skills_requirements_in_both_shapes():
    async with authorization_server() as issuer:
        handle = await _served(issuer, Model())
        try:
            async with httpx.AsyncClient() as http:
                raw = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        finally:
            await handle.stop()
    greet, ledger = raw["skills"]
    assert "security" not in greet and "securityRequirements" not in greet
    # the requirement names the agent's oauth2: one alternative per flow's scheme
    names = ["oauth2-clientCredentials", "oauth2-deviceCode"]
    assert ledger["security"] == [{n: ["ledger:read"]} for n in names]
    card = parse_agent_card(copy.deepcopy(raw))
    assert [dict(r.schemes) for r in card.skills[1].security_requirements] == [
        {n: pb.StringList(list=["ledger:read"])} for n in names
    ]
    assert v03.AgentCard.model_validate(raw).skills[1].security == ledger["security"]


@pytest.mark.parametrize(
    ("binding", "version"),
    [("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "1.0"), ("GRPC", "1.0")],
)
async def test_the_sdk_client_without_the_scope_is_refused_the_skill(binding, version):
    async with authorization_server() as issuer:
        model = Model()
        handle = await _served(issuer, model)
        http = httpx.AsyncClient(timeout=30)
        try:
            tokens = _Tokens(issuer.mint("ada", "a2a"))
            client = await sdk_client(
                handle.url, binding, "", http, version, [AuthInterceptor(tokens)]
            )
            context = ClientCallContext(state={"sessionId": "s"})
            with pytest.raises(Exception) as refused:
                async for _ in client.send_message(_ask("ledger"), context=context):
                    pass
            said = str(refused.value)
            if binding == "HTTP+JSON":  # the SDK reads the status, not the body
                assert "403 Forbidden" in said, said
            else:
                assert "the skill 'ledger' needs the scope ledger:read" in said, said
            assert await handle.tasks() == []  # refused before any task was made
            tokens.token = issuer.mint("ada", "a2a ledger:read")
            events = [ev async for ev in client.send_message(_ask("ledger"), context=context)]
            task = events[-1].task
            assert task.status.state == pb.TASK_STATE_COMPLETED
            assert LEDGER in task.artifacts[0].parts[0].text
            await client.close()
        finally:
            await http.aclose()
            await handle.stop()


async def test_the_model_is_not_offered_a_skill_its_caller_may_not_use():
    async with authorization_server() as issuer:
        model = Model()
        handle = await _served(issuer, model)
        try:
            without = {"authorization": "Bearer " + issuer.mint("ada", "a2a")}
            async with tn.A2AClient(handle.url, headers=without) as client:
                with pytest.raises(RPCError, match="needs the scope ledger:read"):
                    await client.send("read it", skill="ledger", blocking=True)
                # no skill named: the model tries to load the ledger, which it was never offered
                task = await client.send("read it", blocking=True)
                assert "ledger" not in model.offered[-1] and "greet" in model.offered[-1]
                assert 'Skill "ledger" not found. Available skills: greet' in task.reply
                assert LEDGER not in task.reply
            message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x"}]}
            message["metadata"] = {"skill": "ledger"}
            async with httpx.AsyncClient(timeout=30) as http:
                body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
                body["params"] = {"message": message}
                r = await http.post(handle.url + "/", json=body, headers=without)
                error = r.json()["error"]
                assert error["code"] == PermissionDeniedError.code == -32000
                assert error["data"][0]["reason"] == "PERMISSION_DENIED"
                r = await http.post(
                    handle.url + "/message:send", json={"message": message}, headers=without
                )
                assert r.status_code == 403
                assert r.json()["error"]["status"] == "PERMISSION_DENIED"
            held = {"authorization": "Bearer " + issuer.mint("bob", "ledger:read")}
            async with tn.A2AClient(handle.url, headers=held) as client:
                task = await client.send("read it", blocking=True)
                assert "ledger" in model.offered[-1]
                assert LEDGER in task.reply
        finally:
            await handle.stop()


async def test_the_config_says_a_skills_security_in_place_of_its_own():
    async with authorization_server() as issuer:
        model = Model()
        security = {"ledger": [], "greet": [{"oauth2": ["greet:use"]}]}
        handle = await _served(issuer, model, skill_security=security)
        try:
            headers = {"authorization": "Bearer " + issuer.mint("ada")}
            async with tn.A2AClient(handle.url, headers=headers) as client:
                task = await client.send("read it", skill="ledger", blocking=True)
                assert LEDGER in task.reply  # open now
                with pytest.raises(RPCError, match="needs the scope greet:use"):
                    await client.send("hi", skill="greet", blocking=True)
        finally:
            await handle.stop()
    with pytest.raises(ConfigError, match="set a2a.auth too"):
        tn.A2AConfig(skill_security={"x": [{"bearer": []}]}).check()
    bearer = tn.Auth.bearer("t")
    with pytest.raises(ConfigError, match="names the scheme 'oauth2'"):
        tn.A2AConfig(auth=bearer, skill_security={"x": [{"oauth2": ["s"]}]}).check()
    with pytest.raises(ConfigError, match="security must be a list"):
        tn.A2AConfig(auth=bearer, skill_security={"x": "oauth2"}).check()


async def test_skill_md_front_matter_declares_it(tmp_path):
    write_skill(tmp_path / "ledger", "ledger", extra="security:\n  - oauth2: [ledger:read]")
    write_skill(tmp_path / "broken", "broken", extra="security: everyone")
    found = list_skills([tmp_path])
    assert [s.name for s in found.skills] == ["ledger"]  # a requirement unread: not served at all
    assert found.skills[0].security == [{"oauth2": ["ledger:read"]}]
    assert [s.reason for s in found.skipped] == ["malformed-frontmatter"]
