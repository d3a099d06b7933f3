"""Files in and out of A2A messages: a local file as a part (read bounded), and a task's artifacts
written to a folder.

Everything about an artifact comes from a peer, so nothing of it is trusted: a name is cut to a
plain file name (no folders, no leading dots, no control characters, at most 100 characters), an
existing file is never overwritten (``name-2.txt`` instead) and a link is never followed (files
are created exclusively); a file part that only links to a URL is listed in ``links.txt``, not
downloaded (the URL may point anywhere, and the peer's credentials must not follow it).
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Task

__all__ = ["MAX_FILE", "read_file", "save_artifacts", "SavedArtifacts", "safe_name"]

MAX_FILE = 10 * 1024 * 1024  # a file sent as a part is held in memory and base64 on the wire
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\:*?\"<>|\u202a-\u202e\u2066-\u2069]+")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def read_file(path: str | os.PathLike[str], *, media_type: str | None = None,
              max_bytes: int = MAX_FILE) -> tuple[str, str, str]:
    """The regular file at ``path`` as a file part's fields: ``(base64 raw, media type, name)``
    (``Part.of_file`` makes the part).

    Raises:
        ValueError: the path is missing, not a regular file, or larger than ``max_bytes`` (the
            message says which).
    """
    p = Path(path).expanduser()
    try:
        info = p.stat()
    except OSError as exc:
        raise ValueError(f"cannot attach {p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"cannot attach {p}: not a regular file")
    if info.st_size > max_bytes:
        raise ValueError(f"cannot attach {p}: {info.st_size:,} bytes is over the {max_bytes:,}-byte limit")
    with p.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while we looked
        raise ValueError(f"cannot attach {p}: over the {max_bytes:,}-byte limit")
    kind = media_type or mimetypes.guess_type(p.name)[0] or "application/octet-stream"
    return base64.b64encode(data).decode("ascii"), kind, p.name


def safe_name(name: str | None, fallback: str = "artifact") -> str:
    """``name`` (from a peer) as a plain file name: no folder parts, control or shell-special
    characters, leading dots or reserved device names; at most 100 characters."""
    text = _UNSAFE.sub("_", (name or "").strip()).strip(" ._")
    if not text or text.split(".")[0].lower() in _RESERVED:
        text = f"{fallback}_{text}" if text else fallback
    if len(text) > 100:
        stem, dot, ext = text.rpartition(".")
        text = (stem[: 100 - len(ext) - 1] + dot + ext) if dot and len(ext) <= 10 else text[:100]
    return text


@dataclass
class SavedArtifacts:
    """What :func:`save_artifacts` wrote: the files, the links it listed, and the parts it could not
    write (each with the reason)."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for a person: how many files where, links listed, parts skipped."""
        line = f"{len(self.files)} file(s) in {self.folder}"
        if self.links:
            line += f"; {len(self.links)} linked file(s) listed in links.txt, not downloaded"
        if self.skipped:
            line += f"; skipped: {'; '.join(self.skipped)}"
        return line


def save_artifacts(task: Task, folder: str | os.PathLike[str]) -> SavedArtifacts:
    """Write every part of every artifact of ``task`` into ``folder`` (created if need be): text as
    ``.txt``, data as ``.json``, inline files as their bytes under their (made safe) name; linked
    files go to ``links.txt``. Never overwrites and never follows a link."""
    out = SavedArtifacts(Path(folder).expanduser())
    out.folder.mkdir(parents=True, exist_ok=True)
    for n, artifact in enumerate(task.artifacts, 1):
        base = safe_name(artifact.name, f"artifact-{n}")
        for i, part in enumerate(artifact.parts, 1):
            stem = base if len(artifact.parts) == 1 else f"{base}-{i}"
            where = f"artifact {n} part {i}"
            if part.kind == "text":
                out.files.append(_write(out.folder, _with_ext(stem, ".txt"), (part.text or "").encode("utf-8")))
            elif part.kind == "data":
                text = json.dumps(part.data, indent=2, ensure_ascii=False)
                out.files.append(_write(out.folder, _with_ext(stem, ".json"), text.encode("utf-8")))
            elif part.raw is not None:
                try:
                    data = base64.b64decode(part.raw, validate=True)
                except (binascii.Error, ValueError):
                    out.skipped.append(f"{where}: its bytes are not valid base64")
                    continue
                ext = mimetypes.guess_extension(part.media_type or "") or ".bin"
                name = safe_name(part.filename, "") if part.filename else ""
                out.files.append(_write(out.folder, name or _with_ext(stem, ext), data))
            elif part.url:
                out.links.append(f"{safe_name(part.filename, stem)}\t{part.media_type or ''}\t{part.url}")
    if out.links:
        text = "".join(f"{line}\n" for line in out.links)
        out.files.append(_write(out.folder, "links.txt", text.encode("utf-8")))
    return out


def _with_ext(stem: str, ext: str) -> str:
    return stem if stem.lower().endswith(ext) else stem + ext


def _write(folder: Path, name: str, data: bytes) -> Path:
    """Create ``folder/name`` exclusively (``name-2`` ... when taken; a link there is never followed)."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    for k in range(1, 10_000):
        path = folder / (name if k == 1 else f"{stem}-{k}{'.' + ext if ext else ''}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path
    raise OSError(f"no free name for {name} in {folder}")
