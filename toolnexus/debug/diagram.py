"""A recorded session as a Mermaid sequence diagram: one lane for the client and one per agent it
talked to, each request an arrow to the agent, each answer (each stream frame) an arrow back,
labelled with the task's state and the artifacts it carried; an error is a crossed arrow with its
code. ``toolnexus replay FILE --mermaid`` prints it, the TUI's Wire (``m``) and Tasks (``M``, the
task's trace) copy it from the wire log (:meth:`Diagram.of_traffic`); :class:`Diagram` renders in
a notebook (JupyterLab draws Mermaid in Markdown) and the docs (MkDocs Material).

Labels are made here from what was recorded, never passed through: a peer's text keeps only
letters, digits and a few marks, and is cut, so it cannot end a statement or start a directive.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _json
from ..events import TrafficEvent
from ..monitor import parse_time
from ..protocol.dialects import parse_state
from ..protocol.stream import event_of
from .cassette import Exchange, exchanges, load, origin_of

__all__ = ["Diagram", "sequence"]

LABEL = 60
"""Characters of one label kept."""
MAX_ARROWS = 400
"""The most arrows one diagram draws (a long session's rest is said in a note)."""
_UNSAFE = re.compile(r"[^\w .,:/()'+@=-]+")


def _label(text: Any) -> str:
    said = _UNSAFE.sub(" ", str(text)).strip()
    return (said[: LABEL - 1] + "…") if len(said) > LABEL else said or "-"


def _answer(result: Any) -> str:
    """One answer's (or stream frame's) result in words: its kind, state, artifacts."""
    if not _json.is_object(result):
        return "answer"
    kind, body = event_of(result)
    if kind == "message":
        return "message"
    status = body.get("status")
    state = parse_state(status.get("state")) if _json.is_object(status) else None
    said = [kind if kind != "task" else "task"] + ([str(state)] if state is not None else [])
    if kind == "artifact-update" and _json.is_object(artifact := body.get("artifact")):
        name = artifact.get("name") or artifact.get("artifactId")
        said.append(f"artifact {name}")
        said += [
            w for w, on in (("append", body.get("append")), ("last", body.get("lastChunk"))) if on
        ]
    elif kind == "task":
        names = [
            a.get("name") or a.get("artifactId")
            for a in body.get("artifacts") or ()
            if _json.is_object(a)
        ]
        if names:
            said.append("artifacts " + ", ".join(map(str, names)))
    return " ".join(said)


def _error(data: Any, status: int | None, error: str | None) -> str | None:
    """An answer's error in words (a JSON-RPC error's code and message, an HTTP error status, the
    exchange's own failure); None when it is no error."""
    if _json.is_object(data) and _json.is_object(err := data.get("error")):
        return f"error {err.get('code')} {err.get('message') or ''}"
    if error:
        return f"failed: {error}"
    if status is not None and status >= 400:
        return f"HTTP {status}"
    return None


def sequence(exchanges: list[Exchange], callers: Sequence[str | None] = ()) -> str:
    """The exchanges as a Mermaid sequence diagram's source (see the module). ``callers``: for
    each exchange, the URL of the agent that made it, when one of the agents drawn did (its lane
    then calls the other's); None, or none given: the client."""
    lanes: dict[str, str] = {}
    lines = ["sequenceDiagram", "    participant client as client"]
    arrows = 0

    def lane(url: str) -> str:
        origin = origin_of(url) if url.startswith(("http://", "https://")) else url
        if origin not in lanes:
            lanes[origin] = f"agent{len(lanes) + 1}"
            lines.insert(1 + len(lanes), f"    participant {lanes[origin]} as {_label(origin)}")
        return lanes[origin]

    for i, x in enumerate(exchanges):
        if arrows >= MAX_ARROWS:
            lines.append(f"    Note over client: {len(exchanges)} exchanges: the rest not drawn")
            break
        caller = callers[i] if i < len(callers) else None
        who = lane(caller) if caller else "client"
        agent = lane(x.url)
        asked = x.rpc_method or f"{x.method} {x.url.split('?')[0].rsplit('/', 1)[-1]}"
        lines.append(f"    {who}->>{agent}: {_label(asked)}")
        arrows += 1
        frames = x.response.get("frames")
        answers = list(frames) if isinstance(frames, list) else [x.response.get("json")]
        for frame in answers:
            data = _json.loads_or_none(frame) if isinstance(frame, str) else frame
            if (failed := _error(data, x.status, x.error)) is not None:
                lines.append(f"    {agent}--x {who}: {_label(failed)}")
            elif x.rpc_method is None and _json.is_object(data) and "skills" in data:
                lines.append(f"    {agent}-->>{who}: card {_label(data.get('name'))}")
            else:
                result = data.get("result") if _json.is_object(data) and "jsonrpc" in data else data
                lines.append(f"    {agent}-->>{who}: {_label(_answer(result))}")
            arrows += 1
    return "\n".join(lines) + "\n"


def _once(events: Iterable[TrafficEvent]) -> list[TrafficEvent]:
    """The exchanges in the order they began, each once: a call the app made to a server it hosts
    is logged twice, sent (out) and received (in), and is kept as sent."""
    events = sorted(events, key=lambda ev: parse_time(ev.time).timestamp() - ev.ms / 1000)
    sent = collections.Counter(
        (ev.method, ev.url, ev.request_body) for ev in events if ev.direction == "out"
    )
    out: list[TrafficEvent] = []
    for ev in events:
        key = (ev.method, ev.url, ev.request_body)
        if ev.direction == "in" and sent[key] > 0:
            sent[key] -= 1
            continue
        out.append(ev)
    return out


@dataclass(frozen=True)
class Diagram:
    """A cassette's session as a Mermaid diagram; shows itself as one in a notebook."""

    source: str

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> Diagram:
        """The session recorded in the cassette at ``path`` (raises ``CassetteError``)."""
        return cls(sequence(list(load(path))))

    @classmethod
    def of_traffic(
        cls,
        events: Iterable[TrafficEvent],
        caller: Callable[[TrafficEvent], str | None] = lambda _: None,
    ) -> Diagram:
        """A wire log's exchanges (a TUI's, a notebook server's) drawn as their cassette would be,
        each once and in the order they began (see :func:`_once`); ``caller``: the URL of the
        agent that made an exchange, when one of those drawn did (None: the client)."""
        kept = _once(events)
        return cls(sequence(exchanges(kept), [caller(ev) for ev in kept]))

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.source}```\n"

    def __str__(self) -> str:
        return self.source
