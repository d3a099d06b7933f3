"""The example notebook in JupyterLab in headless Chromium: the live task table renders (not
"Loading widget...") and shows the tasks completed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT
from ..helpers import CHROMIUM, free_port, launch_chromium, stop_process

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="needs Debian's chromium (.ci/run installs it)"
)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="needs playwright (pip install -e '.[test]')"
)
pytest.importorskip("jupyterlab", reason="needs jupyterlab (pip install -e '.[test]')")


@contextlib.contextmanager
def _lab(tmp_path: Path, work: Path, notebook: str) -> Iterator[Any]:
    """JupyterLab on ``work`` (settings that silence the news toast) and a headless Chromium page
    on ``notebook`` there, its kernel connected and idle; stopped however the block ends."""
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port, token = free_port(), uuid.uuid4().hex
    jupyter = Path(sys.executable).parent / "jupyter"
    lab = subprocess.Popen(
        [
            str(jupyter),
            "lab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            "--allow-root",
            "--ServerApp.port_retries=0",
            "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={work}",
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=work,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert lab.poll() is None, lab.stderr.read()
                assert time.monotonic() < deadline, "jupyter lab did not start"
                time.sleep(0.3)
        with sync_api.sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}")
            page.wait_for_function(
                "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                " const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;"
                " return k && k.connectionStatus === 'connected' && k.status === 'idle'; }",
                timeout=60_000,
            )
            yield page
            browser.close()
    finally:
        stop_process(lab)  # waited for even when killed: a Popen left running warns at its end


def _notebook(tmp_path: Path, name: str, cells: list[str]) -> Path:
    """A folder ``work`` under ``tmp_path`` holding the notebook ``name`` of these code cells."""
    import nbformat

    work = tmp_path / "work"
    work.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, work / name)
    return work


def test_the_doctor_table_reads_in_a_narrow_column(tmp_path: Path):
    """``%toolnexus doctor`` in a notebook column of about 460 px: each check on one line, the
    findings wrapping in what is left (a URL too) so that the table fits its output, no part cut
    off, and lines at the text's own height (an ipywidgets HTML gives each line 28 px)."""
    cells = [
        "%load_ext toolnexus",
        "h = %toolnexus serve --name doc-desk",
        "%toolnexus doctor {h.url}",
    ]
    with _lab(tmp_path, _notebook(tmp_path, "doctor.ipynb", cells), "doctor.ipynb") as page:
        page.set_viewport_size({"width": 900, "height": 1000})
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(
            "() => { const t = document.querySelector('table.toolnexus-doctor');"
            " return t && t.closest('.toolnexus-w').innerText.includes('every check passed'); }",
            timeout=60_000,
        )
        table = page.locator("table.toolnexus-doctor")
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "doctor.png"))
        right, room, lines, height, size = page.evaluate(
            "() => { const t = document.querySelector('table.toolnexus-doctor');"
            " const box = t.closest('.widget-html-content');"
            " const lines = [...t.querySelectorAll('tr[data-severity] td:nth-child(2)')].map(td => {"
            "   const r = document.createRange(); r.selectNodeContents(td);"
            "   return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; });"
            " const td = getComputedStyle(t.querySelector('td'));"
            " return [t.getBoundingClientRect().right, box.getBoundingClientRect().right, lines,"
            "         parseFloat(td.lineHeight), parseFloat(td.fontSize)]; }"
        )
        assert len(lines) > 10 and set(lines) == {1}, lines
        assert right <= room + 1, (right, room)
        assert height <= 1.6 * size, (height, size)


def test_live_task_table_renders_in_jupyterlab(tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "examples" / "notebook_demo.ipynb", work / "notebook_demo.ipynb")
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    with _lab(tmp_path, work, "notebook_demo.ipynb") as page:
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        table = page.locator("table.toolnexus-live-tasks")
        table.first.wait_for(timeout=60_000)
        page.wait_for_function(
            "() => { const t = document.querySelector('table.toolnexus-live-tasks');"
            " return t && t.querySelectorAll('[data-state=\"completed\"]').length >= 4; }",
            timeout=60_000,
        )
        server = page.locator(".toolnexus-server").first
        server.scroll_into_view_if_needed()  # JupyterLab does not render cells far out of view
        widget_area = server.text_content()
        assert "Loading widget" not in widget_area
        assert "nb-desk" in widget_area and "completed" in widget_area
        page.screenshot(path=str(tmp_path / "jupyterlab.png"))
        # the widgets take their colours from the theme: header cells and the completed badge
        # change with it (fixed colours would not), in a column as narrow as 620 px
        look = (
            "() => { const t = document.querySelector('table.toolnexus-live-tasks');"
            " const th = getComputedStyle(t.querySelector('th'));"
            " const ok = getComputedStyle(t.querySelector('[data-state=\"completed\"]'));"
            " return [th.backgroundColor, th.borderTopWidth, th.paddingLeft, ok.color]; }"
        )
        light = page.evaluate(look)
        assert light[1] != "0px" and light[2] != "0px", light  # borders and padding: columns apart
        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme',"
            " {theme: 'JupyterLab Dark'})"
        )
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000
        )
        page.set_viewport_size({"width": 620 + 300, "height": 1000})
        server.scroll_into_view_if_needed()
        dark = page.evaluate(look)
        assert dark[0] != light[0] and dark[3] != light[3], (light, dark)
        page.screenshot(path=str(tmp_path / "jupyterlab-dark-narrow.png"))


def test_a_session_is_drawn_as_a_mermaid_diagram_in_jupyterlab(tmp_path: Path):
    """Issue 64's done criterion: a served toolkit's wire (``h.diagram()``) and a recorded cassette
    (``Diagram.of``) shown at the end of a cell are drawn by JupyterLab's Mermaid renderer: each
    an SVG whose participants are the client and the agent's URL and whose arrows carry the
    requests and the task's state, not the diagram's text (nor Mermaid's error box)."""
    cells = [
        "%load_ext toolnexus",
        "h = %toolnexus serve --name mm-desk",
        "import toolnexus as tn\n"
        "async with tn.A2AClient(h.url, record='s.jsonl') as c:\n"
        "    t = await c.send('hello there', blocking=True)\n"
        "t.state.value",
        # the server logs an exchange once it has written the answer, which the client may have
        # read before: wait for the send's POST on the wire (a full run: the lane was missing)
        "import asyncio\n"
        "for _ in range(400):\n"
        "    if any(e.direction == 'in' and e.method == 'POST' for e in h.book.traffic):\n"
        "        break\n"
        "    await asyncio.sleep(0.05)\n"
        "h.diagram()",
        "from toolnexus.debug.diagram import Diagram\nDiagram.of('s.jsonl')",
    ]
    with _lab(tmp_path, _notebook(tmp_path, "diagram.ipynb", cells), "diagram.ipynb") as page:
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-RenderedMermaid img')]"
            ".filter(i => i.complete && i.naturalWidth > 0).length >= 2",
            timeout=90_000,
        )
        said = page.evaluate(
            "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
            ".map(o => o.innerText).find(t => t.includes('completed')) || ''"
        )
        # JupyterLab draws Mermaid as an <img> of the SVG mermaid made: read that SVG's text
        drawn = page.evaluate(
            "() => [...document.querySelectorAll('.jp-RenderedMermaid img')].map(img => {"
            " const src = img.getAttribute('src');"
            " const svg = new DOMParser().parseFromString("
            "   decodeURIComponent(src.slice(src.indexOf(',') + 1)), 'image/svg+xml');"
            " return {width: img.naturalWidth, height: img.naturalHeight,"
            "  actors: [...new Set([...svg.querySelectorAll('text.actor')]"
            "    .map(t => t.textContent.trim()))],"
            "  messages: [...svg.querySelectorAll('text.messageText')].map(t => t.textContent),"
            "  text: svg.documentElement.textContent}; })"
        )
        page.locator(".jp-RenderedMermaid img").last.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "diagram.png"))
    assert "completed" in said, said
    assert len(drawn) == 2, drawn
    served = next(a for a in drawn[0]["actors"] if a != "client")
    assert served.startswith("http://127.0.0.1:"), drawn
    for one in drawn:
        assert sorted(one["actors"]) == sorted(["client", served]), one
        assert "Syntax error" not in one["text"] and one["width"] > 100, one
        assert "SendMessage" in one["messages"], one
        assert "task completed artifacts reply" in one["messages"], one
