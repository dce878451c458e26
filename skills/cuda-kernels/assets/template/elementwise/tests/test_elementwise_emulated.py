"""The __NAME__ elementwise kernels themselves, on the CPU: kernel_src/*.cu compiled with
g++ against the skill's CUDA emulator (tests/emulation.py), against float64, for every
formula, dtype, row layout and both warp schedules. No GPU needed; see emulation.py for
what this does not prove.
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

WIDTHS = [1, 7, 33, 1000, 4100]
ROWS = 7
ACTIVATIONS = {"gelu_tanh": (0, lambda v: F.gelu(v, approximate="tanh")), "silu": (1, F.silu)}

Args = args_struct([
    ("dtype", "i32"), ("act", "i32"), ("out", "ptr"), ("x", "ptr"), ("x_stride", "i64"), ("rows", "i64"),
    ("n", "i64"),
])


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return build(Path(tmp_path_factory.mktemp("emulated")), "ks::ElementwiseArgs", "ks::elementwise")


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_elementwise_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, layout: str, schedule: str) -> None:
    for n in WIDTHS:
        x = guarded_input((ROWS,), n, dtype, layout, seed=n, scale=3.0)
        for name, (code, f) in ACTIVATIONS.items():
            buf, out = poisoned_out((ROWS, n), dtype)
            args = Args(dtype=DTYPE_CODE[dtype], act=code, out=ptr(out), x=ptr(x), x_stride=x.stride(0), rows=ROWS,
                        n=n)
            launch(lib, args, schedule)
            check_guards(buf)
            check_close(out, f(x.double()), dtype, f"elementwise {name} n={n} {layout}")
