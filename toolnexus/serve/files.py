"""The files a served agent's callers send, and the ones its tools make.

In: a send's file parts are checked as it arrives (:meth:`TaskFiles.check`): each one's media type
must be one of the agent's input modes (else -32005, the spec's ContentTypeNotSupported), its
inline bytes valid base64 and at most ``max_file`` bytes (else -32602). A data part's JSON is
bounded alike (``max_file``; every binding's body limit is below it by default). When its run starts, the
task gets a folder of its own under the agent's root (:meth:`TaskFiles.take`): each inline file is
written there under a name made safe (``protocol.files.save_artifacts``: never overwritten, a link
never followed); a file given by URL is fetched there only when the agent allows it
(``A2AConfig(fetch_files=True)``), under the rule webhooks follow (``serve.push.pinned``: the address
connected to is the one checked; private addresses only where webhooks may go), read bounded in
size and time, redirects not followed; otherwise its URL is named to the model and nothing is
fetched. Data parts go to the model as JSON in the prompt's text and to the tools as
``data.json`` (one file a part) in the same folder. The model gets the files as content blocks where its style takes their media type
(``Client.ask(files=)``), the tools the folder (``ToolContext.folder``); the folder goes when the
task ends, and at start what a crash left under ``files_dir`` goes (:meth:`TaskFiles.sweep`).

Out: the files and data a run's tools made (``RunResult.files``, ``RunResult.data``) become the
task's artifacts beside its reply (:func:`artifacts_of`), each kept only when the caller's
``acceptedOutputModes`` has its media type.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx

from .. import _json
from ..errors import ContentTypeNotSupportedError, InvalidParamsError
from ..http.fetch import AnswerTooLarge, read_body
from ..http.fetch import why as why_text
from ..llm.run import RunResult
from ..protocol.files import DATA, TEXT, in_modes, raw_size, safe_name, save_artifacts
from ..protocol.model import Artifact, Message, Part
from ..tools import Attachment
from .push import pinned

__all__ = ["TaskFiles", "FileFetchError", "artifacts_of", "reply_accepted", "FETCH_TIMEOUT"]

_TASK_FOLDER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A task's folder: named by its id, a UUID (what a sweep may remove; nothing else is touched)."""

FETCH_TIMEOUT = 30.0
"""The seconds a file by URL may take to arrive whole."""


class FileFetchError(Exception):
    """A file given by URL could not be fetched; the message says which and why (the task fails
    with it)."""


class TaskFiles:
    """The callers' files of one served agent: checked, kept per task, fetched when allowed.

    Args:
        input_modes: the agent's input modes (a file part of another media type is refused).
        max_file: the most bytes one file may hold (inline or fetched).
        root: where the tasks' folders go (None: a temporary folder, removed by :meth:`close`).
        fetch: fetch files given by URL.
        bound: the agent's bound ``(host, port)`` (a URL pointing at it is refused).
        private_ok: fetch from loopback and private addresses too (as webhooks may).
    """

    def __init__(
        self,
        input_modes: Sequence[str],
        max_file: int,
        *,
        root: str | None = None,
        fetch: bool = False,
        bound: Callable[[], tuple[str, int]] | None = None,
        private_ok: bool = True,
        timeout: float = FETCH_TIMEOUT,
    ) -> None:
        self.input_modes = tuple(input_modes)
        self.max_file = max_file
        self.fetch = fetch
        self._bound = bound
        self.private_ok = private_ok
        self.timeout = timeout
        self._given_root = Path(root).expanduser() if root else None
        self._root: Path | None = self._given_root
        self._http: httpx.AsyncClient | None = None

    def check(self, message: Message, modes: Sequence[str] | None = None) -> None:
        """Refuse a message whose file parts this agent (``modes``: the skill it asks for, where
        that skill has its own) does not take, or whose data parts are too large, before any task
        is made.

        Raises:
            ContentTypeNotSupportedError: a part's media type is not an input mode.
            InvalidParamsError: a part's bytes are not base64, or larger than ``max_file`` (a data
                part: its JSON).
        """
        modes = modes or self.input_modes
        for i, part in enumerate(message.parts):
            where = f"message.parts[{i}]"
            if part.kind == "data":
                size = len(_json.dumps(part.data))
                if size > self.max_file:
                    raise InvalidParamsError(
                        f"Invalid params: {where} holds {size:,} bytes of data; at most {self.max_file:,} are taken"
                    )
            if part.kind != "file":
                continue
            if not in_modes(part.media_type, modes):
                raise ContentTypeNotSupportedError(
                    f"Incompatible content types: {where} is "
                    f"{part.media_type or 'a file of no media type'}; this agent accepts "
                    + ", ".join(modes)
                )
            if part.raw is not None:
                size = raw_size(part.raw)
                if size > self.max_file:
                    raise InvalidParamsError(
                        f"Invalid params: {where} holds {size:,} bytes; at most {self.max_file:,} are taken"
                    )
                try:
                    base64.b64decode(part.raw, validate=True)
                except (binascii.Error, ValueError):
                    raise InvalidParamsError(
                        f"Invalid params: {where} bytes are not valid base64"
                    ) from None

    def folder(self, task_id: str) -> Path:
        """The task's own folder (made when first asked for)."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="toolnexus-files-"))
        path = self._root / safe_name(task_id, "task")
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    async def take(self, task_id: str, message: Message) -> tuple[list[Attachment], str, Path]:
        """The message's files in the task's folder: the attachments (for the model), a note for
        the prompt (which files are where, the URLs not fetched) and the folder.

        Raises:
            FileFetchError: a URL could not be fetched (refused, unreachable, too large, too slow).
        """
        parts: list[Part] = []
        links: list[str] = []
        for part in message.parts:
            if part.kind != "file":
                continue
            if part.raw is None and part.url:
                if not self.fetch:
                    links.append(part.url)
                    continue
                data = await self._fetch(part.url)
                parts.append(
                    Part(
                        "file",
                        raw=base64.b64encode(data).decode("ascii"),
                        media_type=part.media_type,
                        filename=part.filename or part.url.rsplit("/", 1)[-1] or None,
                    )
                )
            else:
                parts.append(part)
        data = [part for part in message.parts if part.kind == "data"]
        folder = self.folder(task_id)
        saving = [Artifact(parts, name="file")] if parts else []
        if data:  # data.json (data-1.json, data-2.json, ...: one a part)
            saving.append(Artifact(data, name="data"))
        saved = await asyncio.to_thread(save_artifacts, saving, folder) if saving else None
        files: list[Attachment] = []
        written: list[Path] = saved.files if saved is not None else []
        for part, path in zip(parts, written, strict=False):
            kind = part.media_type or "application/octet-stream"
            files.append(Attachment(path.name, kind, base64.b64decode(part.raw or "")))
        note = ""
        if files:
            named = ", ".join(f"{f.name} ({f.media_type}, {len(f.data):,} bytes)" for f in files)
            note += f"\n\nFiles the caller sent, in the task's folder for tools: {named}."
        if data:
            named = ", ".join(path.name for path in written[len(parts) :])
            note += f"\n\nThe data the caller sent (the JSON above), in the task's folder for tools: {named}."
        if links:
            note += "\n\nFiles the caller gave by URL (not fetched): " + ", ".join(links) + "."
        return files, note, folder

    async def _fetch(self, url: str) -> bytes:
        where = await pinned(
            url,
            self._bound() if self._bound is not None else None,
            private_ok=self.private_ok,
            timeout=self.timeout,
        )
        if isinstance(where, str):
            raise FileFetchError(f"file {url} refused: {where}")
        target, host, extensions = where
        if self._http is None:
            self._http = httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=None)
        try:
            async with asyncio.timeout(self.timeout):
                async with self._http.stream(
                    "GET", target, headers=host, extensions=extensions
                ) as r:
                    if r.status_code != 200:
                        raise FileFetchError(f"file {url} answered HTTP {r.status_code}")
                    return await read_body(r, self.max_file)
        except TimeoutError:
            raise FileFetchError(f"file {url} did not arrive within {self.timeout:g}s") from None
        except AnswerTooLarge:
            raise FileFetchError(
                f"file {url} is larger than {self.max_file:,} bytes, the most taken"
            ) from None
        except (httpx.HTTPError, OSError) as exc:
            raise FileFetchError(f"file {url} could not be fetched: {why_text(exc)}") from None

    async def sweep(self, live: Callable[[str], Awaitable[bool]]) -> list[str]:
        """At start: remove each task folder under the root given (``files_dir``) whose task is not
        ``live`` (a crash left it: its task ended or is gone); only folders named as this server
        names them (a task id, a UUID), never anything else there. Returns the ids removed."""
        if self._given_root is None or not self._given_root.is_dir():
            return []
        removed: list[str] = []
        for entry in sorted(self._given_root.iterdir()):
            if not _TASK_FOLDER.fullmatch(entry.name) or entry.is_symlink() or not entry.is_dir():
                continue
            if not await live(entry.name):
                await asyncio.to_thread(shutil.rmtree, entry, True)
                removed.append(entry.name)
        return removed

    def forget(self, task_id: str) -> None:
        """Remove the task's folder (its run is over)."""
        if self._root is not None:
            shutil.rmtree(self._root / safe_name(task_id, "task"), ignore_errors=True)

    async def close(self) -> None:
        """Close the fetching client; remove the root when it was a temporary folder."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._given_root is None and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


def artifacts_of(result: RunResult, accepted: Sequence[str] | None) -> list[Artifact]:
    """The artifacts a run's tools made (files, then data), those ``accepted`` takes (None or
    empty: every one)."""
    out: list[Artifact] = []
    for f in result.files:
        if accepted and not in_modes(f.media_type, accepted):
            continue
        raw = base64.b64encode(f.data).decode("ascii")
        part = Part("file", raw=raw, media_type=f.media_type, filename=f.name)
        out.append(Artifact([part], name=f.name))
    if not accepted or in_modes(DATA, accepted):
        out += [Artifact([Part("data", data=d, media_type=DATA)], name="data") for d in result.data]
    return out


def reply_accepted(accepted: Sequence[str] | None) -> bool:
    """Whether a caller who accepts ``accepted`` takes the text reply."""
    return not accepted or in_modes(TEXT, accepted)
