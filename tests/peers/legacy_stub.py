"""A peer that speaks the toolnexus legacy dialect (the toolnexus ports in other languages): the
``legacy`` quirk of :mod:`toolnexus.serve.quirks` (a 0.3.0 card with only a top-level url,
``SendMessage`` answered with the bare task, ``GetTask`` with ``{id}``, every other method -32601)
on the script of :mod:`tests.peers.quirky` ("6*7" answers 42, "question" asks "Which colour?",
"fail" fails, "slow" never finishes)."""

from __future__ import annotations

from .quirky import quirky


def legacy_stub():  # type: ignore[no-untyped-def]
    return quirky("legacy", name="legacy-desk", skill="answer", description="answers")
