"""Test setup for the ltx_video example: where the package comes from, and the markers.

`kernels` is the built ltx_video_kernels package, taken from (first match wins):
  1. LTX_VIDEO_KERNELS_PATH - a directory holding a built ltx_video_kernels (the path
     build_local.py prints, or a kernel-builder build/<variant> directory);
  2. an importable ltx_video_kernels (PYTHONPATH, a Nix dev shell, an installed wheel);
  3. a fresh build with ../../../scripts/build_local.py (ninja-cached; the architectures
     come from KERNEL_SKILLS_TEST_ARCHS, e.g. "9.0", else the visible GPU's, else 9.0).
`reference` is reference.py loaded on its own: those tests need torch only, no build.
Tests marked `gpu` are skipped without CUDA, so `pytest` is safe on any machine.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[1]
PACKAGE_DIR = EXAMPLE / "torch-ext" / "ltx_video_kernels"
SCRIPTS = EXAMPLE.parents[1] / "scripts"

# float64_math.py (the exact-math oracle) is imported by the test modules by name.
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config: pytest.Config) -> None:
    # Registered here as well so the example's tests run when the folder is copied out.
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    config.addinivalue_line("markers", "slow: compiles CUDA")


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


def _import_from(path: Path) -> ModuleType:
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    return importlib.import_module("ltx_video_kernels")


@pytest.fixture(scope="session")
def kernels() -> ModuleType:
    """The built ltx_video_kernels package (CUDA ops + fakes + reference fallback)."""
    pytest.importorskip("torch")
    configured = os.environ.get("LTX_VIDEO_KERNELS_PATH")
    if configured:
        return _import_from(Path(configured))
    try:
        return importlib.import_module("ltx_video_kernels")
    except ModuleNotFoundError as exc:
        if exc.name not in ("ltx_video_kernels", "ltx_video_kernels._ops"):
            raise
    if shutil.which("nvcc") is None:
        pytest.skip("ltx_video_kernels is not built and nvcc is not on PATH to build it")
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project  # noqa: PLC0415 - needs SCRIPTS on sys.path

    archs_env = os.environ.get("KERNEL_SKILLS_TEST_ARCHS")
    archs = archs_env.split(",") if archs_env else (None if _cuda_available() else ["9.0"])
    root = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    result = build_project(EXAMPLE, archs=archs, build_dir=Path(root) / EXAMPLE.name if root else None)
    return _import_from(result.path)


@pytest.fixture(scope="session")
def reference() -> ModuleType:
    """reference.py on its own (it imports nothing from the package)."""
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("ltx_video_reference", PACKAGE_DIR / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
