"""The canonical A2A model: the only shapes code outside ``toolnexus.protocol`` sees.

Dialects (v0.3, v1.0, toolnexus legacy) exist only at the edge, in ``dialects.py``. Here a task
has a state from :class:`TaskState`, and :data:`LEGAL` says which moves between states are allowed;
a terminal state never changes.
"""

from __future__ import annotations

import enum
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from ..display import badge, e, plural, to_dataframe
from . import files
from .tracecontext import TraceContext

__all__ = [
    "add_words",
    "TaskState",
    "TERMINAL",
    "MAX_VALUE_DEPTH",
    "INTERRUPTED",
    "LEGAL",
    "Part",
    "Message",
    "Artifact",
    "TaskStatus",
    "Task",
    "now_iso",
    "iso_utc",
    "new_id",
    "is_legal",
]


class TaskState(str, enum.Enum):
    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    CANCELED = "canceled"
    FAILED = "failed"
    REJECTED = "rejected"
    UNKNOWN = "unknown"

    terminal: bool
    """The task ends in this state (completed, canceled, failed, rejected): it never changes again."""
    interrupted: bool
    """The task waits in this state for its caller (input or authorization required)."""

    def __str__(self) -> str:
        return self.value


TERMINAL = frozenset(
    {TaskState.COMPLETED, TaskState.CANCELED, TaskState.FAILED, TaskState.REJECTED}
)
INTERRUPTED = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})


def _mark_states() -> None:
    """Each state's ``terminal`` and ``interrupted``, as plain attributes (a property was a call,
    and they are read on every move, many times a task)."""
    for state in TaskState:
        state.terminal, state.interrupted = state in TERMINAL, state in INTERRUPTED


_mark_states()
MAX_VALUE_DEPTH = 24
"""The deepest a free-form value a caller stores may nest (a message's or part's ``metadata``, a
data part's ``data``): what every binding can answer with. gRPC carries these as protobuf
``Struct``s, which the official decoders refuse past about 32 levels inside a task."""

LEGAL: dict[TaskState | None, frozenset[TaskState]] = {
    None: frozenset({TaskState.SUBMITTED}),
    TaskState.SUBMITTED: frozenset(
        {TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED, TaskState.REJECTED}
    ),
    TaskState.WORKING: frozenset(
        {
            TaskState.COMPLETED,
            TaskState.FAILED,
            TaskState.CANCELED,
            TaskState.REJECTED,  # "or later once an agent has determined it ... won't proceed"
            TaskState.INPUT_REQUIRED,
            TaskState.AUTH_REQUIRED,
        }
    ),
    TaskState.INPUT_REQUIRED: frozenset({TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED}),
    TaskState.AUTH_REQUIRED: frozenset({TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED}),
}
"""Every legal move: state before -> states after. Terminal states have no entry: they never change."""


def is_legal(before: TaskState | None, after: TaskState) -> bool:
    return after in LEGAL.get(before, frozenset())


def iso_utc(moment: datetime) -> str:
    """An aware time in UTC, as every toolnexus timestamp is written: ``2026-11-30T08:13:48.403420Z``
    (one form, so that stored timestamps compare as strings)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


_second: tuple[int, str] = (-1, "")  # the last whole second written, and its text


def now_iso() -> str:
    """The current UTC time as ``2026-11-30T08:13:48.403420Z`` (the :func:`iso_utc` form; a
    server stamps every transition with it, so the text of the second is made once a second)."""
    global _second
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    if seconds != _second[0]:
        _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    return f"{_second[1]}.{nanos // 1000:06d}Z"


_ids: list[str] = []  # ready ids, taken with an atomic pop (threads); emptied in a forked child
os.register_at_fork(
    after_in_child=_ids.clear
)  # a worker of --workers must never repeat its parent's


def new_id() -> str:
    """A random (version 4) UUID as text, from the operating system's secure source: a task id is
    all a caller needs to read or cancel the task when callers are not told apart. The bytes of
    64 ids are read at once (one system call, not one per id: a task takes four or five)."""
    while True:
        try:
            return _ids.pop()
        except IndexError:
            pool = os.urandom(16 * 64).hex()
            _ids.extend(
                f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"
                for h in (pool[i : i + 32] for i in range(0, len(pool), 32))
            )


@dataclass(slots=True)
class Part:
    """One piece of content: ``text``, ``data`` (any JSON) or ``file`` (``raw`` base64 or ``url``)."""

    kind: Literal["text", "data", "file"]
    text: str | None = None
    data: Any = None
    raw: str | None = None
    url: str | None = None
    media_type: str | None = None
    filename: str | None = None
    metadata: dict[str, Any] | None = None

    @classmethod
    def of_text(cls, text: str) -> Part:
        return cls("text", text=text)

    @classmethod
    def of_data(cls, data: Any) -> Part:
        """Structured content: any JSON value."""
        return cls("data", data=data)

    @classmethod
    def of_file(cls, path: str | os.PathLike[str], media_type: str | None = None) -> Part:
        """A local regular file, inline (base64), with its name and media type (guessed from the
        name unless given); at most 10 MiB, else ``ValueError`` says why."""
        raw, kind, name = files.read_file(path, media_type=media_type)
        return cls("file", raw=raw, media_type=kind, filename=name)

    @property
    def label(self) -> str:
        """A file or data part in one short line for a person (escape it before markup): a file's
        name, media type and size, or its URL; data as the start of its JSON. Nothing the peer
        sent is decoded or interpreted. A text part: its text."""
        if self.kind == "text":
            return self.text or ""
        if self.kind == "data":
            text = json.dumps(self.data, ensure_ascii=False)
            return "data " + (text if len(text) <= 80 else text[:79] + "…")
        name = self.filename or "(no name)"
        if self.raw is not None:
            return f"file {name} ({self.media_type or '?'}, {_size(files.raw_size(self.raw))})"
        return f"file {name} linked at {self.url}"

    def as_text(self) -> str:
        """The part as prompt text: data as JSON, files as a one-line mention."""
        if self.kind == "text":
            return self.text or ""
        if self.kind == "data":
            return json.dumps(self.data, ensure_ascii=False)
        label = self.filename or self.url or "file"
        return f"[file: {label}{f' ({self.media_type})' if self.media_type else ''}]"


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 2**20 else f"{n / 2**20:.1f} MiB"


@dataclass(slots=True)
class Message:
    role: Literal["user", "agent"]
    parts: list[Part]
    message_id: str = field(default_factory=new_id)
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    reference_task_ids: list[str] | None = None
    extensions: list[str] | None = None
    """The URIs of the extensions the message is part of (§4.6), kept as sent."""

    @property
    def text(self) -> str:
        """The text of every part, joined by newlines."""
        return "\n".join(p.as_text() for p in self.parts)

    @classmethod
    def agent(cls, text: str, context_id: str | None = None, task_id: str | None = None) -> Message:
        return cls("agent", [Part.of_text(text)], context_id=context_id, task_id=task_id)


@dataclass(slots=True)
class Artifact:
    parts: list[Part]
    artifact_id: str = field(default_factory=new_id)
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None
    """The URIs of the extensions the artifact is part of (§4.6), kept as made."""

    @property
    def text(self) -> str:
        """The artifact's text parts as one text, joined as sent with nothing added: a peer that
        streams a reply as appends makes it parts, and a peer that wants a line break sends one."""
        return "".join(p.text or "" for p in self.parts if p.kind == "text")


@dataclass(slots=True)
class TaskStatus:
    state: TaskState
    message: Message | None = None
    timestamp: str | None = None


@dataclass(slots=True)
class Task:
    """A task as toolnexus keeps it. ``skill``, ``request``, ``created``, ``owner``, ``trace`` and
    ``version`` never cross the wire; ``owner`` is the credential that created it, when the server tells
    callers apart (``Auth`` with more than one secret), else None; ``trace`` its span when it
    belongs to a trace (see :mod:`toolnexus.trace`)."""

    id: str
    context_id: str
    status: TaskStatus
    history: list[Message] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    skill: str | None = None
    request: str = ""
    created: str = field(default_factory=now_iso)
    owner: str | None = None
    trace: TraceContext | None = None
    version: int = 0
    """The version a shared store (PostgreSQL) read or wrote it at; 0: not stored there yet."""

    @property
    def state(self) -> TaskState:
        return self.status.state

    def moved(
        self,
        status: TaskStatus,
        history: list[Message] | None = None,
        artifacts: list[Artifact] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Task:
        """The task's next value: this status, these messages and artifacts added, these
        ``metadata`` keys set (a new dict). What did not change (the lists when nothing is added,
        metadata, the trace) is shared with this one: a value is never changed in place once made
        (``TaskRunner.transition`` makes one per move, and the event, the store and every reader
        hold that same value)."""
        return Task(
            self.id,
            self.context_id,
            status,
            [*self.history, *history] if history else self.history,
            [*self.artifacts, *artifacts] if artifacts else self.artifacts,
            {**(self.metadata or {}), **metadata} if metadata else self.metadata,
            self.skill,
            self.request,
            self.created,
            self.owner,
            self.trace,
            self.version,
        )

    def snapshot(self) -> Task:
        """A copy whose lists and status later changes to this task do not touch."""
        copy = self.moved(TaskStatus(self.status.state, self.status.message, self.status.timestamp))
        copy.history, copy.artifacts = list(self.history), list(self.artifacts)
        copy.metadata = dict(self.metadata) if self.metadata else self.metadata
        return copy

    def to_dataframe(self) -> Any:
        """One row per message (needs pandas)."""
        return to_dataframe(
            [
                {"task": self.id, "role": m.role, "text": m.text, "message": m.message_id}
                for m in self.history
            ]
        )

    def save_artifacts(
        self, folder: str | os.PathLike[str], progress: files.Progress | None = None
    ) -> files.SavedArtifacts:
        """Write every artifact part into ``folder``; returns a :class:`~toolnexus.protocol.files.SavedArtifacts`.
        Names from the peer are made safe, nothing is overwritten, linked files are listed, not fetched.
        Blocking file I/O (``progress(done, total)`` is told as it goes): from a UI, run it in a thread."""
        return files.save_artifacts(self.artifacts, folder, progress)

    def _repr_html_(self) -> str:
        return task_html(self)

    @property
    def artifacts_text(self) -> str:
        """Each artifact's text (its text parts joined as sent), a blank line between artifacts:
        a working task's reply as it grows, a finished one's answer."""
        return "\n\n".join(a.text for a in self.artifacts if a.text)

    @property
    def said(self) -> str:
        """What the agent has said so far: :attr:`artifacts_text`, else its status message's text
        when the agent wrote it. Peers stream their words either way: as artifact appends, or as
        status messages (Strands by default, LangGraph, the Gemini CLI; the client joins their
        pieces into one message as they come, ``client/transports.py``)."""
        message = self.status.message
        if self.artifacts_text or message is None or message.role != "agent":
            return self.artifacts_text
        return "".join(p.text or "" for p in message.parts if p.kind == "text")

    @property
    def file_parts(self) -> list[Part]:
        """The file and data parts of its artifacts (what a front end lists by :attr:`Part.label`)."""
        return [p for a in self.artifacts for p in a.parts if p.kind != "text"]

    @property
    def reply(self) -> str:
        """The answer text: :attr:`artifacts_text`; else the agent's last messages in the history
        (the last run of them: a peer whose words came as status messages keeps each one there,
        as the SDKs' task managers do, so they are one text again, :func:`add_words`)."""
        texts = self.artifacts_text
        if texts:
            return texts
        said: list[str] = []
        for m in reversed(self.history):
            if m.role == "agent":
                said.append(m.text)
            elif said:
                break
        if said:
            words, snapshots = "", None
            for text in reversed(said):
                words, snapshots = add_words(words, text, snapshots)
            return words
        if self.status.message is not None:
            return self.status.message.text
        return ""


def add_words(words: str, text: str, snapshots: bool | None) -> tuple[str, bool | None]:
    """The words an agent has said, with one more message's ``text``: a peer says its words in
    several messages either as pieces (Strands, the Gemini CLI: joined as sent) or as the text so
    far (LangGraph: the last holds it), and ``snapshots`` says which, once known (None until the
    second, which starts with the first when each is the text so far). Returns both, updated."""
    if snapshots is None and words:
        snapshots = text.startswith(words)
    return (words + text if snapshots is False else text), snapshots


def task_html(task: Task) -> str:
    """A task as HTML (a notebook's view of it): id, state, context, skill, status, reply, history."""
    state = task.state.value
    rows = [
        f"<b>task</b> <code>{e(task.id)}</code> {badge(state)}",
        f"<b>context</b> <code>{e(task.context_id)}</code>",
    ]
    if task.skill:
        rows.append(f"<b>skill</b> {e(task.skill)}")
    unfinished = not (task.state.terminal or task.state.interrupted)
    so_far = task.said if unfinished else ""  # the words as they come, however the peer says them
    if task.status.message is not None and not (so_far and not task.artifacts_text):
        rows.append(f"<b>status</b> {e(task.status.message.text)}")
    pre = "<pre style='white-space:pre-wrap;margin:0'>{}</pre>"
    if task.reply and task.state.value == "completed":
        rows.append(f"<b>reply</b> {pre.format(e(task.reply.strip()))}")
    elif so_far:
        rows.append(f"<b>so far</b> {pre.format(e(so_far.strip()))}")
    elif task.state.interrupted and task.status.message is None and task.reply:
        rows.append(f"<b>reply</b> {pre.format(e(task.reply.strip()))}")  # asked by its words
    history = "".join(
        f"<tr><td>{e(m.role)}</td><td style='text-align:left'>{e(m.text)}</td></tr>"
        for m in task.history
    )
    if history:
        rows.append(
            f"<details><summary>{plural(len(task.history), 'message')}</summary><table>{history}</table>"
            "</details>"
        )
    # block rows, no <br> after the reply's <pre>: nothing trails the reply but the history
    return "<div class='toolnexus-task'>" + "".join(f"<div>{r}</div>" for r in rows) + "</div>"


def tasks_html(tasks: Iterable[Task], server: str | None = None) -> str:
    """Tasks as one HTML table: state, id, skill, context, request."""
    body: list[str] = []
    for t in tasks:
        body.append(
            f"<tr><td>{badge(t.state.value)}</td><td><code>{e(t.id[:8])}…</code></td>"
            f"<td>{e(t.skill or '—')}</td><td><code>{e(t.context_id[:8])}…</code></td>"
            f"<td style='text-align:left'>{e(t.request[:80])}</td></tr>"
        )
    head = f"<caption>{e(server)}</caption>" if server else ""
    return (
        "<table class='toolnexus-tasks'>" + head + "<tr><th>state</th><th>task</th><th>skill</th>"
        "<th>context</th><th>request</th></tr>" + "".join(body) + "</table>"
    )
