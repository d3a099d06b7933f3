"""Helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path


def write_skill(folder: Path, name: str | None, body: str = "Do it.", description: str | None = None,
                extra: str = "") -> Path:
    """Write folder/SKILL.md with front matter; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    if extra:
        lines.append(extra)
    lines.append("---")
    path = folder / "SKILL.md"
    path.write_text("\n".join(lines) + "\n\n" + body + "\n", encoding="utf-8")
    return path
