"""``serve --workers N``: one socket, N worker processes on it sharing one limit of connections,
a worker that dies started again, all of them drained on Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import sys
import tempfile
from typing import Any

from ..http.server import ConnectionShare, FdLimit, http_url, listening_socket
from ..secrets import mask_url
from ..serve.metrics import MULTIPROC_ENV
from ..stores import Shared, kind_of
from .announce import _say_connections
from .output import EXIT_OK, UsageError, _cannot_listen, _emit
from .serve_flags import _forms, _names
from .signals import _stop_on_signals


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
        raise _cannot_listen(args.host, args.port, exc) from None
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
