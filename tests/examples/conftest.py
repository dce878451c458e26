"""Shared fixtures for the example kernel projects shipped in the skill.

Building a project compiles CUDA (minutes on two cores), so each project is built
at most once per test session, into one build directory shared by every test that
needs it; build_local's ninja cache makes a rebuild with unchanged sources cheap.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "cuda-kernels"
EXAMPLES = SKILL / "examples"
SCRIPTS = SKILL / "scripts"

# CI compiles for the two architectures the examples declare first; the GPU box
# overrides this with KERNEL_SKILLS_TEST_ARCHS=9.0 to build only what it runs.
TEST_ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")


def _build_and_import(project: Path, build_root: Path) -> ModuleType:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot build the example's CUDA extension")
    pytest.importorskip("torch")
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project  # noqa: PLC0415 - needs SCRIPTS on sys.path

    result = build_project(project, archs=TEST_ARCHS, build_dir=build_root / project.name)
    if str(result.path) not in sys.path:
        sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


@pytest.fixture(scope="session")
def example_build_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # KERNEL_SKILLS_BUILD_ROOT lets a developer (or the GPU script) reuse builds across runs.
    configured = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    return Path(configured) if configured else tmp_path_factory.mktemp("example-builds")


@pytest.fixture(scope="session")
def qwen3_kernels(example_build_root: Path) -> ModuleType:
    """The built and imported qwen3_8b_kernels package (CPU tensors use its PyTorch fallback)."""
    return _build_and_import(EXAMPLES / "qwen3_8b", example_build_root)


@pytest.fixture(scope="session")
def ltx_kernels(example_build_root: Path) -> ModuleType:
    """The built and imported ltx_video_kernels package (CPU tensors use its PyTorch fallback)."""
    return _build_and_import(EXAMPLES / "ltx_video", example_build_root)
