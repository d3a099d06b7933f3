"""A task followed to its end (``send``, ``task``): streamed or polled, its reply printed as it
grows, the task it ended with reported, a peer's error or a timeout said in one line."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import toolnexus as tn

from ..display import printable
from ..protocol.dialects import Dialect, render_task
from .output import EXIT_ERROR, EXIT_OK, _json_line, say
from .peer import _out

_UNHAPPY = (tn.TaskState.FAILED, tn.TaskState.CANCELED, tn.TaskState.REJECTED)
"""The states a task ends in that make ``send`` (and ``task get``, ``task resubscribe``) exit 1."""


def _settled(task: Any) -> bool:
    """Finished, or waiting for an answer: nothing more comes of following it now."""
    return bool(task.state.terminal or task.state.interrupted)


def _progress(args: argparse.Namespace, task: Any) -> None:
    if not args.json:
        say(f"[{task.state.value}] task {task.id} context {task.context_id}", file=sys.stderr)


async def _talking(
    args: argparse.Namespace,
    client: Any,
    run: _Following | None,
    work: Callable[[], Coroutine[Any, Any, None]],
) -> int:
    """``work`` with a connected client: a peer's error, or a task followed past ``--timeout``, one
    line on stderr and exit 1; the client's warnings said, the client closed."""
    live = run.live if run is not None else None
    tell = live.tell if live is not None else lambda line: _out(client, line, file=sys.stderr)
    try:
        await client.connect()
        await work()
    except (tn.PeerError, tn.RPCError) as exc:
        tell(f"toolnexus: {exc}")
        return EXIT_ERROR
    except TimeoutError:
        state = run.task.state.value if run is not None and run.task else "unknown"
        tell(f"toolnexus: the task was still {state} after {args.timeout:g}s")
        return EXIT_ERROR
    except BaseException:  # Ctrl-C, or no peer's error: the reply is not reported, so it ends here
        if live is not None:
            live.cut()
        raise
    finally:
        for warning in client.warnings:
            if run is None or warning not in run.told:  # not said twice
                tell(f"toolnexus: warning: {warning}")
        await client.aclose()
    return EXIT_OK


class _Following:
    """A task followed to its end (or a question), streamed or polled; :attr:`task` is the latest
    seen, also when following stops early (``--timeout``). Its words are printed as they come
    (:attr:`live`), or with ``--json`` a line per event: ``state`` when it moves, ``text`` with
    each new piece of the reply (``restart`` when the text started over)."""

    def __init__(self, args: argparse.Namespace, client: Any) -> None:
        self.args, self.client = args, client
        self.task: Any = None
        self.told: set[str] = set()
        """Warnings already said (before the message was sent)."""
        self.live = (
            None if args.json else _LiveReply(client.traffic.mask, client.traffic.secret_values)
        )

    async def streamed(self, frames: Any, *, settle: bool = False) -> None:
        """Each snapshot the peer streams; for ``--timeout`` at most (a peer may stream forever);
        ``settle``: until the task is over or asks (the official server keeps a subscription to
        an input-required task open)."""
        async with asyncio.timeout(self.args.timeout), contextlib.aclosing(frames):
            async for snapshot in frames:
                changed = self.task is None or snapshot.state is not self.task.state
                if self.args.json:
                    self._events(self.task, snapshot)
                elif changed and (self.live is None or not self.live.printed):
                    _progress(self.args, snapshot)  # a reply being printed is not cut by it
                self.task = snapshot
                if self.live is not None and not _settled(snapshot):
                    self.live.show(snapshot.said)  # in any unfinished state (Strands' submitted)
                if settle and _settled(snapshot):
                    return

    def _events(self, before: Any, now: Any) -> None:
        ids = {"task": now.id, "context": now.context_id}
        if before is None or now.state is not before.state:
            _json_line({"event": "state", **ids, "state": now.state.value})
        said, was = (
            self.client.traffic.mask(now.said),
            self.client.traffic.mask(before.said if before is not None else ""),
        )
        if said != was:
            fresh = said.startswith(was)
            piece = {"text": said[len(was) :]} if fresh else {"text": said, "restart": True}
            _json_line({"event": "text", **ids, **piece})

    async def sent(self, text: Any, sending: dict[str, Any]) -> None:
        """Sent, then watched (SSE where the peer streams, else polled) for ``--timeout``."""
        self.task = await self.client.send(text, **sending)
        _progress(self.args, self.task)
        if _settled(self.task):
            return
        async with asyncio.timeout(self.args.timeout):
            async for ev in self.client.watch(self.task.id, poll_every=0.25, max_interval=2.0):
                if ev.state is not self.task.state:
                    _progress(self.args, ev.task)
                self.task = ev.task


def _report(
    args: argparse.Namespace, client: Any, task: Any, live: _LiveReply | None, saved: Any
) -> None:
    """The task a command ended with: as JSON, or its reply, its question or its failure; and
    the artifacts ``--save-artifacts`` wrote."""
    if args.json:
        out: dict[str, Any] = {
            "event": "task",
            "dialect": client.dialect.value if client.dialect else None,
            "binding": client.binding,
            "dialect_reason": client.dialect_reason,
            "activated": client.activated,
            "task": render_task(task, Dialect.V03),
        }
        if saved is not None:
            out["saved"] = {
                "folder": str(saved.folder),
                "files": [str(f) for f in saved.files],
                "renamed": saved.renamed,
                "skipped": saved.skipped,
            }
        _json_line(out)
        return
    if saved is not None:
        say(f"saved {saved.summary()}", file=sys.stderr)
    # a question with no message of its own asks with the words before it (Gemini CLI)
    asked_by_words = task.state.interrupted and task.status.message is None
    if live is not None and live.printed:
        live.end(task.reply if task.state is tn.TaskState.COMPLETED or asked_by_words else None)
        _progress(args, task)
    if task.state is tn.TaskState.COMPLETED:
        if live is None or not live.printed:  # else said as it came (and corrected)
            _out(client, task.reply)
        for part in task.file_parts:  # named, never shown: the peer's bytes stay as sent
            _out(client, f"[{part.label}]")
    elif task.state.interrupted:
        question = task.status.message.text if task.status.message else ""
        if asked_by_words and (live is None or not live.printed):
            question = task.reply
        hint = f"(answer with: toolnexus send {args.url} ANSWER --task {task.id})"
        _out(client, f"{question}\n{hint}" if question else hint)
    else:
        detail = task.status.message.text if task.status.message else ""
        _out(
            client,
            f"task {task.id} {task.state.value}" + (f": {detail}" if detail else ""),
            file=sys.stderr,
        )


class _LiveReply:
    """``send --stream``: a reply printed as it grows, each new piece as it comes (flushed, on a
    terminal or through a pipe alike), masked and made printable as every line from a peer is.
    While a secret could still be completing in its last characters, those wait for the next
    piece. A text that starts over says so and is printed again; the finished reply is the
    task's own artifact: when it differs from what was printed, it follows, whole, after a note.
    A line for stderr while the reply's line is on the screen unfinished (a stream that broke off
    and is polled: said when the command ends) waits for the reply's end, so that it is not
    spliced into the reply (stderr and stdout are often one terminal)."""

    def __init__(self, mask: Any, secrets: Any) -> None:
        self.mask = mask
        self.hold = max((len(v) for v in secrets), default=1) - 1
        self.printed = ""  # what of the reply is on the screen (masked)
        self.ended = False
        self.waiting: list[str] = []  # lines for stderr, said once the reply has ended

    def tell(self, line: str) -> None:
        """``line`` on stderr (masked, printable): now, or after the reply when it is mid-line."""
        if self.printed and not self.ended:
            self.waiting.append(line)
        else:
            say(self.mask(line), file=sys.stderr)

    def show(self, text: str) -> None:
        shown = self.mask(text)
        ready = shown[: len(shown) - self.hold] if self.hold else shown
        if ready.startswith(self.printed):
            self._write(ready[len(self.printed) :])
        else:
            self._write("\n[the reply started over]\n" + ready)
        self.printed = ready

    def end(self, final: str | None) -> None:
        """The task ended: its answer (None: it did not complete) is what counts."""
        shown = self.mask(final) if final is not None else None
        if shown is not None and shown.startswith(self.printed):
            self._write(shown[len(self.printed) :] + "\n")
        elif shown is not None:
            self._write("\n[the finished reply, as the task keeps it]\n" + shown + "\n")
        else:
            self._write("\n[the reply was not finished]\n")
        self._said()

    def cut(self) -> None:
        """Following stopped with no report (Ctrl-C): the reply's line ends, what waits is said."""
        if self.printed and not self.ended:
            self._write("\n")
        self._said()

    def _said(self) -> None:
        self.ended = True
        for line in self.waiting:
            say(self.mask(line), file=sys.stderr)
        self.waiting.clear()

    @staticmethod
    def _write(text: str) -> None:
        if text:
            sys.stdout.write(printable(text))
            sys.stdout.flush()
