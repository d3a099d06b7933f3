"""The example notebook, executed on a real kernel with nbclient; its last cells assert inside the kernel."""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from ..conftest import ROOT  # noqa: E402


def test_example_notebook_runs_on_a_real_kernel():
    nb = nbformat.read(ROOT / "examples" / "notebook_demo.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError on any failed cell, including the in-kernel asserts
    outputs = {c.source.splitlines()[0]: c.outputs for c in nb.cells if c.cell_type == "code" and c.source}
    final = outputs["await asyncio.sleep(0.5)  # the widget redraws at most ten times a second"]
    assert "['completed', 'completed', 'completed', 'completed']" in final[0]["data"]["text/plain"]
    widget_views = [o for outs in outputs.values() for o in outs
                    if o.get("output_type") == "display_data" and "application/vnd.jupyter.widget-view+json" in o["data"]]
    assert widget_views, "the live widgets were displayed"
