"""The __NAME__ RMSNorm kernels themselves, on the CPU: kernel_src/*.cu compiled with g++
against the skill's CUDA emulator (tests/emulation.py), against float64, for every dtype,
row layout (contiguous, misaligned, strided) and both warp schedules. Small widths that
still take every path: one element, the scalar head and tail only, several packs per
lane, several warps per row. No GPU needed; see emulation.py for what this does not prove.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
import torch
from emulation import (
    DTYPE_CODE,
    args_struct,
    build,
    check_guards,
    guarded_input,
    launch,
    poisoned_out,
    ptr,
)
from kernel_checks import DTYPES, LAYOUTS, check_close

WIDTHS = [1, 7, 33, 1000, 4100]
LEAD = (3, 5)
EPS = 1e-6

Args = args_struct([
    ("dtype", "i32"), ("out", "ptr"), ("out_stride", "i64"), ("x", "ptr"), ("x_stride", "i64"),
    ("residual", "ptr"), ("residual_stride", "i64"), ("sum_out", "ptr"), ("sum_stride", "i64"),
    ("weight", "ptr"), ("rows", "i64"), ("hidden", "i64"), ("eps", "f32"),
])


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return build(Path(tmp_path_factory.mktemp("emulated")), "ks::RmsNormArgs", "ks::rms_norm")


def reference_f64(x: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    xd = x.double()
    y = xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + EPS)
    return y * weight.double() if weight is not None else y


def run(lib: ctypes.CDLL, x: torch.Tensor, weight: torch.Tensor | None, residual: torch.Tensor | None,
        schedule: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    width = x.shape[-1]
    rows = x.numel() // width if width else 0
    buf, out = poisoned_out(tuple(x.shape), x.dtype)
    sbuf, s = poisoned_out(tuple(x.shape), x.dtype) if residual is not None else (None, None)
    args = Args(dtype=DTYPE_CODE[x.dtype], out=ptr(out), out_stride=width, x=ptr(x), x_stride=x.stride(-2),
                residual=ptr(residual), residual_stride=residual.stride(-2) if residual is not None else 0,
                sum_out=ptr(s), sum_stride=width, weight=ptr(weight), rows=rows, hidden=width, eps=EPS)
    launch(lib, args, schedule)
    check_guards(buf)
    if sbuf is not None:
        check_guards(sbuf)
    return out, s


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_rms_norm_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, layout: str, schedule: str) -> None:
    for width in WIDTHS:
        x = guarded_input(LEAD, width, dtype, layout, seed=width)
        weight = guarded_input((), width, dtype, "contiguous", seed=width + 1, scale=0.5)
        for w in (weight, None):
            out, _ = run(lib, x, w, None, schedule)
            check_close(out, reference_f64(x, w), dtype, f"rms_norm {width} {layout} weight={w is not None}")


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_fused_add_rms_norm_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, schedule: str) -> None:
    for width, layout in ((33, "misaligned"), (1000, "strided"), (4100, "contiguous")):
        x = guarded_input(LEAD, width, dtype, layout, seed=width)
        residual = guarded_input(LEAD, width, dtype, "misaligned", seed=width + 2)
        weight = guarded_input((), width, dtype, "contiguous", seed=width + 1, scale=0.5)
        out, s = run(lib, x, weight, residual, schedule)
        compute = torch.promote_types(dtype, torch.float32)
        ref_s = (x.to(compute) + residual.to(compute)).to(dtype)
        check_close(s, ref_s.double(), dtype, f"sum {width} {layout}")
        check_close(out, reference_f64(ref_s, weight), dtype, f"fused {width} {layout}")
