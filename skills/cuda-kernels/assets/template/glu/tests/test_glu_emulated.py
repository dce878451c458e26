"""The __NAME__ gated-activation kernels themselves, on the CPU: kernel_src/*.cu compiled
with g++ against the skill's CUDA emulator (tests/emulation.py), against float64, for every
activation, dtype, layout of the fused gate/up input and both warp schedules. No GPU
needed; see emulation.py for what this does not prove.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
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

WIDTHS = [1, 7, 33, 1000, 4100]  # d: the output width (the input row is 2 * d)
LEAD = (3, 5)
ACTIVATIONS = {"silu": (0, F.silu), "gelu": (1, F.gelu), "gelu_tanh": (2, lambda v: F.gelu(v, approximate="tanh"))}

Args = args_struct([
    ("dtype", "i32"), ("act", "i32"), ("out", "ptr"), ("gate", "ptr"), ("up", "ptr"), ("x_stride", "i64"),
    ("rows", "i64"), ("d", "i64"),
])


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return build(Path(tmp_path_factory.mktemp("emulated")), "ks::GluArgs", "ks::glu")


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_glu_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, layout: str, schedule: str) -> None:
    for d in WIDTHS:
        x = guarded_input(LEAD, 2 * d, dtype, layout, seed=d, scale=2.0)
        for name, (code, act) in ACTIVATIONS.items():
            for gate_first in (True, False):
                first, second = x[..., :d], x[..., d:]
                gate, up = (first, second) if gate_first else (second, first)
                buf, out = poisoned_out((*LEAD, d), dtype)
                args = Args(dtype=DTYPE_CODE[dtype], act=code, out=ptr(out), gate=ptr(gate), up=ptr(up),
                            x_stride=x.stride(-2), rows=x.numel() // (2 * d), d=d)
                launch(lib, args, schedule)
                check_guards(buf)
                check_close(out, act(gate.double()) * up.double(), dtype,
                            f"glu {name} d={d} {layout} gate_first={gate_first}")
