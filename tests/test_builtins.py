"""The builtin tools on real files in a temporary folder."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from toolnexus import ToolContext, create_toolkit
from toolnexus.builtins import OUTPUT_CAP


@pytest.fixture
async def tk(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import os\nprint('hello')\n# TODO: more\n")
    (tmp_path / "src" / "b.txt").write_text("Hello world\nbye\n")
    (tmp_path / "notes.md").write_text("\n".join(f"line {i}" for i in range(1, 31)) + "\n")
    return await create_toolkit(root=tmp_path)


async def test_read_numbers_lines_and_pages(tk, tmp_path: Path):
    r = await tk.execute("read", {"path": "notes.md", "offset": 3, "limit": 2})
    assert r.output == "3\tline 3\n4\tline 4\n... [26 more lines; read on with offset=5]"
    r = await tk.execute("read", {"path": "src/a.py"})
    assert r.output == "1\timport os\n2\tprint('hello')\n3\t# TODO: more"
    r = await tk.execute("read", {"path": "nope.txt"})
    assert r.is_error and "No such file" in r.output
    r = await tk.execute("read", {"path": "src"})
    assert r.is_error and "is a folder" in r.output
    r = await tk.execute("read", {"path": "notes.md", "offset": 0})
    assert r.is_error and "'offset'" in r.output


async def test_paths_outside_the_root_are_refused(tk, tmp_path: Path):
    outside = tmp_path.parent / f"outside-{os.getpid()}.txt"
    outside.write_text("secret")
    try:
        for name, args in [
            ("read", {"path": "../" + outside.name}),
            ("read", {"path": str(outside)}),
            ("write", {"path": "../x.txt", "content": "x"}),
            ("edit", {"path": str(outside), "old_string": "secret", "new_string": "x"}),
            ("glob", {"pattern": "*", "path": ".."}),
            ("glob", {"pattern": "../*"}),
            ("grep", {"pattern": "secret", "path": ".."}),
        ]:
            r = await tk.execute(name, args)
            assert r.is_error, (name, args)
            assert (
                "outside the working folder" in r.output
                or "relative to the search folder" in r.output
            )
        assert outside.read_text() == "secret"
        (tmp_path / "escape").symlink_to(tmp_path.parent)
        r = await tk.execute("read", {"path": f"escape/{outside.name}"})
        assert r.is_error and "outside the working folder" in r.output
    finally:
        outside.unlink()


async def test_glob(tk):
    assert (await tk.execute("glob", {"pattern": "**/*.py"})).output == "src/a.py"
    assert (
        await tk.execute("glob", {"pattern": "*", "path": "src"})
    ).output == "src/a.py\nsrc/b.txt"
    assert (await tk.execute("glob", {"pattern": "*.zzz"})).output == "No files found"


async def test_grep(tk):
    r = await tk.execute("grep", {"pattern": "hello", "ignore_case": True})
    assert r.output == "src/a.py:2: print('hello')\nsrc/b.txt:1: Hello world"
    r = await tk.execute("grep", {"pattern": "hello", "include": "*.txt"})
    assert r.output == "No matches found"
    r = await tk.execute("grep", {"pattern": "(unclosed"})
    assert r.is_error and "invalid regular expression" in r.output


async def test_write_and_edit(tk, tmp_path: Path):
    r = await tk.execute("write", {"path": "new/deep/file.txt", "content": "one two two\n"})
    assert r.output == "Wrote 12 bytes to new/deep/file.txt"
    target = tmp_path / "new" / "deep" / "file.txt"
    assert target.read_text() == "one two two\n"
    r = await tk.execute(
        "edit", {"path": "new/deep/file.txt", "old_string": "two", "new_string": "2"}
    )
    assert r.is_error and "occurs 2 times" in r.output
    r = await tk.execute(
        "edit", {"path": "new/deep/file.txt", "old_string": "one", "new_string": "1"}
    )
    assert r.output == "Replaced 1 occurrence(s) in new/deep/file.txt"
    r = await tk.execute(
        "edit",
        {"path": "new/deep/file.txt", "old_string": "two", "new_string": "2", "replace_all": True},
    )
    assert target.read_text() == "1 2 2\n"
    r = await tk.execute(
        "edit", {"path": "new/deep/file.txt", "old_string": "absent", "new_string": "x"}
    )
    assert r.is_error and "not found" in r.output
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]  # no temp file left


async def test_bash(tk, tmp_path: Path):
    r = await tk.execute("bash", {"command": "pwd; echo err >&2"})
    assert r.output == f"{tmp_path}\nerr\n"
    assert r.metadata["exit_code"] == 0
    r = await tk.execute("bash", {"command": "echo out; exit 3"})
    assert r.is_error and r.output == "out\n\n[exit code 3]"
    r = await tk.execute("bash", {"command": f"head -c {OUTPUT_CAP + 500} /dev/zero | tr '\\0' a"})
    assert len(r.output) < OUTPUT_CAP + 100 and r.output.endswith(
        "[output truncated: 500 more characters]"
    )


async def test_bash_timeout_kills_the_process_group(tk, tmp_path: Path):
    marker = tmp_path / "survived"
    t0 = time.monotonic()
    r = await tk.execute(
        "bash", {"command": f"(sleep 2; touch {marker}) & sleep 30", "timeout": 0.3}
    )
    assert r.is_error and r.output == "bash: command timed out after 0.3s"
    assert time.monotonic() - t0 < 5
    await asyncio.sleep(2.3)
    assert not marker.exists()


async def test_bash_cancel(tk):
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, cancel.set)
    t0 = time.monotonic()
    r = await tk.execute("bash", {"command": "sleep 30"}, ToolContext(cancel=cancel))
    assert r.is_error and r.output == "bash: canceled"
    assert time.monotonic() - t0 < 5
