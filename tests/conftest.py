from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from toolnexus.stores import KINDS

from .helpers import counting, settled, store_where, tiktoken_cache

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SKILLS = ROOT / "examples" / "skills"

# The demo model says its answers word by word at a pace a person can watch; tests (and the
# servers and kernels they start, which inherit this) take its words without a pause. A test of
# the pace itself gives demo_client(pace=...).
os.environ.setdefault("TOOLNEXUS_DEMO_PACE", "0")
# What `toolnexus send` remembers for --continue goes to a folder of this run, not the user's.
if "TOOLNEXUS_STATE_DIR" not in os.environ:
    os.environ["TOOLNEXUS_STATE_DIR"] = tempfile.mkdtemp(prefix="toolnexus-state-")
    atexit.register(shutil.rmtree, os.environ["TOOLNEXUS_STATE_DIR"], True)

# Tokens are counted with tiktoken's o200k_base (toolnexus/debug/cost.py), whose file tiktoken
# fetches once from outside: the tests (and every process they start) read it from the copy the
# test extra's bpe-openai ships, put where tiktoken looks (it checks the file's hash itself).
os.environ["TIKTOKEN_CACHE_DIR"] = tiktoken_cache()


@pytest.fixture
def example_skills() -> Path:
    return EXAMPLE_SKILLS


@pytest.fixture(autouse=True)
def _private_user_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads or writes the user's own folders: toolnexus's config (saved servers, peers,
    MCP servers: the TUI's, in whichever test builds one) and exports go to the test's folder, and
    so does what a library or program keeps under ``$XDG_CONFIG_HOME``. The processes a test starts
    inherit these."""
    monkeypatch.setenv("TOOLNEXUS_CONFIG_DIR", str(tmp_path / "tn-config"))
    monkeypatch.setenv("TOOLNEXUS_EXPORT_DIR", str(tmp_path / "tn-exports"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


@pytest.fixture(autouse=True)
def _pilot_waits_for_handlers(monkeypatch: pytest.MonkeyPatch):
    """``pilot.press`` and ``pilot.pause()`` return once what they started has been handled
    (``helpers.settled``), key by key: the next key, and the test's next check, come after the
    last key's handlers, however loaded the machine. ``TOOLNEXUS_PILOT_STARVED=1`` shows what a
    loaded machine does to a test that assumes more: Textual's idle checks (``wait_for_idle``,
    which end once the process used under 1 ms of CPU in 20 ms, as a starved one does) end at
    once."""
    try:
        from textual import app, pilot
        from textual.message_pump import MessagePump
        from textual.pilot import Pilot
    except ImportError:
        return
    if os.environ.get("TOOLNEXUS_PILOT_STARVED"):

        async def starved(min_sleep: float = 0, max_sleep: float = 1) -> None:
            await asyncio.sleep(0)

        monkeypatch.setattr(app, "wait_for_idle", starved)
        monkeypatch.setattr(pilot, "wait_for_idle", starved)
    press, pause = Pilot.press, Pilot.pause

    async def press_settled(self: Pilot, *keys: str) -> None:
        for key in keys:
            await press(self, key)
            await settled(self.app)

    async def pause_settled(self: Pilot, delay: float | None = None) -> None:
        await pause(self, delay)
        await settled(self.app)

    monkeypatch.setattr(MessagePump, "_dispatch_message", counting(MessagePump._dispatch_message))
    monkeypatch.setattr(Pilot, "press", press_settled)
    monkeypatch.setattr(Pilot, "pause", pause_settled)


@pytest.fixture(autouse=True)
def _strict_tui_handlers(monkeypatch: pytest.MonkeyPatch):
    """In tests an exception in a TUI handler ends the app (and fails the test), as Textual does by
    default; users get a notification instead (ToolnexusApp._handle_exception)."""
    try:
        from tui.app import ToolnexusApp
    except ImportError:
        return
    monkeypatch.setattr(ToolnexusApp, "strict_handlers", True)


@pytest.fixture(scope="session")
def postgres_server():
    """A private PostgreSQL cluster for this test process (see tests/postgres.py)."""
    from .postgres import Postgres, need_postgres

    server = Postgres(need_postgres())
    yield server
    server.close()


@pytest.fixture
def postgres(postgres_server) -> str:
    """The DSN of a fresh database on the test process's PostgreSQL."""
    return postgres_server.database()


@pytest.fixture(params=KINDS, ids=lambda kind: kind.name)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each kind ``toolnexus.stores.KINDS`` lists, as a user names it (the
    every-store tests: tests/serve/test_stores.py, tests/security/test_odd_ids.py)."""
    return store_where(request.param, request, tmp_path)
