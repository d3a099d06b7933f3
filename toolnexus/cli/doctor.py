"""``toolnexus doctor``: an A2A agent probed (which clients work with it, and the fix), an MCP
server probed (``--mcp``), or a client judged against a strict local agent (``--client``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from ..debug.cassette import CassetteWriter
from ..debug.doctor import doctor
from ..debug.report import printer
from .options import _command, _fail_on, _header_option
from .output import EXIT_ERROR, EXIT_OK, UsageError, _cannot_listen, say
from .signals import _stop_on_signals
from .values import _headers, _mcp_target


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
    _header_option(d)
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
        raise _cannot_listen("127.0.0.1", args.port, exc) from None
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
