from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SKILLS = ROOT / "examples" / "skills"


@pytest.fixture
def example_skills() -> Path:
    return EXAMPLE_SKILLS
