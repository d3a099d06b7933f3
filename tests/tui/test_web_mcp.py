"""The MCP inspector in a browser (``toolnexus-tui --web``, real headless Chromium): keys typed in
the page connect to a stdio server on the official Python SDK, answer its elicitation in the form
and approve its sampling, which the toolkit's model answers. ``TOOLNEXUS_SCREENSHOTS=1`` writes
``docs/images/web-mcp-inspector.png``."""

from __future__ import annotations

import os
import shlex
import time

import pytest

from ..helpers import launch_chromium
from ..peers import mcp_peers
from .test_web import ROOT, _need_chromium, _screen, _until, served, web  # noqa: F401 - fixtures

pytest.importorskip("textual_serve", reason="pip install -e '.[test]' brings textual-serve")


def test_in_a_browser_the_inspector_answers_a_servers_questions(web, tmp_path):  # noqa: F811
    _need_chromium()
    from playwright import sync_api

    shots = ROOT / "docs" / "images" if os.environ.get("TOOLNEXUS_SCREENSHOTS") == "1" else tmp_path
    command = (
        "PYTHONPATH="
        + shlex.quote(mcp_peers.ENV["PYTHONPATH"])
        + " "
        + shlex.join(mcp_peers.stdio("py"))
    )
    with sync_api.sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.add_init_script(
                "HTMLCanvasElement.prototype.getContext = function() { return null; };"
            )
            page.goto(web)
            _until(page, "demo-desk  http://127.0.0.1:")
            page.locator(".xterm-screen").click()
            page.keyboard.press("Alt+6")
            _until(page, "● demo-desk")  # the hosted server's /mcp, connected on entering
            _until(page, "1 tool, ")  # listed: the tool list has the focus
            _into_the_endpoint(page)
            page.keyboard.press("End")
            page.keyboard.press("Control+u")  # the box emptied
            page.keyboard.type(command)
            page.keyboard.press("Enter")
            _until(page, "● everything-py 1.0.0", timeout=60)
            _until(page, "7 tools, ")  # listed: the tool list has the focus
            time.sleep(0.5)
            for _ in range(3):  # add, fail, slow, greet
                page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
            _until(page, "Who are you?", timeout=30)
            page.keyboard.type("Ada")
            for _ in range(2):  # name, age kept: on to the colour, a choice (Enter opens it)
                page.keyboard.press("Enter")
                time.sleep(0.2)
            page.keyboard.press("Control+r")  # the colour kept: accepted
            _until(page, "Hello Ada, 30, who likes blue!", timeout=30)
            page.keyboard.press("ArrowDown")  # haiku
            page.keyboard.press("Enter")
            _in_a_text_box(
                page
            )  # "sea" typed into the list: e opened the Stderr tab (a run at load)
            page.keyboard.type("sea")
            page.keyboard.press("Enter")
            _until(page, "The server asks your model to answer", timeout=30)
            page.screenshot(path=str(shots / "web-mcp-inspector.png"))
            page.keyboard.press("y")
            _until(page, "You said: A haiku about sea", timeout=30)
        finally:
            browser.close()


def _in_a_text_box(page, timeout: float = 10.0) -> None:
    """Until a text box has the focus: the key bar offers u (Endpoint) only outside one."""
    deadline = time.monotonic() + timeout
    while "u Endpoint" in _screen(page).splitlines()[-1]:
        assert time.monotonic() < deadline, "no text box took the focus:\n" + _screen(page)
        time.sleep(0.1)


def _into_the_endpoint(page) -> None:
    """u, from the tool list to the endpoint box (Esc keeps the list), until the box has the focus:
    the key bar offers u (Endpoint) only outside a text box. A letter typed before the focus is
    there runs the list's keys (r: the Resources tab), and the box got the command's tail (seen in
    a CI run under load)."""
    _until(page, "u Endpoint")
    for _ in range(3):
        page.keyboard.press("u")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if "u Endpoint" not in _screen(page).splitlines()[-1]:
                return
            time.sleep(0.2)
    raise AssertionError("u never took the focus to the endpoint box:\n" + _screen(page))
