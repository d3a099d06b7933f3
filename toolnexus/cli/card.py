"""``toolnexus card``: an agent's card fetched, shown, validated, its signature checked; pinned or
set against other agents' (``--pin``, ``--across``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import toolnexus as tn

from ..client.peer import check_signatures
from ..debug.cost import card_cost
from ..debug.doctor import counted
from ..debug.pin import across, drift, load_pin, pin_file
from ..protocol.card import requirements_of
from .options import _command, _credential_options, _header_option
from .output import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError, say
from .peer import _credentials
from .values import _headers


def _card_parser(sub: Any) -> None:
    c = _command(
        sub,
        "card",
        "fetch an agent card (card URL or base URL), optionally validate it",
        "toolnexus card http://127.0.0.1:9999 --validate",
        "toolnexus card URL --key agent-key.pub.pem         # exit 1 unless it verifies",
        "toolnexus card URL --extended --header 'Authorization: Bearer ${TOKEN}'",
    )
    c.add_argument("url", help="the agent's card URL or base URL")
    c.add_argument(
        "--validate",
        action="store_true",
        help="check it against both schema lines; exit 1 on errors",
    )
    _header_option(c)
    c.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="FILE",
        help="a public key (PEM, JWK or JWK set) you trust for the card's signature (repeatable; "
        "exit 1 unless the card verifies with one); without one, the key set its jku names is "
        "fetched",
    )
    c.add_argument(
        "--extended",
        action="store_true",
        help="the extended card the agent gives authenticated callers (GetExtendedAgentCard; "
        "send the credentials with --header)",
    )
    c.add_argument(
        "--pin",
        metavar="FILE",
        help="drift, for CI: write the card to FILE the first time; later, report what changed "
        "since (exit 1 on a removed skill, a changed description, schema, security or signing key)",
    )
    c.add_argument(
        "--across",
        action="append",
        default=[],
        metavar="URL",
        help="set this card against another agent's (repeatable): clashing names, skill ids",
    )
    _credential_options(c)
    c.add_argument("--json", action="store_true", help="print JSON")


async def _card(args: argparse.Namespace) -> int:
    try:
        keys = tn.KeySet.load(*(Path(k).read_bytes() for k in args.key)) if args.key else None
    except (OSError, tn.KeyError_) as exc:
        say(f"toolnexus: --key: {exc}", file=sys.stderr)
        return EXIT_USAGE
    headers = _headers(args.header)
    credentials = _credentials(args)
    try:
        if args.extended or credentials:  # the card's own requirements pick what is sent
            try:
                client = tn.A2AClient(
                    args.url,
                    headers=headers,
                    secret_headers=tuple(headers),
                    keys=keys,
                    **credentials,
                )
            except ValueError as exc:  # a certificate that will not load
                raise UsageError(str(exc)) from None
            async with client as c:
                card = await c.extended_card() if args.extended else await c.connect()
                if card.signatures is None:
                    await check_signatures(card, keys, http=c.http)
        else:
            card = await tn.fetch_card(args.url, headers, verify=True, keys=keys)
    except (tn.PeerError, tn.RPCError) as exc:
        say(f"toolnexus: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.pin or args.across:
        return await _drift(args, card, headers)
    report = tn.validate_card(card) if args.validate else None
    cost = (await counted("cost: card", lambda: card_cost(card.raw))).message if report else ""
    signatures = card.signatures
    if args.json:
        out: dict[str, Any] = {"source": card.source, "card": card.raw}
        if signatures is not None:
            out["signatures"] = signatures.to_dict()
        if report is not None:
            out["validation"] = report.to_dict()
            out["cost"] = cost
        print(json.dumps(out, indent=2))
    else:
        _card_text(args, card, report, cost)
    if keys is not None and (signatures is None or not signatures.valid):
        # a key pinned (a CI step's): a card that does not verify with it fails the command
        why = signatures.summary if signatures is not None else "not checked"
        say(f"toolnexus: the card does not verify with the keys given ({why})", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR if report is not None and not report.ok else EXIT_OK


async def _drift(args: argparse.Namespace, card: tn.AgentCard, headers: dict[str, str]) -> int:
    """``card --pin`` and ``--across`` (toolnexus/debug/pin.py): a report, exit 1 on an error."""
    if args.across:
        try:
            others = [await tn.fetch_card(url, headers) for url in args.across]
        except (tn.PeerError, tn.RPCError) as exc:
            say(f"toolnexus: {exc}", file=sys.stderr)
            return EXIT_ERROR
        report = across([card, *others])
    elif not Path(args.pin).exists():
        pin_file(card, args.pin)
        say(f"pinned {card.name} ({card.source}, {len(card.skills)} skills) to {args.pin}")
        return EXIT_OK
    else:
        report = drift(load_pin(args.pin), card)
    say(json.dumps(report.to_dict(), indent=2) if args.json else report.text())
    return EXIT_ERROR if report.failed("error") else EXIT_OK


def _card_text(args: argparse.Namespace, card: Any, report: Any, cost: str) -> None:
    """``card``'s text for a person: what the card says, its signature and, with ``--validate``,
    the verdict."""
    signatures = card.signatures
    dialect, endpoint, reason, binding = card.route()
    say(f"{card.name} {card.version}  ({card.source})")
    if card.description:
        say(f"  {card.description}")
    say(f"  endpoint {endpoint}  dialect {dialect} over {binding} ({reason})")
    say(f"  streaming {'yes' if card.streaming else 'no'}")
    provider = card.provider
    if provider:
        said = provider.get("organization", "")
        say(f"  provider {said}" + (f" ({provider['url']})" if provider.get("url") else ""))
    for key, label in (("documentationUrl", "documentation"), ("iconUrl", "icon")):
        if isinstance(card.raw.get(key), str):
            say(f"  {label} {card.raw[key]}")
    for name, scheme in card.schemes.items():
        say(f"  scheme {name}: {scheme.label}")
    if card.schemes or card.requirements():
        say(f"  security {card.security_text()}")
    for x in card.extensions:
        required = " (required)" if x.get("required") is True else ""
        about = f": {x['description']}" if isinstance(x.get("description"), str) else ""
        say(f"  extension {x.get('uri')}{required}{about}")
    if signatures is not None:
        say(f"  signature {signatures.summary}")
        if signatures.state == "invalid" and len(signatures.checks) > 1:
            for check in signatures.checks:
                say(f"    {check.named}: {check.why}")
    if card.extended and not args.extended:
        say("  extended card: declared (toolnexus card --extended, with the credentials)")
    for skill in card.skills:
        tags = ", ".join(map(str, skill.get("tags") or []))
        say(
            f"  skill {skill.get('id')}: {skill.get('description', '')}"
            + (f"  [{tags}]" if tags else "")
        )
        takes, gives = card.modes(skill.get("id"))
        say(f"    modes in {', '.join(takes) or 'any'}; out {', '.join(gives) or 'any'}")
        if requirements_of(skill):
            say(f"    security {card.security_text(skill.get('id'))}")
    if report is not None:
        say(f"verdict: {report.summary}")
        for line, what in report.verdict.items():
            say(f"  {line}: {what}")
        for d in report.diagnostics:
            say(f"  {d.level:<7} {d.path}: {d.message}")
        say(f"  cost: {cost}")
