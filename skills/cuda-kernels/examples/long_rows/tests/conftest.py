"""Test setup for the long_rows example: finds or builds the package, handles the markers.

The package under test comes from LONG_ROWS_KERNELS_PATH (a directory holding a built
long_rows_kernels, what build_local.py prints), an importable long_rows_kernels, or a build
with ../../../scripts/build_local.py (KERNEL_SKILLS_TEST_ARCHS, e.g. "9.0", picks the
architectures). `gpu` tests are skipped without CUDA.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[1]
SCRIPTS = EXAMPLE.parents[1] / "scripts"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    config.addinivalue_line("markers", "slow: compiles CUDA or C++")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords and EXAMPLE in Path(str(item.fspath)).parents:
            item.add_marker(skip)


def _import_built(path: Path) -> ModuleType:
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    return importlib.import_module("long_rows_kernels")


@pytest.fixture(scope="session")
def kernels() -> ModuleType:
    """The long_rows_kernels package (built if needed)."""
    pytest.importorskip("torch")
    configured = os.environ.get("LONG_ROWS_KERNELS_PATH")
    if configured:
        return _import_built(Path(configured))
    try:
        return importlib.import_module("long_rows_kernels")
    except ModuleNotFoundError as exc:
        if exc.name not in ("long_rows_kernels", "long_rows_kernels._ops"):
            raise
    if shutil.which("nvcc") is None:
        pytest.skip("long_rows_kernels is not built and nvcc is not on PATH to build it")
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project

    archs_env = os.environ.get("KERNEL_SKILLS_TEST_ARCHS")
    archs = archs_env.split(",") if archs_env else (None if _cuda_available() else ["9.0"])
    root = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    result = build_project(EXAMPLE, archs=archs, build_dir=Path(root) / EXAMPLE.name if root else None)
    return _import_built(result.path)
