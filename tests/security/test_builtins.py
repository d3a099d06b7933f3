"""The builtins against a hostile model or MCP caller: no pattern stalls the server, every call
has a time limit and ends when cancelled, bash gets no secrets, write follows no planted link."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import ConfigError


async def _card_latency(url: str, during: asyncio.Future) -> float:
    """The slowest card GET made while ``during`` runs (the server and this loop are the same)."""
    worst = 0.0
    async with httpx.AsyncClient() as http:
        while not during.done():
            t0 = time.perf_counter()
            assert (await http.get(url)).status_code == 200
            worst = max(worst, time.perf_counter() - t0)
            await asyncio.sleep(0.02)
    return worst


async def test_a_catastrophic_regex_neither_freezes_the_server_nor_runs_long(tmp_path: Path):
    (tmp_path / "a.txt").write_text("aaaaaaaaaaa\n")
    tk = await tn.create_toolkit(root=tmp_path)
    await tk.execute("grep", {"pattern": "warm"})  # first-call costs (imports) are not the subject
    async with tk.serve(client=tn.demo_client(), a2a=True) as h:
        t0 = time.perf_counter()
        call = asyncio.ensure_future(
            tk.execute("grep", {"pattern": "(.*?){25}X"})
        )  # Python's re: minutes
        worst = await _card_latency(h.card_url, call)
        result = await call
    assert time.perf_counter() - t0 < 2.0
    assert result.output == "No matches found" and not result.is_error
    assert worst < 0.5, f"a card GET took {worst:.2f}s while grep ran"
    bad = await tk.execute(
        "grep", {"pattern": r"(a)\1"}
    )  # backreferences have no linear-time engine
    assert bad.is_error and "RE2 syntax" in bad.output


async def test_glob_with_many_double_stars_is_bounded(tmp_path: Path):
    for i in range(260):
        d = tmp_path.joinpath(*[f"d{j}" for j in range(i % 8)], f"x{i}")
        d.mkdir(parents=True, exist_ok=True)
        (d / "f.txt").write_text("x")
    tk = await tn.create_toolkit(root=tmp_path)
    async with tk.serve(client=tn.demo_client(), a2a=True) as h:
        t0 = time.perf_counter()
        call = asyncio.ensure_future(tk.execute("glob", {"pattern": "**/" * 12 + "*.txt"}))
        worst = await _card_latency(h.card_url, call)
        result = await call
    assert time.perf_counter() - t0 < 2.0 and worst < 0.5
    assert not result.is_error and result.output.endswith("... [60 more files]")  # all 260 found
    assert (await tk.execute("glob", {"pattern": "**/x1?/f.txt"})).output.count(
        "\n"
    ) == 9  # x10..x19


async def test_every_file_builtin_has_a_time_limit(tmp_path: Path):
    for i in range(4000):
        (tmp_path / f"f{i:05}.txt").write_text("hello\n")
    tk = await tn.create_toolkit(
        root=tmp_path, builtins={"timeout": 0.0001}
    )  # far less than any walk of 4,000
    for name, args in (("grep", {"pattern": "hello"}), ("glob", {"pattern": "**/*.txt"})):
        t0 = time.perf_counter()
        r = await tk.execute(name, args)
        assert r.is_error and "time limit of 0.0001s" in r.output, (name, r.output)
        assert time.perf_counter() - t0 < 1.0


async def test_a_fifo_never_blocks_read_grep_or_edit(tmp_path: Path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "ok.txt").write_text("fine\n")
    tk = await tn.create_toolkit(root=tmp_path)
    for name, args in (
        ("read", {"path": "pipe"}),
        ("edit", {"path": "pipe", "old_string": "a", "new_string": "b"}),
    ):
        r = await asyncio.wait_for(tk.execute(name, args), 5)
        assert r.is_error and "not a regular file" in r.output
    r = await asyncio.wait_for(tk.execute("grep", {"pattern": "fine"}), 5)
    assert r.output == "ok.txt:1: fine"


async def test_a_cancelled_grep_returns_at_once(tmp_path: Path):
    big = tmp_path / "big.txt"
    # a million lines: seconds of searching, checked for a cancel at every line (one 8 MB line was
    # searched by RE2 in under the 10 ms the test waited, now and then, and the call ended first)
    big.write_bytes(b"abababababababababa\n" * 1_000_000)
    tk = await tn.create_toolkit(root=tmp_path)
    call = asyncio.ensure_future(
        tk.execute("grep", {"pattern": "(a|b)*c"}, tn.ToolContext(cancel=(stop := asyncio.Event())))
    )
    await asyncio.sleep(0.01)
    stop.set()
    r = await asyncio.wait_for(call, 5)
    assert r.is_error and "canceled" in r.output  # stopped where it was, not run to the end


async def test_bash_gets_a_scrubbed_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-leak-123")
    monkeypatch.setenv("TN_PLAIN_SETTING", "visible-when-named")
    tk = await tn.create_toolkit(root=tmp_path)
    out = (await tk.execute("bash", {"command": "env; pwd"})).output
    assert (
        "sk-should-never-leak" not in out
        and "OPENAI_API_KEY" not in out
        and "TN_PLAIN_SETTING" not in out
    )
    assert "PATH=" in out and str(tmp_path.resolve()) in out
    named = await tn.create_toolkit(root=tmp_path, builtins={"env": ["TN_PLAIN_SETTING"]})
    assert (
        "visible-when-named"
        in (await named.execute("bash", {"command": "echo $TN_PLAIN_SETTING"})).output
    )


async def test_write_never_follows_a_planted_link(tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    # the temporary names the old code used, and a guess at any other: all point outside
    for name in (f".notes.md.tmp-{os.getpid()}", ".notes.md.tmp", f".notes.md.{os.getpid()}.tmp"):
        (root / name).symlink_to(outside)
    tk = await tn.create_toolkit(root=root)
    r = await tk.execute("write", {"path": "notes.md", "content": "new"})
    assert not r.is_error
    assert outside.read_text() == "precious" and (root / "notes.md").read_text() == "new"
    r = await tk.execute("edit", {"path": "notes.md", "old_string": "new", "new_string": "newer"})
    assert (
        not r.is_error
        and outside.read_text() == "precious"
        and (root / "notes.md").read_text() == "newer"
    )
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


async def test_command_tools_are_not_served_beyond_loopback_without_auth(tmp_path: Path):
    tk = await tn.create_toolkit(root=tmp_path)  # builtins on: bash, write, edit
    with pytest.raises(
        ConfigError, match="refusing to serve bash, edit, write on 0.0.0.0 without auth"
    ):
        await tk.serve("0.0.0.0:0", client=tn.demo_client(), a2a=True)
    with pytest.raises(ConfigError, match="MCP"):
        await tk.serve("0.0.0.0:0", mcp=tn.MCPServeConfig(tools=["bash"]))
    # with auth, or said explicitly, or without the command tools, it starts
    for options in (
        {"a2a": tn.A2AConfig(auth=tn.Auth.bearer("t0ken"))},
        {"a2a": True, "allow_unauthenticated": True},
        {"mcp": True},
    ):  # MCP alone exposes no command tool by default
        async with tk.serve("0.0.0.0:0", client=tn.demo_client(), **options) as h:
            assert h.running
    safe = await tn.create_toolkit(
        root=tmp_path, builtins={"tools": {"bash": False, "write": False, "edit": False}}
    )
    async with safe.serve("0.0.0.0:0", client=tn.demo_client(), a2a=True) as h:
        assert h.running
