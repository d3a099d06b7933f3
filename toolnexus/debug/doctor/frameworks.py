"""The framework clients the doctor models (FIELD.md), and how they read a stream's artifacts: the
only place these rules are written, for the doctor's verdicts and the auditor's."""

from __future__ import annotations

from typing import Any

from ... import _json
from ...protocol.stream import event_of
from ..report import Finding

ADK = "Google ADK"
MAF = "Microsoft Agent Framework"
STRANDS = "AWS Strands"
CREWAI = "CrewAI"
HANDLER = "a2a-handler"
FASTA2A = "fasta2a"
FRAMEWORKS = {
    ADK: ("a2a-sdk 1.x", "google-adk 2.13 RemoteA2aAgent, on a2a-sdk 1.3"),
    MAF: ("a2a-sdk 1.x", "agent-framework-a2a 1.0.0b261022 A2AAgent, on a2a-sdk 1.3"),
    HANDLER: ("a2a-sdk 1.x", "a2a-handler 0.4 CLI, on a2a-sdk 1.3"),
    STRANDS: ("a2a-sdk 0.3", "strands-agents 1.62 A2AAgent, on a2a-sdk 0.3.26"),
    CREWAI: ("a2a-sdk 0.3", "crewai 1.15 A2A delegation, on a2a-sdk 0.3.26"),
    FASTA2A: ("", "fasta2a 2.1 A2AClient (pydantic-ai), a client of its own"),
}
"""The framework clients the doctor models (FIELD.md): the official line each runs on, and what it
is. Each is judged as that line is, then by its own way of reading (:func:`judge_frameworks`)."""


THEIRS = frozenset({STRANDS, CREWAI})
"""The frameworks whose way of reading departs from the spec where the peer is right: what they
break is said as info (nothing on the peer's side to fix), the others' as a warning."""


def framework_breaks(name: str, message: str, shown: list[str], fix: str, at: str = "") -> Finding:
    """The verdict that the framework ``name``'s client breaks on this peer, as ``message`` says
    (the evidence ``shown``, the ``fix`` on the peer's side; ``at``: where)."""
    severity, breaks = ("info", []) if name in THEIRS else ("warning", [name])
    return Finding(severity, f"client: {name}", f"breaks: {message}", shown, breaks, fix, at=at)


def _text(artifact: Any) -> str:
    parts = artifact.get("parts") if _json.is_object(artifact) else None
    return "".join(
        str(p.get("text") or "")
        for p in (parts if _json.is_array(parts) else ())
        if _json.is_object(p)
    )


def readings(results: list[Any]) -> dict[str, str]:
    """The text of a stream's artifacts as each reader ends it, from the stream's results in
    order (either dialect's shape): ``spec`` (every official client: an append adds, any other
    update replaces), :data:`ADK` (a ``lastChunk`` update is the whole artifact: the chunks before
    it are partial and not kept) and :data:`CREWAI` (every artifact update's text, each part a
    word joined with spaces, ignoring ``append`` and ``lastChunk``; a stream with no artifact
    update it reads from the task, as the spec does). FIELD.md; the only place these rules are
    written, for the doctor's verdicts and the auditor's."""
    spec: dict[str, str] = {}
    adk: dict[str, str] = {}
    crew: list[str] = []
    for result in results:
        if not _json.is_object(result):
            continue
        kind, body = event_of(result)
        if kind == "task":
            for a in body.get("artifacts") or ():
                if _json.is_object(a):
                    key = str(a.get("artifactId"))
                    spec[key] = adk[key] = _text(a)
        elif kind == "artifact-update" and _json.is_object(artifact := body.get("artifact")):
            key, text = str(artifact.get("artifactId")), _text(artifact)
            spec[key] = spec.get(key, "") + text if body.get("append") is True else text
            if body.get("lastChunk") is True or body.get("append") is not True:
                adk[key] = text
            else:
                adk[key] = adk.get(key, "") + text
            parts = artifact.get("parts")
            crew += [
                str(p.get("text"))
                for p in (parts if _json.is_array(parts) else ())
                if _json.is_object(p) and isinstance(p.get("text"), str)
            ]
    whole = "\n".join(spec.values())
    return {"spec": whole, ADK: "\n".join(adk.values()), CREWAI: " ".join(crew) if crew else whole}


def misread(name: str, read: dict[str, str]) -> tuple[str, str] | None:
    """How the framework ``name`` (:data:`ADK` or :data:`CREWAI`) misreads a stream read as
    ``read`` (:func:`readings`): what it does and the fix on the peer's side; None when it reads
    what the spec reads."""
    if read[name] == read["spec"]:
        return None
    if name == ADK:
        return (
            f"records only the last chunk of this stream: it reads {read[ADK]!r} where the stream "
            f"says {read['spec']!r} (an update with lastChunk: true is the whole artifact to it; "
            "the chunks before are lost)",
            "close a streamed artifact with append: false, lastChunk: true and the whole text "
            "(as ADK's own server does; every other client reads it the same)",
        )
    return (
        f"joins the chunks of a streamed artifact with spaces: it reads {read[CREWAI]!r} where "
        f"the stream says {read['spec']!r} (it reads every artifact update as a word)",
        "nothing in the stream's shape fixes it while words stream as appends; a whole "
        "artifact (one chunk) reads right",
    )
