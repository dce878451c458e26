"""tests/skill: checks that the cuda-kernels skill's text, code and data are true.

The helpers live in skilldocs.py next to this file; this conftest makes them importable
(test modules here `import skilldocs`) without turning tests/ into a package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import skilldocs  # noqa: E402


@pytest.fixture(scope="session")
def skill_dir() -> Path:
    return skilldocs.SKILL
