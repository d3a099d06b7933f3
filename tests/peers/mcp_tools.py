"""Python functions as tools for ``toolnexus mcp --tools tests/peers/mcp_tools.py`` in the tests."""

from __future__ import annotations

import asyncio

__all__ = ["add", "explode", "nap"]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def explode(reason: str) -> str:
    """Fail on purpose, saying why."""
    raise RuntimeError(f"exploded: {reason}")


async def nap(seconds: float) -> str:
    """Sleep, then say so (a slow tool, to be canceled)."""
    await asyncio.sleep(seconds)
    return f"slept {seconds} s"
