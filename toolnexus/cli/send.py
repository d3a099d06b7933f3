"""``toolnexus send``: a message to any A2A agent, its task followed to the end (or its question)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import toolnexus as tn

from ..display import printable
from .following import _UNHAPPY, _Following, _progress, _report, _settled, _talking
from .last_sent import _last_sent, _remember
from .options import _EVENTS, _command, _peer_options
from .output import EXIT_ERROR, UsageError, say
from .peer import _client, _out, _trace


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
        nargs="*",
        help="the message to send: its words, joined by spaces (quote it where the shell would "
        "read a character: ' ? * ; & and the like; may be left out with --data or --file)",
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


async def _send(args: argparse.Namespace) -> int:
    text, sending, earlier = _sending(args)  # a mistake in what to send: said before it is sent
    client = _client(args)
    run = _Following(args, client)

    async def work() -> None:
        kept, notes = client.fitting(sending["files"], args.skill, args.accept)
        for note in notes:
            _out(client, f"toolnexus: warning: {note}", file=sys.stderr)  # before it is sent
            client.warn(note)
            run.told.add(note)
        if args.text is None and not kept:  # an empty message: the agent could only refuse it
            who = f"the skill {args.skill}" if args.skill else "the agent"
            raise UsageError(f"nothing left to send: {who} takes none of the parts; nothing sent")
        if earlier is not None:  # --continue: its task answered if it waits now (not when sent)
            sending["task_id"] = await _waiting(client, earlier)
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


async def _waiting(client: Any, task_id: str) -> str | None:
    """``task_id`` when the task waits for an answer now, as the peer says (GetTask), else None
    (it went on, ended, or the peer no longer knows it): ``--continue`` answers it, or goes on in
    its conversation with a new task."""
    try:
        task = await client.get(task_id, 0)
    except (tn.PeerError, tn.RPCError):
        return None
    return task.id if task.state.interrupted else None


def _sending(args: argparse.Namespace) -> tuple[Any, dict[str, Any], str | None]:
    """What ``send`` sends: the text (or an empty message, for data or files alone), the
    keywords of ``A2AClient.send``, and with ``--continue`` the last task sent to this agent
    (answered if it waits, :func:`_waiting`); each flag it cannot use is a usage error."""
    args.text = " ".join(args.text) or None  # words typed unquoted, as %toolnexus send takes them
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
    context, task, earlier = args.context, args.task, None
    if args.again:
        last = _last_sent(args.url)
        if last is None:
            raise UsageError(
                f"--continue: nothing was sent to {args.url} from here yet; send without it first"
            )
        context, earlier = last.get("context"), last.get("task")
        earlier = earlier if isinstance(earlier, str) else None
    text = args.text if args.text is not None else tn.Message("user", [])
    return (
        text,
        {
            "skill": args.skill,
            "context_id": context,
            "task_id": task,
            "files": parts,
            "accepted_output_modes": args.accept,
        },
        earlier,
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
