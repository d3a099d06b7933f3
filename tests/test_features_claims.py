"""docs/features.md says only what a test shows (issue 62 item 7): every toolnexus cell that says
"yes" names the tests that show it, and every test a cell names exists. A test is named as a file
(``tests/serve/test_wire.py``, or ``test_wire.py`` where one file under ``tests/`` has that name)
or a test in one (``tests/x.py::test_y``, ``x.py::test_y``; ``::test_z`` is another in the file
named before it in the same cell); a parametrized test without its brackets."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
OURS = {4: "toolnexus server", 5: "toolnexus client"}
"""The columns of a row that speak for this project (a row's cells from 0)."""
BESIDE = frozenset({".venv", "node_modules"})
"""Folders under tests/ that hold other projects' files (the peers' installs), never ours."""
NAMED = re.compile(r"((?:tests/)?(?:[\w./]+/)?test_\w+\.py)?((?:::\w+(?:\[[^\]`]*\])?)*)|(::\w+)")
REFERENCE = re.compile(r"`([^`]*(?:test_\w+\.py|::test_\w+)[^`]*)`")


def rows() -> list[list[str]]:
    """Every row of the feature tables, as its cells."""
    text = (ROOT / "docs" / "features.md").read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 6 and cells[0] not in ("§", "section"):
            out.append(cells)
    return out


@cache
def file_named(name: str) -> Path | None:
    """The test file a cell names: a path from the root, or a name one file under tests/ has."""
    if "/" in name:
        path = ROOT / name
        return path if path.is_file() else None
    found = [p for p in TESTS.rglob(name) if not BESIDE.intersection(p.relative_to(TESTS).parts)]
    return found[0] if len(found) == 1 else None


@cache
def defined_in(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    )


def claims(cell: str) -> list[tuple[str, str | None]]:
    """``(file, test or None)`` for each test a cell names, in order."""
    out: list[tuple[str, str | None]] = []
    last = ""
    for quoted in REFERENCE.findall(cell):
        for part in re.split(r",\s*|\s+", quoted):
            file, _, rest = part.partition("::")
            if file.endswith(".py"):
                last = file
            names = [n.split("[")[0] for n in rest.split("::") if n] if rest else []
            if not names and file.endswith(".py"):
                out.append((last, None))
            out += [(last, n) for n in names]
    return out


def test_every_yes_names_a_test_and_every_test_named_exists():
    unshown, missing = [], []
    for cells in rows():
        for column, who in OURS.items():
            cell = cells[column]
            if not cell.startswith("yes"):
                continue
            where = f"{cells[0]} {cells[1][:60]!r} ({who})"
            named = claims(cell)
            if not named:
                unshown.append(where)
            for file, test in named:
                path = file_named(file) if file else None
                if path is None:
                    missing.append(f"{where}: no test file {file or '(none named before ::)'}")
                elif test is not None and test not in defined_in(path):
                    missing.append(f"{where}: {path.relative_to(ROOT)} has no {test}")
    assert not missing, "cells name tests that do not exist:\n" + "\n".join(missing)
    assert not unshown, "cells say yes and name no test that shows it:\n" + "\n".join(unshown)


def test_the_check_reads_what_cells_write():
    """A cell naming a test that is not there, or none, is caught (the check can fail)."""
    assert claims("yes: `A2AClient.get`") == []
    assert claims("yes: `tests/serve/test_wire.py`") == [("tests/serve/test_wire.py", None)]
    assert claims("yes; `test_wire.py::test_resubscribe`, `::test_list_tasks`") == [
        ("test_wire.py", "test_resubscribe"),
        ("test_wire.py", "test_list_tasks"),
    ]
    assert claims("yes: `test_grpc.py::test_x[0.3]`") == [("test_grpc.py", "test_x")]
    assert file_named("test_wire.py") == TESTS / "serve" / "test_wire.py"
    assert file_named("tests/no_such_test.py") is None
    assert "test_resubscribe" in defined_in(TESTS / "serve" / "test_wire.py")
    assert "test_no_such_thing" not in defined_in(TESTS / "serve" / "test_wire.py")
