"""A hybrid peer, as fasta2a 2.1 (pydantic-ai) was seen to answer: the ``hybrid`` quirk of
:mod:`toolnexus.serve.quirks` (a 1.0 card without a top-level ``url``; the 0.3 method names and
the 1.0 ones alike, every answer in 1.0's shapes with ``status.timestamp`` without a zone; a
stream that ends with the final status and no artifact) on the script of
:mod:`tests.peers.quirky` (every message answered ``echo: <text>``)."""

from __future__ import annotations

from .quirky import quirky


def hybrid_stub():  # type: ignore[no-untyped-def]
    return quirky(
        "hybrid", name="hybrid-desk", skill="echo", description="0.3 method names, 1.0 shapes"
    )
