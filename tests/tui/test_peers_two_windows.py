"""A peer changed or removed in another toolnexus-tui (a second real process on the same config
folder, changing the peers file as a window does, through PeerBook): the change is taken here and
said, a secret typed here for this session is neither written nor lost, and a removed peer's
client is closed, after a reply under way is let finish."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("a2a")

from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerAuth, PeerBook  # noqa: E402

from ..helpers import ROOT  # noqa: E402
from ..peers.sdk_server import hold, sdk_server  # noqa: E402
from .test_peers_chat_and_wire import text_of  # noqa: E402
from .test_pilot import open_chat, until  # noqa: E402

_OTHER_WINDOW = """
import sys
from pathlib import Path
from tui.peers import PeerBook

folder, url, what = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
book = PeerBook(folder)
book.load()
if what == "remove":
    book.remove(url)
else:
    peer = book.peers[url]
    peer.dialect = "1.0"
    peer.headers["X-Trace"] = "${TRACE_ID}"
    book.save(url)
print(book.pid)
"""


def other_window(folder: Path, url: str, what: str) -> int:
    """What another toolnexus-tui does to the peer at ``url`` (``edit``: its dialect forced to
    1.0 and a header added; ``remove``), in a process of its own; its pid."""
    return in_another_window(_OTHER_WINDOW, str(folder), url, what)


def in_another_window(script: str, *args: str) -> int:
    """``script`` run with ``args`` by another process, as another toolnexus-tui on the same
    folder would change it; the pid it prints (its own)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout)


def said(app: ToolnexusApp) -> list[str]:
    return [n.message for n in app._notifications]  # noqa: SLF001 (what the toasts said)


async def test_a_peer_changed_in_another_window_is_changed_here_and_keeps_the_secret_typed_here(
    tmp_path: Path,
):
    """Window A has a peer with a bearer token typed in (a literal: this session only, never in
    the file); window B forces its dialect and adds a header. A takes both, says so, dials it
    again, and keeps its token; what A saves next keeps B's change and still no token."""
    folder = tmp_path / "config"
    book = PeerBook(folder)
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as url, app.run_test(size=(120, 40)) as pilot:
        book.add(url)
        book.peers[url].auth = PeerAuth("bearer", "", "s3cret-typed-here")
        book.save(url)
        app.connect_peer(book.peers[url])
        await until(pilot, lambda: book.peers[url].state == "reachable")
        pid = other_window(folder, url, "edit")
        await until(pilot, lambda: any("was changed" in line for line in said(app)), timeout=30)
        assert (
            f"peer {url} was changed in another toolnexus-tui (pid {pid}): dialect 1.0; "
            "headers X-Trace"
        ) in said(app)
        peer = book.peers[url]
        assert peer.dialect == "1.0" and peer.headers == {"X-Trace": "${TRACE_ID}"}
        assert peer.auth.secret == "s3cret-typed-here"  # the session's secret, kept
        await until(pilot, lambda: peer.state == "reachable")  # dialled again, in 1.0
        await pilot.press("3")
        await until(pilot, lambda: "1.0!" in str(app.screen.query_one("#peers").get_row(url)))

        peer.blocking = True  # a change here: B's stays in the file, the token never goes there
        book.save(url)
        saved = json.loads((folder / "peers-v1.json").read_text())["peers"]
        assert [(p["dialect"], p["headers"], p["blocking"]) for p in saved] == [
            ("1.0", {"X-Trace": "${TRACE_ID}"}, True)
        ]
        assert "s3cret" not in (folder / "peers-v1.json").read_text()


async def test_a_peer_removed_in_another_window_lets_the_reply_under_way_finish_then_closes(
    tmp_path: Path,
):
    """Window B removes the peer A is chatting with, while A's reply streams: A's reply finishes
    whole (its task is the peer's: it runs there either way), a line under it says what happened,
    and the peer's client is closed then; a peer removed while idle is closed at once."""
    folder = tmp_path / "config"
    book = PeerBook(folder)
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as url, app.run_test(size=(120, 40)) as pilot:
        book.add(url)
        book.save(url)
        app.connect_peer(book.peers[url])
        await until(pilot, lambda: book.peers[url].state == "reachable")
        peer = book.peers[url]
        await open_chat(app, pilot, url)
        box = app.screen.query_one("#chat-input")
        release = hold()  # the reply's first piece, then the rest once the removal is taken
        box.value = "chunked held"
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation.turns[-1].text.startswith("echo: chu"))
        pid = other_window(folder, url, "remove")
        await until(pilot, lambda: url not in book.peers, timeout=15)
        assert peer.client is not None  # the reply still streams on it
        release.set()
        await until(pilot, lambda: peer.client is None, timeout=15)
        reply = app.conversation.turns[-1]
        assert reply.text == "echo: chunked reply please"
        assert reply.task_state is not None and reply.task_state.value == "completed"
        line = (
            f"the peer was removed in another toolnexus-tui (pid {pid}) while this reply ran: it "
            "was let finish, and its connection is closed"
        )
        await until(pilot, lambda: line in text_of(app, "#chat-log"))

        again = book.add(url)  # added again, then removed here while idle: closed at once
        book.save(url)
        app.connect_peer(again)
        await until(pilot, lambda: again.state == "reachable")
        client = again.client
        assert client is not None
        book.remove(url)
        await until(pilot, lambda: again.client is None)
        assert again.removed == "here"
