"""Writing a file whole: what every file this project replaces goes through.

A reader (another worker, a restarted server, the user opening an export) sees the old content or
the new, never half of it: the text goes to a fresh temporary file in the same folder, created with
``mkstemp`` (``O_EXCL``, mode 0600: a link planted at its name is never followed), then renamed over
the target.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_whole"]


def write_whole(path: str | os.PathLike[str], text: str, *, keep_mode: bool = False) -> Path:
    """Replace ``path`` with ``text`` (UTF-8); its folder must exist. The file is private (0600),
    or with ``keep_mode`` keeps the mode of the file it replaces. Returns the path."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if keep_mode and target.exists():
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
