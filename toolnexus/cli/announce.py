"""What ``serve`` says: where it serves and what, how many connections it holds, and a line for
each transition of a task it serves."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import toolnexus as tn

from ..display import printable
from ..hosting import DEMO_ASK
from ..http.guard import is_loopback
from ..http.server import FdLimit, accept_queue
from .output import _emit


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


async def _follow_tasks(args: argparse.Namespace, handle: Any) -> None:
    """A line for each transition of a task this process serves (a worker: its own)."""
    worker = args.worker_index
    async for ev in handle.events.subscribe(
        replay=False,
        heard=worker is None,  # a worker: its own
        kinds=("task",),  # not woken for each piece of a reply, nor is one made for it
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
