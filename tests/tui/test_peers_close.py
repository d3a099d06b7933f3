"""toolnexus-tui's peers when it quits (``PeerBook.close``, issue 61): every client is closed and
nothing is left pending, at once, whatever a peer is doing then; here a dial under way to a peer
that never answers, on a peer removed meanwhile and on one kept."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Self

import pytest

pytest.importorskip("textual")

from tui.peers import PeerBook  # noqa: E402


class Silent:
    """A peer on 127.0.0.1 that takes connections and reads them, never answering (a hostile
    one, or a hung one): ``asked`` once a request came, ``hung_up`` once its caller closed."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.hung_up = asyncio.Event()
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._take, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _take(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(4096):
            self.asked.set()
        self.hung_up.set()
        writer.close()


async def _closed_at_quit(tmp_path: Path, remove: bool) -> None:
    async with Silent() as silent:
        book = PeerBook(tmp_path)
        peer = book.add(silent.url)
        dial = asyncio.create_task(peer.connect(None))
        await asyncio.wait_for(silent.asked.wait(), 10)  # the card asked for, never answered
        if remove:
            book.remove(silent.url)
        retiring = set(book._retiring)  # noqa: SLF001  # the removed peer's close, waiting on the dial
        assert len(retiring) == remove
        await book.close()
        assert all(closing.done() for closing in retiring)  # none left pending
        assert dial.done()  # the dial ended, its request cancelled
        assert peer.client is None
        assert peer.state == "unreachable"
        await asyncio.wait_for(silent.hung_up.wait(), 10)  # its connection closed
        gc.collect()  # an unclosed socket would warn now (an error here)


async def test_a_peer_removed_while_it_dials_one_that_never_answers_is_closed_at_quit(
    tmp_path: Path,
):
    """A peer removed while its dial waited on a peer that never answers: its close waited for
    the dial (30 s), PeerBook.close waited 5 s for it and left it pending, its client open."""
    await _closed_at_quit(tmp_path, remove=True)


async def test_a_peer_that_dials_one_that_never_answers_is_closed_at_quit(tmp_path: Path):
    """A peer dialing one that never answers when the app quits: its client was closed under the
    request, which went on (30 s), the connection open."""
    await _closed_at_quit(tmp_path, remove=False)
