"""The project's own documentation (docs/, MkDocs Material + mkdocstrings) builds with --strict:
a page naming an API that is gone, a broken link or a docstring mkdocstrings cannot read fails here."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolnexus
from toolnexus.stores import KINDS, kinds_with
from toolnexus.stores.base import Closable, Durable, JoinsConversations, KeepsEnded, Shared

ROOT = Path(__file__).resolve().parent.parent


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    if (
        importlib.util.find_spec("mkdocs") is None
        or importlib.util.find_spec("mkdocstrings_handlers") is None
    ):
        if os.environ.get("CI") == "true":
            pytest.fail(
                "the docs build needs mkdocs, mkdocs-material and mkdocstrings: pip install -e '.[test]'"
            )
        pytest.skip("the docs build needs pip install -e '.[docs]'")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_docs_build_strict_with_the_api_from_the_docstrings(tmp_path: Path):
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("WebhookReceiver", "A2AClient", "A2AConfig", "create_toolkit", "PushNotifier"):
        assert name in api
    assert (tmp_path / "site" / "wire" / "index.html").is_file() and (
        tmp_path / "site" / "guide" / "index.html"
    ).is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "toolnexus").symlink_to(ROOT / "toolnexus")
    with (tmp_path / "docs" / "index.md").open("a") as page:
        page.write("\nSee [the old design](DESIGN.md).\n")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "DESIGN.md" in done.stderr


def test_every_store_synopsis_in_the_docs_lists_every_kind():
    """The docs spell the kinds of store where they show ``--store``'s synopsis: each such spelling
    is the registry's (``toolnexus.stores.KINDS``), so a new kind, or a kind gone, shows here."""
    import re

    from toolnexus.stores import STORE_FORMS

    synopses = [
        (page.name, found)
        for page in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
        for found in re.findall(r"--store (memory[^\s\]`]*)", page.read_text(encoding="utf-8"))
    ]
    assert synopses, "no --store synopsis found in the docs"
    assert all(found == STORE_FORMS.replace(" | ", "|") for _, found in synopses), synopses


FEATURE_COLUMNS = ("a2a-sdk server", "a2a-sdk client", "toolnexus server", "toolnexus client")


def feature_counts(text: str) -> str:
    """docs/features.md's counts table as it must read: for each section of rows and for all of
    them, each column's yes / partly / no (rows where a side has nothing to do are not counted)."""
    sections: dict[str, list[dict[str, int]]] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not re.match(r"^[0-9]|^legacy$", cells[0]):
            continue
        tally = sections.setdefault(
            section, [{"yes": 0, "partly": 0, "no": 0} for _ in FEATURE_COLUMNS]
        )
        for column, cell in zip(tally, cells[2:], strict=False):
            verdict = re.match(r"(yes|partly|no|—)(?!\w)", cell)
            assert verdict, f"a cell says neither yes, partly, no nor —: {line}"
            if verdict.group(1) != "—":
                column[verdict.group(1)] += 1
    total = [
        {k: sum(s[i][k] for s in sections.values()) for k in ("yes", "partly", "no")}
        for i in range(len(FEATURE_COLUMNS))
    ]
    rows = ["| section | " + " | ".join(FEATURE_COLUMNS) + " |", "|---" * 5 + "|"]
    for name, tally in [*sections.items(), ("all", total)]:
        cells = [f"{t['yes']} / {t['partly']} / {t['no']}" for t in tally]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def test_the_feature_table_counts_are_the_tables():
    text = (ROOT / "docs" / "features.md").read_text(encoding="utf-8")
    counts = feature_counts(text)
    assert counts in text, "docs/features.md's counts should read:\n" + counts


RECIPES = (
    "A task store",
    "A card field",
    "An A2A operation",
    "A binding",
    "A CLI flag",
    "An optional extra",
)
_PATH = re.compile(r"[\w.-]*/[\w./-]*|[\w-]+\.(?:py|toml|md|json|yml)")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?")


def recipes(text: str) -> dict[str, str]:
    """docs/architecture.md's "How to add" section: each recipe's title and text."""
    section = text.split("\n## How to add\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### (.+)$", section, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def recipe_misses(body: str, root: Path) -> list[str]:
    """What a recipe names that is not there: each bullet's files (a new one, spelled with a
    placeholder in capitals, by its folder) and the names in it, each found in a file the bullet
    names (a new module's names: in its package)."""
    missing = []
    for bullet in re.split(r"^- ", body, flags=re.MULTILINE)[1:]:
        quoted = re.findall(r"`([^`]+)`", bullet)
        searched: list[Path] = []
        for token in quoted:
            if not _PATH.fullmatch(token):
                continue
            path = root / token
            if re.search(r"[A-Z]{3,}", token.rsplit("/", 1)[-1]):  # a new file: NAME.py
                if not path.parent.is_dir():
                    missing.append(token)
                searched += sorted(path.parent.glob("*.py"))
            elif not path.exists():
                missing.append(token)
            elif path.is_file():
                searched.append(path)
        text = "\n".join(p.read_text(encoding="utf-8") for p in searched)
        for token in quoted:
            if _PATH.fullmatch(token):
                continue
            if token.startswith("[") and token.endswith("]"):  # a TOML table
                words = [token]
            elif _NAME.fullmatch(token):
                words = token.removesuffix("()").split(".")
            else:
                continue  # a command, a flag, a comment
            for word in words:
                if not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text):
                    missing.append(f"{token} (in {', '.join(quoted[:1])}...)")
                    break
    return missing


def test_every_recipe_names_files_and_names_that_are_there():
    found = recipes((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert tuple(found) == RECIPES
    assert {title: recipe_misses(body, ROOT) for title, body in found.items()} == {
        title: [] for title in RECIPES
    }


def test_a_recipe_naming_what_is_gone_is_caught():
    body = (
        "- `toolnexus/serve/gone.py`: its `thing`.\n"
        "- `toolnexus/stores/__init__.py`: one line in `KINDS` and `NO_SUCH_TUPLE`.\n"
        "- `toolnexus/nowhere/NAME.py` (new): a `TaskStore`.\n"
        "- `pyproject.toml`: `[tool.nosuch]`, `[tool.ruff]`.\n"
    )
    assert recipe_misses(body, ROOT) == [
        "toolnexus/serve/gone.py",
        "thing (in toolnexus/serve/gone.py...)",
        "NO_SUCH_TUPLE (in toolnexus/stores/__init__.py...)",
        "toolnexus/nowhere/NAME.py",
        "TaskStore (in toolnexus/nowhere/NAME.py...)",
        "[tool.nosuch] (in pyproject.toml...)",
    ]


_OURS = ("toolnexus", "tui", "tests", "bench")
_OUR_FILE = re.compile(rf"((?:{'|'.join(_OURS)})/[\w/.-]+\.py)(?:::(\w+))?")


def _our_code(root: Path) -> tuple[str, set[str]]:
    """The text of our Python and JavaScript sources (but this file, whose examples name what is
    gone), and the names of those files."""
    files = [
        p
        for d in _OURS
        for p in (root / d).rglob("*")
        if p.suffix in (".py", ".mjs")
        and not {".venv", "node_modules"} & set(p.parts)
        and p.resolve() != Path(__file__).resolve()
    ]
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files), {
        p.name for p in files
    }


def feature_misses(table: str, root: Path) -> list[str]:
    """What the toolnexus columns (the last two) of docs/features.md name that is not there: a test
    ``path::name`` whose file or function is gone, a file name no file has, a code name (``A.b``,
    ``_helper``, ``name()``) none of our sources spells."""
    text, names = _our_code(root)
    missing = []
    for line in table.splitlines():
        cells = line.split("|")
        if not line.startswith("|") or len(cells) < 4:
            continue
        for token in re.findall(r"`([^`]+)`", "|".join(cells[-3:-1])):
            test = _OUR_FILE.fullmatch(token)
            if test:
                path = root / test[1]
                if not path.is_file() or (
                    test[2] and not re.search(rf"def {test[2]}\b", path.read_text(encoding="utf-8"))
                ):
                    missing.append(token)
            elif re.fullmatch(r"[\w-]+\.(?:py|mjs)", token):
                if token not in names:
                    missing.append(token)
            elif _BARE_TEST.fullmatch(token):
                file, name = token.split("::")
                if not any(
                    re.search(rf"def {name}\b", p.read_text(encoding="utf-8"))
                    for p in (root / "tests").rglob(file)
                    if not {".venv", "node_modules"} & set(p.parts)
                ):
                    missing.append(token)
            elif _NAME.fullmatch(token) and not _named(token.removesuffix("()"), text):
                missing.append(token)
    return missing


_BARE_TEST = re.compile(r"[\w-]+\.py::\w+")


@functools.cache
def _owners() -> dict[str, list[object]]:
    """Our modules and the classes defined in them, by their short names: what a dotted name in
    the table starts with (``dialects.parse_task``, ``TaskRunner.send``)."""
    owners: dict[str, list[object]] = {}
    for info in pkgutil.walk_packages(toolnexus.__path__, "toolnexus."):
        if info.name.endswith(".__main__"):  # runs the command
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra this venv lacks
            continue
        owners.setdefault(info.name.rsplit(".", 1)[-1], []).append(module)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name:
                owners.setdefault(value.__name__, []).append(value)
    return owners


def _has(owner: object, name: str) -> bool:
    """Whether a module or class has ``name``: an attribute, or a field declared without a default
    (a dataclass's, a msgspec Struct's, a NamedTuple's, an annotation in its classes), an
    instance's attribute its classes set (``self.name``)."""
    if hasattr(owner, name):
        return True
    return isinstance(owner, type) and any(
        name in getattr(k, "__annotations__", {})
        or (k.__module__.startswith("toolnexus") and f"self.{name}" in inspect.getsource(k))
        for k in owner.__mro__
    )


def _named(token: str, text: str) -> bool:
    """Whether our code has the name: a dotted one whose first part is one of our modules or
    classes must resolve attribute by attribute; any other (a wire name, ``_helper``) must be
    spelled in our sources."""
    first, *rest = token.split(".")
    wire = any(re.fullmatch(r"[a-z]+[A-Z]\w*", part) for part in rest)  # a2a.directReplies
    owners = _owners().get(first) if rest and not wire else None
    if owners:
        return any(_resolves(owner, rest) for owner in owners)
    return all(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) for word in token.split("."))


def _resolves(owner: object, path: list[str]) -> bool:
    for name in path:
        if not _has(owner, name):
            return False
        owner = getattr(owner, name, None)
    return True


def test_every_name_the_feature_table_gives_for_us_is_in_our_code():
    text = (ROOT / "docs" / "features.md").read_text(encoding="utf-8")
    assert feature_misses(text, ROOT) == []


def test_a_feature_row_naming_what_is_gone_is_caught():
    row = (
        "| 8.6 | card caching | yes: `agent_card_routes.py` | no | yes: `card_answer`, `ServedCard.answer`;"
        " `tests/serve/test_wire.py::test_no_such_test`, `tests/serve/test_wire.py` | yes: `_CardCache`,"
        " `no_such_file.py`, `test_push.py`, `tests/gone.py`, `ServedCard.no_such`,"
        " `dialects.render_task`, `dialects.answer`, `A2AConfig.auth`,"
        " `test_sdk_interop.py::test_cancel`, `test_sdk_interop.py::test_gone` |\n"
    )
    assert feature_misses(row, ROOT) == [
        "card_answer",
        "tests/serve/test_wire.py::test_no_such_test",
        "no_such_file.py",
        "tests/gone.py",
        "ServedCard.no_such",
        "dialects.answer",
        "test_sdk_interop.py::test_gone",
    ]


def test_the_desktop_mcp_snippets_name_the_command_by_its_full_path():
    """A desktop host starts the command without your shell's PATH: a bare ``toolnexus`` fails for
    a virtual environment's install. The snippets show the full path, as the TUI's copied entry
    (``copy_mcp_config``) has it."""
    import json

    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide.split("## Desktop MCP hosts (stdio)", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3, blocks
    for block in blocks:
        data = json.loads(block)
        (entry,) = (data.get("mcpServers") or data["servers"]).values()
        command = Path(entry["command"])
        assert command.is_absolute() and command.name == "toolnexus", entry


# -- prose lists of the kinds of task store ----------------------------------------------------------
_KIND_WORD = r"(?:memory|file(?::DIR)?|PostgreSQL|postgresql://[^\s`,|)\]]*)"
_KIND_SEP = r"(?:,\s+and\s+|,\s+or\s+|,\s+|\s+and\s+|\s+or\s+|\s*\|\s*|\s+·\s+)"
_KIND_LIST = re.compile(rf"`?\b{_KIND_WORD}`?(?:{_KIND_SEP}`?{_KIND_WORD}\b`?)+")
_KIND_ONE = re.compile(_KIND_WORD)


def store_lists(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """Each list of two or more kinds of task store in ``text`` (by name or as written: ``memory,
    file, PostgreSQL``, ``memory|file:DIR|postgresql://...``): its line and the kinds' names."""
    by_word = {kind.name: kind.name for kind in KINDS} | {kind.form: kind.name for kind in KINDS}
    found = []
    for match in _KIND_LIST.finditer(text):
        names = []
        for word in _KIND_ONE.findall(match.group(0)):
            name = by_word.get(word) or next(
                (kind.name for kind in KINDS if kind.location(word) is not None), word
            )
            names.append(name)
        found.append((text.count("\n", 0, match.start()) + 1, tuple(names)))
    return found


def _registry_lists() -> set[tuple[str, ...]]:
    """What a prose list of kinds may say: every kind, or the kinds that declare a capability (or
    do not), each in the order of ``stores.KINDS``."""
    lists = {tuple(kind.name for kind in KINDS)}
    for capability in (Durable, KeepsEnded, Shared, JoinsConversations, Closable):
        for has in (True, False):
            lists.add(tuple(kind.name for kind in kinds_with(capability, has)))
    return lists


def test_every_prose_list_of_store_kinds_is_the_registrys():
    """docs/ and stores/base.py list the kinds of task store (all of them, or those that keep every
    task, are durable, ...) as ``stores.KINDS`` has them: a new kind, or a capability changed,
    fails here until the prose says so."""
    allowed = _registry_lists()
    places = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "toolnexus" / "stores" / "base.py"]
    seen, wrong = 0, []
    for path in places:
        for line, names in store_lists(path.read_text(encoding="utf-8")):
            seen += 1
            if names not in allowed:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {', '.join(names)}")
    assert seen >= 8  # the lists are found at all
    assert wrong == []


def test_a_list_of_store_kinds_unlike_the_registry_is_refused():
    allowed = _registry_lists()
    assert store_lists("the memory, file, PostgreSQL stores")[0][1] in allowed
    assert store_lists("the memory and PostgreSQL stores")[0][1] not in allowed
    assert store_lists("`--store file:DIR|memory`")[0][1] not in allowed
