"""Drift, for CI: a card set against the one pinned earlier, and several agents' cards set against
each other, each as a doctor's report.

``toolnexus card URL --pin FILE`` writes the card to ``FILE`` the first time (:func:`pin_file`);
later it reports what changed (:func:`drift`): a skill removed, a description changed (the card's
or a skill's), what a skill takes or gives changed (its input and output modes: the schema a
caller writes to), a security requirement changed (the card's or a skill's, their schemes
included), the key that signs it changed (another ``kid``) or its signature gone: each an error,
so the command exits 1. A skill added or renamed, tags and examples are said, not failed. URLs are
not compared (the same agent moves between hosts). ``--across URL`` sets several agents' cards
against each other (:func:`across`): two agents of one name (an error: a user or router cannot
tell them apart), a skill id or a skill name on two agents (a warning: a router choosing by skill
picks one).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from .. import _json
from .._fs import write_whole
from ..errors import ConfigError
from ..protocol.card import AgentCard, requirements_of
from .report import DoctorReport, Finding

__all__ = ["PIN_FORMAT", "across", "drift", "load_pin", "pin_file"]

PIN_FORMAT = 1
"""The pin file's ``toolnexus_pin``: its format's version."""


def pin_file(card: AgentCard, path: str | os.PathLike[str]) -> None:
    """Write ``card`` to ``path`` as its pin (the card whole, as the peer published it)."""
    document = {"toolnexus_pin": PIN_FORMAT, "source": card.source, "card": card.raw}
    write_whole(Path(path), json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def load_pin(path: str | os.PathLike[str]) -> AgentCard:
    """The card pinned at ``path``.

    Raises:
        ConfigError: the file is not a pin.
    """
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--pin {path}: not a pin file ({exc})") from None
    if not _json.is_object(document) or document.get("toolnexus_pin") != PIN_FORMAT:
        raise ConfigError(f"--pin {path}: not a pin file (no toolnexus_pin: {PIN_FORMAT})")
    card = document.get("card")
    if not _json.is_object(card):
        raise ConfigError(f"--pin {path}: it holds no card")
    return AgentCard(card, str(document.get("source") or ""))


def _kids(card: AgentCard) -> set[str]:
    """The keys that sign the card, as their signatures' protected headers name them (``kid``,
    with ``alg``)."""
    out: set[str] = set()
    for sig in card.raw.get("signatures") or ():
        protected = sig.get("protected") if _json.is_object(sig) else None
        if not isinstance(protected, str):
            continue
        try:
            header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
        except ValueError:
            header = None
        if _json.is_object(header):
            out.add(f"{header.get('kid')} ({header.get('alg')})")
    return out


def drift(pinned: AgentCard, live: AgentCard) -> DoctorReport:
    """What changed from the card ``pinned`` to the card ``live`` (see the module)."""
    report = DoctorReport(live.source or pinned.source, doctor="pin")
    add = report.add
    if live.name != pinned.name:
        add(Finding("warning", "pin: name", f"{pinned.name!r} is now {live.name!r}"))
    if live.description != pinned.description:
        add(
            Finding(
                "error",
                "pin: description",
                f"the card's description changed from {pinned.description!r} to "
                f"{live.description!r}",
            )
        )
    if live.security_text() != pinned.security_text():
        add(
            Finding(
                "error",
                "pin: security",
                f"a call must carry {live.security_text()}, where it was {pinned.security_text()}",
            )
        )
    was, now = _kids(pinned), _kids(live)
    if was and not now:
        add(
            Finding(
                "error", "pin: signature", f"the card is no longer signed (was by {_list(was)})"
            )
        )
    elif was and now != was:
        add(
            Finding(
                "error",
                "pin: signature",
                f"the key that signs it changed: {_list(now)}, where it was {_list(was)}",
            )
        )
    elif now and not was:
        add(Finding("info", "pin: signature", f"the card is signed now, by {_list(now)}"))
    before = {str(s.get("id")): s for s in pinned.skills}
    after = {str(s.get("id")): s for s in live.skills}
    for sid in before.keys() - after.keys():
        add(Finding("error", "pin: skill removed", f"skill {sid!r} is gone", at=f"skills.{sid}"))
    for sid in after.keys() - before.keys():
        add(Finding("info", "pin: skill added", f"skill {sid!r} is new", at=f"skills.{sid}"))
    for sid in sorted(before.keys() & after.keys()):
        _skill(sid, pinned, live, add)
    if not report.findings:
        add(Finding("ok", "pin", f"unchanged since pinned ({len(after)} skills)"))
    report.finish()
    return report


def _skill(sid: str, pinned: AgentCard, live: AgentCard, add: Any) -> None:
    """What changed in the skill ``sid``, which both cards have."""
    was, now, at = pinned.skill(sid) or {}, live.skill(sid) or {}, f"skills.{sid}"
    if now.get("description") != was.get("description"):
        said = f"{was.get('description')!r} became {now.get('description')!r}"
        add(Finding("error", "pin: skill description", said, at=at))
    if live.modes(sid) != pinned.modes(sid):
        (win, wout), (nin, nout) = pinned.modes(sid), live.modes(sid)
        add(
            Finding(
                "error",
                "pin: skill schema",
                f"it takes {_list(nin)} and gives {_list(nout)}, where it took {_list(win)} and "
                f"gave {_list(wout)}",
                at=at,
            )
        )
    if requirements_of(now) != requirements_of(was):  # its own (else the card's: said above)
        said = f"a call must carry {live.security_text(sid)}, where it was "
        add(Finding("error", "pin: skill security", said + pinned.security_text(sid), at=at))
    for key in ("name", "tags", "examples"):
        if now.get(key) != was.get(key):
            said = f"its {key} changed from {was.get(key)!r} to {now.get(key)!r}"
            add(Finding("info", f"pin: skill {key}", said, at=at))


def _list(items: Any) -> str:
    return ", ".join(sorted(map(str, items))) or "anything"


def across(cards: list[AgentCard]) -> DoctorReport:
    """Several agents' cards set against each other (see the module)."""
    report = DoctorReport(", ".join(c.source for c in cards), doctor="across")
    by_name: dict[str, list[AgentCard]] = {}
    for card in cards:
        by_name.setdefault(card.name, []).append(card)
    for name, same in by_name.items():
        if len(same) > 1:
            where = ", ".join(c.source for c in same)
            report.add(
                Finding(
                    "error",
                    "across: agent name",
                    f"{len(same)} agents are called {name!r}: {where}",
                )
            )
    for key, label in (("id", "skill id"), ("name", "skill name")):
        holders: dict[str, list[str]] = {}
        for card in cards:
            for skill in card.skills:
                if isinstance(value := skill.get(key), str) and value:
                    holders.setdefault(value, []).append(f"{card.name} ({card.source})")
        for value, names in holders.items():
            if len(names) > 1:
                report.add(
                    Finding(
                        "warning",
                        f"across: {label}",
                        f"{label} {value!r} is on {len(names)} agents: {', '.join(names)} (a "
                        "router choosing by skill cannot tell them apart)",
                    )
                )
    if not report.findings:
        skills = sum(len(c.skills) for c in cards)
        report.add(Finding("ok", "across", f"{len(cards)} agents, {skills} skills: no clash"))
    report.finish()
    return report
