"""``toolnexus serve``: a toolkit served as an A2A agent (and MCP at ``/mcp``) until Ctrl-C or
SIGTERM, which drain what runs."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
from typing import Any

import toolnexus as tn

from ..errors import MissingExtra
from ..hosting import DEMO_DESCRIPTION, build_client
from ..http.server import ConnectionShare, raise_fd_limit, serving_gc
from ..serve.config import connection_limit
from ..stores import KeepsEnded, kind_of
from .announce import _announce, _follow_tasks
from .options import _command, _toolkit_options
from .output import EXIT_OK, UsageError, _cannot_listen, _emit
from .serve_flags import SERVE_FLAGS, _names
from .signals import _stop_on_signals
from .toolkit import _toolkit
from .workers import _supervise

DEMO_NAME = "demo-desk"


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
        raise _cannot_listen(args.host, args.port, exc) from None
    except (tn.ConfigError, MissingExtra) as exc:
        raise UsageError(str(exc)) from None


def _addr(value: str, host: str) -> str:
    """``[HOST:]PORT`` as ``host:port`` (the serve host when none is given)."""
    return value if ":" in value else f"{host}:{value}"


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
