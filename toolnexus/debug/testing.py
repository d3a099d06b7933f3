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
from .replay import ReplayPeer, diff

__all__ = ["a2a_replay", "a2a_verify", "Verifier"]


def _path(request: pytest.FixtureRequest, cassette: str | os.PathLike[str]) -> Path:
    path = Path(cassette)
    if not path.is_absolute():
        beside = Path(request.path).parent / path
        if beside.exists():
            return beside
    return path


@pytest.fixture
def a2a_replay(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A factory: ``a2a_replay(cassette, match="lenient", origin=None)`` -> a started ReplayPeer."""

    thread: LoopThread | None = None
    peers: list[ReplayPeer] = []

    def start(cassette: str | os.PathLike[str], **options: Any) -> ReplayPeer:
        nonlocal thread
        peer = ReplayPeer(_path(request, cassette), **options)
        thread = thread or LoopThread("toolnexus-replay")
        thread.run(peer.start(), timeout=30)
        peers.append(peer)
        return peer

    yield start
    if thread is not None:
        for peer in peers:
            thread.run(peer.stop(), timeout=30)
        thread.close()


class Verifier:
    """What the ``a2a_verify`` fixture gives: call it (sync tests) or await :meth:`check`."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request

    def __call__(self, cassette: str | os.PathLike[str], url: str, **options: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.check(cassette, url, **options))
        raise RuntimeError(
            "a2a_verify(...) blocks; in an async test use: await a2a_verify.check(cassette, url)"
        )

    async def check(self, cassette: str | os.PathLike[str], url: str, **options: Any) -> Any:
        """Replay ``cassette`` against ``url``; fail the test when an answer differs."""

        report = await diff(_path(self._request, cassette), url, **options)
        if not report.ok:
            pytest.fail(report.text(), pytrace=False)
        return report


@pytest.fixture
def a2a_verify(request: pytest.FixtureRequest) -> Verifier:
    """``a2a_verify(cassette, url, headers=..., timeout=...)``: fails the test when the live peer
    answers differently from the recording; returns the :class:`~toolnexus.debug.replay.ReplayReport`."""
    return Verifier(request)
