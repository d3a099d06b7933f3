"""The project's own documentation (docs/, MkDocs Material + mkdocstrings) builds with --strict:
a page naming an API that is gone, a broken link or a docstring mkdocstrings cannot read fails here."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
