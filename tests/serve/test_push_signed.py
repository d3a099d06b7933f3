"""Signed push notifications (the A2A push guide's asymmetric flow): an agent with a key signs
each notification as a JWT (iss, aud, iat, exp, jti, taskId, the body's digest) with the key its
card is signed with; our WebhookReceiver, given the agent's keys (from its verified card), checks
the signature and the claims, refuses a replayed jti, and refuses a notification about another task
than the one its config was registered for (A2A's MUST), signed or not."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from types import SimpleNamespace

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

import toolnexus as tn
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.protocol.model import TaskState
from toolnexus.protocol.signing import PUSH_HEADER, PUSH_LEEWAY

from ..conftest import EXAMPLE_SKILLS
from ..helpers import receiver_process, rss_mib

pytestmark = pytest.mark.asyncio(loop_scope="module")


def status(task_id: str, state: str = "TASK_STATE_WORKING") -> bytes:
    return json.dumps({"statusUpdate": {"taskId": task_id, "status": {"state": state}}}).encode()


def claims_token(key: tn.SigningKey, **claims) -> str:
    """A JWT with exactly these claims, signed by ``key`` (for the expired and odd ones)."""
    return key.sign(json.dumps(claims).encode(), {"typ": "JWT"})


async def test_a_signed_agents_notifications_are_verified_end_to_end():
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="agent-1")
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    agent = await tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="signer", signing_key=key)
    )
    impostor_key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="agent-1")
    impostor = await tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="signer", signing_key=impostor_key),
    )
    try:
        async with WebhookReceiver() as rx, tn.A2AClient(agent.url, verify=True) as client:
            keys = client.card.signatures.keys  # the agent's keys, from its verified card
            assert keys is not None and [k["kid"] for k in keys.keys] == ["agent-1"]
            task = await client.send(
                "hello", blocking=True, push=rx.target(keys=keys, issuer=agent.url)
            )
            try:
                got = await rx.wait(task.id, state=TaskState.COMPLETED)
            except TimeoutError:
                raise AssertionError(list(rx.refused)) from None
            assert got.verdict == "signed by 'agent-1' (ES256)"
            assert all(n.verdict == got.verdict for n in rx.received(task.id))
            assert list(rx.refused) == []
            # an agent holding another key (the same kid): every notification refused, none kept
            async with tn.A2AClient(impostor.url) as other:
                forged = await other.send(
                    "hello", blocking=True, push=rx.target(keys=keys, issuer=agent.url)
                )
                for _ in range(200):
                    if rx.refused_for(forged.id):
                        break
                    await asyncio.sleep(0.05)
            assert rx.received(forged.id) == []
            [refusal, *_] = rx.refused_for(forged.id)
            assert refusal.status == 401 and "forged, or signed by another key" in refusal.why
    finally:
        await agent.stop()
        await impostor.stop()


async def test_forged_replayed_expired_and_misdirected_notifications_are_refused():
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    other = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    keys = tn.KeySet.load(key)
    async with WebhookReceiver() as rx, httpx.AsyncClient() as http:
        target = rx.target("t1", keys=keys, issuer="http://agent/")

        async def post(body: bytes, token: str | None) -> httpx.Response:
            headers = {"X-A2A-Notification-Token": target.token, "content-type": "application/json"}
            if token is not None:
                headers[PUSH_HEADER] = token
            return await http.post(rx.url, content=body, headers=headers)

        def token(body: bytes, *, task_id: str = "t1", signer=key, audience=None, issuer=None):
            return signer.push_token(
                issuer=issuer or "http://agent/",
                audience=audience or rx.url,
                task_id=task_id,
                body=body,
            )

        body = status("t1")
        good = token(body)
        now = int(time.time())
        answers = {
            "good": await post(body, good),
            "replayed": await post(body, good),
            "forged": await post(body, token(body, signer=other)),
            "expired": await post(
                body,
                claims_token(
                    key,
                    iss="http://agent/",
                    aud=rx.url,
                    iat=now - 900,
                    exp=now - 600,
                    jti=uuid.uuid4().hex,
                    taskId="t1",
                    request_body_sha256=hashlib.sha256(body).hexdigest(),
                ),
            ),
            "unsigned": await post(body, None),
            "another webhook": await post(body, token(body, audience="http://elsewhere/hook")),
            "another agent": await post(body, token(body, issuer="http://evil/")),
            "another body": await post(status("t1", "TASK_STATE_COMPLETED"), token(body)),
            "another task, signed so": await post(status("t2"), token(status("t2"), task_id="t2")),
            "signed for another task": await post(body, token(body, task_id="t2")),
            "hs256": await post(body, _hs256(body, rx.url)),
        }
        said = {name: (r.status_code, r.json().get("error", "")) for name, r in answers.items()}
        assert said["good"] == (200, "")
        assert said["replayed"][0] == 401 and "is a replay (jti" in said["replayed"][1]
        assert said["forged"] == (
            401,
            "the signature does not verify (forged, or signed by another key)",
        )
        assert said["expired"] == (401, "it has expired (exp is past)")
        assert said["unsigned"][0] == 401 and "is not signed" in said["unsigned"][1]
        assert (
            said["another webhook"][0] == 401
            and "meant for another webhook" in said["another webhook"][1]
        )
        assert said["another agent"] == (401, "another agent issued it (iss is not http://agent/)")
        assert said["another body"] == (401, "its body is not the one signed")
        assert said["another task, signed so"] == (
            403,
            "it names task 't2', and this webhook was registered for task 't1'",
        )
        assert said["signed for another task"] == (403, "it is signed for task 't2', not for 't1'")
        assert said["hs256"][0] == 401 and "algorithm 'HS256' is not accepted" in said["hs256"][1]
        assert [n.verdict for n in rx.notifications] == ["signed by 'k1' (ES256)"]
        assert len(rx.refused_for("t1")) == 9 and len(rx.refused_for("t2")) == 1


async def test_an_unsigned_notification_about_another_task_is_refused_too():
    """A2A: the client MUST check the task a notification names against its config's."""
    async with WebhookReceiver() as rx, httpx.AsyncClient() as http:
        target = rx.target("t1")
        headers = {"X-A2A-Notification-Token": target.token, "content-type": "application/json"}
        wrong = await http.post(rx.url, content=status("t2"), headers=headers)
        right = await http.post(rx.url, content=status("t1"), headers=headers)
        anything = rx.target()  # registered for any task
        other = await http.post(
            rx.url,
            content=status("t9"),
            headers={**headers, "X-A2A-Notification-Token": anything.token},
        )
    assert (wrong.status_code, right.status_code, other.status_code) == (403, 200, 200)
    assert [n.verdict for n in rx.notifications] == ["unsigned", "unsigned"]


def _hs256(body: bytes, audience: str) -> str:
    """A token in HS256, the algorithm-confusion forgery: refused before any key is used."""
    claims = {
        "iss": "http://agent/",
        "aud": audience,
        "iat": int(time.time()),
        "exp": int(time.time()) + 60,
        "jti": uuid.uuid4().hex,
        "taskId": "t1",
        "request_body_sha256": hashlib.sha256(body).hexdigest(),
    }
    return jwt.encode(
        claims,
        "a shared secret nobody gave to anyone at all",
        algorithm="HS256",
        headers={"kid": "k1"},
    )


async def _post_signed(http: httpx.AsyncClient, url: str, token: str, jwt_: str) -> httpx.Response:
    headers = {
        "X-A2A-Notification-Token": token,
        "content-type": "application/json",
        PUSH_HEADER: jwt_,
    }
    return await http.post(url, content=status("t1"), headers=headers)


def _signed(key: tn.SigningKey, audience: str, *, jti: str | None = None, iat=None, exp=None):
    """A push JWT for task t1's status body, with this jti, iat and exp (ours by default)."""
    now = int(time.time())
    iat = now if iat is None else iat
    return claims_token(
        key,
        iss="http://agent/",
        aud=audience,
        iat=iat,
        exp=iat + 300 if exp is None else exp,
        jti=jti or uuid.uuid4().hex,
        taskId="t1",
        request_body_sha256=hashlib.sha256(status("t1")).hexdigest(),
    )


async def test_a_jti_past_its_bound_and_a_lifetime_past_a_pushs_are_refused():
    """Issue 59 item 1: each jti is remembered until it expires, so neither may be unbounded: a jti
    is at most 256 characters and a JWT valid for at most a push's own 300 s (ours: iat + 300)."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    async with WebhookReceiver() as rx, httpx.AsyncClient() as http:
        t = rx.target("t1", keys=tn.KeySet.load(key)).token
        now = int(time.time())
        said = {
            name: (r.status_code, r.json().get("error", ""))
            for name, r in {
                "ours": await _post_signed(http, rx.url, t, _signed(key, rx.url)),
                "256": await _post_signed(http, rx.url, t, _signed(key, rx.url, jti="j" * 256)),
                "257": await _post_signed(http, rx.url, t, _signed(key, rx.url, jti="j" * 257)),
                "30 years": await _post_signed(
                    http, rx.url, t, _signed(key, rx.url, iat=now, exp=now + 30 * 365 * 86400)
                ),
                "301 s": await _post_signed(
                    http, rx.url, t, _signed(key, rx.url, iat=now, exp=now + 301)
                ),
            }.items()
        }
    assert said == {
        "ours": (200, ""),
        "256": (200, ""),
        "257": (401, "its jti is 257 characters (1 to 256)"),
        "30 years": (401, "it is valid for 946080000 s, longer than a push's 300 s"),
        "301 s": (401, "it is valid for 301 s, longer than a push's 300 s"),
    }
    assert rx.remembered == 2


async def test_each_target_remembers_its_own_jtis_and_every_expired_one_goes(monkeypatch):
    """Issue 59 item 1: one store served every target, so one agent's notifications pushed
    another's jtis out (a replay window); and pruning looked only at the oldest entry, so one
    far-future exp kept everything behind it."""
    from toolnexus.client import webhook

    monkeypatch.setattr(webhook, "MAX_JTIS", 3)
    alice = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="alice")
    mallory = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="mallory")
    async with WebhookReceiver() as rx, httpx.AsyncClient() as http:
        a = rx.target("t1", keys=tn.KeySet.load(alice)).token
        m = rx.target("t1", keys=tn.KeySet.load(mallory)).token
        hers = _signed(alice, rx.url)
        assert (await _post_signed(http, rx.url, a, hers)).status_code == 200
        for _ in range(5):  # another agent's many
            assert (
                await _post_signed(http, rx.url, m, _signed(mallory, rx.url))
            ).status_code == 200
        replayed = await _post_signed(http, rx.url, a, hers)
        assert replayed.status_code == 401 and "is a replay" in replayed.json()["error"]

    monkeypatch.setattr(webhook, "MAX_JTIS", 100)
    async with WebhookReceiver() as rx, httpx.AsyncClient() as http:
        a = rx.target("t1", keys=tn.KeySet.load(alice)).token
        # one that expires last comes first, then two that expire in a minute
        assert (await _post_signed(http, rx.url, a, _signed(alice, rx.url))).status_code == 200
        soon = int(time.time()) + 60
        for _ in range(2):
            token = _signed(alice, rx.url, iat=soon - 70, exp=soon)
            assert (await _post_signed(http, rx.url, a, token)).status_code == 200
        assert rx.remembered == 3
        # then the receiver's clock past both's exp and the leeway; the next token is checked on
        # the real clock (a wait of PUSH_LEEWAY after back-dated tokens left a slow machine 2 s
        # to post them: seen refused as expired)
        ahead = soon + PUSH_LEEWAY + 1 - time.time()
        clock = SimpleNamespace(time=lambda: time.time() + ahead, perf_counter=time.perf_counter)
        monkeypatch.setattr(webhook, "time", clock)
        assert (await _post_signed(http, rx.url, a, _signed(alice, rx.url))).status_code == 200
        assert rx.remembered == 2  # the two expired ones gone, behind one that has not


async def test_a_trusted_signers_huge_and_lasting_jtis_grow_the_receiver_no_more_than_ours():
    """Issue 59 item 1, in a receiver's resident memory: a signer it trusts sends notifications
    whose jti is 40,000 characters (a head that fits the server's bound) and whose exp is 30
    years ahead, against as many of ours (a 32-character jti, exp 300 s ahead). Each was kept, and
    600 grew the receiver by about 50 MiB more than ours; now each is refused."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    sends = 600

    async def grown(proc, url: str, token: str, jti: str | None, years: int) -> float:
        before = rss_mib(proc.pid)
        answers = set()
        async with httpx.AsyncClient() as http:
            for _ in range(sends):
                now = int(time.time())
                jwt_ = _signed(
                    key,
                    url,
                    jti=jti and jti + uuid.uuid4().hex,
                    exp=now + 300 + years * 365 * 86400,
                )
                answers.add((await _post_signed(http, url, token, jwt_)).status_code)
        return rss_mib(proc.pid) - before, answers

    async with receiver_process(json.dumps(key.jwks)) as (proc, url, token):
        ours, ours_said = await grown(proc, url, token, None, 0)
        attack, attack_said = await grown(proc, url, token, "j" * 40_000, 30)
    assert ours_said == {200} and attack_said == {401}
    assert attack - ours < 16, (ours, attack)  # MiB


async def test_a_signed_notification_that_does_not_sign_its_body_is_refused():
    """Issue 59 item 5: a JWT without request_body_sha256 was accepted with any body. Ours always
    signs the digest; a receiver told to verify requires it."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    async with WebhookReceiver() as rx, httpx.AsyncClient() as http:
        t = rx.target("t1", keys=tn.KeySet.load(key)).token
        now = int(time.time())
        bodiless = claims_token(
            key, iss="http://agent/", aud=rx.url, iat=now, exp=now + 300, jti="j1", taskId="t1"
        )
        said = await _post_signed(http, rx.url, t, bodiless)
        ours = await _post_signed(http, rx.url, t, _signed(key, rx.url))
    assert (said.status_code, said.json()["error"]) == (
        401,
        "it does not sign the body (no request_body_sha256)",
    )
    assert ours.status_code == 200 and len(rx.notifications) == 1
