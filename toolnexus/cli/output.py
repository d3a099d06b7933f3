"""What every subcommand says and how it ends: the exit codes, the usage error (one line, exit 2),
a peer's text made printable, ``serve``'s lines and JSON lines written whole."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..display import printable

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130
"""Ctrl-C ended a command that does not stop on it as its end (``serve`` and ``replay`` do, and say
``stopped``): 128 + SIGINT, as a shell reports a command that Ctrl-C ended."""


class UsageError(Exception):
    """A mistake in the command line; printed as one line, exit code 2."""


def _cannot_listen(host: str, port: int, exc: OSError) -> UsageError:
    """The address the command line gives cannot be listened on (in use, not this machine's)."""
    return UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


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


def _json_line(data: dict[str, Any]) -> None:
    print(json.dumps(data), flush=True)
