"""Files in and out of A2A messages: a local file as a part (read bounded), media types against
an agent's modes, and a task's artifacts written to a folder.

Everything about an artifact comes from a peer, so nothing of it is trusted: a name is cut to a
plain file name safe to paste into a shell (letters, digits and ``. _ - + , = @`` only; no folders,
no leading dot or dash, at most 100 characters), an existing file is never overwritten
(``name-2.txt`` instead) and a link is never followed (files are created exclusively); a file part
that only links to a URL is listed in ``links.txt``, whose name is ours (a peer's own ``links.txt``
becomes ``links-2.txt``), not downloaded (the URL may point anywhere, and the peer's credentials
must not follow it). Saving is linear in the number of parts, whatever their names share.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = [
    "MAX_FILE",
    "LINKS",
    "TEXT",
    "DATA",
    "in_modes",
    "raw_size",
    "read_file",
    "save_artifacts",
    "SavedArtifacts",
    "Progress",
    "safe_name",
]

MAX_FILE = 10 * 1024 * 1024  # a file sent as a part is held in memory and base64 on the wire
_KEPT = frozenset("._-+,=@")  # with letters and digits: nothing a shell, a path or a terminal reads
_RUNS = re.compile(r"_{2,}")
LINKS = "links.txt"
_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}


def read_file(
    path: str | os.PathLike[str], *, media_type: str | None = None, max_bytes: int = MAX_FILE
) -> tuple[str, str, str]:
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
        raise ValueError(
            f"cannot attach {p}: {info.st_size:,} bytes is over the {max_bytes:,}-byte limit"
        )
    with p.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while we looked
        raise ValueError(f"cannot attach {p}: over the {max_bytes:,}-byte limit")
    kind = media_type or mimetypes.guess_type(p.name)[0] or "application/octet-stream"
    return base64.b64encode(data).decode("ascii"), kind, p.name


TEXT = "text/plain"
"""The media type of a text part (and of an agent's reply)."""
DATA = "application/json"
"""The media type of a data part."""


def _bare(media_type: str) -> str:
    return media_type.split(";", 1)[0].strip().lower()


def in_modes(media_type: str | None, modes: Sequence[str]) -> bool:
    """Whether ``media_type`` is one of ``modes`` (an agent's input or output modes): the same
    type, ``type/*`` or ``*/*``, parameters and case aside; ``text``, which older cards write for
    ``text/plain``, is read as it. A part without a media type is ``application/octet-stream``."""
    kind = _bare(media_type or "application/octet-stream")
    major = kind.split("/", 1)[0]
    for mode in modes:
        m = _bare(mode)
        if m == "text":
            m = TEXT
        if m in (kind, "*/*", "*") or m == f"{major}/*":
            return True
    return False


def raw_size(raw: str) -> int:
    """The number of bytes a part's base64 ``raw`` holds (without decoding it)."""
    text = raw.rstrip("=\n\r ")
    return len(text) * 3 // 4


def safe_name(name: str | None, fallback: str = "artifact") -> str:
    """``name`` (from a peer) as a plain file name that is safe to paste into a shell: letters,
    digits and ``. _ - + , = @`` (anything else, spaces, ``$`` ``;`` backticks, slashes, control and
    bidi characters included, becomes ``_``); no leading dot or dash, no reserved device name; at
    most 100 characters."""
    text = "".join(
        c if c.isalnum() or c in _KEPT else "_" for c in unicodedata.normalize("NFC", name or "")
    )
    text = _RUNS.sub("_", text).strip("._-")
    if not text or text.split(".")[0].lower() in _RESERVED:
        text = f"{fallback}_{text}" if text else fallback
    if len(text) > 100:
        stem, dot, ext = text.rpartition(".")
        text = (stem[: 100 - len(ext) - 1] + dot + ext) if dot and len(ext) <= 10 else text[:100]
    return text


@dataclass
class SavedArtifacts:
    """What :func:`save_artifacts` wrote: the files, the links it listed (in ``links_file``), the
    parts it could not write (each with the reason), and the names it could not use because a
    file had them (``"a.txt as a-2.txt"``: nothing is overwritten)."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    links_file: Path | None = None
    renamed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for a person: how many files where, links listed, parts skipped."""
        line = f"{len(self.files)} file(s) in {self.folder}"
        if self.links and self.links_file is not None:
            line += f"; {len(self.links)} linked file(s) listed in {self.links_file.name}, not downloaded"
        if self.renamed:
            shown = ", ".join(self.renamed[:3]) + (
                f" and {len(self.renamed) - 3} more" if len(self.renamed) > 3 else ""
            )
            line += f"; the names taken, none overwritten: {shown}"
        if self.skipped:
            shown = "; ".join(self.skipped[:3]) + (
                f"; and {len(self.skipped) - 3} more" if len(self.skipped) > 3 else ""
            )
            line += f"; skipped: {shown}"
        return line


Progress = Callable[[int, int], None]
"""Told ``(parts done, parts in all)`` as saving goes (from the thread that saves)."""


class _Part(Protocol):
    """What saving reads of a part (a :class:`~toolnexus.protocol.model.Part`: the model, above
    this module, hands its artifacts down, so they are typed here by their shape)."""

    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str | None: ...
    @property
    def data(self) -> object: ...
    @property
    def raw(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def media_type(self) -> str | None: ...
    @property
    def filename(self) -> str | None: ...


class _Artifact(Protocol):
    @property
    def name(self) -> str | None: ...
    @property
    def parts(self) -> Sequence[_Part]: ...


def save_artifacts(
    artifacts: Sequence[_Artifact], folder: str | os.PathLike[str], progress: Progress | None = None
) -> SavedArtifacts:
    """Write every part of every artifact (a task's, see ``Task.save_artifacts``) into ``folder`` (created if need be): text as
    ``.txt``, data as ``.json``, inline files as their bytes under their (made safe) name; linked
    files go to ``links.txt``. Never overwrites and never follows a link. Blocking file I/O: a UI
    runs it in a worker thread, ``progress`` telling it how far it got."""
    out = SavedArtifacts(Path(folder).expanduser())
    out.folder.mkdir(parents=True, exist_ok=True)
    names = _Names(out.folder)
    bases = [safe_name(artifact.name, f"artifact-{n}") for n, artifact in enumerate(artifacts, 1)]
    parts = [
        (n, i, artifact, part)
        for n, artifact in enumerate(artifacts, 1)
        for i, part in enumerate(artifact.parts, 1)
    ]
    links_path: Path | None = None
    if any(part.kind == "file" and part.raw is None and part.url for *_, part in parts):
        links_path = names.create(LINKS)  # ours first: a peer's own links.txt is the one renamed
    for done, (n, i, artifact, part) in enumerate(parts, 1):
        stem = bases[n - 1] if len(artifact.parts) == 1 else f"{bases[n - 1]}-{i}"
        if part.kind == "text":
            out.files.append(
                names.write(_with_ext(stem, ".txt"), (part.text or "").encode("utf-8"))
            )
        elif part.kind == "data":
            text = json.dumps(part.data, indent=2, ensure_ascii=False)
            out.files.append(names.write(_with_ext(stem, ".json"), text.encode("utf-8")))
        elif part.raw is not None:
            try:
                data = base64.b64decode(part.raw, validate=True)
            except (binascii.Error, ValueError):
                out.skipped.append(f"artifact {n} part {i}: its bytes are not valid base64")
            else:
                ext = mimetypes.guess_extension(part.media_type or "") or ".bin"
                name = safe_name(part.filename, "") if part.filename else ""
                out.files.append(names.write(name or _with_ext(stem, ext), data))
        elif part.url:
            out.links.append(
                f"{safe_name(part.filename, stem)}\t{part.media_type or ''}\t{part.url}"
            )
        if progress is not None:
            progress(done, len(parts))
    if links_path is not None:
        with links_path.open("wb") as f:  # created exclusively above, ours
            f.write("".join(f"{line}\n" for line in out.links).encode("utf-8"))
        out.files.append(links_path)
        out.links_file = links_path
    out.renamed = names.renamed
    return out


def _with_ext(stem: str, ext: str) -> str:
    return stem if stem.lower().endswith(ext) else stem + ext


class _Names:
    """Free names in one folder, handed out in one pass: the folder is listed once, and each name
    remembers the next suffix to try (``name``, ``name-2``, ``name-3``, ...), so 3,000 parts called
    ``a.txt`` cost 3,000 creations, not 4.5 million tries. Each file is still created exclusively
    (a name taken meanwhile, or a link planted there, is skipped, never written through)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken = set(os.listdir(folder))
        self.next: dict[str, int] = {}
        self.renamed: list[str] = []
        """Each name asked for that was taken, and the one used: ``"a.txt as a-2.txt"``."""

    def create(self, name: str) -> Path:
        """A new empty file under ``name`` or its next free variant, opened and closed exclusively."""
        fd, path = self._open(name)
        os.close(fd)
        return path

    def write(self, name: str, data: bytes) -> Path:
        fd, path = self._open(name)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path

    def _open(self, name: str) -> tuple[int, Path]:
        stem, dot, ext = name.rpartition(".")
        if not dot or not stem:
            stem, ext = name, ""
        k = self.next.get(name, 1)
        while True:
            candidate = name if k == 1 else f"{stem}-{k}{'.' + ext if ext else ''}"
            k += 1
            if candidate in self.taken:
                continue
            self.taken.add(candidate)
            try:
                fd = os.open(
                    self.folder / candidate,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                    0o644,
                )
            except FileExistsError:  # made meanwhile by someone else
                continue
            self.next[name] = k
            if candidate != name:
                self.renamed.append(f"{name} as {candidate}")
            return fd, self.folder / candidate
