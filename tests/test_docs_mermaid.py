"""The built docs draw their Mermaid blocks offline (issue 64's done criterion, "the diagram renders
in the docs"): the site as test_docs builds it, served on 127.0.0.1, opened in real headless
Chromium with every request off this machine refused. Material draws a ```mermaid block with the
mermaid the site serves (mkdocs.yml's extra_javascript), else it loads one from a CDN: then nothing
is drawn here. Each block of each page with one is an SVG of its own participants and messages
(the guide's sequence diagram) or boxes (the architecture's flowchart, top-down as it says), not
Mermaid's error box."""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from .conftest import ROOT
from .helpers import CHROMIUM, launch_chromium
from .test_docs import _build

PAGES = ("guide", "architecture")
"""The pages with ```mermaid blocks (docs/NAME.md, served at NAME/)."""

# Material puts each diagram in a closed shadow root; opened here so the test can read the SVG
OPEN_SHADOWS = (
    "const attach = Element.prototype.attachShadow;"
    "Element.prototype.attachShadow = function (init) {"
    " return attach.call(this, {...init, mode: 'open'}); };"
)
DRAWN = """() => [...document.querySelectorAll('div.mermaid')]
  .map(host => host.shadowRoot && host.shadowRoot.querySelector('svg')).filter(Boolean)
  .map(svg => ({
    kind: svg.getAttribute('aria-roledescription'),
    width: svg.getBoundingClientRect().width,
    actors: [...new Set([...svg.querySelectorAll('text.actor')].map(t => t.textContent.trim()))],
    messages: [...svg.querySelectorAll('text.messageText')].map(t => t.textContent),
    boxes: [...svg.querySelectorAll('.nodeLabel')].map(t => t.textContent),
    tops: Object.fromEntries([...svg.querySelectorAll('g.node')].map(n =>
      [n.id.replace(/^.*flowchart-(.+)-[0-9]+$/, '$1'), n.getBoundingClientRect().top])),
    text: svg.textContent }))"""


def _blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
    return re.findall(r"^```mermaid\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def _expected(block: str) -> dict[str, object]:
    """What a block draws, read from its source: a sequence diagram's participants (their names as
    shown) and messages, a flowchart's boxes and subgraphs' titles."""
    if block.startswith("sequenceDiagram"):
        return {
            "kind": "sequence",
            "actors": sorted(re.findall(r"^\s+participant \S+ as (.+)$", block, re.MULTILINE)),
            "messages": re.findall(r"^\s+\S+?(?:->>|-->>|--x) ?\S+: (.+)$", block, re.MULTILINE),
        }
    boxes = re.findall(r'\["([^"]+)"\]|^\s*subgraph \S+ \[([^\]]+)\]', block, re.MULTILINE)
    return {"kind": "flowchart-v2", "boxes": sorted({node or group for node, group in boxes})}


def _downward(block: str) -> list[tuple[str, str]]:
    """A top-down flowchart's arrows from a box to a box (by their ids): each is drawn downward."""
    if not re.match(r"flowchart (TD|TB)\n", block):
        return []
    return re.findall(r'^\s*(\w+)(?:\["[^"]*"\])? --> (\w+)\[', block, re.MULTILINE)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The docs built as test_docs builds them, served on 127.0.0.1; yields the site's URL."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail("the docs' browser test needs Debian's chromium (.ci/run installs it)")
        pytest.skip("needs Debian's chromium (.ci/run installs it)")
    built = tmp_path_factory.mktemp("docs") / "site"
    done = _build(ROOT / "mkdocs.yml", built)
    assert done.returncode == 0, done.stderr[-3000:]
    quiet = type("Quiet", (SimpleHTTPRequestHandler,), {"log_message": lambda *_: None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(quiet, directory=str(built)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_every_mermaid_block_of_the_docs_is_drawn_offline(site: str, tmp_path: Path):
    refused: list[str] = []

    def local_only(route) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    drawn: dict[str, list[dict[str, Any]]] = {}
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.add_init_script(OPEN_SHADOWS)
            page.route("**/*", local_only)
            for name in PAGES:
                count = len(_blocks(name))
                page.goto(f"{site}{name}/", wait_until="load")
                try:
                    page.wait_for_function(
                        f"() => ({DRAWN})().length >= {count}", timeout=60_000, polling=200
                    )
                except PlaywrightTimeout:
                    pytest.fail(f"{name}: {count} diagrams not drawn in 60 s; refused: {refused}")
                drawn[name] = page.evaluate(DRAWN)
                page.locator("div.mermaid").first.scroll_into_view_if_needed()
                page.screenshot(path=str(tmp_path / f"{name}.png"))
        finally:
            browser.close()
    assert not [url for url in refused if "mermaid" in url], refused
    for name in PAGES:
        blocks = _blocks(name)
        assert blocks and len(drawn[name]) == len(blocks), (name, drawn[name])
        for block, svg in zip(blocks, drawn[name], strict=True):
            assert "Syntax error" not in svg["text"] and svg["width"] > 100, svg
            want = _expected(block)
            got = {
                "kind": svg["kind"],
                "actors": sorted(svg["actors"]),
                "messages": svg["messages"],
                "boxes": sorted(set(svg["boxes"])),
            }
            assert {key: got[key] for key in want} == want, (name, svg)
            tops = svg["tops"]
            upward = [(a, b) for a, b in _downward(block) if not tops[a] < tops[b]]
            assert upward == [], (name, tops)  # a subgraph laid out sideways: unreadable
