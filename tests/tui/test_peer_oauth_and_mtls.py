"""The Peers screen's Auth tab runs the flows a user needs at a terminal (issue 62 item 1): the
OAuth device code flow (the code and address shown in a notification and in the tab while the
token endpoint is polled, the TUI answering meanwhile), the authorization code flow with PKCE (the
address opened, a loopback redirect), and a client certificate for mutual TLS, each saved with the
peer without a secret and used when chatting. The official a2a-sdk server on port 0 (enforcing
the card's OAuth requirements, or behind mutual TLS), the tests' authorization server
(``tests/peers/authorization_server.py``: RFC 8628 and 7636), certificates made by the test."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Input, Select  # noqa: E402

from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402

from ..peers.authorization_server import authorization_server  # noqa: E402
from ..peers.sdk_server import BEARER, sdk_server  # noqa: E402
from ..peers.tls import make_pki  # noqa: E402
from ..security.test_client_credentials import _browser, device_card  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_peers_chat_and_wire import chat  # noqa: E402
from .test_pilot import chatting_with, open_chat, until  # noqa: E402


async def _auth_tab(app: ToolnexusApp, pilot, url: str) -> None:
    """The Peers screen, ``url`` selected, its Auth tab open."""
    await pilot.press("3")
    await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
    table = app.screen.query_one("#peers", DataTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(url))
    await pilot.press("h")
    await until(pilot, lambda: app.screen.query_one("#peer-detail").active == "p-headers")


async def _apply(app: ToolnexusApp, pilot, box: str = "#auth-name") -> None:
    app.screen.query_one(box, Input).focus()
    await pilot.press("enter")


def _said(app: ToolnexusApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_the_device_code_flow_shows_its_code_while_polling_and_the_chat_gets_through(
    tmp_path: Path,
):
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book)
    async with (
        authorization_server("desk", "s", BEARER) as auth,
        sdk_server(shaped=device_card(auth.url), enforce=True) as url,
        app.run_test(size=(120, 40)) as pilot,
    ):
        app.connect_peer(book.add(url))
        await until(pilot, lambda: book.peers[url].state == "reachable")
        await _auth_tab(app, pilot, url)
        # the card's first scheme is an oauth2 device code flow: the tab offers it
        await until(pilot, lambda: app.screen.query_one("#auth-kind", Select).value == "device")
        assert "The card asks for: OAuth device code" in shown(app, "#auth-help")
        await _apply(app, pilot)  # no client id: refused with the reason, nothing applied
        assert book.peers[url].auth.kind == "none"
        assert any("the client id is empty" in m for m in _said(app))
        app.screen.query_one("#auth-name", Input).value = "terminal a2a"
        await _apply(app, pilot)
        await until(
            pilot,
            lambda: book.peers[url].auth.kind == "device" and book.peers[url].state == "reachable",
        )
        await open_chat(app, pilot, url)
        app.screen.query_one("#chat-input", Input).value = "hello device"
        await pilot.press("enter")
        code = f"To sign in, open {auth.url}/device/enter and enter the code WDJB-MJHT"
        await until(pilot, lambda: code in _said(app))
        # while the token endpoint answers "authorization_pending", the TUI answers keys
        await until(pilot, lambda: auth.polls >= 2)
        await pilot.press("escape", "3")
        await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
        app.screen.query_one("#peer-detail").active = "p-headers"
        await until(pilot, lambda: code in shown(app, "#auth-flow"))
        assert app.conversation.turns[-1].text == "…"  # still waiting for the user
        auth.approve()
        await until(pilot, lambda: app.conversation.turns[-1].text == "echo: hello device")
        assert auth.grants[-1]["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code"
        assert auth.grants[-1]["client_id"] == "terminal"
        await pilot.press("4")
        await until(
            pilot,
            lambda: chatting_with(app, url),
        )
        # the token is kept: the next message runs no flow
        polls = auth.polls
        assert (await chat(app, pilot, "again")).text == "echo: again"
        assert auth.polls == polls
    saved = (tmp_path / "config" / "peers-v1.json").read_text()
    assert json.loads(saved)["peers"][0]["auth"] == {
        "kind": "device",
        "name": "terminal a2a",
        "secret": "",
    }
    assert BEARER not in saved


async def test_the_browser_kind_opens_the_sign_in_and_takes_the_loopback_redirect(tmp_path: Path):
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book)
    opened: list[str] = []
    browsing: list[asyncio.Task[None]] = []

    def browser(address: str, new_tab: bool = True) -> None:  # the user's browser signs in
        opened.append(address)
        browsing.append(asyncio.get_running_loop().create_task(_browser(address)))

    app.open_url = browser  # type: ignore[method-assign]
    async with (
        authorization_server("desk", "s", BEARER) as auth,
        sdk_server(shaped=device_card(auth.url), enforce=True) as url,
        app.run_test(size=(120, 40)) as pilot,
    ):
        app.connect_peer(book.add(url))
        await until(pilot, lambda: book.peers[url].state == "reachable")
        await _auth_tab(app, pilot, url)
        app.screen.query_one("#auth-kind", Select).value = "browser"
        app.screen.query_one("#auth-name", Input).value = "terminal a2a"
        await _apply(app, pilot)
        await until(
            pilot,
            lambda: book.peers[url].auth.kind == "browser" and book.peers[url].state == "reachable",
        )
        await open_chat(app, pilot, url)
        assert (await chat(app, pilot, "hello pkce")).text == "echo: hello pkce"
        await asyncio.gather(*browsing)
    assert opened[0].startswith(auth.url + "/authorize?response_type=code")
    assert "code_challenge_method=S256" in opened[0]
    assert any(m.startswith(f"To sign in, open {auth.url}/authorize?") for m in _said(app))
    assert auth.grants[-1]["grant_type"] == "authorization_code"


async def test_a_client_certificate_from_the_auth_tab_reaches_a_peer_behind_mutual_tls(
    tmp_path: Path,
):
    pki = make_pki(tmp_path)
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book)
    async with sdk_server(tls=pki) as url, app.run_test(size=(120, 40)) as pilot:
        assert url.startswith("https://")
        app.connect_peer(book.add(url))
        await until(pilot, lambda: book.peers[url].state == "unreachable")  # no certificate
        await _auth_tab(app, pilot, url)
        app.screen.query_one("#auth-kind", Select).value = "certificate"
        await until(pilot, lambda: app.screen.query_one("#auth-files").display)
        # bad input: a certificate file that is not there is refused, in words, nothing applied
        app.screen.query_one("#auth-name", Input).value = str(tmp_path / "missing.pem")
        await _apply(app, pilot)
        assert book.peers[url].auth.kind == "none"
        assert any("the client certificate" in m and "cannot be used" in m for m in _said(app))
        # a stranger's certificate loads, but the server refuses it
        app.screen.query_one("#auth-name", Input).value = str(pki.stranger_cert)
        app.screen.query_one("#auth-key", Input).value = str(pki.stranger_key)
        app.screen.query_one("#auth-ca", Input).value = str(pki.ca)
        await _apply(app, pilot, "#auth-ca")
        await until(
            pilot,
            lambda: (
                book.peers[url].auth.kind == "certificate"
                and book.peers[url].state == "unreachable"
            ),
        )
        app.screen.query_one("#auth-name", Input).value = str(pki.client_cert)
        app.screen.query_one("#auth-key", Input).value = str(pki.client_key)
        await _apply(app, pilot, "#auth-key")
        await until(pilot, lambda: book.peers[url].state == "reachable")
        await open_chat(app, pilot, url)
        assert (await chat(app, pilot, "hello mtls")).text == "echo: hello mtls"
    saved = json.loads((tmp_path / "config" / "peers-v1.json").read_text())["peers"][0]["auth"]
    assert saved == {
        "kind": "certificate",
        "name": str(pki.client_cert),
        "secret": "",
        "key": str(pki.client_key),
        "ca": str(pki.ca),
    }
    again = PeerBook(tmp_path / "config")
    again.load()
    assert again.peers[url].auth == book.peers[url].auth


async def test_client_credentials_from_the_auth_tab_get_the_token_and_the_chat_gets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A card whose scheme is OAuth client credentials: the tab offers that kind, refuses it
    without a secret, and with the client id, scopes and the secret (an ``${ENV}`` reference) the
    chat's call gets a token by the grant (no one signs in) and the peer answers; saved with the
    reference, never the secret or the token."""
    monkeypatch.setenv("TN_TEST_CLIENT_SECRET", "s")
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book)
    async with (
        authorization_server("desk", "s", BEARER) as auth,
        sdk_server(token_url=auth.url + "/token") as url,
        app.run_test(size=(120, 40)) as pilot,
    ):
        app.connect_peer(book.add(url))
        await until(pilot, lambda: book.peers[url].state == "reachable")
        await _auth_tab(app, pilot, url)
        await until(pilot, lambda: app.screen.query_one("#auth-kind", Select).value == "client")
        assert "The card asks for: OAuth client credentials" in shown(app, "#auth-help")
        app.screen.query_one("#auth-name", Input).value = "desk a2a"
        await _apply(app, pilot)  # no secret: refused with the reason, nothing applied
        assert book.peers[url].auth.kind == "none"
        assert any("the client secret is empty" in m for m in _said(app))
        app.screen.query_one("#auth-secret", Input).value = "${TN_TEST_CLIENT_SECRET}"
        await _apply(app, pilot, "#auth-secret")
        await until(
            pilot,
            lambda: book.peers[url].auth.kind == "client" and book.peers[url].state == "reachable",
        )
        await open_chat(app, pilot, url)
        assert (await chat(app, pilot, "hello client")).text == "echo: hello client"
    assert auth.grants[-1]["grant_type"] == "client_credentials"
    assert auth.grants[-1]["scope"] == "a2a"
    saved = (tmp_path / "config" / "peers-v1.json").read_text()
    assert json.loads(saved)["peers"][0]["auth"] == {
        "kind": "client",
        "name": "desk a2a",
        "secret": "${TN_TEST_CLIENT_SECRET}",
    }
    assert BEARER not in saved and '"s"' not in saved
