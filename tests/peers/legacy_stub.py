"""A peer that speaks the toolnexus legacy dialect (the toolnexus ports in other languages): the
``legacy`` quirk of :mod:`toolnexus.serve.quirks` (a 0.3.0 card with only a top-level url,
``SendMessage`` answered with the bare task, ``GetTask`` with ``{id}``, every other method -32601)
on the client doctor's script (:mod:`tests.peers.quirky`: "question" asks "Which colour?", "fail"
fails, "slow" works 30 s, anything else is echoed)."""

from __future__ import annotations

from .quirky import quirky


def legacy_stub():  # type: ignore[no-untyped-def]
    return quirky("legacy", name="legacy-desk", skill="answer", description="answers")
