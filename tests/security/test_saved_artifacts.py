"""Artifacts a peer sends, saved to disk: every name pastes into a shell as one plain word (bash
itself reads them here), the list of links keeps its own name, and saving is linear in the number
of parts, however many share a name (past 9,999 it used to raise)."""

from __future__ import annotations

import base64
import os
import shlex
import subprocess
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.protocol import files
from toolnexus.protocol.model import Artifact, Part, Task, TaskStatus

from ..peers.sdk_server import HOSTILE_NAMES


def _task(*parts: Part, name: str = "many") -> Task:
    return Task(
        "t1", "c1", TaskStatus(tn.TaskState.COMPLETED), artifacts=[Artifact(list(parts), name=name)]
    )


def _file(name: str, data: bytes) -> Part:
    return Part("file", raw=base64.b64encode(data).decode(), filename=name, media_type="text/plain")


@pytest.mark.parametrize(
    "name", HOSTILE_NAMES + ("-", "--help", ".bashrc", "..", "ré\u0301sumé.txt", "\u202etxt.exe")
)
def test_a_saved_name_pastes_into_a_shell_as_one_plain_word(tmp_path: Path, name: str):
    folder = tmp_path / "out"
    saved = _task(_file(name, b"the bytes\n")).save_artifacts(folder)
    [path] = saved.files
    word = path.name
    assert shlex.quote(word) == word or not word.isascii(), (
        word
    )  # shlex quotes any non-ASCII letter
    assert not word.startswith(("-", ".")), word
    # pasted as it is into a real shell: one argument, the file itself, and nothing runs
    run = subprocess.run(
        ["bash", "-c", f"cat {word}; printf '%s\\n' {word}"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"the bytes\n{word}\n"
    assert sorted(os.listdir(folder)) == [word]  # no PWNED, no out, no second file
    assert not (tmp_path / "PWNED").exists()


def test_ten_thousand_parts_with_one_name_are_saved_in_one_pass(tmp_path: Path, monkeypatch):
    """Linear, counted rather than timed: one exclusive create per part (the old way tried a.txt,
    a-2.txt, ... from the start for each, 50 million tries here, and gave up at 9,999)."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a.txt").write_text("already here")
    (folder / "a-7.txt").write_text("and this")
    n = 10_050
    opened: list[str] = []
    real_open = os.open

    def counting_open(path, flags, mode=0o777):  # type: ignore[no-untyped-def]
        opened.append(os.fspath(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(files.os, "open", counting_open)
    saved = _task(*(_file("a.txt", f"{i}".encode()) for i in range(n))).save_artifacts(folder)
    assert len(saved.files) == n and len(opened) == n
    assert (folder / "a.txt").read_text() == "already here" and (
        folder / "a-7.txt"
    ).read_text() == "and this"
    assert saved.files[0].name == "a-2.txt" and saved.files[5].name == "a-8.txt"
    assert saved.files[-1].name == f"a-{n + 2}.txt" and saved.files[-1].read_text() == f"{n - 1}"
    assert len(os.listdir(folder)) == n + 2


def test_progress_is_told_for_every_part(tmp_path: Path):
    seen: list[tuple[int, int]] = []
    task = _task(
        *(_file("a.txt", b"x") for _ in range(5)),
        Part("file", url="https://x.example/y", filename="y"),
    )
    task.save_artifacts(tmp_path, lambda done, total: seen.append((done, total)))
    assert seen == [(i, 6) for i in range(1, 7)]


def test_the_list_of_links_keeps_its_name_whatever_the_peer_calls_its_files(tmp_path: Path):
    task = _task(
        _file("links.txt", b"the peer's own file"),
        Part(
            "file",
            url="https://elsewhere.example/x.pdf",
            filename="x.pdf",
            media_type="application/pdf",
        ),
    )
    saved = task.save_artifacts(tmp_path / "first")
    assert (
        tmp_path / "first" / "links.txt"
    ).read_text() == "x.pdf\tapplication/pdf\thttps://elsewhere.example/x.pdf\n"
    assert (tmp_path / "first" / "links-2.txt").read_text() == "the peer's own file"
    assert saved.links_file == tmp_path / "first" / "links.txt"
    # saved again into the same folder: nothing overwritten, and the summary names the list's file
    again = task.save_artifacts(tmp_path / "first")
    assert again.links_file == tmp_path / "first" / "links-3.txt"
    assert "listed in links-3.txt, not downloaded" in again.summary()
    assert (tmp_path / "first" / "links.txt").read_text().startswith("x.pdf\t")


def test_a_planted_link_is_never_written_through_even_when_made_after_the_listing(
    tmp_path: Path, monkeypatch
):
    target = tmp_path / "victim"
    target.write_text("keep me")
    folder = tmp_path / "out"
    folder.mkdir()
    real_listdir = os.listdir

    def listing_then_plant(path):  # type: ignore[no-untyped-def]
        names = real_listdir(path)
        (folder / "a.txt").symlink_to(target)  # a race: planted after the folder was read
        return names

    monkeypatch.setattr(files.os, "listdir", listing_then_plant)
    saved = _task(_file("a.txt", b"peer bytes")).save_artifacts(folder)
    assert target.read_text() == "keep me"
    assert [p.name for p in saved.files] == ["a-2.txt"]
