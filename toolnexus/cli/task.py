"""``toolnexus task get|cancel|list|resubscribe``: an agent's tasks read, listed, canceled, followed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import toolnexus as tn

from ..display import printable
from ..errors import UnsupportedOperationError
from ..protocol.dialects import Dialect, render_task
from .following import _UNHAPPY, _Following, _progress, _report, _talking
from .options import _EVENTS, _command, _peer_options
from .output import EXIT_ERROR, say
from .peer import PER_REQUEST, _client, _out, _trace


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
