"""The __NAME__ LayerNorm/AdaLN kernels themselves, on the CPU: kernel_src/*.cu compiled
with g++ against the skill's CUDA emulator (tests/emulation.py), against float64, for every
dtype, row layout and both warp schedules. LayerNorm reduces twice through one shared
buffer (mean, then variance), so a missing leading barrier in row_sum fails here. No GPU
needed; see emulation.py for what this does not prove.
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
BATCH, SEQ = 3, 5
EPS = 1e-5

Args = args_struct([
    ("dtype", "i32"), ("out", "ptr"), ("out_stride", "i64"), ("x", "ptr"), ("x_stride", "i64"),
    ("weight", "ptr"), ("bias", "ptr"), ("scale", "ptr"), ("shift", "ptr"), ("mod_stride", "i64"),
    ("rows_per_mod", "i64"), ("rows", "i64"), ("hidden", "i64"), ("eps", "f32"),
])


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return build(Path(tmp_path_factory.mktemp("emulated")), "ks::LayerNormArgs", "ks::layer_norm")


def reference_f64(x, weight, bias, scale, shift) -> torch.Tensor:
    xd = x.double()
    mean = xd.mean(-1, keepdim=True)
    y = (xd - mean) * torch.rsqrt((xd - mean).square().mean(-1, keepdim=True) + EPS)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    if scale is not None:  # [BATCH, 1, hidden]: one modulation row per batch
        y = y * (1 + scale.double())
    if shift is not None:
        y = y + shift.double()
    return y


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_layer_norm_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, layout: str, schedule: str) -> None:
    for width in WIDTHS:
        x = guarded_input((BATCH, SEQ), width, dtype, layout, seed=width, scale=2.0)
        weight = guarded_input((), width, dtype, "contiguous", seed=width + 1, scale=0.5)
        bias = guarded_input((), width, dtype, "misaligned", seed=width + 2, scale=0.5)
        scale = guarded_input((BATCH, 1), width, dtype, "contiguous", seed=width + 3, scale=0.3)
        shift = guarded_input((BATCH, 1), width, dtype, "contiguous", seed=width + 4, scale=0.3)
        for operands in ((weight, bias, scale, shift), (None, None, None, None), (weight, None, None, shift)):
            w, b, sc, sh = operands
            buf, out = poisoned_out((BATCH, SEQ, width), dtype)
            args = Args(dtype=DTYPE_CODE[dtype], out=ptr(out), out_stride=width, x=ptr(x), x_stride=x.stride(-2),
                        weight=ptr(w), bias=ptr(b), scale=ptr(sc), shift=ptr(sh), mod_stride=width,
                        rows_per_mod=SEQ, rows=BATCH * SEQ, hidden=width, eps=EPS)
            launch(lib, args, schedule)
            check_guards(buf)
            check_close(out, reference_f64(x, w, b, sc, sh), dtype,
                        f"layer_norm {width} {layout} operands={[o is not None for o in operands]}")
