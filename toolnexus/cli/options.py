"""The pieces of the command line several subcommands share: a subcommand's parser with its
examples, a report's threshold, what a toolkit is made of, how a client reaches a peer and the
credentials it holds."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any


def _command(sub: Any, name: str, help: str, *examples: str) -> argparse.ArgumentParser:
    """A command's parser: ``help`` in the list of commands, and its ``--help`` ending with
    ``examples``, one a line, as typed."""
    return sub.add_parser(
        name,
        help=help,
        description=textwrap.fill(help[:1].upper() + help[1:] + ".", 78),
        epilog="examples:\n" + "\n".join(f"  {line}" for line in examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _header_option(p: argparse.ArgumentParser, help: str = "send this header") -> None:
    """``--header NAME:VALUE``, repeatable (read by ``values._headers``)."""
    p.add_argument("--header", action="append", default=[], metavar="NAME:VALUE", help=help)


def _fail_on(p: argparse.ArgumentParser) -> None:
    """A report's exit threshold, the same for ``doctor`` and ``audit``."""
    p.add_argument(
        "--fail-on",
        choices=["warning", "error"],
        default="error",
        help="exit 1 when a finding is at least this bad (default error)",
    )


def _toolkit_options(p: argparse.ArgumentParser) -> None:
    """What a toolkit is made of, the same for ``serve`` and ``mcp``."""
    p.add_argument("--config", help="a toolkit config file (JSON)")
    p.add_argument("--skills", action="append", help="a skills folder (repeatable)")
    p.add_argument(
        "--tools",
        action="append",
        metavar="MODULE:FUNCTION",
        help="Python functions as tools: a module or a .py file, and the functions to take "
        "(FUNCTION,FUNCTION; without them, the functions its __all__ lists) (repeatable)",
    )
    p.add_argument(
        "--agent",
        action="append",
        metavar="URL",
        help="a remote A2A agent whose skills become tools (its card URL or base URL; repeatable)",
    )
    p.add_argument(
        "--builtins", action="store_true", help="include the builtin file and shell tools"
    )


_ONE_LINE = "print JSON, one line"
_EVENTS = "print JSON lines: one per event (state: it moved; text: a new piece of the reply), then the task"


def _peer_options(
    p: argparse.ArgumentParser, *, timeout: float, follows: bool, json_help: str = _ONE_LINE
) -> None:
    """How a client reaches and talks to a peer, the same for ``send``, ``task`` and ``push``."""
    p.add_argument(
        "--dialect",
        default="auto",
        choices=["auto", "0.3", "1.0", "legacy"],
        help="the A2A dialect to speak (auto: as the official 1.x client picks from the card: 1.0 where it offers 1.0, else 0.3)",
    )
    p.add_argument(
        "--binding",
        default="auto",
        choices=["auto", "jsonrpc", "http+json", "grpc"],
        help="JSON-RPC, the HTTP+JSON (REST) binding or gRPC (default: what the card offers)",
    )
    _header_option(p)
    p.add_argument(
        "--tenant",
        metavar="NAME",
        help="the tenant every 1.0 call names (default: the one the card's interface names)",
    )
    p.add_argument(
        "--extension",
        action="append",
        default=[],
        metavar="URI",
        help="ask the agent for this extension in every call (repeatable; the A2A-Extensions header)",
    )
    p.add_argument(
        "--basic-env",
        metavar="NAME",
        help="send HTTP basic auth, 'user:password' read from this variable (masked everywhere)",
    )
    _credential_options(p)
    p.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        help=f"seconds to follow the task, streamed or polled (default {timeout:g})"
        if follows
        else f"seconds to wait for each answer (default {timeout:g})",
    )
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument(
        "--trace", action="store_true", help="print every HTTP exchange (secrets masked)"
    )
    p.add_argument(
        "--record",
        metavar="FILE.jsonl",
        help="write every exchange to this cassette (secrets masked)",
    )


OAUTH_FLOWS = {
    "client": "client credentials (--client-id, --client-secret-env)",
    "device": "the device code flow: a code and an address printed, the token polled for",
    "browser": "authorization code with PKCE: a browser opened, a loopback redirect",
}
"""What ``--oauth`` runs, by the name given."""


def _credential_options(p: argparse.ArgumentParser) -> None:
    """The credentials a client holds; each call carries what the agent's card asks for."""
    p.add_argument(
        "--bearer-env", metavar="NAME", help="a bearer token, read from this variable (masked)"
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="an API key, read from this variable, sent in the header the card names (masked)",
    )
    p.add_argument(
        "--oauth",
        choices=list(OAUTH_FLOWS),
        help="get a token by OAuth 2 from the endpoints the card names: "
        + "; ".join(f"{k}: {v}" for k, v in OAUTH_FLOWS.items()),
    )
    p.add_argument("--client-id", metavar="ID", help="the OAuth client id (with --oauth)")
    p.add_argument(
        "--client-secret-env",
        metavar="NAME",
        help="the OAuth client secret, read from this variable (client; a confidential client)",
    )
    p.add_argument(
        "--scope", action="append", default=[], help="an OAuth scope to ask for (repeatable)"
    )
    p.add_argument("--cert", metavar="FILE", help="a client certificate (PEM) for mutual TLS")
    p.add_argument("--cert-key", metavar="FILE", help="its private key (PEM; default: in --cert)")
    p.add_argument(
        "--ca", metavar="FILE", help="the CA (PEM) the agent's certificate must chain to"
    )
