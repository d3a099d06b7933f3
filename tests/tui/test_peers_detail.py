"""Peers' detail pane follows the peer selected (issue 61 item 4): its Doctor and Tasks tabs show
each peer's own report, `[` and `]` step through its tabs as in Tasks, and a dialect forced with
`v` is tried on the peer, not taken on its card's word; the Diagnostics tab says what the card
costs in tokens, as ``toolnexus card --validate`` does (issue 64 item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("a2a")

from textual.widgets import DataTable, Input, Static, TabbedContent  # noqa: E402

from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402

from ..helpers import arun_cli, free_port  # noqa: E402
from ..peers.legacy_stub import legacy_stub  # noqa: E402
from ..peers.sdk_server import sdk_server  # noqa: E402
from .test_pilot import until  # noqa: E402


def shown(app: ToolnexusApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def add_peer(app: ToolnexusApp, pilot, book: PeerBook, url: str) -> None:
    await pilot.press("n")
    app.screen.query_one("#peer-url", Input).value = url
    await pilot.press("enter")
    await until(
        pilot, lambda: url in book.peers and book.peers[url].state == "reachable", timeout=60
    )


async def select(app: ToolnexusApp, pilot, url: str) -> None:
    table = app.screen.query_one("#peers", DataTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(url))
    await pilot.pause(0.05)


async def test_brackets_step_through_the_detail_tabs(tmp_path: Path):
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as sdk, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await add_peer(app, pilot, book, sdk)
        tabs = app.screen.query_one("#peer-detail", TabbedContent)
        assert tabs.active == "p-card"
        await pilot.press("right_square_bracket")
        assert tabs.active == "p-diag"
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert tabs.active == "p-headers"  # round, from the first to the last
        await pilot.press("right_square_bracket")
        assert tabs.active == "p-card"


async def test_the_detail_shows_the_selected_peers_own_reports(tmp_path: Path):
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with (
        sdk_server() as sdk,
        legacy_stub() as legacy,
        app.run_test(size=(120, 40)) as pilot,
    ):
        await pilot.press("3")
        await add_peer(app, pilot, book, sdk)
        await pilot.press("o")  # the doctor on the SDK peer
        await until(
            pilot,
            lambda: not any(w.group == "peer-doctor" and not w.is_finished for w in app.workers),
            timeout=60,
        )
        sdk_report = shown(app, "#doctor-view")
        assert sdk in sdk_report
        await pilot.press("t")  # its tasks (ListTasks: none yet)
        await until(pilot, lambda: "task(s) on" in shown(app, "#remote-tasks"), timeout=30)

        await add_peer(app, pilot, book, legacy.url)  # another peer: the one shown now
        await until(pilot, lambda: app.screen.selected() == legacy.url)
        assert sdk not in shown(app, "#doctor-view")
        assert shown(app, "#doctor-view").startswith("o probes this peer")
        assert shown(app, "#remote-tasks").startswith("t lists the tasks")

        await select(app, pilot, sdk)  # back: its own reports again
        assert shown(app, "#doctor-view") == sdk_report
        assert "task(s) on" in shown(app, "#remote-tasks")


async def test_a_forced_dialect_is_tried_on_the_peer(tmp_path: Path):
    """The official SDK's server speaking only 1.0 over JSON-RPC: `v` to 0.3 and to HTTP+JSON
    ("rest") says it does not answer so; 1.0 is reachable."""
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as sdk, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await add_peer(app, pilot, book, sdk)
        peer = book.peers[sdk]

        async def forced(dialect: str) -> None:
            await pilot.press("v")
            await until(
                pilot, lambda: peer.dialect == dialect and peer.state != "checking", timeout=30
            )

        await forced("0.3")
        assert peer.state == "unreachable" and "does not answer in 0.3" in peer.error
        assert "Method not found" in peer.error
        for view in ("#card-view", "#diag-view"):  # the reason on screen, above its card
            assert shown(app, view).startswith(f"✘ unreachable: {peer.error}"), view
        await forced("1.0")
        assert peer.state == "reachable"
        assert "unreachable" not in shown(app, "#card-view")
        await forced("rest")
        assert peer.state == "unreachable" and "does not answer in HTTP+JSON" in peer.error
        table = app.screen.query_one("#peers", DataTable)
        assert str(table.get_row_at(table.get_row_index(sdk))[4]) == "unreachable"


async def test_diagnostics_say_what_the_card_costs_as_the_cli_does(tmp_path: Path):
    """The official SDK's server: the Diagnostics tab's cost line is ``card --validate``'s, word
    for word (one function counts both: the tokens and the tokenizer named)."""
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as sdk, app.run_test(size=(120, 40)) as pilot:
        code, out, err = await arun_cli("card", sdk, "--validate")
        [cli_cost] = [line.strip() for line in out.splitlines() if line.startswith("  cost: ")]
        assert code == 0 and "tokens (tiktoken" in cli_cost, out + err
        await pilot.press("3")
        await add_peer(app, pilot, book, sdk)
        await pilot.press("right_square_bracket")  # Diagnostics
        await until(pilot, lambda: "tokens (" in shown(app, "#diag-view"), timeout=30)
        lines = shown(app, "#diag-view").splitlines()
        assert cli_cost in lines, lines


async def test_a_peer_without_a_card_has_no_name_cut_from_its_url(tmp_path: Path):
    """A peer that never served a card has no name: the name column said its URL again, cut to
    its width (``http://127.0.0.1:3``); it shows a dash, the whole URL being in the next one."""
    url = f"http://127.0.0.1:{free_port()}"  # a port nothing listens on: no card
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as sdk, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await add_peer(app, pilot, book, sdk)
        await pilot.press("n")
        app.screen.query_one("#peer-url", Input).value = url
        await pilot.press("enter")
        await until(pilot, lambda: book.peers[url].state == "unreachable", timeout=60)
        table = app.screen.query_one("#peers", DataTable)
        assert str(table.get_row_at(table.get_row_index(url))[1]) == "—"
        assert str(table.get_row_at(table.get_row_index(url))[2]) == url
        assert str(table.get_row_at(table.get_row_index(sdk))[1]) == "sdk-echo"  # its card's


async def test_a_doctor_line_wraps_under_its_own_text(tmp_path: Path):
    """At 120 columns the official SDK peer's method-names finding is a few columns too long: its
    ``(1.0)`` stood alone at the left edge as if a line of its own. Every line of the Doctor tab
    fits its width now, a wrapped one going on indented under its text, never one short word alone."""
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server() as sdk, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await add_peer(app, pilot, book, sdk)
        await pilot.press("o")
        await until(
            pilot,
            lambda: not any(w.group == "peer-doctor" and not w.is_finished for w in app.workers),
            timeout=120,
        )
        await pilot.pause(0.2)
        view = app.screen.query_one("#doctor-view", Static)
        width = view.content_size.width
        lines = shown(app, "#doctor-view").splitlines()
        assert any("method names at" in line for line in lines)
        assert all(len(line) <= width for line in lines), (width, lines)
        for line in lines[2:]:  # below the verdict: findings, each with its details or rest
            if line.strip() and not line.startswith(("  ✔", "  ·", "  !", "  ✘")):
                assert line.startswith("    "), line  # under its finding's text
                assert " " in line.strip() or len(line.strip()) >= 12, line  # no word alone
