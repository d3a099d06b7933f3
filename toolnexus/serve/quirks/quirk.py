"""The quirks: :data:`QUIRKS`, the one registry (each quirk, the real peer it copies and the
clients it broke), and :func:`quirks_named`, what a command line or a config names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...errors import ConfigError
from .frameworks import BeeAI, GeminiCli, LangGraph, MafCard, Strands, StrandsCompliant
from .personas import Hybrid, Legacy, Persona, V03Only

SLOW_FOR = 6.0
"""Seconds ``slow`` holds a send by default: past the 5 s the official SDK clients wait for an
answer unless told otherwise (httpx's default)."""


@dataclass(frozen=True)
class Quirk:
    """One way a real peer departed from the protocol, served on purpose."""

    name: str
    what: str
    """What it does, in a line (``{seconds}``: its delay)."""
    origin: str
    """The real peer it copies, and where it was seen."""
    breaks: tuple[str, ...]
    """The official clients it broke there."""
    persona: Persona | None = None
    seconds: float = 0.0
    """``slow``: how late an awaited send is answered."""
    cut: bool = False
    """``drop-streams``: each stream is cut after its first event."""
    ndjson: bool = False
    """``content-type``: streams answered as NDJSON."""

    @property
    def summary(self) -> str:
        """What it does, in a line."""
        return self.what.format(seconds=self.seconds)

    @property
    def spec(self) -> str:
        """How the command line names it (``slow=2``)."""
        return (
            f"{self.name}={self.seconds:g}" if self.seconds and self.name == "slow" else self.name
        )


QUIRKS: dict[str, Quirk] = {
    q.name: q
    for q in (
        Quirk(
            "0.3-only",
            "an A2A 0.3 peer: the 0.3 card, 0.3's method names only (1.0's are -32601)",
            "a2a-sdk 0.3.x servers, most agents in the field in 2025-2026 (ADK's to_a2a, the "
            "a2a-samples); a2a-js#601 and a2a-java#1121: 1.x clients found no interface on such a card",
            ("JS SDK 1.x without legacyCompat",),
            persona=V03Only(),
        ),
        Quirk(
            "legacy",
            "a toolnexus port: SendMessage and GetTask only, in the legacy shapes, on a 0.3.0 card",
            "upstream toolnexus 0.21 and its C#, Rust, Go and JS ports (every official client "
            "failed on them with -32601 on message/send)",
            ("a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK 1.x"),
            persona=Legacy(),
        ),
        Quirk(
            "hybrid",
            "0.3's method names answered in 1.0's shapes, timestamps without a zone, streams "
            "without their artifact, a 1.0 card without url",
            "fasta2a 2.1 (pydantic-ai), as its answers were captured on the wire",
            ("a2a-sdk 1.x (a timestamp without a zone)", "a2a-sdk 0.3 (no url on the card)"),
            persona=Hybrid(),
        ),
        Quirk(
            "langgraph",
            "LangGraph's mixed stream: the first frame 1.0's, the rest 0.3-shaped with 1.0's enum "
            "names; the words as working status messages, each the text so far, then one artifact",
            "langgraph-api 0.16.7 (langgraph dev), langgraph_api/api/a2a.py",
            ("a2a-sdk 1.x (frames 2 on)", "JS SDK 1.x (frames 2 on)"),
            persona=LangGraph(),
        ),
        Quirk(
            "strands",
            "AWS Strands' default stream: the words as working status messages, one piece each, "
            "then the whole text as one artifact",
            "strands-agents 1.62.0, A2AServer(agent) (a2a-sdk 0.3.26)",
            ("clients that read only artifacts while the task works (no words until the end)",),
            persona=Strands(),
        ),
        Quirk(
            "strands-compliant",
            "AWS Strands' compliant stream: artifact appends while the task is still submitted "
            "(never working), closed by an empty lastChunk",
            "strands-agents 1.62.0, A2AServer(agent, enable_a2a_compliant_streaming=True)",
            ("clients that show words only while the task is working",),
            persona=StrandsCompliant(),
        ),
        Quirk(
            "gemini-cli",
            "the Gemini CLI's stream: the words as working status messages (text-content), then "
            "input-required, final, with no message and no artifact",
            "@google/gemini-cli-a2a-server 0.25.2 (the JS SDK 0.3)",
            ("clients that read the reply from artifacts or the last status (no reply at all)",),
            persona=GeminiCli(),
        ),
        Quirk(
            "beeai",
            "BeeAI's server: no stream of words, the whole reply in the completed status's "
            "message; after one cancel (refused, -32002) every task fails 'Action has been aborted'",
            "beeai-framework 0.1.85 (a2a-sdk 0.3.26)",
            ("every client after a cancel (a shared AbortController)",),
            persona=BeeAI(),
        ),
        Quirk(
            "maf",
            "Microsoft Agent Framework's card: 0.3's protocolVersion and url on a server that "
            "answers 1.0 only (message/send: -32601)",
            "agent-framework-a2a 1.0.0b261022 on the a2a-sdk 1.3 server",
            ("a2a-sdk 0.3 (it believes the card: -32601)",),
            persona=MafCard(),
        ),
        Quirk(
            "slow",
            "a send the caller waits on (blocking, or a stream) is answered {seconds:g} s late",
            "LLM agents that think longer than a client waits: beeai-framework#1183 (a tool of "
            "7 s against the a2a-sdk client's 5 s httpx default), a2a-go#125 (a fixed 5 s)",
            ("a2a-sdk 1.x with its default httpx client", "a2a-go"),
            seconds=SLOW_FOR,
        ),
        Quirk(
            "drop-streams",
            "every stream is cut after its first event (the connection closed mid-body)",
            "proxies and gateways that end a long SSE response: a2a-samples#144 ('peer closed "
            "connection without sending complete message body')",
            ("a2a-sdk 1.x", "JS SDK 1.x"),
            cut=True,
        ),
        Quirk(
            "content-type",
            "streams answered as application/x-ndjson (one JSON-RPC answer a line), not SSE",
            "LiteLLM's A2A gateway, BerriAI/litellm#20278 (the a2a-sdk client: 'Expected response "
            "header Content-Type to contain text/event-stream')",
            ("a2a-sdk 1.x",),
            ndjson=True,
        ),
    )
}
"""Every quirk by name, in the order the docs list them."""


def quirks_named(specs: Sequence[str]) -> tuple[Quirk, ...]:
    """The quirks a command line or a config names (``["hybrid", "slow=2"]``; a comma-separated
    string in one item too). Raises ``ConfigError`` naming the known ones for an unknown name, a
    bad value, or two personas."""
    out: list[Quirk] = []
    for spec in (s.strip() for item in specs for s in item.split(",") if s.strip()):
        name, _, value = spec.partition("=")
        quirk = QUIRKS.get(name.strip())
        if quirk is None:
            raise ConfigError(f"no quirk {name!r}; the quirks are: {', '.join(QUIRKS)}")
        if value:
            if quirk.name != "slow":
                raise ConfigError(f"the quirk {quirk.name!r} takes no value")
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not 0 < seconds <= 3600:
                raise ConfigError(f"slow=SECONDS takes 0 to 3600 seconds, not {value!r}")
            quirk = replace(quirk, seconds=seconds)
        out = [q for q in out if q.name != quirk.name] + [quirk]
    personas = [q.name for q in out if q.persona is not None]
    if len(personas) > 1:
        raise ConfigError(f"{' and '.join(personas)} are each a whole peer: pick one")
    return tuple(out)
