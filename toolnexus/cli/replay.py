"""``toolnexus replay``: a cassette served as the peer it recorded (A2A, or an MCP server over HTTP
or stdio), drawn as a diagram, or diffed against a live peer."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ..debug.cassette import CassetteError, load
from ..debug.diagram import sequence
from ..display import printable
from .options import _command, _header_option
from .output import EXIT_ERROR, EXIT_OK, UsageError, _cannot_listen, _emit, say
from .signals import _stop_on_signals
from .values import _headers, _mcp_target, _peer


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
    _header_option(r, "with --against: send this header (secrets were masked when recorded)")
    r.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="with --against: seconds per answer (default 30)",
    )
    r.add_argument("--json", action="store_true", help="print JSON")


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
            report = await diff(tape, args.against, origin=args.peer, **_asked(args))
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
        report = await mcp_diff(tape, target, env=env, server=args.peer, **_asked(args))
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


def _asked(args: argparse.Namespace) -> dict[str, Any]:
    """How ``replay --against`` asks the live peer (``--header``, ``--timeout``), the same for
    A2A's ``diff`` and MCP's ``mcp_diff``."""
    return {"headers": _headers(args.header), "timeout": args.timeout}


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
        raise _cannot_listen(args.host, args.port, exc) from None
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
