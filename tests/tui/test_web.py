"""``toolnexus-tui --web`` in real headless Chromium (Debian's, driven by playwright): the page
opens with the printed token and not without it, a message sent in Chat completes and shows in
Tasks, every mode draws, and two tabs are two apps. The screenshots in ``docs/images/web-*.png``
are this test's (``TOOLNEXUS_SCREENSHOTS=1`` writes them there)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..helpers import stop_process

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
MODES = ["servers", "tasks", "peers", "chat", "wire", "mcp"]
# xterm.js draws on a canvas; without one it falls back to its DOM renderer, whose rows are text
DOM_RENDERER = "HTMLCanvasElement.prototype.getContext = function() { return null; };"


def _need_chromium() -> None:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail("the browser test needs Debian's chromium (.ci/run installs it)")
        pytest.skip("needs Debian's chromium (.ci/run installs it)")


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    """``toolnexus-tui --web`` running; yields the URL it printed (with its token)."""
    pytest.importorskip("textual_serve", reason="pip install -e '.[test]' brings textual-serve")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.app", "--web"],
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
        yield found.group(0)
    finally:
        stop_process(proc)


def test_the_page_is_only_for_the_token_holder(web):
    base, token = web.split("/?token=")
    port = base.rsplit(":", 1)[1]
    with httpx.Client(timeout=10) as http:
        assert http.get(base + "/").status_code == 403
        wrong = token[:-1] + (
            "y" if token.endswith("x") else "x"
        )  # one character off (a token may end in x)
        assert http.get(base + "/?token=" + wrong).status_code == 403
        for path in ("/ws", "/static/js/textual.js"):
            assert http.get(base + path).status_code == 403
        assert (
            http.get(web, headers={"Host": f"rebound.example:{port}"}).status_code == 403
        )  # DNS rebinding
        page = http.get(web)
        assert page.status_code == 200 and f"ws://127.0.0.1:{port}/ws" in page.text
        assert (
            "HttpOnly" in page.headers["set-cookie"]
            and "SameSite=Strict" in page.headers["set-cookie"]
        )
        assert (
            http.get(base + "/static/js/textual.js").status_code == 200
        )  # the cookie from the page


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
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
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
            first.keyboard.press("Escape")  # the MCP form holds the focus
            time.sleep(0.5)
            first.keyboard.press("2")
            assert re.search(r"✔ completed\s+\w+…\s+demo-desk", _until(first, "filter:"))
        finally:
            browser.close()
