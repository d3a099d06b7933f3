"""On a real kernel (nbclient): the example notebook, run twice in one kernel from another folder;
the README's Jupyter lines, each its own cell, under Run All; and widgets after the kernel stops."""

from __future__ import annotations

import json
import queue
import re
import shutil
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from ..conftest import ROOT  # noqa: E402


def _outputs(nb):
    return {
        c.source.splitlines()[0]: c.outputs for c in nb.cells if c.cell_type == "code" and c.source
    }


def _run_all(client, nb) -> None:
    for index, cell in enumerate(nb.cells):
        client.execute_cell(cell, index)  # raises CellExecutionError on a failed cell


def test_example_notebook_runs_twice_in_one_kernel_from_any_folder(tmp_path: Path):
    shutil.copy(
        ROOT / "examples" / "notebook_demo.ipynb", tmp_path / "demo.ipynb"
    )  # no examples/ beside it
    nb = nbformat.read(tmp_path / "demo.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with client.setup_kernel():
        for _ in range(
            2
        ):  # the second run: a fresh server and an empty table (its in-kernel asserts)
            _run_all(client, nb)
            final = _outputs(nb)[
                "await asyncio.sleep(0.5)  # the widget redraws at most ten times a second"
            ]
            assert (
                "['completed', 'completed', 'completed', 'completed']"
                in final[0]["data"]["text/plain"]
            )
    widget_views = [
        o
        for outs in _outputs(nb).values()
        for o in outs
        if o.get("output_type") == "display_data"
        and "application/vnd.jupyter.widget-view+json" in o["data"]
    ]
    assert widget_views, "the live widgets were displayed"


def _readme_jupyter_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## Jupyter", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_jupyter_lines_work_under_run_all_exactly_as_written(tmp_path: Path):
    lines = _readme_jupyter_lines()
    assert lines[0] == "%load_ext toolnexus" and any("send {h.url}" in line for line in lines)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(line) for line in lines])
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # Run All after a (fresh) kernel start: every line works as written
    outputs = _outputs(nb)
    task = next(
        outs for first, outs in outputs.items() if first.startswith("task = await sent.done()")
    )
    assert not task  # an assignment: nothing shown, and no error
    frame = next(outs for first, outs in outputs.items() if first.startswith("h.to_dataframe()"))
    html = frame[0]["data"]["text/html"]
    assert "weather in Lisbon please" in html and "completed" in html


def test_widgets_say_disconnected_when_the_kernel_stops(tmp_path: Path):
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        for code in (
            "%load_ext toolnexus",
            "h = %toolnexus serve --name gone-desk",
            "s = %toolnexus send {h.url} greet me\nt = await s.done()\nassert t.state.value == 'completed'",
        ):
            reply = kc.execute_interactive(code, timeout=60, output_hook=lambda msg: None)
            assert reply["content"]["status"] == "ok", reply["content"]
        kc.shutdown()  # what stopping or restarting the kernel sends
        updates = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                msg = kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                if not km.is_alive():
                    break
                continue
            if msg["msg_type"] == "comm_msg":
                updates.append(json.dumps(msg["content"]["data"]))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    said = " ".join(updates)
    assert '"status": "disconnected"' in said, updates
    assert re.search(r"kernel that ran this server stopped", said), updates


def test_readme_jupyter_lines_run_again_on_the_same_kernel(tmp_path: Path):
    """Run All twice on one kernel: the second ``%toolnexus serve`` gives back the server that
    runs (same options: same URL, no error), and a serve with other options restarts it. On the
    way, in the kernel: the task's wire draws ``←`` for what came in, as the TUI does, and the
    duration chart of one task starts its axes at 0 s."""
    lines = _readme_jupyter_lines()
    cells = [nbformat.v4.new_code_cell(line) for line in lines]
    nb = nbformat.v4.new_notebook(cells=cells)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )

    def run(source: str) -> list:
        cell = nbformat.v4.new_code_cell(source)
        nb.cells.append(cell)
        client.execute_cell(cell, len(nb.cells) - 1)  # an assert that fails raises here
        return cell.outputs

    with client.setup_kernel():
        _run_all(client, nb)
        run(
            "first = h.url\n"
            "from notebook_ext.widgets import chart_figure\n"
            "h.widget.refresh()\n"
            "one = [s for s in h.widget.series() if s[2] is not None][:1]\n"
            "fig = chart_figure(one)\n"
            "assert [ax.get_xlim()[0] for ax in fig.axes] == [0, 0], [ax.get_xlim() for ax in fig.axes]\n"
            "h.widget.pick.value = task.id\n"
            "h.widget._draw_detail()\n"
            "drawn = h.widget.detail.value\n"
            "assert '← in' in drawn and '→ in' not in drawn, drawn"
        )
        for index, cell in enumerate(cells):  # Run All again, the same cells
            client.execute_cell(cell, index)
            said = [o.get("text", "") for o in cell.outputs if o.get("name") == "stderr"]
            assert not said, (cell.source, said)
        run("assert h.url == first and h.state == 'running', (h.url, first, h.state)")
        said = run(
            "h = %toolnexus serve --name demo-desk --mcp\n"
            "s = %toolnexus send {h.url} greet Ada\n"
            "t = await s.done()\n"
            "assert h.spec.mcp and h.url != first and t.state.value == 'completed', (h.url, t)"
        )
        assert "started again" in "".join(o.get("text", "") for o in said), said


def test_send_shows_the_words_as_they_come_on_a_real_kernel(tmp_path: Path):
    """``%toolnexus send`` (issue 61 item 3): the widget shows the reply's first word while the
    agent still holds the rest (it says it once the widget shows the task working, then waits
    for the next cell: a widget redrawn only when the state changes never shows it), from our
    server and from the Gemini CLI's shape (issue 58 item 2: its words only as status messages,
    its turn ending asking); then the whole reply, once."""
    cells = [
        "%load_ext toolnexus",
        "import asyncio\n"
        "import toolnexus as tn\n"
        "begin, gate = asyncio.Event(), asyncio.Event()\n"
        "async def model(request):\n"
        "    await asyncio.wait_for(begin.wait(), 60)\n"
        "    yield 'Hello '\n"
        "    await asyncio.wait_for(gate.wait(), 60)\n"
        "    for word in ('there ', 'my ', 'friend.'):\n"
        "        yield word\n"
        "tk = await tn.create_toolkit(builtins=False)\n"
        "async def serve(quirks):\n"
        "    config = tn.A2AConfig(name='words', quirks=quirks)\n"
        "    return await tk.serve(client=tn.create_in_process_client(model), a2a=config)",
    ]
    for quirks in ("[]", "['gemini-cli']"):
        cells += [
            f"begin.clear()\ngate.clear()\nh = await serve({quirks})",
            "s = %toolnexus send {h.url} hi",
            "for _ in range(600):  # until the widget shows the task working (at most 30 s)\n"
            "    if s.state == 'working':\n"
            "        break\n"
            "    await asyncio.sleep(0.05)\n"
            "begin.set()  # only now the first word\n"
            "for _ in range(600):  # until the first word shows (at most 30 s)\n"
            "    if 'Hello' in s.value:\n"
            "        break\n"
            "    await asyncio.sleep(0.05)\n"
            "assert 'Hello' in s.value and 'friend' not in s.value, s.value\n"
            "gate.set()",
            "t = await s.done()\n"
            "await asyncio.sleep(0.2)\n"
            "assert t.reply == 'Hello there my friend.', t\n"
            'assert "margin:0\'>Hello there my friend.</pre>" in s.value, s.value\n'
            "assert s.value.count('Hello') == s.value.count('Hello there my friend.'), s.value\n"
            "await h.stop()",
        ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        nb, timeout=90, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # a failed assert fails the cell, and the test with it


def test_a_servers_widget_shows_the_tasks_its_store_kept_in_the_next_kernel(tmp_path: Path):
    """A server on a file store ran a task; the notebook run again in a new kernel (the next day,
    a kernel restarted) served it again on that store, and its widget showed no task, while the
    TUI's Tasks and ``toolnexus task list`` did (issue 61). The widget shows the kept tasks now,
    in its book and its table, for a server on the kernel's loop and one on a thread."""
    store = tmp_path / "tasks"
    first = [
        "%load_ext toolnexus",
        f"a = %toolnexus serve --name desk --store file:{store}",
        "s = %toolnexus send {a.url} greet Ada\n"
        "t = await s.done()\n"
        "assert t.state.value == 'completed', t\n"
        f"(__import__('pathlib').Path({str(tmp_path)!r}) / 'sent').write_text(t.id)",
    ]
    shows = (
        "for _ in range(600):  # until its widget has it (at most 30 s)\n"
        "    if list({w}.widget.book.tasks) == [sent]:\n"
        "        break\n"
        "    await asyncio.sleep(0.05)\n"
        "await asyncio.sleep(0.3)  # its next redraw\n"
        "assert list({w}.widget.book.tasks) == [sent], list({w}.widget.book.tasks)\n"
        "assert sent[:8] in {w}.widget.table.value, {w}.widget.table.value"
    )
    again = [
        "%load_ext toolnexus",
        f"import asyncio\nsent = (__import__('pathlib').Path({str(tmp_path)!r}) / 'sent').read_text()",
        f"b = %toolnexus serve --name desk --store file:{store}",
        shows.format(w="b"),
        "%toolnexus stop desk",
        "for _ in range(600):  # its store let go (at most 30 s)\n"
        "    if b.state == 'stopped':\n"
        "        break\n"
        "    await asyncio.sleep(0.05)",
        f"c = %toolnexus serve --name desk-t --store file:{store} --thread",
        shows.format(w="c"),
        "%toolnexus stop desk-t",
    ]
    for cells in (first, again):  # each in a kernel of its own
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        client = nbclient.NotebookClient(
            nb, timeout=90, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        client.execute()  # a failed assert fails the cell, and the test with it
        said = "".join(o.get("text", "") for c in nb.cells for o in c.outputs)
        assert "Error" not in said, said
