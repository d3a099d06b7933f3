"""What a hosted server's durable store keeps, as a daily user meets it (the look at issue 61): a
store folder another process serves is said in the server's row, not quietly taken over."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")


from toolnexus.hosting import ServerSpec  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402
from tui.saved import ServerBook  # noqa: E402

from ..helpers import Served  # noqa: E402
from .test_pilot import until  # noqa: E402


def _app(folder: Path, specs: list[ServerSpec]) -> ToolnexusApp:
    return ToolnexusApp(
        specs=specs, peers=PeerBook(folder), servers=ServerBook(folder), export_dir=folder
    )


async def test_a_server_on_a_task_folder_another_process_serves_fails_saying_so(tmp_path: Path):
    """Two servers pointed at one folder of tasks: the second's start failed the first's running
    tasks ("interrupted by restart"). The second fails now, its row saying who holds the folder."""
    folder = tmp_path / "t"
    holder = Served("--store", f"file:{folder}")
    async with holder:
        await holder.until(lambda lines: holder.events("started"))
        assert holder.proc is not None
        app = _app(tmp_path, [ServerSpec(name="desk", skills=[], store=f"file:{folder}")])
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.workspace.get("desk").state == "failed", timeout=30)
            said = f"the task store {folder} is in use by another process (pid {holder.proc.pid})"
            assert app.workspace.get("desk").error.startswith(said)
            detail = app.screen.query_one("#server-detail")
            await until(pilot, lambda: said in str(detail.render()).replace("\n", ""))
            await app.action_quit()
