"""Drift, for CI (issue 64 item 3): ``toolnexus card URL --pin FILE`` records a card, then passes on
the same card and fails (exit 1, the doctor's report format) on each change a caller depends on;
``--across`` sets several agents' cards against each other. Our real server on port 0, changed
between runs as a deployment would change it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import toolnexus as tn

from .conftest import EXAMPLE_SKILLS
from .helpers import arun_cli
from .test_signing import KEYS, pem


async def _card_of(folder: Path, tmp_path: Path, **config) -> tuple[int, str, str]:
    """``toolnexus card URL --pin tmp_path/pin.json --json`` against our server serving ``folder``
    with ``config``."""
    tk = await tn.create_toolkit(folder, builtins=False)
    config.setdefault("name", "desk")
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(**config)) as handle:
        return await arun_cli("card", handle.url, "--pin", str(tmp_path / "pin.json"), "--json")


def _failed(out: str) -> dict[str, str]:
    """The report's errors: check → message."""
    return {
        f["check"]: f["message"] for f in json.loads(out)["findings"] if f["severity"] == "error"
    }


async def test_a_pinned_card_passes_unchanged_and_fails_on_each_change(tmp_path):
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, skills)
    key, other = tmp_path / "key.pem", tmp_path / "other.pem"
    for path in (key, other):
        path.write_bytes(pem(KEYS["ES256"]()))
    base = {"signing_key": str(key), "description": "the desk"}  # else made from the skills

    code, out, err = await _card_of(skills, tmp_path, **base)
    assert code == 0 and out.startswith("pinned desk") and "3 skills" in out, out + err
    pinned = json.loads((tmp_path / "pin.json").read_text())
    assert pinned["toolnexus_pin"] == 1 and pinned["card"]["name"] == "desk"

    code, out, _ = await _card_of(skills, tmp_path, **base)  # another port, the same card
    report = json.loads(out)
    assert code == 0 and report["doctor"] == "pin" and report["worst"] == "ok", out

    changes = {
        "pin: skill removed": ({**base, "skills": ["greet", "weather"]}, "'report' is gone"),
        "pin: description": ({**base, "description": "another agent"}, "another agent"),
        "pin: skill schema": (
            {**base, "input_modes": ["text/plain", "image/png"]},
            "takes image/png, text/plain",
        ),
        "pin: security": (
            {**base, "auth": tn.Auth.bearer("sesame-42")},
            "bearer",
        ),
        "pin: signature": ({**base, "signing_key": str(other)}, "the key that signs it changed"),
    }
    for check, (config, said) in changes.items():
        code, out, err = await _card_of(skills, tmp_path, **config)
        failed = _failed(out)
        assert code == 1 and set(failed) == {check}, (check, out, err)
        assert said in failed[check], (check, failed)
    code, out, _ = await _card_of(skills, tmp_path, description="the desk")  # unsigned now
    assert code == 1 and "no longer signed" in _failed(out)["pin: signature"]

    text = skills / "greet" / "SKILL.md"
    text.write_text(text.read_text().replace("Greets a person warmly", "Greets a person coldly"))
    code, out, _ = await _card_of(skills, tmp_path, **base)
    assert code == 1 and "coldly" in _failed(out)["pin: skill description"], out
    code, out, _ = await arun_cli("card", "http://127.0.0.1:9", "--pin", str(tmp_path / "x.json"))
    assert code == 1 and not (tmp_path / "x.json").exists()


async def test_several_agents_cards_are_set_against_each_other(tmp_path):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    other = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    demo = tn.demo_client()
    async with (
        tk.serve(client=demo, a2a=tn.A2AConfig(name="desk", skills=["greet"])) as one,
        other.serve(client=demo, a2a=tn.A2AConfig(name="desk", skills=["greet"])) as two,
        other.serve(client=demo, a2a=tn.A2AConfig(name="weather", skills=["weather"])) as three,
    ):
        code, out, _ = await arun_cli("card", one.url, "--across", two.url, "--json")
        clash = json.loads(out)
        code_ok, out_ok, _ = await arun_cli("card", one.url, "--across", three.url)
    said = {f["check"]: (f["severity"], f["message"]) for f in clash["findings"]}
    assert code == 1 and said["across: agent name"][0] == "error", out
    assert "2 agents are called 'desk'" in said["across: agent name"][1]
    assert said["across: skill id"][0] == "warning" and "'greet' is on 2 agents" in out
    assert code_ok == 0 and "2 agents, 2 skills: no clash" in out_ok, out_ok


async def test_a_change_to_a_skills_own_security_fails_the_pin(tmp_path):
    """A skill's own requirements (``security:`` in its ``SKILL.md``), the card's unchanged: a
    scope changed, and the requirement dropped (the skill then asks what the card asks), are each
    ``pin: skill security``, nothing else."""
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, skills)
    text = skills / "report" / "SKILL.md"
    original = text.read_text()

    def require(scope: str | None) -> None:
        said = f"name: report\nsecurity: [{{oauth2: [{scope}]}}]\n" if scope else "name: report\n"
        text.write_text(original.replace("name: report\n", said, 1))

    issuer = "http://127.0.0.1:9"  # never asked: only a call's token would be checked
    auth = tn.Auth.oauth2(
        issuer=issuer,
        audience="desk",
        jwks_url=issuer + "/jwks",
        flows={"clientCredentials": {"tokenUrl": issuer + "/token", "scopes": {}}},
    )
    base = {"auth": auth, "description": "the desk"}
    require("report:read")
    code, out, err = await _card_of(skills, tmp_path, **base)
    assert code == 0 and out.startswith("pinned desk"), out + err
    pinned = json.loads((tmp_path / "pin.json").read_text())["card"]
    report = next(s for s in pinned["skills"] if s["id"] == "report")
    assert report["security"] == [{"oauth2": ["report:read"]}], report

    code, out, _ = await _card_of(skills, tmp_path, **base)
    assert code == 0 and json.loads(out)["worst"] == "ok", out
    for scope, said in (
        ("report:write", "[report:write], where it was"),
        (None, "(clientCredentials)), where"),
    ):
        require(scope)
        code, out, err = await _card_of(skills, tmp_path, **base)
        failed = _failed(out)
        assert code == 1 and set(failed) == {"pin: skill security"}, (scope, out, err)
        assert said in failed["pin: skill security"] and "[report:read]" in out, failed
