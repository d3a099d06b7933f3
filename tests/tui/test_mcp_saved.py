"""The MCP mode's saved servers (issue 60 item 1 g), by real pilots against real MCP servers (a
served toolkit's /mcp behind a bearer token, the official Python SDK's server over stdio): saved
with ctrl+s, listed with o, kept across a relaunch, a secret written only as an ``${ENV}``
reference; exported as ``mcpServers`` JSON and imported back; a bad, hostile or oversized file
said and nothing lost."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

import toolnexus as tn  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.export import ExportPrompt, Prompt  # noqa: E402
from tui.screens.mcp_dialogs import SavedServersDialog  # noqa: E402

from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_mcp_inspector import column, connect, focus_row, table  # noqa: E402
from .test_pilot import until  # noqa: E402

TOKEN = "saved-s3cret-token-4711"
LITERAL = "literal-h3ader-value-0815"
ENV_SECRET = "clear-env-s3cret-9999"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def saved_file() -> Path:
    return Path(os.environ["TOOLNEXUS_CONFIG_DIR"]) / "mcp-servers-v1.json"


async def answer(app: ToolnexusApp, pilot, kind: type, text: str) -> None:
    """A one-line prompt (a name, a path) answered: its box filled, enter."""
    await until(pilot, lambda: isinstance(app.screen, kind))
    box = app.screen.query_one(Input)
    await until(pilot, lambda: app.focused is box)
    box.value = text
    await pilot.press("enter")


async def open_saved(app: ToolnexusApp, pilot) -> None:
    """``o`` from the MCP mode, out of a text box first (there it types)."""
    await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
    if isinstance(app.focused, Input):
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.focused, Input))
    await pilot.press("o")
    await until(pilot, lambda: isinstance(app.screen, SavedServersDialog))


async def test_saved_servers_survive_a_relaunch_and_keep_no_secret(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TN_SAVED_TOKEN", TOKEN)
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(add)])
    stdio = " ".join(
        [
            "PYTHONPATH=" + shlex.quote(mcp_peers.ENV["PYTHONPATH"]),
            f"API_TOKEN={ENV_SECRET}",
            shlex.join(mcp_peers.PY_STDIO),
        ]
    )
    locked = tn.MCPServeConfig(auth=tn.Auth.bearer(TOKEN))
    async with await tk.serve(mcp=locked) as served:
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(140, 44)) as pilot:
            await connect(app, pilot, served.mcp_url)
            await until(pilot, lambda: "✘" in shown(app, "#mcp-status"))  # no token: refused
            headers = app.screen.query_one("#mcp-headers", Input)
            headers.value = f"Authorization: Bearer ${{TN_SAVED_TOKEN}}; X-Literal: {LITERAL}"
            headers.focus()
            await pilot.press("enter")
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 1)
            await pilot.press("ctrl+s")
            await answer(app, pilot, Prompt, "locked desk")
            await until(pilot, lambda: saved_file().exists())

            await pilot.press("u")
            app.screen.query_one("#mcp-headers", Input).value = ""
            app.screen.query_one("#mcp-url", Input).value = stdio
            await pilot.press("enter")
            await until(pilot, lambda: "slow" in column(app, "#mcp-tools", 0), timeout=30)
            await open_saved(app, pilot)  # the list, and s saves the endpoint from it
            assert column(app, "#saved-list", 0) == ["locked desk"]
            await pilot.press("s")
            await answer(app, pilot, Prompt, "everything")
            await until(pilot, lambda: column(app, "#saved-list", 0)[-1:] == ["everything"])
            said = shown(app, "#saved-said")
            assert "API_TOKEN" in said and "this session only" in said
            await pilot.press("escape")
            await pilot.press("ctrl+q")

        text = saved_file().read_text()
        assert stat.S_IMODE(saved_file().stat().st_mode) == 0o600
        assert TOKEN not in text and LITERAL not in text and ENV_SECRET not in text
        saved = json.loads(text)["mcpServers"]
        assert saved["locked desk"] == {
            "url": served.mcp_url,
            "headers": {"Authorization": "Bearer ${TN_SAVED_TOKEN}"},
        }
        assert saved["everything"]["type"] == "stdio"
        assert saved["everything"]["env"]["API_TOKEN"] == "${API_TOKEN}"
        assert saved["everything"]["args"] == mcp_peers.PY_STDIO[1:]

        # a relaunch: the list is there, and a saved server connects by keys alone
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.press("alt+6")
            await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
            await open_saved(app, pilot)
            assert column(app, "#saved-list", 0) == ["locked desk", "everything"]
            assert column(app, "#saved-list", 1) == ["auto", "stdio"]
            await pilot.press("enter")
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 1)
            assert column(app, "#mcp-tools", 0) == ["add"]
            assert app.screen.query_one("#mcp-headers", Input).value == (
                "Authorization: Bearer ${TN_SAVED_TOKEN}"
            )
            await focus_row(app, pilot, "#mcp-tools", "add")
            await open_saved(app, pilot)
            await pilot.press("down", "enter")
            await until(pilot, lambda: "slow" in column(app, "#mcp-tools", 0), timeout=30)
            await pilot.press("ctrl+q")


async def test_export_then_import_round_trips_and_a_bad_file_loses_nothing(tmp_path: Path):
    app = ToolnexusApp(specs=[])
    stdio = f"DEBUG=1 TOKEN=${{MY_TOKEN}} {shlex.join(mcp_peers.PY_STDIO)}"
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("alt+6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        for name, endpoint in (("py", stdio), ("far", "https://mcp.example.test/mcp")):
            app.screen.query_one("#mcp-url", Input).value = endpoint
            await pilot.press("ctrl+s")
            await answer(app, pilot, Prompt, name)
            await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        # a name already saved is replaced only once asked
        first = saved_file().read_text()
        app.screen.query_one("#mcp-url", Input).value = "https://other.example.test/mcp"
        for yes in ("n", "y"):
            await pilot.press("ctrl+s")
            await answer(app, pilot, Prompt, "far")
            await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
            await pilot.press(yes)
            await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
            if yes == "n":
                assert saved_file().read_text() == first
        await until(pilot, lambda: "other.example.test" in saved_file().read_text())
        before = saved_file().read_text()
        await open_saved(app, pilot)
        dialog = app.screen
        assert column(app, "#saved-list", 0) == ["py", "far"]

        out = tmp_path / "exported.json"
        await pilot.press("e")
        await answer(app, pilot, ExportPrompt, str(out))
        await until(pilot, out.exists)
        exported = json.loads(out.read_text())
        assert exported == json.loads(before)
        assert exported["mcpServers"]["py"]["env"] == {"DEBUG": "1", "TOKEN": "${MY_TOKEN}"}

        for _ in range(2):  # both deleted, each asked first
            await pilot.press("x")
            await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
            await pilot.press("y")
            await until(pilot, lambda: app.screen is dialog)
        await until(pilot, lambda: table(app, "#saved-list").row_count == 0)

        await pilot.press("i")
        await answer(app, pilot, Prompt, str(out))
        await until(pilot, lambda: column(app, "#saved-list", 0) == ["py", "far"])
        assert json.loads(saved_file().read_text()) == exported

        # bad files: said, and the saved list as it was
        bad = {
            "not-json.json": "{ not json",
            "nested.json": "[" * 100_000,
            "huge.json": json.dumps({"mcpServers": {"x": {"url": "u", "pad": "x" * 2_000_000}}}),
            "many.json": json.dumps({"mcpServers": {f"s{i}": {"url": "u"} for i in range(600)}}),
            "shapeless.json": json.dumps({"mcpServers": {"x": {"args": "rm -rf /"}}}),
            "no-servers.json": json.dumps({"hello": 1}),
        }
        for name, text in bad.items():
            (tmp_path / name).write_text(text)
            await pilot.press("i")
            await answer(app, pilot, Prompt, str(tmp_path / name))
            await until(pilot, lambda: app.screen is dialog)
            await until(pilot, lambda: "nothing imported" in shown(app, "#saved-said"))
            assert json.loads(saved_file().read_text()) == exported, name
            assert column(app, "#saved-list", 0) == ["py", "far"], name
            dialog.query_one("#saved-said").update("")
        await pilot.press("i")
        await answer(app, pilot, Prompt, str(tmp_path / "missing.json"))
        await until(pilot, lambda: "No such file" in shown(app, "#saved-said"))

        # a name with escapes and markup shows as text
        hostile = tmp_path / "hostile.json"
        hostile.write_text(json.dumps({"mcpServers": {"\x1b[2J[b]x[/b]": {"url": "http://h/"}}}))
        await pilot.press("i")
        await answer(app, pilot, Prompt, str(hostile))
        await until(pilot, lambda: table(app, "#saved-list").row_count == 3)
        assert "\x1b" not in column(app, "#saved-list", 0)[2]
        await pilot.press("escape", "ctrl+q")


async def test_a_saved_file_that_cannot_be_read_is_never_written_over():
    saved_file().parent.mkdir(parents=True, exist_ok=True)
    saved_file().write_text('{"mcpServers": {"mine": {"url": ')  # cut short
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("alt+6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        app.screen.query_one("#mcp-url", Input).value = "https://mcp.example.test/mcp"
        await open_saved(app, pilot)
        assert "cannot be read" in shown(app, "#saved-said")
        await pilot.press("s")
        await answer(app, pilot, Prompt, "other")
        await until(pilot, lambda: "not saved" in shown(app, "#saved-said"))
        await pilot.press("escape", "ctrl+q")
    assert saved_file().read_text() == '{"mcpServers": {"mine": {"url": '
