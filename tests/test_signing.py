"""Signed cards (A2A 1.0 §8.4), both ways, with the official SDK: our served card, signed with a
key the user gives, passes a2a-sdk's own verifier (and @a2a-js/sdk's); our verifier passes the
SDK's signed card (its key set fetched from the ``jku`` it names); and every way a signature can
fail gets its own verdict: the card changed, another key, an algorithm refused or not fitting the
key, an unknown kid, a jku at an address the rule refuses."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import warnings

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

import toolnexus as tn
from toolnexus.client.peer import check_signatures
from toolnexus.http.server import AsgiServer
from toolnexus.protocol.signing import JWKS_PATH, canonical, card_view, verify_card
from toolnexus.serve.card import ServedCard

from .conftest import EXAMPLE_SKILLS
from .helpers import arun_cli
from .peers.js_peer import HERE as JS
from .peers.js_peer import need_js_sdk
from .peers.sdk_server import sdk_server

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")
from a2a.client.card_resolver import A2ACardResolver  # noqa: E402
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier  # noqa: E402
from jwt.api_jwk import PyJWK  # noqa: E402


def pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


KEYS = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
    "RS256": lambda: rsa.generate_private_key(65537, 2048),
}


async def serve_signed(key: tn.SigningKey, auth: tn.Auth | None = None):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    return await tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="signed", description="signé ✓", signing_key=key, auth=auth),
    )


def sdk_verifier(jwks: dict, algorithms: list[str]):
    """a2a-sdk's own verifier, its keys looked up by kid in a key set (as its docs show)."""

    def key_provider(kid, jku):
        return PyJWK(next(k for k in jwks["keys"] if k["kid"] == kid))

    return create_signature_verifier(key_provider, algorithms)


@pytest.mark.asyncio
@pytest.mark.parametrize("alg", list(KEYS))
async def test_the_official_sdk_verifies_our_signed_card(alg, tmp_path):
    path = tmp_path / "key.pem"
    path.write_bytes(pem(KEYS[alg]()))
    config = tn.A2AConfig(signing_key=str(path))  # a path, as a config file gives it
    key = config.signer
    assert key is not None and key.alg == alg
    handle = await serve_signed(key, tn.Auth.bearer("s3cret"))
    try:
        async with httpx.AsyncClient() as http:
            raw = (await http.get(handle.card_url)).json()
            [signature] = raw["signatures"]
            header = json.loads(base64.urlsafe_b64decode(signature["protected"] + "=="))
            assert header == {
                "typ": "JOSE",
                "jku": handle.url.rstrip("/") + JWKS_PATH,
                "alg": alg,
                "kid": key.kid,
            }
            jwks = (await http.get(header["jku"])).json()
            assert jwks == key.jwks and "d" not in jwks["keys"][0]
            resolver = A2ACardResolver(http, handle.url)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the SDK's note on fields 1.0 calls required
                card = await resolver.get_agent_card(signature_verifier=sdk_verifier(jwks, [alg]))
            assert card.name == "signed"
            # the SDK refuses the same card once changed: its verifier is not a formality
            tampered = dict(raw, description="another")
            with pytest.raises(InvalidSignaturesError), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from a2a.client.card_resolver import parse_agent_card

                sdk_verifier(jwks, [alg])(parse_agent_card(tampered))
        # and ours: through the jku it names, and with the key given
        fetched = await tn.fetch_card(handle.card_url, verify=True, cached=False)
        assert fetched.signatures is not None and fetched.signatures.valid, fetched.signatures
        assert f"from its jku {header['jku']}, over its 1.0 view" in fetched.signatures.summary
        trusted = await tn.fetch_card(handle.card_url, keys=tn.KeySet.load(key.jwks), cached=False)
        assert trusted.signatures.valid and "a key you trust" in trusted.signatures.summary
    finally:
        await handle.stop()


@pytest.mark.asyncio
async def test_the_official_js_sdk_verifies_our_signed_card():
    """@a2a-js/sdk's verifyAgentCardSignature reads a card without a2a-sdk's 0.3 folding: our card
    spells its bearer scheme alike in both layouts so that both SDKs' 1.0 views are the same."""
    key = tn.SigningKey.load(pem(KEYS["ES256"]()))
    handle = await serve_signed(key, tn.Auth.bearer("s3cret"))
    need_js_sdk()
    try:  # the server runs on this loop: node is awaited, not waited for
        node = await asyncio.create_subprocess_exec(
            "node",
            str(JS / "verify_card.mjs"),
            handle.card_url,
            cwd=JS,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(node.communicate(), 60)
    finally:
        await handle.stop()
    assert out.decode().strip() == "valid", out.decode() + err.decode()


@pytest.mark.asyncio
async def test_our_verifier_verifies_the_sdks_signed_card():
    """a2a-sdk's server with a card signed by its own signer (ES256, its key set at the jku)."""
    async with sdk_server(compat=True, features=True) as url:
        card = await tn.fetch_card(url, verify=True)
        assert card.signatures is not None
        assert card.signatures.state == "valid", card.signatures.summary
        assert card.signatures.summary.startswith(
            "valid: signature 1 (alg 'ES256', kid 'card-key-1') verified with a key from its jku"
        )
        # a key you give is the only one trusted: another key, under the same kid, fails
        other = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="card-key-1")
        wrong = await tn.fetch_card(url, keys=tn.KeySet.load(other), cached=False)
        assert wrong.signatures.state == "invalid"
        assert "does not verify with the key 'card-key-1' you trust" in wrong.signatures.summary


def served_card(key: tn.SigningKey | None, base: str = "http://127.0.0.1:5000") -> dict:
    """Our card as ServedCard signs it, without a server."""
    skills = [tn.SkillDef("greet", "says hello")]
    card = ServedCard(tn.A2AConfig(name="n", signing_key=key), skills, lambda: base, push=False)
    return json.loads(card.answer("")[2])


def forge(card: dict, header: dict, secret: bytes) -> dict:
    """``card`` with an HS256 signature keyed with ``secret`` (by hand: PyJWT refuses a public
    key as an HMAC secret, an attacker need not)."""
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    protected = b64(json.dumps({**header, "alg": "HS256"}).encode())
    payload = b64(canonical(card_view(card)))
    mac = hmac.new(secret, f"{protected}.{payload}".encode(), hashlib.sha256).digest()
    return {**card, "signatures": [{"protected": protected, "signature": b64(mac)}]}


@pytest.mark.asyncio
async def test_each_way_a_card_signature_fails_has_its_verdict():
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    trusted = tn.KeySet.load(key)
    card = served_card(key)
    assert verify_card(card, trusted).valid
    # unsigned
    assert verify_card(served_card(None), trusted).summary == "unsigned"
    # the card changed after signing
    changed = verify_card({**card, "name": "evil"}, trusted)
    assert changed.state == "invalid" and "the card changed since it was signed" in changed.summary
    # a 0.3 field changed: covered too, as a2a-sdk folds 0.3's url into 1.0's interfaces... but our
    # card carries supportedInterfaces, so 0.3's url is not in its 1.0 view: say so honestly
    assert verify_card({**card, "url": "http://elsewhere/"}, trusted).valid
    # another key under the same kid
    other = tn.KeySet.load(tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1"))
    assert "does not verify with the key 'k1' you trust" in verify_card(card, other).summary
    # an unknown kid
    stranger = tn.KeySet.load(tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k2"))
    assert verify_card(card, stranger).summary == (
        "invalid: signature 1 (alg 'ES256', kid 'k1'): no key with kid 'k1' among the keys you "
        "trust ('k2')"
    )
    # alg confusion: HS256 keyed with the public key's bytes is refused before any key is used
    public = json.dumps(key.public_jwk).encode()
    confused = verify_card(forge(card, {"kid": "k1", "typ": "JOSE"}, public), trusted)
    assert "algorithm 'HS256' is not accepted" in confused.summary
    # an algorithm that does not fit the key
    protected = json.loads(base64.urlsafe_b64decode(card["signatures"][0]["protected"] + "=="))
    relabelled = base64.urlsafe_b64encode(json.dumps({**protected, "alg": "RS256"}).encode())
    misfit = {
        **card,
        "signatures": [{**card["signatures"][0], "protected": relabelled.decode().rstrip("=")}],
    }
    assert "algorithm RS256 does not fit the key you trust (EC/ES256)" in (
        verify_card(misfit, trusted).summary
    )
    # no key at all, and no jku to fetch one from
    bare = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()))
    no_jku = bare.sign_card(served_card(None))
    assert "it names no jku" in verify_card(no_jku).summary
    # two signatures, one good: valid, as the SDKs decide
    both = key.sign_card(bare.sign_card(served_card(None)))
    verdict = verify_card(both, trusted)
    assert verdict.valid and verdict.summary.startswith("valid: signature 2")


@pytest.mark.parametrize(
    "card_from, jku, refused",
    [
        # a card from a public host may not make the client reach loopback, a private network or
        # cloud metadata, however the jku spells it
        ("https://agents.example.com/", "http://127.0.0.1:{port}/jwks.json", "127.0.0.1"),
        ("https://agents.example.com/", "http://localhost:{port}/jwks.json", "127.0.0.1"),
        ("https://agents.example.com/", "http://2130706433:{port}/jwks.json", "127.0.0.1"),
        ("https://agents.example.com/", "http://169.254.169.254/latest/", "169.254.169.254"),
        ("https://agents.example.com/", "file:///etc/passwd", "not an http(s) URL"),
        ("https://agents.example.com/", "http://u:p@example.com/jwks", "user name or password"),
    ],
)
@pytest.mark.asyncio
async def test_a_jku_the_address_rule_refuses_is_never_fetched(card_from, jku, refused):
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    hits: list[str] = []

    async def jwks(request):  # a key server that would answer: it must not be asked
        hits.append(request.url.path)
        return JSONResponse(key.jwks)

    server = AsgiServer(Starlette(routes=[Route("/jwks.json", jwks)]), "127.0.0.1:0")
    await server.start()
    try:
        jku = jku.format(port=server.port)
        card = tn.AgentCard(key.sign_card(served_card(None), jku=jku), card_from + "agent.json")
        verdict = await check_signatures(card)
        assert verdict.state == "invalid" and refused in verdict.summary, verdict.summary
        assert hits == []
        # the same key server for a card that came from loopback (a peer the user named there)
        local = tn.AgentCard(card.raw, f"http://127.0.0.1:{server.port}/agent.json")
        if jku.startswith(f"http://127.0.0.1:{server.port}"):
            assert (await check_signatures(local)).valid
            assert hits == ["/jwks.json"]
    finally:
        await server.stop()


@pytest.mark.asyncio
async def test_an_ecdsa_signed_card_keeps_one_etag_across_workers():
    """ECDSA signs with a random nonce: two workers' cards differ in their signature bytes, yet
    name the same content, so their ETags match (a 304 from either keeps a valid signature)."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()))
    skills = [tn.SkillDef("greet", "says hello")]
    one, two = (
        ServedCard(tn.A2AConfig(signing_key=key), skills, lambda: "http://a/", push=False)
        for _ in range(2)
    )
    (_, h1, b1), (_, h2, b2) = one.answer(""), two.answer("")
    assert b1 != b2 and dict(h1)[b"etag"] == dict(h2)[b"etag"]
    assert one.answer(dict(h2)[b"etag"].decode())[0] == 304


@pytest.mark.asyncio
async def test_toolnexus_card_says_valid_invalid_or_unsigned(tmp_path):
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    handle = await serve_signed(key)
    other = tmp_path / "other.pem"
    other.write_bytes(pem(ec.generate_private_key(ec.SECP256R1())))
    try:
        code, out, err = await arun_cli("card", handle.card_url)
        assert (
            code == 0
            and ("  signature valid: signature 1 (alg 'ES256', kid 'k1') verified with a key from")
            in out
        ), out + err
        code, out, err = await arun_cli("card", handle.card_url, "--key", str(other), "--json")
        said = json.loads(out)["signatures"]
        assert said["state"] == "invalid", out + err
        assert "no key with kid 'k1' among the keys you trust" in said["summary"]
        code, out, err = await arun_cli("card", handle.card_url, "--key", str(tmp_path / "no"))
        assert code == 2 and "--key:" in err
    finally:
        await handle.stop()
    plain = await (await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)).serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="plain")
    )
    try:
        code, out, err = await arun_cli("card", plain.card_url)
        assert "  signature unsigned" in out, out + err
    finally:
        await plain.stop()


@pytest.mark.asyncio
async def test_a_client_that_verifies_refuses_a_card_signed_by_another_key():
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    handle = await serve_signed(key)
    try:
        async with tn.A2AClient(handle.url, keys=tn.KeySet.load(key)) as client:
            assert client.card.signatures.valid
        stranger = tn.KeySet.load(tn.SigningKey(ec.generate_private_key(ec.SECP256R1())))
        with pytest.raises(tn.PeerError, match="the agent card's signature is not valid"):
            async with tn.A2AClient(handle.url, keys=stranger):
                pass
    finally:
        await handle.stop()


def test_a_signing_key_is_refused_with_a_reason(tmp_path):
    public = ec.generate_private_key(ec.SECP256R1()).public_key()
    path = tmp_path / "pub.pem"
    path.write_bytes(
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    with pytest.raises(tn.ConfigError, match="that is a public key: signing needs the private one"):
        tn.A2AConfig(signing_key=str(path)).check()
    with pytest.raises(tn.ConfigError, match="No such file"):
        tn.A2AConfig(signing_key=str(tmp_path / "missing.pem")).check()
    small = tmp_path / "small.pem"
    small.write_bytes(pem(rsa.generate_private_key(65537, 1024)))
    with pytest.raises(tn.ConfigError, match="an RSA key of 1024 bits"):
        tn.A2AConfig(signing_key=str(small)).check()
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1())))
    assert tn.SigningKey.load(json.dumps(jwk)).alg == "ES256"
    assert jwk["d"] not in repr(tn.SigningKey.load(jwk)) + str(tn.SigningKey.load(jwk).jwks)


def test_the_card_schema_is_a2a_protos():
    """The 1.0 view's table of fields is the SDK's a2a.proto AgentCard, field for field."""
    from a2a.types import a2a_pb2 as pb

    from toolnexus.protocol.signed_view import _SCHEMA

    def kind(f) -> str:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            value = f.message_type.fields_by_name["value"]
            return "{" + (value.message_type.name if value.message_type else "str") + "}"
        if f.message_type is not None:
            name = (
                "struct"
                if f.message_type.full_name == "google.protobuf.Struct"
                else (f.message_type.name)
            )
            return f"[{name}]" if f.is_repeated else name
        base = "str" if f.type == f.TYPE_STRING else ("bool?" if f.has_presence else "bool")
        return f"[{base}]" if f.is_repeated else base

    seen: dict[str, dict[str, str]] = {}

    def walk(d) -> None:
        if d.name in seen:
            return
        seen[d.name] = {f.json_name: kind(f) for f in d.fields}
        for f in d.fields:
            m = f.message_type
            if m is not None and m.GetOptions().map_entry:
                m = m.fields_by_name["value"].message_type
            if m is not None and not m.full_name.startswith("google.protobuf"):
                walk(m)

    walk(pb.AgentCard.DESCRIPTOR)
    assert seen == _SCHEMA


@pytest.mark.asyncio
async def test_toolnexus_card_with_a_key_fails_unless_the_card_verifies_with_it(tmp_path):
    """Issue 59 item 6: a CI step that pins a key (``card --key FILE``, with ``--validate`` too)
    passed a card signed by another key, and an unsigned one: both exited 0."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    ours, other = tmp_path / "ours.json", tmp_path / "other.pem"
    ours.write_text(json.dumps(key.jwks))
    other.write_bytes(pem(ec.generate_private_key(ec.SECP256R1())))
    handle = await serve_signed(key)
    plain = await (await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)).serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="plain")
    )
    try:
        said = {
            name: await arun_cli("card", url, "--key", str(k), *more)
            for name, url, k, more in [
                ("pinned", handle.card_url, ours, ()),
                ("pinned, validated", handle.card_url, ours, ("--validate",)),
                ("another key", handle.card_url, other, ()),
                ("another key, validated", handle.card_url, other, ("--validate",)),
                ("another key, json", handle.card_url, other, ("--json",)),
                ("unsigned", plain.card_url, ours, ("--validate",)),
                ("another key, extended", handle.card_url, other, ("--extended",)),
            ]
        }
    finally:
        await handle.stop()
        await plain.stop()
    codes = {name: code for name, (code, _, _) in said.items()}
    assert codes == {
        "pinned": 0,
        "pinned, validated": 0,
        "another key": 1,
        "another key, validated": 1,
        "another key, json": 1,
        "unsigned": 1,
        "another key, extended": 1,
    }, said
    assert (
        "toolnexus: the card does not verify with the keys given (invalid: signature 1"
        in (said["another key"][2])
    )
    assert json.loads(said["another key, json"][1])["signatures"]["state"] == "invalid"
    assert "the keys given (unsigned)" in said["unsigned"][2]


@pytest.mark.asyncio
async def test_a_client_that_verifies_refuses_a_card_given_that_does_not_verify():
    """Issue 59 item 6: ``A2AClient(card, verify=True)`` took a card fetched before whose
    signature had failed (its verdict was kept and never refused), and ``keys=`` were not checked
    against a card that verified earlier with its jku."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    stranger = tn.KeySet.load(tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1"))
    handle = await serve_signed(key)
    plain = await (await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)).serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="plain")
    )
    try:
        forged = await tn.fetch_card(handle.card_url, keys=stranger, cached=False)
        by_jku = await tn.fetch_card(handle.card_url, verify=True, cached=False)
        assert forged.signatures.state == "invalid" and by_jku.signatures.valid
        for card, keys in [(forged, None), (by_jku, stranger)]:
            with pytest.raises(tn.PeerError, match="the agent card's signature is not valid"):
                async with tn.A2AClient(card, verify=True, keys=keys):
                    pass
        with pytest.raises(tn.PeerError, match="signature is not valid: unsigned"):
            async with tn.A2AClient(plain.url, verify=True):
                pass
        again = await tn.fetch_card(handle.card_url, verify=True, cached=False)
        async with tn.A2AClient(again, verify=True) as client:  # its verdict kept: valid
            assert client.card.signatures.valid
    finally:
        await handle.stop()
        await plain.stop()
