"""tests/kernel_project: the scaffold (new_kernel_project.py) and the local build (build_local.py).

The helpers live in kernel_project_helpers.py next to this file; this conftest makes them
importable without turning tests/ into a package.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def kernel_project_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where generated projects and their builds live for this session (shared by all tests)."""
    configured = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    if configured:
        root = Path(configured) / "kernel_project"
        root.mkdir(parents=True, exist_ok=True)
        return root
    return tmp_path_factory.mktemp("kernel-project")
