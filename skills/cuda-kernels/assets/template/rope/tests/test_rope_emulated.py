"""The __NAME__ RoPE kernels themselves, on the CPU: kernel_src/*.cu compiled with g++
against the skill's CUDA emulator (tests/emulation.py), against float64: rotate-half and
interleaved, every dtype, contiguous and transposed (strided) q layouts, one table or one
per batch, both warp schedules. No GPU needed; see emulation.py for what this does not prove.
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import pytest
import torch
from emulation import (
    DTYPE_CODE,
    GUARD,
    PROJECT,
    args_struct,
    build,
    check_guards,
    launch,
    poisoned_out,
    ptr,
)
from kernel_checks import DTYPES, check_close, random_tensor

DIMS = [2, 6, 64, 128, 130]
BATCH, HEADS, SEQ = 2, 3, 5

Args = args_struct([
    ("dtype", "i32"), ("interleaved", "bool"), ("out", "ptr"), ("x", "ptr"), ("batch", "i64"), ("heads", "i64"),
    ("seq", "i64"), ("dim", "i64"), ("x_sb", "i64"), ("x_sh", "i64"), ("x_ss", "i64"), ("cos", "ptr"),
    ("sin", "ptr"), ("cs_sb", "i64"), ("cs_ss", "i64"),
])

_spec = importlib.util.spec_from_file_location("rope_reference", next(PROJECT.glob("torch-ext/*/reference.py")))
assert _spec and _spec.loader
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return build(Path(tmp_path_factory.mktemp("emulated")), "ks::RopeArgs", "ks::rope")


def nan_framed(t: torch.Tensor) -> torch.Tensor:
    """t's values in a NaN-filled buffer with GUARD elements each side (same strides)."""
    buf = torch.full((t.numel() + 2 * GUARD,), float("nan"), dtype=t.dtype)
    out = torch.as_strided(buf, t.shape, t.stride(), GUARD)
    out.copy_(t)
    return out


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("interleaved", [False, True], ids=["rotate_half", "interleaved"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_rope_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, interleaved: bool, schedule: str) -> None:
    for dim in DIMS:
        for transposed in (False, True):
            # transposed: x stored [batch, seq, heads, dim], viewed as [batch, heads, seq, dim]
            base = random_tensor((BATCH, SEQ, HEADS, dim) if transposed else (BATCH, HEADS, SEQ, dim), dtype, "cpu",
                                 seed=dim)
            x = nan_framed(base).transpose(1, 2) if transposed else nan_framed(base)
            for per_batch in (False, True):
                cs_batch = BATCH if per_batch else 1
                angles = random_tensor((cs_batch, SEQ, dim), torch.float64, "cpu", seed=dim + 1, scale=3.0)
                cos, sin = nan_framed(angles.cos().to(dtype)), nan_framed(angles.sin().to(dtype))
                buf, out = poisoned_out((BATCH, HEADS, SEQ, dim), dtype)
                args = Args(dtype=DTYPE_CODE[dtype], interleaved=interleaved, out=ptr(out), x=ptr(x), batch=BATCH,
                            heads=HEADS, seq=SEQ, dim=dim, x_sb=x.stride(0), x_sh=x.stride(1), x_ss=x.stride(2),
                            cos=ptr(cos), sin=ptr(sin), cs_sb=cos.stride(0) if per_batch else 0, cs_ss=cos.stride(1))
                launch(lib, args, schedule)
                check_guards(buf)
                ref = reference.rope(x.double(), cos.double(), sin.double(), interleaved)
                check_close(out, ref, dtype, f"rope dim={dim} transposed={transposed} per_batch={per_batch}")
