"""The long_rows example in CI (no GPU): its kernels on the CPU emulator, its kernel-builder
build for sm_80 and sm_90 with every op registered, and its CPU paths (reference fallback,
fake kernels under torch.compile tracing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SKILL = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels"
EXAMPLE = SKILL / "examples" / "long_rows"

_CPU_PATHS = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import long_rows_kernels as K
x = torch.randn(3, 5, 1000) * 3
x[0, 0] = float("-inf")
t = torch.randint(0, 1000, (3, 5))
lse = K.logsumexp(x)
torch.testing.assert_close(lse, torch.logsumexp(x, -1))
loss, lse2 = K.cross_entropy(x, t)
torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(x.view(-1, 1000), t.view(-1), reduction="none").view(3, 5),
                           equal_nan=True)
fake = torch._subclasses.fake_tensor.FakeTensorMode()
with fake:
    xf = torch.empty(4, 7, 151936, dtype=torch.bfloat16, device="cuda")
    out = K.ops.logsumexp(xf, 0)
    loss_f, lse_f = K.ops.cross_entropy(xf, torch.empty(4, 7, dtype=torch.long, device="cuda"), -100, 0)
assert out.shape == (4, 7) and out.dtype == torch.float32 and loss_f.shape == (4, 7)
print("cpu paths ok")
"""


def _run(cmd: list[str], timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "CUDA_EMU_QUIET": "1"})


def test_kernels_pass_on_the_cpu_emulator(tmp_path: Path) -> None:
    proc = _run([sys.executable, "-m", "pytest", str(EXAMPLE / "tests" / "test_long_rows_cpu.py"), "-q",
                 "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "bt")])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]


def test_builds_for_sm80_and_sm90_and_runs_its_cpu_paths(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if subprocess.run(["which", "nvcc"], capture_output=True, check=False).returncode != 0:
        pytest.skip("nvcc is not on PATH")
    build = tmp_path / "build"
    proc = _run([sys.executable, str(SKILL / "scripts" / "build_local.py"), str(EXAMPLE), "--arch", "8.0",
                 "--arch", "9.0", "--check", "--build-dir", str(build)])
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "logsumexp, cross_entropy registered" in proc.stderr
    proc = _run([sys.executable, "-c", _CPU_PATHS, str(build)], timeout=300)
    assert proc.returncode == 0 and "cpu paths ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]
