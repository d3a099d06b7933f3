"""Deterministic pictures of the main screens: fixed servers, task ids, times and clock."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from tui.app import ToolnexusApp  # noqa: E402

from .fakes import NOW, fixed_workspace  # noqa: E402


def app() -> ToolnexusApp:
    return ToolnexusApp(fixed_workspace(), specs=[], now=lambda: NOW)


async def settle(pilot) -> None:
    await pilot.pause(0.2)


def test_servers_screen(snap_compare):
    assert snap_compare(app(), terminal_size=(110, 32), run_before=settle)


def test_tasks_screen(snap_compare):
    assert snap_compare(app(), terminal_size=(110, 36), press=["2", "up"], run_before=settle)


def test_tasks_raw_and_telemetry(snap_compare):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("2")
        await pilot.pause(0.1)
        pilot.app.screen.query_one("#tasks").move_cursor(row=0)
        pilot.app.screen.query_one("#detail").active = "d-telemetry"
        await pilot.pause(0.1)

    assert snap_compare(app(), terminal_size=(110, 36), run_before=before)


def test_new_server_form(snap_compare):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("n")
        await pilot.pause(0.2)
        form = pilot.app.screen
        form.query_one("#f-skills").value = "examples/skills"  # no absolute path on screen

    assert snap_compare(app(), terminal_size=(110, 40), run_before=before)
