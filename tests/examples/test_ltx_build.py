"""The ltx_video example builds the kernel-builder way and passes its CPU-side tests.

CI (no GPU): `build_local.py --check` compiles the project for sm_80 and sm_90 (or
$KERNEL_SKILLS_TEST_ARCHS), imports it and verifies every declared op schema; then the
example's own tests run against that build - the reference is diffusers bit for bit, the
fake kernels give the CUDA ops' output metadata, CPU tensors take the PyTorch path. Its
`gpu` tests are skipped there and run on the GPU machine (benchmarks/run_gpu.sh).
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
EXAMPLE = REPO / "skills" / "cuda-kernels" / "examples" / "ltx_video"
# The same architectures as tests/examples/conftest.py's fixtures, so they share the build.
TEST_ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ltx_build(example_build_root: Path) -> Path:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot build the example's CUDA extension")
    pytest.importorskip("torch")
    build_dir = example_build_root / EXAMPLE.name  # shared with the ltx_kernels fixture
    cmd = [sys.executable, str(SCRIPTS / "build_local.py"), str(EXAMPLE), "--build-dir", str(build_dir), "--check"]
    for arch in TEST_ARCHS:
        cmd += ["--arch", arch]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, f"build_local.py failed:\n{proc.stderr[-6000:]}"
    assert proc.stdout.strip().splitlines()[-1] == str(build_dir)
    assert "check passed" in proc.stderr
    for op in ("rms_norm", "rms_norm_modulate", "gelu_tanh", "rope_interleaved", "rms_norm_rope_qk"):
        assert op in proc.stderr, f"{op} missing from the --check report"
    return build_dir


def test_every_kernel_source_is_compiled_for_each_architecture(ltx_build: Path) -> None:
    ninja = (ltx_build / ".build" / "build.ninja").read_text()  # build_local.py's ninja file
    blocks = [b for b in ninja.split("\nbuild ") if ": nvcc " in b.splitlines()[0]]
    compiled = {Path(b.splitlines()[0].split(": nvcc ")[1]).name for b in blocks}
    assert compiled == {"rms_norm.cu", "rope.cu", "gelu.cu"}
    for block in blocks:
        for arch in TEST_ARCHS:
            code = arch.replace(".", "")
            assert f"code=sm_{code}" in block, f"{block.splitlines()[0]} is not compiled for sm_{code}"
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:  # where the toolkit has it, also read the architectures back from the library
        lib = next(ltx_build.glob("ltx_video_kernels/_ltx_video_kernels_*.so"))
        listing = subprocess.run([cuobjdump, "--list-elf", str(lib)], capture_output=True, text=True).stdout
        for arch in TEST_ARCHS:
            assert f"sm_{arch.replace('.', '')}" in listing


def test_example_cpu_tests_pass_against_the_build(ltx_build: Path) -> None:
    env = dict(os.environ, LTX_VIDEO_KERNELS_PATH=str(ltx_build))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not gpu", str(EXAMPLE / "tests")],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
