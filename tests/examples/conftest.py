"""Shared fixtures for the example kernel projects shipped in the skill.

Building a project compiles CUDA (minutes on two cores), so each project is built
at most once per test session, into one build directory shared by every test that
needs it; build_local's ninja cache makes a rebuild with unchanged sources cheap.
Under pytest-xdist the workers share that directory too: the first to need a project
builds it under a file lock, the others wait and find it up to date.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "cuda-kernels"
EXAMPLES = SKILL / "examples"
SCRIPTS = SKILL / "scripts"

# CI compiles for the two architectures the examples declare first; the GPU box
# overrides this with KERNEL_SKILLS_TEST_ARCHS=9.0 to build only what it runs.
TEST_ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")


@contextlib.contextmanager
def build_lock(build_dir: Path) -> Iterator[None]:
    """Hold `<build_dir>.lock` while building: xdist workers build one project at a time."""
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":  # no fcntl; the examples need nvcc and Linux builds anyway
        yield
        return
    import fcntl  # noqa: PLC0415 - POSIX only

    with open(build_dir.parent / f"{build_dir.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_and_import(project: Path, build_root: Path) -> ModuleType:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot build the example's CUDA extension")
    pytest.importorskip("torch")
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project  # noqa: PLC0415 - needs SCRIPTS on sys.path

    with build_lock(build_root / project.name):
        result = build_project(project, archs=TEST_ARCHS, build_dir=build_root / project.name)
    if str(result.path) not in sys.path:
        sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


@pytest.fixture(scope="session")
def example_build_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # KERNEL_SKILLS_BUILD_ROOT lets a developer (or the GPU script) reuse builds across runs.
    configured = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    if configured:
        return Path(configured)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # beside the workers' own temp folders, shared by all
        return tmp_path_factory.getbasetemp().parent / "example-builds"
    return tmp_path_factory.mktemp("example-builds")


@pytest.fixture(scope="session")
def qwen3_kernels(example_build_root: Path) -> ModuleType:
    """The built and imported qwen3_8b_kernels package (CPU tensors use its PyTorch fallback)."""
    return _build_and_import(EXAMPLES / "qwen3_8b", example_build_root)


@pytest.fixture(scope="session")
def ltx_kernels(example_build_root: Path) -> ModuleType:
    """The built and imported ltx_video_kernels package (CPU tensors use its PyTorch fallback)."""
    return _build_and_import(EXAMPLES / "ltx_video", example_build_root)


@pytest.fixture(scope="session")
def ltx_build(example_build_root: Path) -> Path:
    """The ltx_video example built by `build_local.py --check` (its op-schema check), in the
    folder ltx_kernels imports from."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot build the example's CUDA extension")
    pytest.importorskip("torch")
    build_dir = example_build_root / "ltx_video"
    cmd = [sys.executable, str(SCRIPTS / "build_local.py"), str(EXAMPLES / "ltx_video"), "--build-dir", str(build_dir),
           "--check"]
    for arch in TEST_ARCHS:
        cmd += ["--arch", arch]
    with build_lock(build_dir):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, f"build_local.py failed:\n{proc.stderr[-6000:]}"
    assert proc.stdout.strip().splitlines()[-1] == str(build_dir)
    assert "check passed" in proc.stderr
    for op in ("rms_norm", "rms_norm_modulate", "gelu_tanh", "rope_interleaved", "rms_norm_rope_qk"):
        assert op in proc.stderr, f"{op} missing from the --check report"
    return build_dir
