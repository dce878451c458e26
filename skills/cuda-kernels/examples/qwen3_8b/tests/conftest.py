"""Test setup for the qwen3_8b example: finds or builds the package, handles the markers.

The package under test comes from, in order:
  1. QWEN3_8B_KERNELS_PATH: a directory holding a built qwen3_8b_kernels (what
     build_local.py prints, or kernel-builder's build/<variant> directory);
  2. an importable qwen3_8b_kernels (PYTHONPATH, a Nix dev shell, an installed wheel);
  3. a build with ../../../scripts/build_local.py (cached; KERNEL_SKILLS_TEST_ARCHS, e.g.
     "9.0", picks the architectures, else the visible GPU's or 9.0 without a GPU).
`gpu` tests are skipped without CUDA, so `pytest` is safe on any machine.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[1]
SCRIPTS = EXAMPLE.parents[1] / "scripts"


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too so the example runs outside this repository (copied elsewhere).
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    config.addinivalue_line("markers", "slow: compiles CUDA or allocates > 10 GB")


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
    return importlib.import_module("qwen3_8b_kernels")


@pytest.fixture(scope="session")
def kernels() -> ModuleType:
    """The qwen3_8b_kernels package (built if needed)."""
    pytest.importorskip("torch")
    configured = os.environ.get("QWEN3_8B_KERNELS_PATH")
    if configured:
        return _import_built(Path(configured))
    try:
        return importlib.import_module("qwen3_8b_kernels")
    except ModuleNotFoundError as exc:
        if exc.name not in ("qwen3_8b_kernels", "qwen3_8b_kernels._ops"):
            raise
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("qwen3_8b_kernels is not built and nvcc is not on PATH to build it")
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project

    archs_env = os.environ.get("KERNEL_SKILLS_TEST_ARCHS")
    archs = archs_env.split(",") if archs_env else (None if _cuda_available() else ["9.0"])
    root = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    result = build_project(EXAMPLE, archs=archs, build_dir=Path(root) / EXAMPLE.name if root else None)
    return _import_built(result.path)
