"""The ``toolnexus`` command: ``serve`` a toolkit; output for people or, with ``--json``, for scripts.

Exit codes: 0 success, 1 a peer or runtime error, 2 a usage error (bad flags, bad config, port in use).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import logging
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import textwrap
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import anyio

import toolnexus as tn

from .._fs import write_whole
from ..client.peer import check_signatures
from ..debug.audit import audit
from ..debug.cassette import CassetteError, CassetteWriter, load
from ..debug.cost import card_cost
from ..debug.diagram import sequence
from ..debug.doctor import counted, doctor
from ..debug.pin import across, drift, load_pin, pin_file
from ..debug.report import printer
from ..display import printable
from ..errors import MissingExtra, UnsupportedOperationError
from ..hosting import DEMO_ASK, DEMO_DESCRIPTION, EXAMPLE_SKILLS, build_client
from ..http.fetch import peer_url
from ..http.guard import is_loopback
from ..http.server import (
    ConnectionShare,
    FdLimit,
    accept_queue,
    http_url,
    listening_socket,
    new_event_loop,
    raise_fd_limit,
    serving_gc,
)
from ..mcp import split_command
from ..protocol.card import requirements_of
from ..protocol.dialects import Dialect, render_task
from ..protocol.operations import OPERATIONS
from ..secrets import expand_env, mask_url
from ..serve.config import connection_limit, load_signing_key
from ..serve.metrics import MULTIPROC_ENV
from ..serve.quirks import QUIRKS
from ..stores import KINDS, STORE_FORMS, KeepsEnded, Shared, kind_of, kinds_with

__all__ = ["main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
DRAIN = 30.0
"""``serve --drain``'s default: seconds a stop gives what runs (as long as Kubernetes' default grace)."""
DEMO_NAME = "demo-desk"
PER_REQUEST = 30.0
"""Seconds one request to a peer may take (``send`` and ``task resubscribe``: each frame)."""


class UsageError(Exception):
    """A mistake in the command line; printed as one line, exit code 2."""


_EXAMPLES_OF_ALL = """examples:
  toolnexus serve                                 # the demo agent; it prints what to try
  toolnexus send http://127.0.0.1:9999 "hello"    # any A2A agent; --stream, --json, --continue
  toolnexus task list URL                         # its tasks; task get|cancel|resubscribe URL ID
  toolnexus card URL --validate                   # its card, checked
  toolnexus doctor URL                            # which clients work with it, and the fix
each command's --help has its own examples"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="toolnexus",
        description=textwrap.fill(
            "Serve a toolkit as an A2A agent and an MCP server; call and check any A2A agent. "
            "Exit codes: 0 success, 1 a peer or task error, 2 a usage error.",
            78,
        ),
        epilog=_EXAMPLES_OF_ALL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {tn.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _mcp_parser(sub)
    _card_parser(sub)
    _doctor_parser(sub)
    _send_parser(sub)
    _task_parser(sub)
    _push_parser(sub)
    _replay_parser(sub)
    _audit_parser(sub)
    return p


def _serve_parser(sub: Any) -> None:
    s = _command(
        sub,
        "serve",
        "serve a toolkit (with no flags: the example skills on the demo model)",
        "toolnexus serve                                   # the demo: try the line it prints",
        "toolnexus serve --skills ./skills --name my-desk --mcp --port 8000",
        "toolnexus serve --model openai:gpt-4o-mini --api-key-env OPENAI_API_KEY",
        "toolnexus serve --host 0.0.0.0 --auth-token-env AGENT_TOKEN --store file:./tasks",
        "toolnexus serve --config toolkit.json --json      # JSON lines for scripts",
    )
    _toolkit_options(s)
    for flag in SERVE_FLAGS:
        flag.add(s)


def _mcp_parser(sub: Any) -> None:
    x = _command(
        sub,
        "mcp",
        "serve the toolkit (tools; skills as prompts and resources) as MCP over stdio, for desktop MCP hosts "
        "(Claude Desktop, VS Code, Cursor): the host starts this command",
        "toolnexus mcp --skills ./skills                  # what a host's config runs",
        "toolnexus mcp --tools mytools.py:add,mul --expose add",
        "toolnexus doctor --mcp 'toolnexus mcp --skills ./skills'   # check it as a host would",
    )
    _toolkit_options(x)
    x.add_argument("--name", help="the server's name in MCP's initialize (default toolnexus)")
    x.add_argument(
        "--expose",
        action="append",
        metavar="TOOL",
        help="expose only this tool (repeatable; default: every tool but bash, write and edit)",
    )


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
    c.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="send this header"
    )
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


def _doctor_parser(sub: Any) -> None:
    d = _command(
        sub,
        "doctor",
        "probe an A2A agent: which clients can work with it, why, and the fix; with --mcp "
        "an MCP server; or, with --client, judge a client pointed at a strict local agent",
        "toolnexus doctor http://127.0.0.1:9999             # creates nothing on the agent",
        "toolnexus doctor URL --send --json > doctor.json   # sends real messages; CI's report",
        "toolnexus doctor --mcp http://127.0.0.1:8000/mcp",
        "toolnexus doctor --mcp 'uvx some-mcp' --call",
        "toolnexus doctor --client --for 60                  # then point your client at it",
    )
    d.add_argument(
        "url",
        nargs="?",
        help="the agent's card URL or base URL; with --mcp the MCP endpoint's URL, or a command "
        "line starting a stdio server, in quotes ('NAME=value uvx some-mcp --flag')",
    )
    d.add_argument(
        "--mcp",
        action="store_true",
        help="probe an MCP server: version negotiation, capabilities against what answers, each "
        "tool's schemas, errors as the spec has them, the Origin check and auth over HTTP, "
        "stdout over stdio",
    )
    d.add_argument(
        "--call",
        action="store_true",
        help="with --mcp: also call the tools annotated read-only (readOnlyHint), and only those",
    )
    d.add_argument(
        "--client",
        action="store_true",
        help="serve a strict local agent instead and judge every request a client sends it, "
        "until Ctrl-C, SIGTERM or --for: the report then ends (its message words: 'question' "
        "asks for input, 'slow' works 30 s, 'fail' fails, anything else is echoed)",
    )
    d.add_argument(
        "--port", type=int, default=0, help="with --client: the port (default 0: any free port)"
    )
    d.add_argument(
        "--for",
        dest="seconds",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --client: stop after this long",
    )
    d.add_argument(
        "--format",
        choices=("text", "json", "md", "html"),
        default="text",
        help="the report as text (default, as findings come), JSON (as --json), Markdown (a CI "
        "job's summary) or a whole HTML page (an attachment)",
    )
    d.add_argument(
        "--send",
        action="store_true",
        help="also send messages: one in each dialect a client would speak, one to cancel, one "
        "streamed, the card's first three skill examples (answering a question 'yes'), and those "
        "the feature probes need (history, ListTasks, subscribe, push, files, output modes): "
        "these create real tasks on the peer, about 9 to 16; without it nothing is created",
    )
    d.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="send this header"
    )
    d.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds per request (default 10; a stdio MCP server gets 30 more to start)",
    )
    _fail_on(d)
    d.add_argument("--json", action="store_true", help="print the report as JSON")
    d.add_argument(
        "--record",
        metavar="FILE.jsonl",
        help="with --mcp: write every exchange to this cassette (secrets masked)",
    )


_ONE_LINE = "print JSON, one line"
_EVENTS = "print JSON lines: one per event (state: it moved; text: a new piece of the reply), then the task"


def _send_parser(sub: Any) -> None:
    m = _command(
        sub,
        "send",
        "send a message to any A2A agent and follow its task to the end",
        'toolnexus send http://127.0.0.1:9999 "weather in Oslo"',
        'toolnexus send URL "yes" --continue        # answer its question, or go on talking',
        'toolnexus send URL "hi" --stream --json    # a JSON line per event, then the task',
        'toolnexus send URL --data \'{"city": "Oslo"}\' --skill weather',
        'toolnexus send URL "a chart" --save-artifacts out/',
        'id=$(toolnexus send URL "slow 30" --no-wait)  # the task id at once',
    )
    m.add_argument("url", help="the agent's card URL or base URL")
    m.add_argument(
        "text",
        nargs="?",
        help="the message to send (quote it: one argument; may be left out with --data or --file)",
    )
    m.add_argument("--skill", help="the skill id (message.metadata.skill)")
    m.add_argument("--context", help="continue this context id")
    m.add_argument("--task", help="answer this input-required task")
    m.add_argument(
        "--continue",
        dest="again",
        action="store_true",
        help="continue the last conversation sent to this agent from here: its context, and its "
        "task when that waits for an answer",
    )
    m.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="JSON",
        help="send this JSON value as a data part (repeatable)",
    )
    m.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="PATH",
        help="send this file with the text, inline (repeatable; at most 10 MiB each)",
    )
    m.add_argument(
        "--accept",
        action="append",
        default=[],
        metavar="MEDIA/TYPE",
        help="a media type the answer may be in (acceptedOutputModes; repeatable)",
    )
    m.add_argument("--stream", action="store_true", help="use SSE streaming")
    m.add_argument(
        "--no-wait",
        action="store_true",
        help="return the task as the agent first answers, without following it (text: its id "
        "on stdout)",
    )
    m.add_argument(
        "--save-artifacts",
        metavar="DIR",
        help="write the task's artifacts into DIR (created if need be): names made safe, an "
        "existing file never overwritten (a new name, said)",
    )
    _peer_options(
        m,
        timeout=300.0,
        follows=True,
        json_help="print JSON: the task, one line; with --stream, "
        + _EVENTS.removeprefix("print JSON lines: "),
    )


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
    p.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="send this header"
    )
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


def _credentials(args: argparse.Namespace) -> dict[str, Any]:
    """``A2AClient``'s credential arguments from the flags of :func:`_credential_options`."""
    out: dict[str, Any] = {}
    if args.bearer_env:
        out["bearer"] = _env_secret("--bearer-env", args.bearer_env)
    if args.api_key_env:
        out["api_key"] = _env_secret("--api-key-env", args.api_key_env)
    secret = (
        _env_secret("--client-secret-env", args.client_secret_env)
        if args.client_secret_env
        else None
    )
    if args.oauth and not args.client_id:
        raise UsageError("--oauth needs --client-id")
    if args.oauth == "client":
        if secret is None:
            raise UsageError("--oauth client needs --client-secret-env")
        out["oauth"] = tn.ClientCredentials(args.client_id, secret, scopes=args.scope)
    elif args.oauth == "device":
        out["oauth"] = tn.DeviceCode(args.client_id, args.scope, client_secret=secret)
    elif args.oauth == "browser":
        out["oauth"] = tn.AuthorizationCode(args.client_id, args.scope, client_secret=secret)
    if args.cert_key and not args.cert:
        raise UsageError("--cert-key needs --cert")
    if args.cert or args.ca:
        if not args.cert:
            raise UsageError("--ca is for mutual TLS here: give --cert too")
        out["certificate"] = tn.ClientCertificate(args.cert, args.cert_key, ca=args.ca)
    return out


def _task_parser(sub: Any) -> None:
    t = _command(
        sub,
        "task",
        "read, list, cancel or follow an agent's tasks",
        "toolnexus task get http://127.0.0.1:9999 TASK_ID",
        "toolnexus task list URL --state working --json",
        "toolnexus task cancel URL TASK_ID",
        "toolnexus task resubscribe URL TASK_ID     # its words and states as they come",
    )
    verbs = t.add_subparsers(dest="verb", required=True, metavar="{get,cancel,list,resubscribe}")
    get = _command(
        verbs,
        "get",
        "the task as the agent keeps it (GetTask): its reply, its question or how it ended",
        "toolnexus task get http://127.0.0.1:9999 TASK_ID --history 10",
    )
    get.add_argument(
        "--history",
        type=int,
        metavar="N",
        help="at most the N latest messages of its history (historyLength)",
    )
    cancel = _command(
        verbs,
        "cancel",
        "ask the agent to cancel the task (CancelTask); exit 0 when it is canceled",
        "toolnexus task cancel http://127.0.0.1:9999 TASK_ID",
    )
    follow = _command(
        verbs,
        "resubscribe",
        "follow a running task as the agent streams it (SubscribeToTask; a task already over, "
        "or an agent that cannot stream: read with GetTask)",
        "toolnexus task resubscribe http://127.0.0.1:9999 TASK_ID",
        "toolnexus task resubscribe URL TASK_ID --json | jq -r 'select(.event==\"text\").text'",
    )
    listed = _command(
        verbs,
        "list",
        "the agent's tasks, newest first (ListTasks: A2A 1.0 agents)",
        "toolnexus task list http://127.0.0.1:9999 --state input-required",
        "toolnexus task list URL --context CONTEXT_ID --page-size 20 --json",
    )
    for verb in (get, cancel, follow):
        verb.add_argument("url", help="the agent's card URL or base URL")
        verb.add_argument("id", help="the task's id")
    listed.add_argument("url", help="the agent's card URL or base URL")
    listed.add_argument("--context", help="only this context's tasks")
    listed.add_argument(
        "--state", choices=[s.value for s in tn.TaskState], help="only tasks in this state"
    )
    listed.add_argument("--page-size", type=int, metavar="N", help="at most N tasks")
    listed.add_argument("--page-token", metavar="TOKEN", help="the page a listing's next names")
    for verb in (get, cancel, listed):
        _peer_options(verb, timeout=30.0, follows=False)
    _peer_options(follow, timeout=300.0, follows=True, json_help=_EVENTS)


def _push_parser(sub: Any) -> None:
    p = _command(
        sub,
        "push",
        "set, read, list or delete where an agent POSTs a task's changes (push notifications)",
        "toolnexus push set URL TASK_ID https://hooks.example.com/a2a --token-env HOOK_TOKEN",
        "toolnexus push list URL TASK_ID --json",
        "toolnexus push get URL TASK_ID [CONFIG_ID]",
        "toolnexus push delete URL TASK_ID CONFIG_ID",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="{set,get,list,delete}")
    put = _command(
        verbs,
        "set",
        "have the agent POST every change of the task to this webhook",
        "HOOK_TOKEN=s3cret toolnexus push set URL TASK_ID https://hooks.example.com/a2a "
        "--token-env HOOK_TOKEN",
    )
    get = _command(
        verbs,
        "get",
        "a config of the task (its first without an id)",
        "toolnexus push get URL TASK_ID CONFIG_ID",
    )
    listed = _command(
        verbs, "list", "every config of the task", "toolnexus push list URL TASK_ID --json"
    )
    delete = _command(
        verbs,
        "delete",
        "stop notifying a config's webhook",
        "toolnexus push delete URL TASK_ID CONFIG_ID",
    )
    for verb in (put, get, listed, delete):
        verb.add_argument("url", help="the agent's card URL or base URL")
        verb.add_argument("task", help="the task's id")
    put.add_argument("webhook", help="the http(s) URL the agent POSTs to")
    put.add_argument("--id", help="the config's id (default: the agent makes one)")
    put.add_argument(
        "--token-env",
        metavar="NAME",
        help="the token the agent sends back with each notification, read from this variable",
    )
    put.add_argument(
        "--auth-scheme", metavar="SCHEME", help="the Authorization scheme of each notification"
    )
    put.add_argument(
        "--credentials-env",
        metavar="NAME",
        help="with --auth-scheme: the credentials, read from this variable",
    )
    get.add_argument("config", nargs="?", help="the config's id")
    delete.add_argument("config", help="the config's id")
    for verb in (put, get, listed, delete):
        _peer_options(verb, timeout=30.0, follows=False)


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


def _replay_parser(sub: Any) -> None:
    r = _command(
        sub,
        "replay",
        "serve a cassette's recorded answers as a peer (an A2A agent, or an MCP server), or "
        "diff it against a live one",
        "toolnexus send URL hi --record session.jsonl       # record one",
        "toolnexus replay session.jsonl --port 9999         # then point a client at it",
        "toolnexus replay session.jsonl --against URL       # what changed? exit 1 if anything",
        "toolnexus replay mcp-session.jsonl --stdio         # an MCP session, for a desktop host",
    )
    r.add_argument(
        "cassette",
        help="a cassette (.jsonl) written by --record, A2AClient(record=...), MCPSession(record=...), "
        "the TUI or a notebook",
    )
    r.add_argument(
        "--against",
        metavar="URL",
        help="send the recorded requests to this live peer and compare its answers (an MCP "
        "session's: the server's URL, or a command line starting it, in quotes)",
    )
    r.add_argument(
        "--mermaid",
        action="store_true",
        help="print the recorded session as a Mermaid sequence diagram instead (a lane per agent; "
        "states, artifacts and errors labelled)",
    )
    r.add_argument(
        "--stdio",
        action="store_true",
        help="an MCP session's cassette: serve it over stdio (a host starts this command) instead "
        "of HTTP",
    )
    r.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    r.add_argument(
        "--port", type=int, default=0, help="port to serve on (default 0: any free port)"
    )
    r.add_argument(
        "--match",
        choices=["strict", "lenient", "method"],
        default="lenient",
        help="how a request finds its recorded answer (default lenient)",
    )
    r.add_argument(
        "--peer",
        metavar="ORIGIN",
        help="the recorded peer to play, when the cassette has several (an MCP stdio server: the "
        "name the cassette gives it, 'stdio: ...')",
    )
    r.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="with --against: send this header (secrets were masked when recorded)",
    )
    r.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="with --against: seconds per answer (default 30)",
    )
    r.add_argument("--json", action="store_true", help="print JSON")


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


def _fail_on(p: argparse.ArgumentParser) -> None:
    """A report's exit threshold, the same for ``doctor`` and ``audit``."""
    p.add_argument(
        "--fail-on",
        choices=["warning", "error"],
        default="error",
        help="exit 1 when a finding is at least this bad (default error)",
    )


def _names(capability: type, has: bool = True) -> str:
    """The kinds of store that declare ``capability`` (or not), for a sentence: "file and PostgreSQL"."""
    names = [kind.name for kind in kinds_with(capability, has)]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _forms(capability: type) -> str:
    """How the kinds of store that declare ``capability`` are written: "postgresql://USER@HOST/DB"."""
    return " | ".join(kind.form for kind in kinds_with(capability))


@dataclass(frozen=True)
class Flag:
    """One ``serve`` flag, whole: its name, its help, how argparse reads it, and the key of the
    config file it sets (``a2a.store``: the ``a2a`` block's; None: the command's own, no config
    has it). A flag given on the command line wins over its key in ``--config``."""

    name: str
    help: str
    key: str | None = None
    env: bool = False
    """Its value names an environment variable, which holds the secret (never the secret itself)."""
    to: Callable[[Any], Any] | None = None
    """The value as the config takes it (read, checked; a mistake is a ``UsageError``)."""
    extends: bool = False
    """Added to the config's list, not replacing it."""
    blank: bool = False
    """An empty value is a value (``--description ""``), not the flag left out."""
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """How argparse reads it (``type``, ``default``, ``metavar``, ``action``)."""

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    def add(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(self.name, help=self.help, **self.options)

    def given(self, args: argparse.Namespace) -> bool:
        """Whether the command line set it (a default, None, an empty list, is not)."""
        value = getattr(args, self.dest)
        return value is not None and value != [] and (self.blank or value != "")

    def apply(self, args: argparse.Namespace, config: Any) -> None:
        """Set its key on ``config`` (the ``a2a`` block's object) from the command line."""
        if self.key is None or not self.given(args):
            return
        value = getattr(args, self.dest)
        value = self.to(value) if self.to is not None else value
        field_name = self.key.partition(".")[2]
        setattr(
            config, field_name, [*getattr(config, field_name), *value] if self.extends else value
        )


def _signing_key(path: str) -> Any:
    try:
        return load_signing_key(path)
    except tn.ConfigError as exc:
        raise UsageError(f"--sign-key: {exc}") from None


def _public_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--public-url must be an http:// or https:// URL, not {url!r}")
    return url


def _bearer(name: str) -> Any:
    return tn.Auth.bearer(_env_secret("--auth-token-env", name))


def _basic(name: str) -> Any:
    pair = _env_secret("--auth-basic-env", name)
    if ":" not in pair[1:]:
        raise UsageError(f"--auth-basic-env {name}: must hold user:password")
    return tn.Auth.basic(pair)


_FIELD = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)")
"""Where ``KEY=VALUE,KEY=VALUE`` splits: at a comma a key follows (a URL's own commas stay)."""


def _fields(flag: str, value: str) -> dict[str, Any]:
    """``KEY=VALUE,...`` as the config block it stands for: a dotted key nested
    (``flows.clientCredentials.tokenUrl=URL``), ``scopes`` and ``algorithms`` lists (split on
    spaces), ``true``/``false`` booleans."""
    block: dict[str, Any] = {}
    for item in _FIELD.split(value):
        key, eq, text = item.partition("=")
        if not eq or not key or not text:
            raise UsageError(f"{flag}: {item!r} is not KEY=VALUE")
        *path, last = key.split(".")
        at = block
        for step in path:
            at = at.setdefault(step, {})
            if not isinstance(at, dict):
                raise UsageError(f"{flag}: {key} sets a part of a value given whole")
        given: Any = {"true": True, "false": False}.get(text, text)
        at[last] = text.split() if not path and last in ("scopes", "algorithms") else given
    return block


def _scheme(name: str, flag: str) -> Callable[[str], Any]:
    """The ``to`` of an auth flag whose value is the ``a2a.auth.<name>`` block as ``KEY=VALUE,...``
    (read by ``Auth.from_config``, as a config file's)."""

    def auth(value: str) -> Any:
        try:
            return tn.Auth.from_config({name: _fields(flag, value)})
        except tn.ConfigError as exc:
            raise UsageError(f"{flag}: {exc}") from None

    return auth


SERVE_FLAGS: tuple[Flag, ...] = (
    Flag("--name", "the agent's name on its card", "a2a.name"),
    Flag(
        "--description",
        "the agent's description on its card (default: one made from its skills)",
        "a2a.description",
        blank=True,
    ),
    Flag("--host", "address to bind (default 127.0.0.1)", options={"default": "127.0.0.1"}),
    Flag("--port", "port to bind (default 0: any free port)", options={"type": int, "default": 0}),
    Flag(
        "--model",
        "demo | openai:MODEL | anthropic:MODEL (default demo)",
        options={"default": "demo"},
    ),
    Flag("--base-url", "the model endpoint (any OpenAI-compatible server works with openai:)"),
    Flag("--api-key-env", "the environment variable holding the model key", env=True),
    Flag(
        "--store",
        f"{STORE_FORMS} (default {KINDS[0].name}; "
        + "; ".join(f"{k.name} needs pip install 'toolnexus[{k.extra}]'" for k in KINDS if k.extra)
        + ")",
        "a2a.store",
    ),
    Flag("--mcp", "also serve MCP at /mcp", "mcpServer", options={"action": "store_true"}),
    Flag(
        "--grpc",
        "also serve the gRPC binding there (needs pip install 'toolnexus[grpc]')",
        "a2a.grpc",
        options={"metavar": "[HOST]:PORT"},
    ),
    Flag("--no-a2a", "serve MCP only", options={"action": "store_true"}),
    Flag(
        "--sign-key",
        "sign the card and push notifications with this private key (PEM or JWK: EC P-256, "
        "Ed25519 or RSA); its public half is served at /.well-known/jwks.json",
        "a2a.signing_key",
        to=_signing_key,
        options={"metavar": "FILE"},
    ),
    Flag(
        "--tenant",
        "serve this tenant (repeatable; A2A 1.0's tenant field and /NAME/... routes), each "
        "its own task space, listed on the card",
        "a2a.tenants",
        options={"action": "append", "metavar": "NAME"},
    ),
    Flag(
        "--extension",
        "declare this extension on the card (repeatable): activated for callers who ask for it",
        "a2a.extensions",
        extends=True,
        options={"action": "append", "metavar": "URI"},
    ),
    Flag(
        "--require-extension",
        "declare this extension as required (repeatable): a call that does not ask for it "
        "(A2A-Extensions) is refused with -32008",
        "a2a.extensions",
        to=lambda uris: [{"uri": u, "required": True} for u in uris],
        extends=True,
        options={"action": "append", "metavar": "URI"},
    ),
    Flag(
        "--quirks",
        "answer as a peer from the field does, to test a client against it: "
        + "; ".join(f"{q.name}: {q.summary}" for q in QUIRKS.values())
        + " (slow=SECONDS for another delay)",
        "a2a.quirks",
        options={"action": "append", "metavar": "NAME[,NAME]"},
    ),
    Flag(
        "--direct-replies",
        "answer a send with a Message when no task is needed: a new message whose run completes "
        "without asking anything, when its caller waits for it (a task otherwise)",
        "a2a.direct_replies",
        options={"action": "store_true", "default": None},
    ),
    Flag("--json", "print JSON lines instead of text", options={"action": "store_true"}),
    Flag(
        "--metrics",
        "Prometheus metrics at /metrics, behind the agent's auth (needs pip install "
        "'toolnexus[metrics]')",
        options={"action": "store_true"},
    ),
    Flag(
        "--metrics-at",
        "Prometheus metrics on a port of their own instead (implies --metrics)",
        options={"metavar": "[HOST:]PORT"},
    ),
    Flag(
        "--auth-token-env",
        "require 'Authorization: Bearer TOKEN' on JSON-RPC and MCP, TOKEN read from this variable",
        "a2a.auth",
        env=True,
        to=_bearer,
        options={"metavar": "NAME"},
    ),
    Flag(
        "--auth-basic-env",
        "require HTTP basic auth on JSON-RPC and MCP, 'user:password' read from this variable",
        "a2a.auth",
        env=True,
        to=_basic,
        options={"metavar": "NAME"},
    ),
    Flag(
        "--auth-oauth2",
        "accept only JWT access tokens from an OAuth 2 issuer (a resource server), checked with "
        "its key set; the card says where to get one. The a2a.auth.oauth2 block as KEY=VALUE,...: "
        "issuer=URL,audience=AUD,jwksUrl=URL and any of scopes='A B' (every call needs them), "
        "metadataUrl=URL, flows.clientCredentials.tokenUrl=URL, flows.deviceCode."
        "deviceAuthorizationUrl=URL, flows.authorizationCode.authorizationUrl=URL, ...",
        "a2a.auth",
        to=_scheme("oauth2", "--auth-oauth2"),
        options={"metavar": "issuer=URL,audience=AUD,jwksUrl=URL[,KEY=VALUE]"},
    ),
    Flag(
        "--auth-openid",
        "accept only JWT access tokens from an OpenID Connect provider, its keys found by its "
        "discovery document: url=DISCOVERY_URL,issuer=URL,audience=AUD[,scopes='A B']",
        "a2a.auth",
        to=_scheme("openIdConnect", "--auth-openid"),
        options={"metavar": "url=URL,issuer=URL,audience=AUD[,KEY=VALUE]"},
    ),
    Flag(
        "--auth-mtls",
        "serve over TLS with this certificate and key, taking only callers whose client "
        "certificate the CA signed (HTTP and gRPC): ca=FILE,cert=FILE,key=FILE",
        "a2a.auth",
        to=_scheme("mutualTLS", "--auth-mtls"),
        options={"metavar": "ca=FILE,cert=FILE,key=FILE"},
    ),
    Flag(
        "--allow-unauthenticated",
        "serve command-running builtins beyond loopback without auth (you mean it)",
        options={"action": "store_true"},
    ),
    Flag(
        "--workers",
        f"serve from N processes on one port (needs a shared store: --store {_forms(Shared)})",
        options={"type": int, "default": 1, "metavar": "N"},
    ),
    Flag(
        "--keep-tasks",
        f"the {_names(KeepsEnded, False)} store keeps at most N finished tasks, oldest dropped "
        "first (default 100000)",
        "a2a.keep_tasks",
        options={"type": int, "metavar": "N"},
    ),
    Flag(
        "--keep-for",
        f"the {_names(KeepsEnded, False)} store drops finished tasks older than this (default: "
        "no limit)",
        "a2a.keep_for",
        options={"type": float, "metavar": "SECONDS"},
    ),
    Flag(
        "--lease",
        f"with a shared store ({_names(Shared)}): how long a dead worker's running tasks wait "
        "before they fail (default 5)",
        "a2a.lease",
        options={"type": float, "metavar": "SECONDS"},
    ),
    Flag(
        "--public-url",
        "the URL callers reach the agent at, behind a balancer or proxy: the card's URLs",
        "a2a.public_url",
        to=_public_url,
        options={"metavar": "URL"},
    ),
    Flag(
        "--max-connections",
        "open connections past which new requests get 503, all workers' together (default: "
        "sized from the open-file limit, which serve raises to its hard limit; the start says "
        "the figure)",
        "maxConnections",
        options={"type": int, "metavar": "N"},
    ),
    Flag(
        "--drain",
        "on SIGTERM or Ctrl-C: stop accepting, then give what runs this long to finish (its "
        "callers answered), and fail what is left, saying so; a second signal stops at once "
        f"(default {DRAIN:g})",
        options={"type": float, "default": DRAIN, "metavar": "SECONDS"},
    ),
    # a worker of --workers: the supervisor's socket, the worker's number, the shared limit
    Flag("--worker-fd", argparse.SUPPRESS, options={"type": int}),
    Flag("--worker-index", argparse.SUPPRESS, options={"type": int}),
    Flag("--worker-share", argparse.SUPPRESS, options={"type": int}),
)
"""Every ``serve`` flag beyond the toolkit's (``_toolkit_options``), in ``--help``'s order; the
``a2a`` block's keys applied in this order, then its auth, then ``A2AConfig.check()``."""


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


def _functions(specs: list[str] | None) -> list[Any]:
    """The functions ``--tools`` names: ``MODULE:NAME,NAME`` or ``path/file.py:NAME``; a module
    alone gives what its ``__all__`` lists."""

    out: list[Any] = []
    for spec in specs or []:
        where, _, names = spec.rpartition(":") if ":" in spec else (spec, "", "")
        try:
            if where.endswith(".py"):
                path = Path(where).expanduser()
                loader = importlib.util.spec_from_file_location(path.stem, path)
                if loader is None or loader.loader is None or not path.is_file():
                    raise UsageError(f"--tools {spec}: no Python file at {path}")
                module = importlib.util.module_from_spec(loader)
                loader.loader.exec_module(module)
            else:
                module = importlib.import_module(where)
        except UsageError:
            raise
        except (
            Exception
        ) as exc:  # the user's module failed to import: say which and why, on one line
            raise UsageError(
                f"--tools {spec}: cannot import {where}: {type(exc).__name__}: {exc}"
            ) from None
        wanted = (
            [n for n in names.split(",") if n] if names else list(getattr(module, "__all__", []))
        )
        if not wanted:
            raise UsageError(
                f"--tools {spec}: name the functions ({where}:FUNCTION), or list them in its __all__"
            )
        for name in wanted:
            fn = getattr(module, name, None)
            if inspect.isroutine(fn):
                out.append(fn)
            elif names:  # named, and not a function (a class, a constant, nothing)
                raise UsageError(f"--tools {spec}: {where} has no function {name!r}")
    return out


async def _toolkit(args: argparse.Namespace) -> tuple[Any, bool]:
    """The toolkit the command line describes, and whether it is the demo (no toolkit option given:
    the example skills). A bad option is a usage error."""

    demo = not (args.config or args.skills or args.tools or args.agent)
    skills = args.skills or ([str(EXAMPLE_SKILLS)] if demo and EXAMPLE_SKILLS.is_dir() else [])
    try:
        return await tn.create_toolkit(
            skills,
            builtins=args.builtins,
            config=args.config,
            tools=_functions(args.tools),
            agents=[tn.Agent(card=url) for url in args.agent or []],
        ), demo
    except tn.ConfigError as exc:
        raise UsageError(str(exc)) from None


def _run(work: Coroutine[Any, Any, int]) -> int:
    """``work`` on uvloop when it is installed (the ``fast`` extra), else on asyncio's own loop."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(work)


def main(argv: list[str] | None = None) -> int:
    """The command's exit code. Whoever reads its output may leave before it is all written
    (``toolnexus card URL | head -1``): then it ends as Unix tools do, by that SIGPIPE, quietly."""
    try:
        try:
            return _main(argv)
        finally:  # the last of the output (--help's too), while a reader gone can still be told
            sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()


def _reader_gone() -> NoReturn:
    """The reader of stdout left: nothing more is written there (Python's own flush at exit
    included), and the process ends by SIGPIPE, as ``cat`` or ``grep`` would (status 141 in a
    shell). Python ignores SIGPIPE, so that a socket's peer leaving is an error to handle: it is
    restored only now, at the end."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(128 + signal.SIGPIPE)  # not reached where the signal ends the process at once


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(
        sys.argv[1:] if argv is None else argv
    )  # what a worker of --workers is started with
    try:
        if args.command == "doctor" and args.client:
            if args.url or args.send:
                raise UsageError("doctor --client takes no URL and no --send: clients come to it")
            return _run(_client_doctor(args))
        if args.command == "doctor" and args.record and not args.mcp:
            raise UsageError("doctor --record records an MCP server's session: add --mcp")
        if args.command == "doctor" and not args.url:
            raise UsageError("doctor needs the agent's URL (or --client)")
        if args.command in ("card", "doctor", "send", "task", "push") and not getattr(
            args, "mcp", False
        ):
            args.url = _peer(args.url)

        if args.command == "serve":
            return _run(_serve(args))
        if args.command == "mcp":
            return _run(_mcp(args))
        if args.command == "card":
            return _run(_card(args))
        if args.command == "doctor":
            return _run(_doctor(args))
        if args.command == "send":
            return _run(_send(args))
        if args.command == "task":
            return _run(_task(args))
        if args.command == "push":
            return _run(_push(args))
        if args.command == "replay":
            return _run(_replay(args))
        if args.command == "audit":
            return _audit(args)
    except (UsageError, tn.ConfigError) as exc:  # a config that cannot be used: a usage error
        print(f"toolnexus: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_USAGE


def _peer(url: str) -> str:
    """A peer's URL from the command line; anything else is a usage error."""
    try:
        return peer_url(url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def say(text: str, **kwargs: Any) -> None:
    """Print what a peer sent (names, replies, errors): control characters shown, never obeyed."""
    print(printable(text), **kwargs)


def _emit(args: argparse.Namespace, text: str, data: dict[str, Any]) -> None:
    """One line of ``serve`` output, written whole in one write: the workers of ``--workers`` share
    the supervisor's stdout, and their lines must not cut into each other."""
    line = (json.dumps(data) if args.json else text) + "\n"
    sys.stdout.flush()
    try:
        os.write(sys.stdout.fileno(), line.encode())
    except (
        AttributeError,
        OSError,
        ValueError,
    ):  # no file descriptor (captured): the stream itself
        sys.stdout.write(line)
        sys.stdout.flush()


async def _serve(args: argparse.Namespace) -> int:
    tk, demo = await _toolkit(args)
    a2a = None if args.no_a2a else _a2a_config(args, tk, demo)
    auth = _auth(args)
    if a2a is not None:
        a2a.auth = auth or a2a.auth
        a2a.check()  # once, every flag applied (a config's extended card may need --auth-*)
    if args.max_connections is not None and args.max_connections < 1:
        raise UsageError(f"--max-connections must be at least 1, not {args.max_connections}")
    fds = raise_fd_limit()  # a descriptor per connection: as many as this process may have
    limit = connection_limit(tk.config, args.max_connections)
    if args.workers > 1 and args.worker_fd is None:
        return await _supervise(args, a2a, limit, fds)
    mcp: Any = True if args.mcp else tk.config.get("mcpServer")
    if args.no_a2a and not mcp:
        raise UsageError("--no-a2a needs --mcp (or an mcpServer block in the config)")
    if auth is not None and mcp:
        mcp = tn.MCPServeConfig.from_config(mcp)
        mcp.auth = mcp.auth or auth
    handle = await _start(args, tk, a2a, mcp, limit)
    serving_gc()
    stop = _stop_on_signals(worker=args.worker_fd is not None)
    if args.worker_index is not None:  # the supervisor said where it serves; a worker, what it does
        _emit(
            args,
            f"worker {args.worker_index} ready (pid {os.getpid()})",
            {"event": "worker-ready", "worker": args.worker_index, "pid": os.getpid()},
        )
    else:
        open_ = auth is None and (a2a is None or a2a.auth is None)
        _announce(args, handle, a2a, mcp, open_, demo, fds)
    follower = asyncio.ensure_future(_follow_tasks(args, handle))
    try:
        await stop.wait()
    finally:
        await _drain(args, handle, stop)
        follower.cancel()
        if args.worker_index is None:
            _emit(args, "stopped", {"event": "stopped"})
        else:
            _emit(
                args,
                f"worker {args.worker_index} stopped",
                {"event": "worker-stopped", "worker": args.worker_index},
            )
    return EXIT_OK


def _a2a_config(args: argparse.Namespace, tk: Any, demo: bool) -> Any:
    """The ``a2a`` block of the toolkit's config with every ``a2a.*`` flag but auth applied (the
    demo's name and description unless flags say otherwise)."""
    a2a = tn.A2AConfig.from_config(tk.config.get("a2a"))
    if demo:  # no config: the demo's own words
        a2a.name, a2a.description = DEMO_NAME, a2a.description or DEMO_DESCRIPTION
    for flag in SERVE_FLAGS:
        if flag.key is not None and flag.key.startswith("a2a.") and flag.key != "a2a.auth":
            flag.apply(args, a2a)
    kind = kind_of(a2a.store) if isinstance(a2a.store, str) else None
    if (args.keep_tasks is not None or args.keep_for is not None) and (
        kind is not None and issubclass(kind.store, KeepsEnded)
    ):
        raise UsageError(
            f"--keep-tasks and --keep-for set the {_names(KeepsEnded, False)} store's "
            f"retention; the {_names(KeepsEnded)} stores keep every task"
        )
    return a2a


def _auth(args: argparse.Namespace) -> Any:
    """The auth the command line asks for (one ``a2a.auth`` flag at most), for A2A and MCP."""
    given = [flag for flag in SERVE_FLAGS if flag.key == "a2a.auth" and flag.given(args)]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(flag.name for flag in given)}: choose one")
    if not given:
        return None
    flag = given[0]
    return flag.to(getattr(args, flag.dest)) if flag.to is not None else None


async def _start(args: argparse.Namespace, tk: Any, a2a: Any, mcp: Any, limit: int) -> Any:
    """The toolkit served as the command line says (a worker of ``--workers``: on its
    supervisor's socket); a port or a config it cannot use is a usage error."""
    try:
        client = build_client(args.model, args.base_url, args.api_key_env)
    except tn.ConfigError as exc:
        raise UsageError(str(exc)) from None
    sock, held = None, limit
    if args.worker_fd is not None:  # a worker of --workers: the supervisor's listening socket
        sock = socket.socket(fileno=args.worker_fd)
        held = ConnectionShare(args.worker_share, args.worker_index, limit)  # the workers' together
    try:
        metrics: Any = _addr(args.metrics_at, args.host) if args.metrics_at else bool(args.metrics)
        return await tk.serve(
            f"{args.host}:{args.port}",
            client=client,
            a2a=a2a,
            mcp=mcp,
            allow_unauthenticated=args.allow_unauthenticated,
            sock=sock,
            metrics=metrics,
            max_connections=held,
        )
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        ) from None
    except (tn.ConfigError, MissingExtra) as exc:
        raise UsageError(str(exc)) from None


def _announce(
    args: argparse.Namespace,
    handle: Any,
    a2a: Any,
    mcp: Any,
    open_: bool,
    demo: bool,
    fds: FdLimit,
) -> None:
    """``serve``'s first lines: where it serves, what, and (the demo) what to type to it."""
    profiles = [p for p, on in (("A2A", a2a is not None), ("MCP", bool(mcp))) if on]
    loop = type(asyncio.get_running_loop()).__module__.split(".")[0]  # uvloop or asyncio
    _emit(
        args,
        f"serving {handle.name} at {handle.url}  ({' + '.join(profiles)}, model {args.model})",
        {
            "event": "started",
            "name": handle.name,
            "url": handle.url,
            "profiles": profiles,
            "model": args.model,
            "loop": loop,
        },
    )
    if a2a is not None:
        _emit(args, f"card    {handle.card_url}", {"event": "card", "url": handle.card_url})
    _say_connections(args, handle.max_connections, fds)
    for quirk in handle.quirks.quirks if handle.quirks is not None else ():
        _emit(
            args,
            f"quirk   {quirk.spec}: {quirk.summary} (as {quirk.origin})",
            {"event": "quirk", "name": quirk.spec, "origin": quirk.origin},
        )
    if handle.grpc_target:
        _emit(
            args, f"grpc    {handle.grpc_target}", {"event": "grpc", "target": handle.grpc_target}
        )
    if mcp:
        _emit(args, f"mcp     {handle.mcp_url}", {"event": "mcp", "url": handle.mcp_url})
    if handle.metrics_url:
        _emit(
            args, f"metrics {handle.metrics_url}", {"event": "metrics", "url": handle.metrics_url}
        )
    if not is_loopback(args.host) and open_:
        _emit(
            args,
            f"warning: {args.host} is reachable beyond this machine and has no auth",
            {"event": "warning", "message": "bound beyond loopback without auth"},
        )
    if demo and a2a is not None and args.model == "demo":
        _emit(
            args,
            f'try     toolnexus send {handle.url} "{DEMO_ASK}"  (it asks you to approve the '
            'draft: input-required; also "weather in Oslo", "greet Ada")',
            {"event": "try", "text": DEMO_ASK, "url": handle.url},
        )
    _emit(args, "press Ctrl-C to stop", {"event": "ready"})


async def _follow_tasks(args: argparse.Namespace, handle: Any) -> None:
    """A line for each transition of a task this process serves (a worker: its own)."""
    worker = args.worker_index
    async for ev in handle.events.subscribe(
        replay=False,
        heard=worker is None,  # a worker: its own
        accept=lambda e: e.kind == "task",  # not woken for each piece of a reply
    ):
        if not isinstance(ev, tn.TaskEvent):
            continue
        text = printable(
            ev.task.request.replace("\n", " "), 60
        )  # a caller's: never terminal control
        line = f"{ev.time[11:19]}  {ev.state.value:<14} {ev.task_id[:8]}  {ev.skill or '-':<10} {text[:60]}"
        data = {
            "event": "task",
            "time": ev.time,
            "task": ev.task_id,
            "context": ev.context_id,
            "skill": ev.skill,
            "from": ev.previous.value if ev.previous else None,
            "state": ev.state.value,
        }
        if worker is not None:
            data["worker"] = worker
            line = f"[{worker}] {line}"
        elif ev.heard:  # another host (or process) sharing the store made this move
            data["heard"] = True
            line += "  (elsewhere)"
        if ev.result is not None:
            data["usage"] = ev.result.usage.to_dict()
            data["tool_calls"] = ev.result.tool_call_count
            line += f"  ({ev.result.usage.total_tokens} tok, {ev.result.tool_call_count} tools)"
        _emit(args, line, data)


async def _drain(args: argparse.Namespace, handle: Any, stop: asyncio.Event) -> None:
    """Stop serving, giving what runs ``--drain`` seconds; a second signal hurries it."""
    stop.clear()
    running = handle.runner.running if handle.runner is not None else 0
    if args.drain > 0 and running and args.worker_index is None:
        _emit(
            args,
            f"draining: {running} task(s) running, up to {args.drain:g}s (Ctrl-C again to stop now)",
            {"event": "draining", "running": running, "seconds": args.drain},
        )
    stopping = asyncio.ensure_future(handle.stop(args.drain))
    hurried = asyncio.ensure_future(stop.wait())
    await asyncio.wait({stopping, hurried}, return_when=asyncio.FIRST_COMPLETED)
    if hurried.done():
        handle.hurry()
    hurried.cancel()
    await stopping


async def _mcp(args: argparse.Namespace) -> int:
    """``toolnexus mcp``: the toolkit's tools over stdio until the host closes stdin. stdout carries
    the protocol alone; what happens is logged on stderr."""
    with _protocol_stdout() as protocol:
        logging.basicConfig(
            stream=sys.stderr, level=logging.WARNING, format="toolnexus mcp: %(message)s"
        )
        tk, _ = await _toolkit(args)
        config = tn.MCPServeConfig.from_config(tk.config.get("mcpServer"))
        if args.name:
            config.name = args.name
        if args.expose:
            config.tools = list(args.expose)

        def told(call: dict[str, Any]) -> None:
            outcome = "error" if call["is_error"] else "ok"
            print(
                printable(f"{call['name']}: {outcome} in {call['ms']:.0f} ms"),
                file=sys.stderr,
                flush=True,
            )

        exposed = [t.name for t in config.exposed(tk.tools())]
        print(
            printable(
                f"serving {len(exposed)} tool(s) over stdio as {config.name}: {', '.join(exposed)}"
            ),
            file=sys.stderr,
            flush=True,
        )
        if sys.stdin.isatty():  # run by hand: it would wait silently for a host that never comes
            print(
                "toolnexus mcp speaks MCP on stdin and stdout, for a desktop MCP host (Claude "
                "Desktop, an IDE) that starts it; typed here it waits for one. Ctrl-C stops it. "
                "For a server on a port: toolnexus serve --mcp",
                file=sys.stderr,
                flush=True,
            )
        wire = io.TextIOWrapper(open(protocol, "wb", closefd=False), encoding="utf-8")
        try:
            await tk.serve_stdio(config, on_call=told, stdout=anyio.wrap_file(wire))
        finally:
            await tk.close()
    return EXIT_OK


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[int]:
    """File descriptor 1 kept for a protocol alone: yields a private copy of it, and points 1 itself
    at stderr until the block ends, so that nothing else writes there: not a ``--tools`` module
    that prints or writes to the descriptor as it loads, not a child process that echoes, not a
    tool's output (redirecting ``sys.stdout`` alone let the last two corrupt the stream)."""
    sys.stdout.flush()
    private = os.dup(1)  # not inherited by children, and above the standard three
    os.dup2(2, 1)
    try:
        yield private
    finally:
        sys.stdout.flush()
        os.dup2(private, 1)
        os.close(private)


def _say_connections(args: argparse.Namespace, limit: int, fds: FdLimit) -> None:
    """The start's line of how many connections the server holds, and the open-file limit behind it."""
    files = "" if fds.now is None else f" (open files: {fds.now:,}"
    if files:
        files += f", raised from {fds.before:,})" if fds.before != fds.now else ")"
    queue = accept_queue()
    _emit(
        args,
        f"holds   {limit:,} connections at once{files}; past them new requests get 503; "
        f"{queue:,} more may wait to be accepted",
        {
            "event": "connections",
            "max": limit,
            "open_files": fds.now,
            "raised_from": fds.before,
            "accept_queue": queue,
        },
    )


async def _supervise(args: argparse.Namespace, a2a: Any, limit: int, fds: FdLimit) -> int:
    """``serve --workers N``: bind once, start N worker processes on that socket, restart one that
    dies, stop them all on Ctrl-C. The workers share the agent through its PostgreSQL store."""

    if args.grpc:
        raise UsageError(
            "--workers and --grpc: not yet (each worker would need the gRPC port); serve gRPC from one"
        )
    if args.metrics_at:
        raise UsageError(
            "--workers and --metrics-at: every worker answers /metrics on the agent's port, summed"
        )
    kind = kind_of(a2a.store) if a2a is not None and isinstance(a2a.store, str) else None
    if a2a is None or kind is None or not issubclass(kind.store, Shared):
        raise UsageError(
            f"--workers {args.workers} needs a store the workers share: --store {_forms(Shared)} "
            f"(the {_names(Shared, False)} stores live in one process)"
        )
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        ) from None
    port = sock.getsockname()[1]
    workers = _Workers(args, sock, port)
    stop = _stop_on_signals()
    made = None
    if args.metrics and not os.environ.get(MULTIPROC_ENV):  # the workers' counts, summed
        made = tempfile.mkdtemp(prefix="toolnexus-metrics-")
        os.environ[MULTIPROC_ENV] = made
    for index in range(args.workers):
        await workers.start(index)
    _emit(
        args,
        f"serving {a2a.name} at {http_url(args.host, port)}  ({args.workers} workers sharing "
        f"{mask_url(a2a.store)})",
        {
            "event": "started",
            "name": a2a.name,
            "url": http_url(args.host, port),
            "workers": args.workers,
        },
    )
    _say_connections(args, limit, fds)
    _emit(args, "press Ctrl-C to stop", {"event": "ready"})
    try:
        await workers.keep(stop)
    finally:
        sock.close()  # with the workers' copies closed as they stop accepting, the port refuses
        os.close(workers.share)
        await workers.end(stop)
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        _emit(args, "stopped", {"event": "stopped"})
    return EXIT_OK


class _Workers:
    """The worker processes of ``serve --workers``, each on the supervisor's socket, all under
    one limit of connections."""

    def __init__(self, args: argparse.Namespace, sock: socket.socket, port: int) -> None:
        self.args = args
        self.sock = sock
        self.argv = _without(_without(args.argv, "--workers"), "--port") + ["--port", str(port)]
        self.share = ConnectionShare.made(args.workers)  # one limit of connections for all
        self.procs: dict[int, asyncio.subprocess.Process] = {}

    async def start(self, index: int) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "toolnexus.cli",
            *self.argv,
            "--worker-fd",
            str(self.sock.fileno()),
            "--worker-index",
            str(index),
            "--worker-share",
            str(self.share),
            pass_fds=(self.sock.fileno(), self.share),
        )
        self.procs[index] = proc
        _emit(
            self.args,
            f"worker {index} started (pid {proc.pid})",
            {"event": "worker", "worker": index, "pid": proc.pid},
        )

    async def keep(self, stop: asyncio.Event) -> None:
        """Start again each worker that exits, until ``stop`` is set."""
        while not stop.is_set():
            waits = {asyncio.ensure_future(p.wait()): i for i, p in self.procs.items()}
            stopping = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait([*waits, stopping], return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            stopping.cancel()
            for finished in done:
                if finished in waits and not stop.is_set():
                    index = waits[finished]
                    code = self.procs[index].returncode
                    _emit(
                        self.args,
                        f"worker {index} exited ({code}); starting another",
                        {"event": "worker-exited", "worker": index, "code": code},
                    )
                    await self.start(index)

    async def end(self, stop: asyncio.Event) -> None:
        """Each worker told to drain (SIGTERM), and waited for; another signal hurries them."""
        stop.clear()
        self.terminate()  # each drains (--drain)
        ended = asyncio.ensure_future(asyncio.gather(*(p.wait() for p in self.procs.values())))
        while not ended.done():
            hurried = asyncio.ensure_future(stop.wait())
            await asyncio.wait({ended, hurried}, return_when=asyncio.FIRST_COMPLETED)
            hurried.cancel()
            if stop.is_set():  # a second Ctrl-C: the workers stop now (their second signal)
                stop.clear()
                self.terminate()

    def terminate(self) -> None:
        for proc in self.procs.values():
            if proc.returncode is None:
                proc.terminate()


def _addr(value: str, host: str) -> str:
    """``[HOST:]PORT`` as ``host:port`` (the serve host when none is given)."""
    return value if ":" in value else f"{host}:{value}"


def _without(argv: list[str], flag: str) -> list[str]:
    """``argv`` without ``flag`` and its value (``--flag V`` or ``--flag=V``)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(flag + "="):
            out.append(arg)
    return out


def _stop_on_signals(worker: bool = False) -> asyncio.Event:
    """An event set by Ctrl-C or SIGTERM (where the platform lets a loop handle them). A worker of
    ``--workers`` leaves Ctrl-C to its supervisor, which sends it SIGTERM (once, and again for a
    second Ctrl-C), and would otherwise count a terminal's Ctrl-C and that SIGTERM as two."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if worker:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM,) if worker else (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (
            NotImplementedError,
            RuntimeError,
        ):  # pragma: no cover - not on this platform/thread
            pass
    return stop


def _headers(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header must be NAME:VALUE, not {pair!r}")

        out[name.strip()] = expand_env(value.strip())
    return out


async def _doctor(args: argparse.Namespace) -> int:
    headers = _headers(args.header)
    if args.mcp:
        return await _mcp_doctor(args, headers)
    shape = "json" if args.json else args.format
    report = await doctor(
        args.url,
        headers=headers,
        timeout=args.timeout,
        send=args.send,
        on_finding=printer(lambda line: say(line, flush=True)) if shape == "text" else None,
    )  # the text as each finding comes (a --send run takes a while); the others once, whole
    if shape != "text":
        shown = {"json": lambda: json.dumps(report.to_dict(), indent=2)}
        print({**shown, "md": report.markdown, "html": report.page}[shape]().rstrip("\n"))
    return EXIT_ERROR if report.failed(args.fail_on) else EXIT_OK


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


async def _mcp_doctor(args: argparse.Namespace, headers: dict[str, str]) -> int:
    from ..debug.mcp_doctor import mcp_doctor  # noqa: PLC0415  # start-up: this subcommand's (and jsonschema-rs)

    target, env = _mcp_target(args.url, "doctor --mcp")
    try:
        cassette = CassetteWriter(args.record) if args.record else None
    except OSError as exc:
        raise UsageError(f"--record {args.record}: {exc.strerror or exc}") from None
    try:
        report = await mcp_doctor(
            target,
            headers=headers,
            env=env,
            timeout=args.timeout,
            call=args.call,
            on_finding=None if args.json else printer(lambda line: say(line, flush=True)),
            record=cassette,
        )
    finally:
        if cassette is not None:
            cassette.close()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    return EXIT_ERROR if report.failed(args.fail_on) else EXIT_OK


async def _client_doctor(args: argparse.Namespace) -> int:
    from toolnexus.debug.client_doctor import start_client_doctor  # noqa: PLC0415  # start-up: the client doctor's agent is a served toolkit

    show = None if args.json else printer(lambda line: say(line, flush=True))
    try:
        doctor = await start_client_doctor(f"127.0.0.1:{args.port}", on_finding=show)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    if not args.json:  # the report's title and findings follow as the client calls
        say(f"point your A2A client at {doctor.url}  (card {doctor.card_url})", flush=True)
        say("stop with Ctrl-C: what it never tried is said then", flush=True)
        show(doctor.report)  # type: ignore[misc]  # the title, before any finding
    else:
        print(json.dumps({"event": "ready", "url": doctor.url}), file=sys.stderr, flush=True)
    stop = _stop_on_signals()
    try:
        await asyncio.wait_for(stop.wait(), args.seconds)
    except TimeoutError:
        pass
    report = await doctor.stop()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    return EXIT_ERROR if report.failed(args.fail_on) else EXIT_OK


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


def _env_secret(flag: str, name: str) -> str:
    """The secret held by environment variable ``name`` (``flag`` names the option it came by)."""
    value = os.environ.get(name, "")
    if not value:
        raise UsageError(f"{flag} {name}: that environment variable is not set")
    return value


_UNHAPPY = (tn.TaskState.FAILED, tn.TaskState.CANCELED, tn.TaskState.REJECTED)
"""The states a task ends in that make ``send`` (and ``task get``, ``task resubscribe``) exit 1."""


async def _send(args: argparse.Namespace) -> int:
    text, sending = _sending(args)  # a mistake in what to send: said before anything is sent
    client = _client(args)
    run = _Following(args, client)

    async def work() -> None:
        for note in client.fitting(sending["files"], args.skill, args.accept)[1]:
            _out(client, f"toolnexus: warning: {note}", file=sys.stderr)  # before it is sent
            client.warn(note)
            run.told.add(note)
        if args.no_wait:  # the task as the agent first answers (send is not blocking)
            run.task = await client.send(text, **sending)
            _progress(args, run.task)
        elif args.stream:
            await run.streamed(client.stream(text, **sending))
        else:
            await run.sent(text, sending)

    code = await _talking(args, client, run, work)
    if run.task is not None:
        _remember(args.url, run.task)
        saved, failed = _save(args, run.task)
        code = EXIT_ERROR if run.task.state in _UNHAPPY or failed else code
        if args.no_wait and not args.json and not _settled(run.task):
            _out(client, run.task.id)  # for a script: id=$(toolnexus send URL TEXT --no-wait)
            say(
                f"(follow it with: toolnexus task resubscribe {args.url} {run.task.id})",
                file=sys.stderr,
            )
        else:
            _report(args, client, run.task, run.live, saved)
    if args.trace:
        _trace(client)
    return code


def _sending(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """What ``send`` sends: the text (or an empty message, for data or files alone) and the
    keywords of ``A2AClient.send``; each flag it cannot use is a usage error."""
    if args.again and (args.context or args.task):
        raise UsageError(
            "--continue goes on with the last conversation; --context and --task name one: choose"
        )
    if args.no_wait and args.stream:
        raise UsageError("--no-wait returns at once and --stream follows the task: choose one")
    if args.text is None and not (args.data or args.file):
        raise UsageError("send needs the message's TEXT (or --data or --file)")
    where = Path(args.save_artifacts).expanduser() if args.save_artifacts else None
    if where is not None and where.exists() and not where.is_dir():
        raise UsageError(f"--save-artifacts {args.save_artifacts}: that is a file, not a folder")
    parts = []
    for value in args.data:
        try:
            parts.append(tn.Part.of_data(json.loads(value)))
        except ValueError as exc:
            raise UsageError(f"--data {printable(value, 40)}: not JSON ({exc})") from None
    try:
        parts += [tn.Part.of_file(path) for path in args.file]
    except ValueError as exc:
        raise UsageError(f"--file: {exc}") from None
    context, task = args.context, args.task
    if args.again:
        last = _last_sent(args.url)
        if last is None:
            raise UsageError(
                f"--continue: nothing was sent to {args.url} from here yet; send without it first"
            )
        context, task = last.get("context"), last.get("task") if last.get("waiting") else None
    text = args.text if args.text is not None else tn.Message("user", [])
    return text, {
        "skill": args.skill,
        "context_id": context,
        "task_id": task,
        "files": parts,
        "accepted_output_modes": args.accept,
    }


def _settled(task: Any) -> bool:
    """Finished, or waiting for an answer: nothing more comes of following it now."""
    return bool(task.state.terminal or task.state.interrupted)


def _state_dir() -> Path:
    """Where the command keeps what it remembers between runs: ``$TOOLNEXUS_STATE_DIR``, else
    ``$XDG_STATE_HOME/toolnexus`` (``~/.local/state/toolnexus``)."""
    if os.environ.get("TOOLNEXUS_STATE_DIR"):
        return Path(os.environ["TOOLNEXUS_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "toolnexus"


LAST_SENT = "last-sent-v1.json"
"""Per agent URL, the context and task ``send`` last had with it (``send --continue``)."""
KEEP_PEERS = 200
"""The agents remembered at most, the latest kept."""


def _last_sent(url: str) -> dict[str, Any] | None:
    """What ``send`` last had with ``url`` from this machine (None: nothing, or unreadable)."""
    try:
        known = json.loads((_state_dir() / LAST_SENT).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    last = known.get(url) if isinstance(known, dict) else None
    return last if isinstance(last, dict) and isinstance(last.get("context"), str) else None


def _remember(url: str, task: Any) -> None:
    """Keep ``task``'s context (and its id, when it waits for an answer) as the last conversation
    with ``url``; a state folder that cannot be written is said, never fatal."""
    if not task.context_id:
        return
    folder = _state_dir()
    try:
        known = json.loads((folder / LAST_SENT).read_text("utf-8"))
    except (OSError, ValueError):
        known = {}
    known = {k: v for k, v in (known.items() if isinstance(known, dict) else ()) if k != url}
    known[url] = {"context": task.context_id, "task": task.id, "waiting": task.state.interrupted}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_whole(folder / LAST_SENT, json.dumps(dict(list(known.items())[-KEEP_PEERS:])))
    except OSError as exc:
        say(
            f"toolnexus: warning: cannot remember this conversation ({folder}: {exc.strerror or exc}); --continue will not find it",
            file=sys.stderr,
        )


def _save(args: argparse.Namespace, task: Any) -> tuple[Any, bool]:
    """``--save-artifacts``: the task's artifacts written (what was written, or None), and whether
    writing failed (said in one line)."""
    if not getattr(args, "save_artifacts", None):
        return None, False
    try:
        return task.save_artifacts(args.save_artifacts), False
    except OSError as exc:
        say(
            f"toolnexus: --save-artifacts {args.save_artifacts}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return None, True


async def _talking(
    args: argparse.Namespace,
    client: Any,
    run: _Following | None,
    work: Callable[[], Coroutine[Any, Any, None]],
) -> int:
    """``work`` with a connected client: a peer's error, or a task followed past ``--timeout``, one
    line on stderr and exit 1; the client's warnings said, the client closed."""
    try:
        await client.connect()
        await work()
    except (tn.PeerError, tn.RPCError) as exc:
        _out(client, f"toolnexus: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except TimeoutError:
        state = run.task.state.value if run is not None and run.task else "unknown"
        _out(
            client,
            f"toolnexus: the task was still {state} after {args.timeout:g}s",
            file=sys.stderr,
        )
        return EXIT_ERROR
    finally:
        for warning in client.warnings:
            if run is None or warning not in run.told:  # not said twice
                _out(client, f"toolnexus: warning: {warning}", file=sys.stderr)
        await client.aclose()
    return EXIT_OK


async def _task(args: argparse.Namespace) -> int:
    """``toolnexus task get|cancel|list|resubscribe``."""
    follows = args.verb == "resubscribe"
    client = _client(args, PER_REQUEST if follows else args.timeout)
    run = _Following(args, client)
    listing: dict[str, Any] = {}

    async def work() -> None:
        if args.verb == "get":
            run.task = await client.get(args.id, args.history)
        elif args.verb == "cancel":
            run.task = await client.cancel(args.id)
        elif follows:
            try:
                await run.streamed(client.resubscribe(args.id), settle=True)
            except UnsupportedOperationError as exc:  # it ended already, or the peer cannot stream
                if run.task is not None:
                    raise
                client.warnings.append(f"{exc}: read with GetTask instead")
                await run.streamed(client.follow(args.id, stream=False, poll_every=0.25))
        else:
            state = tn.TaskState(args.state) if args.state else None
            listing.update(
                await client.list_tasks(
                    context_id=args.context,
                    state=state,
                    page_size=args.page_size,
                    page_token=args.page_token,
                )
            )

    code = await _talking(args, client, run, work)
    if listing:
        _listed(args, client, listing)
    elif run.task is not None:
        if not follows:
            _progress(args, run.task)
        if args.verb != "cancel" and run.task.state in _UNHAPPY:
            code = EXIT_ERROR
        _report(args, client, run.task, run.live, None)
    if args.trace:
        _trace(client)
    return code


def _listed(args: argparse.Namespace, client: Any, listing: dict[str, Any]) -> None:
    """``task list``'s page: a line a task (JSON: one object), and where the next page starts."""
    tasks, token = listing["tasks"], listing["next_page_token"]
    if args.json:
        print(
            json.dumps(
                {
                    "tasks": [render_task(t, Dialect.V03) for t in tasks],
                    "next_page_token": token,
                    "total_size": listing["total_size"],
                }
            )
        )
        return
    for task in tasks:
        asked = task.request or next((m.text for m in task.history if m.role == "user"), "")
        _out(
            client,
            f"{task.state.value:<14} {task.id}  {task.context_id}  "
            + printable(asked.replace("\n", " "), 60),
        )
    if not tasks:
        say("no tasks", file=sys.stderr)
    if token:
        say(
            f"more: toolnexus task list {args.url} --page-token {printable(token, 200)}",
            file=sys.stderr,
        )


async def _push(args: argparse.Namespace) -> int:
    """``toolnexus push set|get|list|delete``."""
    setting: dict[str, Any] = {}
    if args.verb == "set":
        if not args.webhook.startswith(("http://", "https://")):
            raise UsageError(
                f"the webhook must be an http:// or https:// URL, not {args.webhook!r}"
            )
        if bool(args.auth_scheme) != bool(args.credentials_env):
            raise UsageError("--auth-scheme and --credentials-env go together")
        setting = {
            "config_id": args.id,
            "token": _env_secret("--token-env", args.token_env) if args.token_env else None,
            "scheme": args.auth_scheme,
            "credentials": _env_secret("--credentials-env", args.credentials_env)
            if args.credentials_env
            else None,
        }
    client = _client(args, args.timeout)
    configs: list[Any] = []

    async def work() -> None:
        if args.verb == "set":
            configs.append(await client.set_push(args.task, args.webhook, **setting))
        elif args.verb == "get":
            configs.append(await client.get_push(args.task, args.config))
        elif args.verb == "list":
            configs.extend(await client.list_push(args.task))
        else:
            await client.delete_push(args.task, args.config)

    code = await _talking(args, client, None, work)
    if code == EXIT_OK:
        _pushed(args, client, configs)
    if args.trace:
        _trace(client)
    return code


def _pushed(args: argparse.Namespace, client: Any, configs: list[Any]) -> None:
    """What ``push`` did: each config (its token and credentials never shown), or the deletion."""
    shown = [
        {
            "id": c.id,
            "task": c.task_id,
            "url": c.url,
            "token": bool(c.token),
            "scheme": c.scheme,
        }
        for c in configs
    ]
    if args.json:
        if args.verb == "delete":
            print(json.dumps({"deleted": args.config, "task": args.task}))
        else:
            print(json.dumps({"configs": shown} if args.verb == "list" else shown[0]))
        return
    if args.verb == "delete":
        say(f"deleted push config {printable(args.config)} of task {printable(args.task)}")
    for c in shown:
        _out(
            client,
            f"{c['id']}  {c['url']}"
            + ("  (token set)" if c["token"] else "")
            + (f"  (auth {c['scheme']})" if c["scheme"] else ""),
        )
    if args.verb == "list" and not shown:
        say(f"task {printable(args.task)} has no push config", file=sys.stderr)


def _client(args: argparse.Namespace, timeout: float = PER_REQUEST) -> Any:
    """The client the command's flags describe (not yet connected), each request given
    ``timeout`` seconds; a flag it cannot use is a usage error."""
    headers = _headers(args.header)
    basic = None
    if args.basic_env:
        user, colon, password = _env_secret("--basic-env", args.basic_env).partition(":")
        if not colon or not user:
            raise UsageError(f"--basic-env {args.basic_env}: must hold user:password")
        basic = (user, password)
    try:
        return tn.A2AClient(
            args.url,
            basic=basic,
            headers=headers,
            dialect=args.dialect,
            secret_headers=tuple(headers),
            binding=args.binding,
            record=args.record,
            tenant=args.tenant,
            extensions=args.extension,
            timeout=timeout,
            **_credentials(args),
        )
    except OSError as exc:
        raise UsageError(f"--record {args.record}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a binding the dialect has not, a certificate that will not load
        raise UsageError(str(exc)) from None


def _out(client: Any, text: str, **kwargs: Any) -> None:
    """A line from a peer's answer: the headers' secrets masked, even in what the peer echoes."""
    say(client.traffic.mask(text), **kwargs)


class _Following:
    """A task followed to its end (or a question), streamed or polled; :attr:`task` is the latest
    seen, also when following stops early (``--timeout``). Its words are printed as they come
    (:attr:`live`), or with ``--json`` a line per event: ``state`` when it moves, ``text`` with
    each new piece of the reply (``restart`` when the text started over)."""

    def __init__(self, args: argparse.Namespace, client: Any) -> None:
        self.args, self.client = args, client
        self.task: Any = None
        self.told: set[str] = set()
        """Warnings already said (before the message was sent)."""
        self.live = (
            None if args.json else _LiveReply(client.traffic.mask, client.traffic.secret_values)
        )

    async def streamed(self, frames: Any, *, settle: bool = False) -> None:
        """Each snapshot the peer streams; for ``--timeout`` at most (a peer may stream forever);
        ``settle``: until the task is over or asks (the official server keeps a subscription to
        an input-required task open)."""
        async with asyncio.timeout(self.args.timeout), contextlib.aclosing(frames):
            async for snapshot in frames:
                changed = self.task is None or snapshot.state is not self.task.state
                if self.args.json:
                    self._events(self.task, snapshot)
                elif changed and (self.live is None or not self.live.printed):
                    _progress(self.args, snapshot)  # a reply being printed is not cut by it
                self.task = snapshot
                if self.live is not None and not _settled(snapshot):
                    self.live.show(snapshot.said)  # in any unfinished state (Strands' submitted)
                if settle and _settled(snapshot):
                    return

    def _events(self, before: Any, now: Any) -> None:
        ids = {"task": now.id, "context": now.context_id}
        if before is None or now.state is not before.state:
            _json_line({"event": "state", **ids, "state": now.state.value})
        said, was = (
            self.client.traffic.mask(now.said),
            self.client.traffic.mask(before.said if before is not None else ""),
        )
        if said != was:
            fresh = said.startswith(was)
            piece = {"text": said[len(was) :]} if fresh else {"text": said, "restart": True}
            _json_line({"event": "text", **ids, **piece})

    async def sent(self, text: Any, sending: dict[str, Any]) -> None:
        """Sent, then watched (SSE where the peer streams, else polled) for ``--timeout``."""
        self.task = await self.client.send(text, **sending)
        _progress(self.args, self.task)
        if _settled(self.task):
            return
        async with asyncio.timeout(self.args.timeout):
            async for ev in self.client.watch(self.task.id, poll_every=0.25, max_interval=2.0):
                if ev.state is not self.task.state:
                    _progress(self.args, ev.task)
                self.task = ev.task


def _json_line(data: dict[str, Any]) -> None:
    print(json.dumps(data), flush=True)


def _report(
    args: argparse.Namespace, client: Any, task: Any, live: _LiveReply | None, saved: Any
) -> None:
    """The task a command ended with: as JSON, or its reply, its question or its failure; and
    the artifacts ``--save-artifacts`` wrote."""
    if args.json:
        out: dict[str, Any] = {
            "event": "task",
            "dialect": client.dialect.value if client.dialect else None,
            "binding": client.binding,
            "dialect_reason": client.dialect_reason,
            "activated": client.activated,
            "task": render_task(task, Dialect.V03),
        }
        if saved is not None:
            out["saved"] = {
                "folder": str(saved.folder),
                "files": [str(f) for f in saved.files],
                "renamed": saved.renamed,
                "skipped": saved.skipped,
            }
        _json_line(out)
        return
    if saved is not None:
        say(f"saved {saved.summary()}", file=sys.stderr)
    # a question with no message of its own asks with the words before it (Gemini CLI)
    asked_by_words = task.state.interrupted and task.status.message is None
    if live is not None and live.printed:
        live.end(task.reply if task.state is tn.TaskState.COMPLETED or asked_by_words else None)
        _progress(args, task)
    if task.state is tn.TaskState.COMPLETED:
        if live is None or not live.printed:  # else said as it came (and corrected)
            _out(client, task.reply)
        for part in task.file_parts:  # named, never shown: the peer's bytes stay as sent
            _out(client, f"[{part.label}]")
    elif task.state.interrupted:
        question = task.status.message.text if task.status.message else ""
        if asked_by_words and (live is None or not live.printed):
            question = task.reply
        hint = f"(answer with: toolnexus send {args.url} ANSWER --task {task.id})"
        _out(client, f"{question}\n{hint}" if question else hint)
    else:
        detail = task.status.message.text if task.status.message else ""
        _out(
            client,
            f"task {task.id} {task.state.value}" + (f": {detail}" if detail else ""),
            file=sys.stderr,
        )


def _trace(client: Any) -> None:
    """``--trace``: every exchange the client had, masked, on stderr."""
    for ev in client.traffic.events:
        _out(
            client,
            f"--> {ev.method} {ev.url} {ev.rpc_method or ''} [{ev.status}] {ev.ms:.1f} ms",
            file=sys.stderr,
        )
        for k, v in ev.request_headers.items():
            _out(client, f"    {k}: {v}", file=sys.stderr)
        if ev.request_body:
            _out(client, f"    {ev.request_body}", file=sys.stderr)
        _out(client, f"<-- {ev.response_body[:2000]}", file=sys.stderr)
        if _ended_before_followed(ev):
            _out(
                client,
                "    (expected, not a problem: the task had ended before the subscription "
                "reached the peer, so there was nothing to follow; it is read with GetTask)",
                file=sys.stderr,
            )


_SUBSCRIBE = {OPERATIONS["resubscribe"].v10, OPERATIONS["resubscribe"].v03}


def _ended_before_followed(ev: Any) -> bool:
    """Whether an exchange is a subscription to a task the peer refused because the task had
    already ended (``UnsupportedOperation``, in any binding's spelling): the client reads the
    finished task next, as it should. A quick task ends so before ``send`` can follow it."""
    if ev.rpc_method not in _SUBSCRIBE:
        return False
    body = ev.response_body
    return UnsupportedOperationError.reason in body or (
        f'"code":{UnsupportedOperationError.code}' in body.replace(" ", "")
    )


async def _replay(args: argparse.Namespace) -> int:
    from ..debug.mcp_replay import mcp_servers  # noqa: PLC0415  # start-up: this subcommand's

    try:
        tape = load(args.cassette)
        if args.mermaid:
            print(sequence(list(tape)), end="")
            return EXIT_OK
        mcp = mcp_servers(tape)
        if (args.peer is not None and args.peer in mcp) or (
            args.peer is None and mcp and set(tape.origins()) <= set(mcp)
        ):
            return await _replay_mcp(args, tape)
    except CassetteError as exc:
        raise UsageError(str(exc)) from None
    if args.stdio:
        raise UsageError("replay --stdio serves an MCP session's cassette; this one holds A2A")
    return await _replay_a2a(args, tape)


async def _replay_a2a(args: argparse.Namespace, tape: Any) -> int:
    from ..debug.replay import ReplayPeer, diff  # noqa: PLC0415  # start-up: this subcommand's

    try:
        if args.against:
            args.against = _peer(args.against)
            report = await diff(
                tape,
                args.against,
                headers=_headers(args.header),
                origin=args.peer,
                timeout=args.timeout,
            )
            return _replay_report(args, report)
        peer = ReplayPeer(tape, match=args.match, origin=args.peer)
    except CassetteError as exc:
        raise UsageError(str(exc)) from None
    return await _serve_replay(
        args,
        peer,
        lambda: f"replaying {len(peer.exchanges)} exchange(s) of {peer.origin} at {peer.url}",
        peer.origin,
        len(peer.exchanges),
    )


async def _replay_mcp(args: argparse.Namespace, tape: Any) -> int:
    """An MCP session's cassette: served over HTTP or stdio, or diffed against a live server."""
    from ..debug.mcp_replay import MCPReplay, mcp_diff  # noqa: PLC0415  # start-up: this subcommand's

    if args.against:
        target, env = _mcp_target(args.against, "replay --against")
        report = await mcp_diff(
            tape,
            target,
            headers=_headers(args.header),
            env=env,
            server=args.peer,
            timeout=args.timeout,
        )
        return _replay_report(args, report)
    replay = MCPReplay(tape, match=args.match, server=args.peer)
    if args.stdio:  # stdout is the protocol's: what the replay says goes to stderr
        say(
            f"replaying the MCP session of {replay.server} over stdio (match {replay.match})",
            file=sys.stderr,
        )
        await replay.serve_stdio()
        _replay_stopped(args, replay, sys.stderr)
        return EXIT_OK
    return await _serve_replay(
        args,
        replay,
        lambda: f"replaying the MCP session of {replay.server} at {replay.url}",
        replay.server,
        len(replay.tape.calls),
    )


def _replay_report(args: argparse.Namespace, report: Any) -> int:
    """What ``replay --against`` found (A2A's or MCP's ``ReplayReport``), as text or ``--json``;
    the exit code says whether anything changed."""
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        say(report.text())
    return EXIT_OK if report.ok else EXIT_ERROR


async def _serve_replay(
    args: argparse.Namespace, replay: Any, said: Callable[[], str], origin: str, exchanges: int
) -> int:
    """Serve a replay (A2A's ``ReplayPeer`` or MCP's ``MCPReplay``) on ``--host``/``--port`` until
    Ctrl-C: the started line (``said()`` once it listens), then what it answered and missed."""
    try:
        await replay.start(f"{args.host}:{args.port}")
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        ) from None
    _emit(
        args,
        f"{said()}  (match {replay.match})",
        {
            "event": "started",
            "url": replay.url,
            "origin": origin,
            "exchanges": exchanges,
            "match": replay.match,
        },
    )
    _emit(args, "press Ctrl-C to stop", {"event": "ready"})
    stop = _stop_on_signals()
    try:
        await stop.wait()
    finally:
        await replay.stop()
        _replay_stopped(args, replay, sys.stdout)
    return EXIT_OK


def _replay_stopped(args: argparse.Namespace, replay: Any, out: Any) -> None:
    misses = replay.misses
    if args.json:
        data = {"event": "stopped", "answered": len(replay.served), "unmatched": misses}
        print(json.dumps(data), file=out, flush=True)
        return
    say(
        f"stopped: {len(replay.served)} answered, {len(misses)} unmatched"
        + "".join(f"\n  unmatched: {printable(m, 200)}" for m in misses),
        file=out,
        flush=True,
    )


def _mcp_target(text: str, what: str) -> tuple[str | list[str], dict[str, str] | None]:
    """An MCP server from the command line: a URL, or a command line (``NAME=value`` words first)
    starting a stdio server: ``(target, env)``."""
    if text.startswith(("http://", "https://")):
        return text, None
    try:
        argv, env = split_command(text)
    except ValueError as exc:
        raise UsageError(f"{what}: the command line: {exc}") from None
    if not argv:
        raise UsageError(f"{what}: no command to run")
    return argv, env or None


class _LiveReply:
    """``send --stream``: a reply printed as it grows, each new piece as it comes (flushed, on a
    terminal or through a pipe alike), masked and made printable as every line from a peer is.
    While a secret could still be completing in its last characters, those wait for the next
    piece. A text that starts over says so and is printed again; the finished reply is the
    task's own artifact: when it differs from what was printed, it follows, whole, after a note."""

    def __init__(self, mask: Any, secrets: Any) -> None:
        self.mask = mask
        self.hold = max((len(v) for v in secrets), default=1) - 1
        self.printed = ""  # what of the reply is on the screen (masked)

    def show(self, text: str) -> None:
        shown = self.mask(text)
        ready = shown[: len(shown) - self.hold] if self.hold else shown
        if ready.startswith(self.printed):
            self._write(ready[len(self.printed) :])
        else:
            self._write("\n[the reply started over]\n" + ready)
        self.printed = ready

    def end(self, final: str | None) -> None:
        """The task ended: its answer (None: it did not complete) is what counts."""
        shown = self.mask(final) if final is not None else None
        if shown is not None and shown.startswith(self.printed):
            self._write(shown[len(self.printed) :] + "\n")
        elif shown is not None:
            self._write("\n[the finished reply, as the task keeps it]\n" + shown + "\n")
        else:
            self._write("\n[the reply was not finished]\n")

    @staticmethod
    def _write(text: str) -> None:
        if text:
            sys.stdout.write(printable(text))
            sys.stdout.flush()


def _progress(args: argparse.Namespace, task: Any) -> None:
    if not args.json:
        say(f"[{task.state.value}] task {task.id} context {task.context_id}", file=sys.stderr)
