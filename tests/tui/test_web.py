"""``toolnexus-tui --web`` in real headless Chromium (Debian's, driven by playwright): the page
opens with the printed token and not without it, a message sent in Chat completes and shows in
Tasks, every mode draws, and two tabs are two apps; a page on another 127.0.0.1 port (the same
site to a browser) neither opens the app's websocket nor receives the token. The screenshots in ``docs/images/web-*.png``
are this test's (``TOOLNEXUS_SCREENSHOTS=1`` writes them there)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tui.web import app_command

from ..helpers import CHROMIUM, launch_chromium, stop_process

ROOT = Path(__file__).resolve().parents[2]
MODES = ["servers", "tasks", "peers", "chat", "wire", "mcp"]
# xterm.js draws on a canvas; without one it falls back to its DOM renderer, whose rows are text
DOM_RENDERER = "HTMLCanvasElement.prototype.getContext = function() { return null; };"


def _need_chromium() -> None:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail("the browser test needs Debian's chromium (.ci/run installs it)")
        pytest.skip("needs Debian's chromium (.ci/run installs it)")


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, subprocess.Popen]]:
    """``toolnexus-tui --web`` running; yields the URL it printed (with its token) and its
    process."""
    pytest.importorskip("textual_serve", reason="pip install -e '.[test]' brings textual-serve")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--web"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", line)
        assert found, (
            f"no URL printed: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        )
        yield found.group(0), proc
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def web(served) -> str:
    """The URL ``toolnexus-tui --web`` printed, with its token."""
    return served[0]


def test_the_page_is_only_for_the_token_holder(web):
    base, token = web.split("/?token=")
    port = base.rsplit(":", 1)[1]
    with httpx.Client(timeout=10) as http:
        assert http.get(base + "/").status_code == 403
        wrong = token[:-1] + (
            "y" if token.endswith("x") else "x"
        )  # one character off (a token may end in x)
        assert http.get(base + "/?token=" + wrong).status_code == 403
        for path in ("/ws", "/ws/", f"/ws/{wrong}", f"/ws/{token}"):  # no Origin: no websocket
            assert http.get(base + path).status_code in (403, 404), path
        assert (
            http.get(web, headers={"Host": f"rebound.example:{port}"}).status_code == 403
        )  # DNS rebinding
        page = http.get(web)
        assert page.status_code == 200 and _websocket_url(page.text) == (
            f"ws://127.0.0.1:{port}/ws/{token}"
        )
        assert "set-cookie" not in page.headers  # a cookie would reach every local port
        assert page.headers["referrer-policy"] == "no-referrer"
        assert page.headers["cache-control"] == "no-store"
        # textual-serve's own public files, served to anyone the Host check lets in
        assert http.get(base + "/static/js/textual.js").status_code == 200
        assert http.get(base + "/static/").status_code in (403, 404)  # no folder listing


def _screen(page) -> str:
    return page.locator(".xterm-rows").first.inner_text()


def _until(page, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        shown = _screen(page) if page.locator(".xterm-rows").count() else ""
        if text in shown:
            return shown
        assert time.monotonic() < deadline, f"{text!r} never appeared; the screen:\n{shown}"
        time.sleep(0.2)


def test_in_a_browser_a_chat_completes_and_shows_in_tasks_and_two_tabs_are_two_apps(web, tmp_path):
    _need_chromium()
    from playwright import sync_api

    shots = ROOT / "docs" / "images" if os.environ.get("TOOLNEXUS_SCREENSHOTS") == "1" else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(DOM_RENDERER)
            first = context.new_page()
            first.goto(web)
            servers = _until(first, "demo-desk  http://127.0.0.1:")
            mine = re.search(r"demo-desk\s+(http://127\.0\.0\.1:\d+)", servers).group(1)
            first.screenshot(path=str(shots / "web-servers.png"))
            first.locator(".xterm-screen").click()
            first.keyboard.press("4")
            _until(first, "demo-desk (hosted)")  # Chat opens on the server the hint names
            time.sleep(0.5)  # its message box takes the focus once mounted
            first.keyboard.type("hello from the browser")
            first.keyboard.press("Enter")
            _until(first, "You said: hello from the browser")
            first.screenshot(path=str(shots / "web-chat.png"))
            first.keyboard.press(
                "Escape"
            )  # out of the message box, then a mode key (apart: ESC+2 would be alt+2)
            time.sleep(0.5)
            first.keyboard.press("2")
            tasks = _until(first, "filter:")  # the Tasks mode
            assert re.search(r"✔ completed\s+\w+…\s+demo-desk", tasks), (
                tasks
            )  # the chat's task, finished
            first.screenshot(path=str(shots / "web-tasks.png"))
            for key, mode in (("3", "peers"), ("5", "wire"), ("6", "mcp")):
                first.keyboard.press(key)
                time.sleep(1.0)
                first.screenshot(path=str(shots / f"web-{mode}.png"))
            # a second tab: an app of its own (its own demo server), the first one's chat untouched
            second = context.new_page()
            second.goto(web)
            other = _until(second, "demo-desk  http://127.0.0.1:")
            theirs = re.search(r"demo-desk\s+(http://127\.0\.0\.1:\d+)", other).group(1)
            assert theirs != mine and "hello from the browser" not in other
            # from MCP mode, where Esc walks out to the endpoint box and digits type: alt+2
            first.keyboard.press("Alt+2")
            assert re.search(r"✔ completed\s+\w+…\s+demo-desk", _until(first, "filter:"))
        finally:
            browser.close()


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started that are alive (each websocket textual-serve accepts starts
    one: the app)."""
    found: set[int] = set()
    for thread in os.listdir(f"/proc/{pid}/task"):
        found.update(
            int(c) for c in Path(f"/proc/{pid}/task/{thread}/children").read_text().split()
        )
    return found


def _websocket_url(page_html: str) -> str:
    """The websocket address a page served by ``--web`` hands its terminal."""
    found = re.search(r'data-session-websocket-url="([^"]+)"', page_html)
    assert found, page_html[:2000]
    return html.unescape(found.group(1))


async def test_the_websocket_takes_only_the_pages_own_origin_and_starts_nothing_else(served):
    """Everything the page gives a caller (its cookies, its websocket address) is not enough from
    another origin, another local port, ``null`` or none: 403 before any app process starts."""
    import aiohttp

    url, proc = served
    base = url.split("/?token=")[0]
    port = int(base.rsplit(":", 1)[1])
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(url) as page:
            assert page.status == 200
            socket_url = _websocket_url(await page.text())
        before = _children(proc.pid)
        for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", None):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                async with http.ws_connect(socket_url, origin=origin):
                    pass
            assert refused.value.status == 403, origin
        assert not _children(proc.pid) - before  # no app was started for any of them
        async with http.ws_connect(socket_url, origin=base) as ws:  # the page's own origin
            first = await ws.receive(timeout=60)
            assert first.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), first


@contextmanager
def _elsewhere() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An ordinary page on another 127.0.0.1 port; yields its origin and the headers of every
    request it received."""
    received: list[dict[str, str]] = []

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append({k.lower(): v for k, v in self.headers.items()})
            body = b"<!doctype html><title>another local server</title><p>hello</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# opens a websocket from the page it runs in; says whether it opened and how many frames came
OPEN_SOCKET = """(url) => new Promise((resolve) => {
  let opened = false, frames = 0;
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { opened = true; };
  ws.onmessage = () => { frames += 1; ws.close(); };
  ws.onclose = () => resolve({opened, frames});
  setTimeout(() => resolve({opened, frames}), 30000);
})"""
# a sandboxed frame in the page: its origin is opaque, so its requests say `Origin: null`
SANDBOXED = """() => new Promise((resolve) => {
  const frame = document.createElement("iframe");
  frame.sandbox = "allow-scripts";
  frame.srcdoc = "<p>sandboxed</p>";
  frame.onload = () => resolve();
  document.body.appendChild(frame);
})"""


def test_a_page_on_another_local_port_gets_neither_the_token_nor_the_app(served):
    """The attack of issue 49 in real Chromium: with the app open in one tab, a page on another
    127.0.0.1 port (the same site) is sent no credential of the app and cannot open its websocket,
    not with the address the app's own page uses, not from a sandboxed (``null``) frame."""
    _need_chromium()
    from playwright import sync_api

    url, proc = served
    base, token = url.split("/?token=")
    with _elsewhere() as (evil, received), sync_api.sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            context = browser.new_context()
            context.add_init_script(DOM_RENDERER)
            mine = context.new_page()
            mine.goto(url)
            _until(mine, "demo-desk  http://127.0.0.1:", timeout=90)  # drawn through its websocket
            leaked = mine.evaluate(
                "document.getElementById('terminal').dataset.sessionWebsocketUrl"
            )
            before = _children(proc.pid)
            theirs = context.new_page()
            theirs.goto(evil + "/")
            theirs.evaluate("fetch('/again', {credentials: 'include'}).then(r => r.text())")
            tried = {
                "/ws": theirs.evaluate(OPEN_SOCKET, "ws" + base[len("http") :] + "/ws"),
                "the page's own address": theirs.evaluate(OPEN_SOCKET, leaked),
            }
            theirs.evaluate(SANDBOXED)
            sandboxed = next(f for f in theirs.frames if f != theirs.main_frame)
            tried["null"] = sandboxed.evaluate(OPEN_SOCKET, leaked)
            assert all(not t["opened"] and not t["frames"] for t in tried.values()), tried
            assert not _children(proc.pid) - before
            assert len(received) >= 2 and not any(token in str(h) for h in received), received
        finally:
            browser.close()


def _has_a_font(char: str) -> bool:
    """Whether a font on this machine draws ``char`` (fontconfig's list: what Chromium falls
    back to here; a character none has is a missing-glyph box)."""
    found = subprocess.run(
        ["fc-list", f":charset={ord(char):x}", "family"], capture_output=True, text=True, check=True
    )
    return bool(found.stdout.strip())


def test_in_a_browser_the_first_screen_shows_the_demo_starting_and_every_glyph_has_a_font(web):
    """Issue 52 item 4: the browser showed "No servers yet" before the demo appeared, and the
    header's icon (Textual's ⭘) as a missing-glyph box."""
    _need_chromium()
    if not shutil.which("fc-list"):
        pytest.fail("the glyph check needs fontconfig's fc-list (Debian's fontconfig)")
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(DOM_RENDERER)
            page = context.new_page()
            page.goto(web)
            seen: list[str] = []
            deadline = time.monotonic() + 30
            while "demo-desk  http://127.0.0.1:" not in (seen or [""])[-1]:
                assert time.monotonic() < deadline, seen[-1:]
                if page.locator(".xterm-rows").count():
                    seen.append(_screen(page))
                time.sleep(0.02)
            assert not [s for s in seen if "No servers yet" in s], "the demo was not shown starting"
            page.locator(".xterm-screen").click()
            for key in "234561":
                before = _screen(page)
                page.keyboard.press("Escape")
                page.keyboard.press(key)
                deadline = time.monotonic() + 30
                while _screen(page) == before:  # the mode it switched to, drawn
                    assert time.monotonic() < deadline, (key, before)
                    time.sleep(0.05)
                header = _screen(page).splitlines()[0]
                missing = sorted({c for c in header if ord(c) > 127 and not _has_a_font(c)})
                assert not missing, (key, header, missing)
        finally:
            browser.close()


def test_the_command_each_tab_runs_starts_the_app_without_a_warning():
    """``--web`` starts ``python -m tui.app`` per tab, and runpy warned on stderr that ``tui.app``
    was imported already (a RuntimeWarning in the terminal of every --web user): now ``-m tui``."""
    done = subprocess.run(
        app_command(["--help"]), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: toolnexus-tui")
    assert "\nexamples:\n  toolnexus-tui" in done.stdout  # its help ends with examples
    assert done.stderr == ""
