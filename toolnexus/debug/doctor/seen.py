"""What the doctor saw the peer answer (:class:`Seen`), which the verdicts on each client are drawn
from."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...protocol.dialects import Dialect
from ...protocol.operations import Binding
from .shapes import Letter


@dataclass
class Seen:
    """What the peer was seen to answer, for the verdicts on each client."""

    answered: dict[tuple[Binding, str, str], bool] = field(default_factory=dict)
    """``(binding, major, url)`` of each interface probed: it gave an A2A answer (TaskNotFound or an
    error in its binding), or refused credentials."""
    knows: dict[str, dict[str, bool | None]] = field(default_factory=dict)
    """JSON-RPC endpoint → method name → known (True), -32601 (False), no JSON-RPC answer (None)."""
    shapes: dict[tuple[str, Dialect], Letter | None] = field(default_factory=dict)
    """``(endpoint, dialect)`` of each send made → the letter of its answer (None: no result to read)."""
    sent: dict[tuple[str, Dialect], str] = field(default_factory=dict)
    """``(endpoint, dialect)`` of each send made → how it went: "" when a task came back, else why not."""
    ours: str | None = None
    """toolnexus' own send: None when none was made, "" when it came back, else why not."""
    ours_over: str = ""
    streams: dict[tuple[str, Dialect], tuple[str, str] | None] = field(default_factory=dict)
    """``(endpoint, dialect)`` of each stream read → its first frame a reader of that dialect
    refuses, and the evidence (None: every frame reads)."""
    read: dict[tuple[str, Dialect], list[tuple[dict[str, str], str]]] = field(default_factory=dict)
    """``(endpoint, dialect)`` of a stream read → how each reader read each of its streams
    (:func:`readings`), and the stream's evidence."""
    status_only: str = ""
    """Evidence of a finished task whose words were only in ``status.message`` (no artifact, no
    agent message in its history): a reply, or a failure's reason."""
    asked: bool = False
    """A skill example made the peer ask for input (the round trip was tried)."""
    unblocked: str = ""
    """The state a blocking send was answered with, when it was neither finished nor interrupted."""
    slowest: float = 0.0
    """Seconds the slowest send the doctor waited on took to be answered."""
