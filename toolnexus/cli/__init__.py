"""The ``toolnexus`` command: ``serve`` a toolkit; output for people or, with ``--json``, for scripts.

Exit codes: 0 success, 1 a peer or runtime error, 2 a usage error (bad flags, bad config, port in use),
130 Ctrl-C (``serve`` and ``replay`` stop on it: 0).

Here the subcommands are parsed and dispatched; each has a module (its parser and what it does:
``serve.py``, ``send.py``, ...) over what they share (``options``, ``peer``, ``following``, ...)
and ``output`` (the exit codes, ``UsageError``, ``say``). A name with a leading underscore is the
package's own: its modules import it from one another, nothing outside does (``main`` is the one
public name; the tests read ``_parser`` and ``serve_flags.SERVE_FLAGS``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import textwrap
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

import toolnexus as tn

from ..http.server import new_event_loop
from .audit import _audit, _audit_parser
from .card import _card, _card_parser
from .doctor import _client_doctor, _doctor, _doctor_parser
from .mcp import _mcp, _mcp_parser
from .output import EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from .push import _push, _push_parser
from .replay import _replay, _replay_parser
from .send import _send, _send_parser
from .serve import _serve, _serve_parser
from .task import _task, _task_parser
from .values import _peer

__all__ = ["main"]


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
            "Exit codes: 0 success, 1 a peer or task error, 2 a usage error, 130 Ctrl-C (serve and "
            "replay stop on it: 0).",
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


_RUNS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "serve": _serve,
    "mcp": _mcp,
    "card": _card,
    "doctor": _doctor,
    "send": _send,
    "task": _task,
    "push": _push,
    "replay": _replay,
}
"""What each subcommand runs on the loop, by its name."""


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


def _one_run(words: list[str], argv: list[str]) -> bool:
    """Whether ``words`` (what argparse left unknown) are no flag and stand together in ``argv``:
    send's message typed after its flags, which argparse does not give it (a positional taking
    any number of words takes none as it reads the URL before them)."""
    n = len(words)
    return (
        n > 0
        and not any(w.startswith("-") for w in words)
        and any(argv[i : i + n] == words for i in range(len(argv) - n + 1))
    )


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    if args.command == "send" and not args.text and _one_run(extra, given):
        args.text, extra = extra, []  # after the flags (send URL --stream "greet Ada")
    if extra:  # send's words cut by a flag (send URL weather --stream in Oslo): say how to type it
        words = [*getattr(args, "text", []), *extra]
        quote = (
            f'; the message\'s words go together, quoted: "{" ".join(words)}"'
            if args.command == "send" and not any(w.startswith("-") for w in extra)
            else ""
        )
        parser.error(f"unrecognized arguments: {' '.join(extra)}{quote}")
    args.argv = given  # what a worker of --workers is started with
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

        if args.command == "audit":  # a file read: no loop
            return _audit(args)
        return _run(_RUNS[args.command](args))
    except (UsageError, tn.ConfigError) as exc:  # a config that cannot be used: a usage error
        print(f"toolnexus: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
