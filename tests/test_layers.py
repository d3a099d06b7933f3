"""The layers hold themselves: the import contracts (pyproject's [tool.importlinter]), every module
in a layer of them, no import circle anywhere (an import inside a function or under TYPE_CHECKING
counts), no copy of six lines or more between two modules (pylint's similarity checker,
[tool.pylint.similarities]), no more long functions than counted below, the type checker and the
linter and formatter (ruff), clean."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("toolnexus", "tui", "notebook_ext")
HOOK = (
    "toolnexus",
    "notebook_ext",
)  # `%load_ext toolnexus`: the one import of a front end by the library


LONG = 80
"""A function of this many lines or more (its decorators aside, its docstring in) is long."""
LONG_IN_LIBRARY = 0
"""How many long functions the library may have (issue 63: at most 10): lowered as they are
split, never raised."""
FRONT_ENDS = ("tui/", "notebook_ext/", "toolnexus/cli/")
"""The front ends' folders, each with its slash: ``toolnexus/client/`` is the library's."""
LONG_IN_FRONT_ENDS = 0
"""How many the front ends (the TUI, the notebook, the CLI) may have (issue 63: none)."""


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is a test dependency: pip install -e '.[test]'"
    return found


def test_the_import_contracts_are_kept():
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("lint-imports"), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,  # the packages are imported from here, ahead of the installed ones
        capture_output=True,
        text=True,
        timeout=300,
    )


def _packages(root: Path) -> list[str]:
    return sorted(
        ".".join(init.parent.relative_to(root).parts)
        for name in ROOTS
        for init in (root / name).rglob("__init__.py")
    )


def test_every_package_lays_out_its_modules():
    """Each package of the library and the front ends is the container of an exhaustive layers
    contract, so a module anywhere is in a layer or the contracts break (the next test)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    laid_out = {
        container
        for contract in contracts
        if contract["type"] == "layers" and contract.get("exhaustive")
        for container in contract.get("containers", ())
    }
    assert [package for package in _packages(ROOT) if package not in laid_out] == []


def test_a_module_in_no_layer_breaks_the_contracts(tmp_path: Path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for name in ROOTS:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    stray = ["toolnexus/stray.py", "toolnexus/serve/stray.py", "tui/screens/stray.py"]
    for path in stray:
        (tmp_path / path).write_text('"""A module nobody placed."""\n')
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    for path in stray:
        assert f"- {path.removesuffix('.py').replace('/', '.')}\n" in run.stdout, run.stdout[-3000:]


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_circle_anywhere_but_the_notebook_hook():
    graph = grimp.build_graph(
        "toolnexus", "tui", "notebook_ext", exclude_type_checking_imports=False, cache_dir=None
    )  # a cache read a file as it was, not as it is
    assert HOOK[1] in graph.find_modules_directly_imported_by(
        HOOK[0]
    )  # the hook is where it is said to be
    graph.remove_import(importer=HOOK[0], imported=HOOK[1])
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert _circles(graph) == [["p.a", "p.b", "p.c"]]


def test_the_type_checker_is_clean():
    env = {**os.environ, "NO_COLOR": "1"}
    # this checkout's own settings (a pyrightconfig.json in a folder above would win otherwise), against
    # the interpreter running the tests (a checkout without a .venv of its own too)
    command = [
        _tool("basedpyright"),
        "--project",
        str(ROOT / "pyproject.toml"),
        "--pythonpath",
        sys.executable,
    ]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0 and "0 errors" in run.stdout, run.stdout[-4000:] + run.stderr[-2000:]


def test_lint_and_format_are_clean():
    """ruff, with pyproject's [tool.ruff]: the rules hold and the layout is the formatter's."""
    ruff = _tool("ruff")
    for command in (
        [ruff, "check", "--no-cache", "."],
        [ruff, "format", "--check", "--no-cache", "."],
    ):
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def _similar(root: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            _tool("pylint"),
            "--rcfile",
            str(ROOT / "pyproject.toml"),
            "--disable=all",
            "--enable=duplicate-code",
            "--score=n",
            *paths,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_no_copy_of_six_lines_or_more_between_modules():
    run = _similar(ROOT, *ROOTS)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


def test_the_copy_checker_finds_a_copy(tmp_path: Path):
    body = "\n".join(f"    total = total * {n} + len(items) - {n}" for n in range(6))
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(
            f"def {name}(items, total):\n{body}\n    return total\n"
        )
    run = _similar(tmp_path, "a.py", "b.py")
    assert "R0801" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


def _long_functions(root: Path, *paths: str) -> list[str]:
    """Each function of LONG lines or more below the paths, as `path:line name (lines)`."""
    found = []
    for path in paths:
        files = [root / path] if path.endswith(".py") else sorted((root / path).rglob("*.py"))
        for file in files:
            for node in ast.walk(ast.parse(file.read_text(), str(file))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines >= LONG:
                        where = file.relative_to(root)
                        found.append(f"{where}:{node.lineno} {node.name} ({lines})")
    return found


def _counted(root: Path) -> tuple[list[str], list[str]]:
    """The long functions of the library and those of the front ends, each counted once."""
    front_ends = _long_functions(root, *FRONT_ENDS)
    library = [
        found
        for found in _long_functions(root, "toolnexus")
        if not found.startswith(tuple(FRONT_ENDS))
    ]
    return library, front_ends


def test_no_more_long_functions_than_counted():
    library, front_ends = _counted(ROOT)
    assert len(library) <= LONG_IN_LIBRARY, "\n".join(library)
    assert len(front_ends) <= LONG_IN_FRONT_ENDS, "\n".join(front_ends)


def test_a_long_function_is_counted_in_the_library_or_a_front_end(tmp_path: Path):
    """Each where it lies: the client (``toolnexus/client/``, whose name begins as the CLI's
    ``toolnexus/cli/`` does) is the library's, the CLI a front end's."""
    body = "\n".join(f"    total += {n}" for n in range(LONG))
    for folder in ("toolnexus/client", "toolnexus/cli", "tui", "notebook_ext"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "a.py").write_text(f"def long(total):\n{body}\n")
    library, front_ends = _counted(tmp_path)
    assert library == [f"toolnexus/client/a.py:1 long ({LONG + 1})"]
    assert sorted(front_ends) == [
        f"{folder}/a.py:1 long ({LONG + 1})" for folder in ("notebook_ext", "toolnexus/cli", "tui")
    ]


def test_the_long_function_counter_finds_one(tmp_path: Path):
    body = "\n".join(f"    total += {n}" for n in range(LONG - 2))
    (tmp_path / "a.py").write_text(f"def long(total):\n{body}\n    return total\n")
    (tmp_path / "b.py").write_text(f"def short(total):\n{body}\n")
    assert _long_functions(tmp_path, "a.py", "b.py") == [f"a.py:1 long ({LONG})"]
