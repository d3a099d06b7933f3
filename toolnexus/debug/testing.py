"""pytest fixtures that make a recorded session (a cassette) a regression test in one line.

Installing toolnexus registers this module as a pytest plugin (the ``pytest11`` entry point), so
the fixtures are there in any test suite:

``a2a_replay``
    ``peer = a2a_replay("session.jsonl")`` serves the cassette as a peer (see
    :class:`toolnexus.debug.replay.ReplayPeer`; ``match=`` and ``origin=`` as there) on a thread of
    its own, so sync and async tests alike can talk to ``peer.url``; it stops after the test.

``a2a_verify``
    ``a2a_verify("session.jsonl", url)`` sends the recorded requests to the live peer at ``url``
    and fails the test, with the report, when an answer differs (see
    :func:`toolnexus.debug.replay.diff`; ``headers=`` and the rest as there); it returns the report.
    In an async test whose peer runs on the test's own loop: ``await a2a_verify.check(...)``.

``mcp_replay`` and ``mcp_verify``
    The same for a recorded MCP session (see :mod:`toolnexus.debug.mcp_replay`):
    ``server = mcp_replay("session.jsonl")`` serves it over HTTP at ``server.url`` (its ``/mcp``);
    ``mcp_verify("session.jsonl", target)`` asks the live MCP server ``target`` (a URL, or a stdio
    command line as a list) what the session asked and fails the test when anything changed
    (``await mcp_verify.check(...)`` in an async test).

A relative cassette path is looked up beside the test file first, then from the current folder.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..http.server import LoopThread
from .mcp_replay import MCPReplay, mcp_diff
from .replay import ReplayPeer, diff

__all__ = ["a2a_replay", "a2a_verify", "mcp_replay", "mcp_verify", "Verifier"]


def _path(request: pytest.FixtureRequest, cassette: str | os.PathLike[str]) -> Path:
    path = Path(cassette)
    if not path.is_absolute():
        beside = Path(request.path).parent / path
        if beside.exists():
            return beside
    return path


def _served(request: pytest.FixtureRequest, kind: Any) -> Iterator[Any]:
    """A factory starting ``kind(cassette, **options)`` replays on a thread of their own."""
    thread: LoopThread | None = None
    peers: list[Any] = []

    def start(cassette: str | os.PathLike[str], **options: Any) -> Any:
        nonlocal thread
        thread = thread or LoopThread("toolnexus-replay")

        async def started() -> Any:  # made on the thread's loop, which serves it
            peer = kind(_path(request, cassette), **options)
            await peer.start()
            return peer

        peers.append(thread.run(started(), timeout=30))
        return peers[-1]

    yield start
    if thread is not None:
        for peer in peers:
            thread.run(peer.stop(), timeout=30)
        thread.close()


@pytest.fixture
def a2a_replay(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A factory: ``a2a_replay(cassette, match="lenient", origin=None)`` -> a started ReplayPeer."""

    yield from _served(request, ReplayPeer)


@pytest.fixture
def mcp_replay(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A factory: ``mcp_replay(cassette, match="lenient", server=None)`` -> a started MCPReplay."""
    yield from _served(request, MCPReplay)


class Verifier:
    """What the ``a2a_verify`` and ``mcp_verify`` fixtures give: call it (sync tests) or await
    :meth:`check`."""

    def __init__(self, request: pytest.FixtureRequest, mcp: bool = False) -> None:
        self._request = request
        self._mcp = mcp

    def __call__(self, cassette: str | os.PathLike[str], url: str, **options: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.check(cassette, url, **options))
        name = "mcp_verify" if self._mcp else "a2a_verify"
        raise RuntimeError(
            f"{name}(...) blocks; in an async test use: await {name}.check(cassette, url)"
        )

    async def check(self, cassette: str | os.PathLike[str], url: str, **options: Any) -> Any:
        """Replay ``cassette`` against ``url``; fail the test when an answer differs."""
        compare = mcp_diff if self._mcp else diff
        report = await compare(_path(self._request, cassette), url, **options)
        if not report.ok:
            pytest.fail(report.text(), pytrace=False)
        return report


@pytest.fixture
def a2a_verify(request: pytest.FixtureRequest) -> Verifier:
    """``a2a_verify(cassette, url, headers=..., timeout=...)``: fails the test when the live peer
    answers differently from the recording; returns the :class:`~toolnexus.debug.replay.ReplayReport`."""
    return Verifier(request)


@pytest.fixture
def mcp_verify(request: pytest.FixtureRequest) -> Verifier:
    """``mcp_verify(cassette, target, headers=..., env=..., timeout=...)``: fails the test when
    the live MCP server answers differently from the recording; returns the report."""
    return Verifier(request, mcp=True)
