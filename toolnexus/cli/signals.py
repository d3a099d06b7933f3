"""Ctrl-C and SIGTERM as an event a subcommand waits for (``serve``, a replay, the client doctor)."""

from __future__ import annotations

import asyncio
import signal


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
