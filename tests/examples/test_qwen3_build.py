"""The qwen3_8b example builds the kernel-builder way and its CPU paths work (CI, no GPU).

Builds for sm_80 and sm_90 with build_local (once per session, shared with the
integration tests through the qwen3_kernels fixture), checks every declared op is
registered with its schema, runs the example's CPU tests (reference, fallback, fake
kernels, opcheck, torch.compile tracing), and runs both benchmark scripts' CPU paths.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

SKILL = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels"
SCRIPTS = SKILL / "scripts"
EXAMPLE = SKILL / "examples" / "qwen3_8b"
# The same architectures the qwen3_kernels fixture (tests/examples/conftest.py) builds for.
TEST_ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")


def _build_dir(qwen3_kernels: ModuleType) -> Path:
    # The fixture put the build directory (the parent of the package) on sys.path.
    return Path(qwen3_kernels.__file__).resolve().parents[1]


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, **env}, check=False)


def test_build_local_check_registers_every_op(qwen3_kernels: ModuleType) -> None:
    proc = _run([sys.executable, str(SCRIPTS / "build_local.py"), str(EXAMPLE), "--arch", ",".join(TEST_ARCHS),
                 "--build-dir", str(_build_dir(qwen3_kernels)), "--check"])
    assert proc.returncode == 0, proc.stderr
    for op in ("rms_norm", "fused_add_rms_norm", "swiglu", "rope_", "rope", "rms_norm_tuned", "swiglu_tuned",
               "rope_tuned_"):
        assert op in proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(_build_dir(qwen3_kernels))


def test_public_api_runs_on_cpu(qwen3_kernels: ModuleType) -> None:
    import torch

    x = torch.randn(3, 4096, dtype=torch.bfloat16)
    w = torch.randn(4096, dtype=torch.bfloat16)
    torch.testing.assert_close(qwen3_kernels.rms_norm(x, w, 1e-6), qwen3_kernels.reference.rms_norm(x, w, 1e-6))
    out, s = qwen3_kernels.fused_add_rms_norm(x, x, w, 1e-6)
    assert out.shape == s.shape == x.shape


def test_example_cpu_tests_pass(qwen3_kernels: ModuleType) -> None:
    proc = _run([sys.executable, "-m", "pytest", str(EXAMPLE / "tests"), "-m", "not gpu", "-q", "-p", "no:cacheprovider"],
                QWEN3_8B_KERNELS_PATH=str(_build_dir(qwen3_kernels)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


def test_benchmark_rmsnorm_cpu_path_writes_json(qwen3_kernels: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "rmsnorm.json"
    proc = _run([sys.executable, str(SCRIPTS / "benchmark_rmsnorm.py"), "--device", "cpu", "--package-path",
                 str(_build_dir(qwen3_kernels)), "--out", str(out)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert {r["op"] for r in data["results"]} == {"rms_norm", "qk_norm"}
    for row in data["results"]:
        assert {"kernel", "eager", "F.rms_norm", "compile"} <= set(row["providers"])
        assert all(p["us"] > 0 for p in row["providers"].values())


def test_bench_ops_cpu_path_covers_every_op(qwen3_kernels: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "ops.json"
    bench = EXAMPLE / "benchmarks"
    proc = _run([sys.executable, str(bench / "bench_ops.py"), "--device", "cpu", "--skip-compile", "--package-path",
                 str(_build_dir(qwen3_kernels)), "--out", str(out)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert {r["op"] for r in data["results"]} == {"rms_norm", "qk_norm", "fused_add_rms_norm", "swiglu", "rope"}
    assert not data["errors"]
    md = tmp_path / "RESULTS.md"
    proc = _run([sys.executable, str(bench / "make_results.py"), str(out), "--md", str(md), "--summary"])
    assert proc.returncode == 0, proc.stderr
    assert "## SwiGLU" in md.read_text() and "rope" in proc.stdout


def test_benchmark_rmsnorm_help_needs_no_torch() -> None:
    # Block torch the way a machine without it behaves, then ask for --help.
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['benchmark_rmsnorm.py', '--help']; "
            f"runpy.run_path({str(SCRIPTS / 'benchmark_rmsnorm.py')!r}, run_name='__main__')")
    proc = _run([sys.executable, "-c", code])
    assert proc.returncode == 0, proc.stderr
    assert "--package-path" in proc.stdout and "--device" in proc.stdout
