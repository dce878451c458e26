"""Helpers for tests/kernel_project (new_kernel_project.py and build_local.py).

Compiling a generated project takes minutes on two cores, so each (op, architectures)
build happens at most once per session in one shared build directory; a second
build_local run over unchanged sources is a ninja no-op. Set KERNEL_SKILLS_BUILD_ROOT to
keep the scaffolded projects and their builds across sessions (the scaffold is rewritten
only where its text changed, so ninja keeps its cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "cuda-kernels" / "scripts"
BUILD_LOCAL = SCRIPTS / "build_local.py"
NEW_PROJECT = SCRIPTS / "new_kernel_project.py"

if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import build_local  # noqa: E402
import new_kernel_project  # noqa: E402

# CI compiles the generated projects for these; the GPU test builds for the visible GPU.
CI_ARCHS = ("8.0", "9.0")


def run_script(script: Path, *args: str | Path, env: dict[str, str] | None = None,
               cwd: Path | None = None, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout,
    )


def sync_scaffold(name: str, op: str, dest: Path) -> Path:
    """Write the scaffold of `op` into dest/name, touching only files whose text changed."""
    files = new_kernel_project.render(op, name)  # cuda-capabilities unset, as users get it
    project = dest / name
    for rel, text in files.items():
        build_local.write_if_changed(project / rel, text)
    return project


def needs_toolchain() -> None:
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no CUDA toolkit (nvcc) to compile generated projects with")
    torch = pytest.importorskip("torch")
    if torch.version.cuda is None:
        pytest.skip("torch is a CPU-only build")
