"""What something costs in model tokens, as a doctor's finding (the card's, each stream's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ...errors import MissingExtra
from ..cost import Cost
from ..report import Finding

COUNT_WAIT = 30.0
"""Seconds a count may take (tiktoken loading its encoding, fetching it the first time)."""


def costs(check: str, counting: Callable[[], Cost], at: str = "") -> Finding:
    """What something costs in tokens, as an info finding (``counting()`` counts it), or why it
    was not counted (tiktoken absent, or its encoding not had). Off any loop: the first count
    loads the tokenizer (:func:`counted` on one)."""
    try:
        return Finding("info", check, str(counting()), at=at)
    except MissingExtra as exc:
        return Finding("info", check, f"not counted: {exc}", at=at)


async def counted(check: str, counting: Callable[[], Cost], at: str = "") -> Finding:
    """:func:`costs` on a thread, within :data:`COUNT_WAIT`."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(costs, check, counting, at), COUNT_WAIT)
    except TimeoutError:
        return Finding("info", check, f"not counted: no tokenizer within {COUNT_WAIT:g} s", at=at)
