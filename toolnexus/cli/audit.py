"""``toolnexus audit``: what each stream of a cassette carried, and how each client reads it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..debug.audit import audit
from ..debug.cassette import CassetteError
from .options import _command, _fail_on
from .output import EXIT_ERROR, EXIT_OK, EXIT_USAGE, say


def _audit_parser(sub: Any) -> None:
    a = _command(
        sub,
        "audit",
        "check what each stream of a cassette carried (chunks, states, ids) and how each "
        "client reads it",
        "toolnexus send URL hi --stream --record session.jsonl && toolnexus audit session.jsonl",
        "toolnexus audit session.jsonl --json --fail-on warning",
    )
    a.add_argument("cassette", help="a cassette (.jsonl), as for replay")
    _fail_on(a)
    a.add_argument("--json", action="store_true", help="print the report as JSON")


def _audit(args: argparse.Namespace) -> int:
    try:
        report = audit(args.cassette)
    except CassetteError as exc:
        print(f"toolnexus: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        say(report.text())
    return EXIT_ERROR if report.failed(args.fail_on) else EXIT_OK
