"""What a replay against a live peer found (:class:`ReplayReport`): each :class:`Difference`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Difference:
    """One way a live answer differs from the recorded one."""

    seq: int
    operation: str
    what: str  # "status" | "shape" | "states" | "error" | "unanswered"
    path: str
    recorded: str
    live: str

    def text(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"#{self.seq} {self.operation}: {self.what}{where}: recorded {self.recorded}, live {self.live}"


@dataclass
class ReplayReport:
    """What :func:`diff` found: ``ok`` when no live answer differs from the recorded one."""

    cassette: str
    url: str
    exchanges: int = 0
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    states: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Each recorded task's settled states: ``{"task-1": {"recorded": [...], "live": [...]}}``."""

    @property
    def ok(self) -> bool:
        return not self.differences

    def text(self) -> str:
        head = f"{self.url}: {self.exchanges} exchange(s) replayed from {self.cassette}: " + (
            "the same" if self.ok else f"{len(self.differences)} difference(s)"
        )
        return "\n".join(
            [head]
            + [f"  {d.text()}" for d in self.differences]
            + [f"  note: {n}" for n in self.notes]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cassette": self.cassette,
            "url": self.url,
            "ok": self.ok,
            "exchanges": self.exchanges,
            "differences": [asdict(d) for d in self.differences],
            "notes": self.notes,
            "states": self.states,
        }
