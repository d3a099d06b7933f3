"""Two real toolnexus-tui at once on one config folder (issue 61 item 2), each in its own tmux
session: the saved servers file is changed under a lock and says which window serves which port,
the second window says whose port it could not listen on and keeps the first's saved demo port,
and a delete in one window is seen in the other."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from toolnexus.hosting import ServerSpec
from tui.peers import PeerBook
from tui.saved import ServerBook

from ..helpers import ROOT, free_port
from .test_smoke import EXE, TMUX, pytestmark  # noqa: F401  # pytestmark: the same needs

SAVED = "servers-v1.json"


SOCKET = f"tn-two-{uuid.uuid4().hex[:8]}"  # a tmux server of this test's own: its sizes are its own
TMUX_HERE = [TMUX, "-L", SOCKET, "-f", "/dev/null"]


def screen(session: str) -> str:
    return subprocess.run(
        [*TMUX_HERE, "capture-pane", "-p", "-t", session], capture_output=True, text=True
    ).stdout


def _flat(text: str) -> str:
    """The screen's text, each run of whitespace one space, then its toasts' text the same way (a
    toast's lines stand right of the pane's, after a ``▌``, and wrap)."""
    toasts = " ".join(line.split("▌", 1)[1] for line in text.splitlines() if "▌" in line)
    return re.sub(r"\s+", " ", text) + " | " + re.sub(r"\s+", " ", toasts)


def _until(session: str, pattern: str, timeout: float = 30) -> str:
    """The flattened screen (``_flat``), once ``pattern`` is on it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        flat = _flat(screen(session))
        if re.search(pattern, flat):
            return flat
        time.sleep(0.2)
    raise AssertionError(f"{pattern!r} never appeared:\n{screen(session)}")


def _saved(folder: Path, until: Callable[[dict], bool] = lambda _: True) -> dict:
    """The saved servers file, once ``until`` holds of it (a window writes it after it draws)."""
    deadline = time.monotonic() + 30
    while True:
        saved = json.loads((folder / SAVED).read_text())
        if until(saved):
            return saved
        assert time.monotonic() < deadline, f"the saved servers file stayed {saved}"
        time.sleep(0.2)


def _serving(saved: dict) -> dict[int, int]:
    return {e["port"]: e["pid"] for e in saved.get("running", [])}


def _keys(session: str, *keys: str) -> None:
    for key in keys:
        subprocess.run([*TMUX_HERE, "send-keys", "-t", session, key], check=True)
        time.sleep(0.3)


def _launch(session: str, folder: Path) -> None:
    """A toolnexus-tui in its own tmux session, 150x36, on the config folder ``folder``."""
    subprocess.run(
        [*TMUX_HERE, "new-session", "-d", "-s", session, "-x", "150", "-y", "36"]
        + [f"TOOLNEXUS_CONFIG_DIR={folder} {EXE}"],
        check=True,
    )


def _gone(session: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while (
        subprocess.run([*TMUX_HERE, "has-session", "-t", session], capture_output=True).returncode
        == 0
    ):
        assert time.monotonic() < deadline, f"{session} did not quit"
        time.sleep(0.2)


def test_two_windows_share_the_saved_servers(tmp_path):
    port = free_port()
    (tmp_path / SAVED).write_text(
        json.dumps({"servers": [{"name": "shared", "skills": [], "port": port}], "ports": {}})
    )
    tag = uuid.uuid4().hex[:8]
    first, second = f"tn-first-{tag}", f"tn-second-{tag}"
    try:
        _launch(first, tmp_path)
        _until(first, rf"shared http://127\.0\.0\.1:{port} ")
        text = _until(first, r"demo-desk http://127\.0\.0\.1:\d+")
        demo = int(re.search(r"demo-desk http://127\.0\.0\.1:(\d+)", text).group(1))
        saved = _saved(tmp_path, lambda s: {demo, port} <= set(_serving(s)))
        assert saved["ports"] == {"demo-desk": demo}
        holders = _serving(saved)  # the file says which window serves which port
        pid = holders[port]
        assert holders[demo] == pid
        assert "toolnexus-tui" in Path(f"/proc/{pid}/cmdline").read_text()

        _launch(second, tmp_path)
        _until(
            second,
            rf"demo-desk: port {demo}, its port last time, is held by another toolnexus-tui "
            rf"\(pid {pid}\)",
        )
        _until(second, rf"shared: port {port} is held by another toolnexus-tui \(pid {pid}\)")
        text = _until(second, r"demo-desk http://127\.0\.0\.1:\d+")
        moved = int(re.search(r"demo-desk http://127\.0\.0\.1:(\d+)", text).group(1))
        assert moved != demo
        _keys(second, "Down")  # the failed server's own reason, in its pane
        _until(second, rf"✘ port {port} is held by another toolnexus-tui \(pid {pid}\)")
        saved = _saved(tmp_path, lambda s: moved in _serving(s))
        assert saved["ports"] == {"demo-desk": demo}  # the first window's curl line still works
        assert set(_serving(saved)) == {demo, port, moved}

        _keys(first, "Down", "d")  # delete the shared server in the first window, saying yes
        _until(first, r"Delete shared\?")
        _keys(first, "y")
        _until(first, r"shared deleted")
        _until(second, rf"shared was deleted in another toolnexus-tui \(pid {pid}\)")
        assert not re.search(r"^\s*\S\s+shared\s", screen(second), re.M)  # its row is gone
        assert _saved(tmp_path)["servers"] == []

        _keys(first, "C-q")
        _keys(second, "C-q")
        _gone(first)
        _gone(second)
        _saved(tmp_path, lambda s: s["running"] == [])
    finally:
        subprocess.run([*TMUX_HERE, "kill-server"], capture_output=True)


def test_a_second_window_neither_proposes_nor_takes_a_saved_name(tmp_path):
    """Window A serves desk-3; in window B it failed (A holds its port). B's new-server form
    proposed desk-3 (``desk-{rows+1}``) and took it, since in B it was not running: A's saved port
    was replaced, A told nothing. Now the form proposes a free name and refuses a saved one, saying
    who serves it; the file keeps A's port. A server A adds, B says A serves. Then a peer added in
    each window is kept, and each window says what the other added."""
    port = free_port()
    (tmp_path / SAVED).write_text(
        json.dumps({"servers": [{"name": "desk-3", "skills": [], "port": port}], "ports": {}})
    )
    tag = uuid.uuid4().hex[:8]
    first, second = f"tn-a-{tag}", f"tn-b-{tag}"
    try:
        _launch(first, tmp_path)
        _until(first, rf"desk-3 http://127\.0\.0\.1:{port} ")
        pid = _serving(_saved(tmp_path, lambda s: port in _serving(s)))[port]
        _launch(second, tmp_path)
        _until(second, rf"desk-3: port {port} is held by another toolnexus-tui \(pid {pid}\)")
        _until(second, r"demo-desk http://127\.0\.0\.1:\d+")
        _keys(second, "n")
        _until(second, r"Start a server")
        _until(second, r"name desk-4 ")  # two rows, the third's name taken: the next free one
        _keys(second, "C-u")  # the saved name, typed
        _until(second, r"█ name █")
        _keys(second, "desk-3")
        _until(second, r"name desk-3 ")
        _keys(second, "C-s")
        _until(
            second,
            rf"name: a server named 'desk-3' exists \(another toolnexus-tui \(pid {pid}\)",
        )
        saved = _saved(tmp_path)
        assert [(s["name"], s["port"]) for s in saved["servers"]] == [("desk-3", port)]
        _keys(second, "Escape")
        # a server added in the first window (it runs there): the second says who serves it, where
        # it said "s starts it here" (s then failed: the port held by the first)
        _keys(first, "n")
        _until(first, r"name desk-4 ")
        _keys(first, "C-s")
        _until(first, r"desk-4 running at")
        _until(second, rf"desk-4 was added in another toolnexus-tui \(pid {pid}\), which serves it")

        # a peer added in each window: both kept, each said in the other
        _keys(second, "3", "n", "http://127.0.0.1:9", "Enter")
        _until(first, r"peer http://127\.0\.0\.1:9 was added in another toolnexus-tui \(pid \d+\)")
        _keys(first, "3", "n", "http://127.0.0.1:7", "Enter")
        _until(
            second, rf"peer http://127\.0\.0\.1:7 was added in another toolnexus-tui \(pid {pid}\)"
        )
        peers = json.loads((tmp_path / "peers-v1.json").read_text())["peers"]
        assert {p["url"] for p in peers} == {"http://127.0.0.1:9", "http://127.0.0.1:7"}

        _keys(first, "C-q")
        _keys(second, "C-q")
        _gone(first)
        _gone(second)
        kept = {s["name"]: s["port"] for s in _saved(tmp_path)["servers"]}
        assert list(kept) == ["desk-3", "desk-4"] and kept["desk-3"] == port
    finally:
        subprocess.run([*TMUX_HERE, "kill-server"], capture_output=True)


_PUT_MANY = """
import sys
from pathlib import Path
from toolnexus.hosting import ServerSpec
from tui.saved import ServerBook

import time
book = ServerBook(Path(sys.argv[1]))
book.load()
(Path(sys.argv[1]) / f"ready-{sys.argv[2]}").touch()
while len(list(Path(sys.argv[1]).glob("ready-*"))) < 2:  # both loaded: now at once
    time.sleep(0.01)
for i in range(25):
    book.put(ServerSpec(name=f"{sys.argv[2]}-{i}"))
"""


def test_each_change_is_made_on_the_file_as_it_is_now(tmp_path):
    """Two processes saving servers at once, each from what it loaded at its start: every change
    is made under the lock on the file as it is then (re-read, one change, written whole), so
    none of the fifty is lost."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.Popen([sys.executable, "-c", _PUT_MANY, str(tmp_path), who], env=env)
        for who in ("left", "right")
    ]
    assert [p.wait(timeout=120) for p in runs] == [0, 0]
    names = {s["name"] for s in json.loads((tmp_path / SAVED).read_text())["servers"]}
    assert names == {f"{who}-{i}" for who in ("left", "right") for i in range(25)}


_ADD_PEERS = """
import sys
import time
from pathlib import Path
from toolnexus.hosting import ServerSpec
from tui.peers import PeerBook
from tui.saved import ServerBook

folder, who = Path(sys.argv[1]), sys.argv[2]
book = PeerBook(folder)
book.load()
(folder / f"ready-{who}").touch()
while len(list(folder.glob("ready-*"))) < 2:  # both loaded: now at once
    time.sleep(0.01)
for i in range(25):
    url = f"http://127.0.0.1:{(10000 if who == 'left' else 20000) + i}"
    book.add(url)
    book.save(url)
book.remove("http://127.0.0.1:10000" if who == "left" else "http://127.0.0.1:20000")
(folder / f"done-{who}").touch()
while len(list(folder.glob("done-*"))) < 2:  # both done: what the other did is read now
    time.sleep(0.01)
book.poll()
print(len(book.peers))
"""


def test_peers_added_in_two_windows_are_all_kept(tmp_path):
    """Two processes adding peers at once (then each removing its first), each from what it loaded
    at its start: the peers file is changed as the servers file is, under its lock on the file as
    it is then, so none of the forty-eight left is lost, and each process knows the other's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _ADD_PEERS, str(tmp_path), who],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for who in ("left", "right")
    ]
    outs = [p.communicate(timeout=120)[0] for p in runs]
    assert [p.returncode for p in runs] == [0, 0]
    saved = json.loads((tmp_path / "peers-v1.json").read_text())
    urls = {p["url"] for p in saved["peers"]}
    assert urls == {f"http://127.0.0.1:{base + i}" for base in (10000, 20000) for i in range(1, 25)}
    assert [int(out) for out in outs] == [48, 48]  # each knows the other's peers, and not its first


def test_a_peers_file_that_cannot_be_read_loses_no_peer(tmp_path):
    """The peers file made unreadable while a window runs (a hand edit half done, not JSON) is not
    every peer removed by another window: the peers stay, nothing is said, and the next change
    writes them all back with it."""
    book = PeerBook(tmp_path)
    book.load()
    for url in ("http://127.0.0.1:7", "http://127.0.0.1:9"):
        book.add(url)
        book.save(url)
    (tmp_path / "peers-v1.json").write_text('{"peers": [')
    assert book.poll() is None
    assert set(book.peers) == {"http://127.0.0.1:7", "http://127.0.0.1:9"}
    book.add("http://127.0.0.1:11")
    book.save("http://127.0.0.1:11")
    saved = json.loads((tmp_path / "peers-v1.json").read_text())
    assert {p["url"] for p in saved["peers"]} == {f"http://127.0.0.1:{p}" for p in (7, 9, 11)}


def test_a_peer_changed_here_after_the_other_window_removed_it_is_kept_here_and_saved(tmp_path):
    """Window B removes a peer, then window A (which has not looked since) changes it (its
    dialect, say): the last change wins, so the file has it again, and A keeps showing it,
    without saying B removed it (it dropped it from A's list while A saved it)."""
    url = "http://127.0.0.1:7"
    left, right = PeerBook(tmp_path, pid=1), PeerBook(tmp_path, pid=2)
    left.load()
    left.add(url)
    left.save(url)
    right.load()
    right.remove(url)
    left.peers[url].dialect = "1.0"
    left.save(url)
    assert url in left.peers and left.poll() is None
    saved = json.loads((tmp_path / "peers-v1.json").read_text())["peers"]
    assert [(p["url"], p["dialect"]) for p in saved] == [(url, "1.0")]
    change = right.poll()
    assert change is not None and change.added == [url] and change.by == 1


def test_a_servers_file_that_cannot_be_read_loses_no_server(tmp_path):
    """As the peers file: the servers file made unreadable while a window runs (not JSON) is not
    every server removed by another window; the next change writes them all back with it. A bad
    entry is left out alone, not the entries after it."""
    book = ServerBook(tmp_path)
    book.load()
    for name in ("desk-1", "desk-2"):
        book.put(ServerSpec(name=name))
    (tmp_path / SAVED).write_text('{"servers": [')
    assert book.poll() is None
    assert list(book.specs) == ["desk-1", "desk-2"]
    book.put(ServerSpec(name="desk-3"))
    saved = json.loads((tmp_path / SAVED).read_text())
    assert [s["name"] for s in saved["servers"]] == ["desk-1", "desk-2", "desk-3"]

    saved["servers"].insert(1, "not a server")
    (tmp_path / SAVED).write_text(json.dumps(saved))
    assert ServerBook(tmp_path).load() == [ServerSpec(name=f"desk-{i}") for i in (1, 2, 3)]
