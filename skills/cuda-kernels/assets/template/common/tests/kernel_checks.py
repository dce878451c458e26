"""What every op's tests share: the width x dtype x layout sweep, inputs, poisoned outputs,
the float64 comparison, and the compute-sanitizer run.

The sweep is the contract of the kernels: every width (1, odd, not a multiple of the
16-byte pack, beyond one block's register cache), every dtype, and three row layouts:
contiguous, misaligned (`base[..., 1:]`: the data pointer is not 16-byte aligned and the
row phase changes from row to row) and strided (row stride larger than the width).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import torch

WIDTHS = [1, 33, 1000, 2048, 4096, 4100, 5120, 8192, 16384]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAYOUTS = ["contiguous", "misaligned", "strided"]
# Normwise relative error bounds against float64 for one rounding of the output plus
# fp32 arithmetic: fp16/bf16 round to 2^-11 / 2^-8 relative.
TOLERANCE = {torch.float32: 2e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-12}


def random_tensor(shape: Sequence[int], dtype: torch.dtype, device: str, seed: int, scale: float = 1.0,
                  mean: float = 0.25) -> torch.Tensor:
    """Fresh random values (never zeros); a non-zero mean keeps rows away from symmetry."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) * scale + mean * scale
    return x.to(device=device, dtype=dtype)


def make_input(lead: Sequence[int], width: int, dtype: torch.dtype, layout: str, seed: int,
               device: str = "cuda", scale: float = 1.0) -> torch.Tensor:
    """A [*lead, width] tensor in `layout`: contiguous, misaligned or strided rows."""
    if layout == "contiguous":
        return random_tensor((*lead, width), dtype, device, seed, scale)
    if layout == "misaligned":
        x = random_tensor((*lead, width + 1), dtype, device, seed, scale)[..., 1:]
        assert x.data_ptr() % 16 != 0
        return x
    if layout == "strided":
        return random_tensor((*lead, width + 24), dtype, device, seed, scale)[..., :width]
    raise ValueError(f"unknown layout {layout!r}")


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """max|out - ref| / max|ref| (normwise), in float64."""
    if ref.numel() == 0:
        return 0.0
    return ((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def poisoned(call: Callable[[], object], nbytes: int, device: str = "cuda") -> object:
    """Run `call` right after freeing a NaN-filled block of `nbytes`, so the caching
    allocator hands the op's outputs memory full of NaN: an element the kernel does not
    write stays NaN and fails the comparison."""
    poison = torch.full((max(nbytes, 1) // 4 + 1,), float("nan"), dtype=torch.float32, device=device)
    del poison
    return call()


def check_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "") -> None:
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    assert out.dtype == dtype, f"{what}: dtype {out.dtype} != {dtype}"
    assert out.is_contiguous(), f"{what}: output is not contiguous"
    assert torch.isfinite(out).all(), f"{what}: non-finite values in the output (an element never written?)"
    err = rel_err(out, ref)
    assert err <= TOLERANCE[dtype], f"{what}: relative error {err:.3g} > {TOLERANCE[dtype]:.3g}"


def run_under_sanitizer(test_file: str, function: str, tool: str) -> None:
    """Run tests/<test_file>'s `function` (a small sweep) under compute-sanitizer `tool`
    (memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory races).
    Skips, saying so, where compute-sanitizer is not installed."""
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        candidate = Path(cuda_home) / "bin" / "compute-sanitizer"
        exe = str(candidate) if candidate.is_file() else None
    if exe is None:
        pytest.skip("compute-sanitizer is not installed (it ships with the CUDA toolkit); memcheck/racecheck not run")
    tests_dir = Path(__file__).resolve().parent
    code = f"import sys; sys.path.insert(0, {str(tests_dir)!r}); import {test_file} as t; t.{function}()"
    proc = subprocess.run(
        [exe, "--tool", tool, "--error-exitcode", "3", "--target-processes", "all", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=1800, check=False,
    )
    report = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, f"compute-sanitizer --tool {tool} failed (exit {proc.returncode}):\n{report}"
    assert "0 errors" in proc.stdout + proc.stderr, report


def nbytes_of(shape: Sequence[int], dtype: torch.dtype) -> int:
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()
