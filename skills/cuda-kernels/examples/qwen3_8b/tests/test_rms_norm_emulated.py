"""The RMSNorm kernels themselves (kernel_src/rms_norm*.cu), run on the CPU emulator against float64.

kernel_src/rms_norm.cu + fused_add_rms_norm.cu + tests/emu_entry.cpp are built with the
skill's scripts/emulate_kernel.py into a shared library (assets/emulator/cuda_emu.h stands in
for the GPU; tests/emu/ for c10's error macros) and called through ctypes on CPU tensors.
The shapes reach every kernel the launcher picks: the packed kernel (rows of <= 32 packs), the
row kernel at 1, 2 and 4 packs per thread, and each instance of the split kernel (widths not a
multiple of the pack, rows at another 16-byte phase than the output, rows too wide for
registers). Outputs carry guard elements on both sides, which must stay untouched.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1]
SCRIPTS = EXAMPLE.parents[1] / "scripts"
KERNEL_SRC = EXAMPLE / "kernel_src"

pytestmark = pytest.mark.slow

CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
# Normwise relative error against float64: one rounding of the output plus fp32 arithmetic.
TOLERANCE = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
GUARD = 8
SENTINEL = 7.0

# rows, hidden, offset of x and the residual in rows `hidden + 8` apart (0: every row at its
# output row's 16-byte phase; 1: at another phase), and what the launcher picks (bf16/fp16).
CASES = [
    (37, 128, 0),  # packed kernel: 16 lanes per row
    (3, 4096, 0),  # row kernel, 1 pack per thread (the full-row instance)
    (600, 4096, 0),  # row kernel, 2 packs per thread
    (1100, 4096, 0),  # row kernel, 4 packs per thread
    (1100, 4100, 0),  # split kernel, the same phase: 4 packs per thread
    (600, 4100, 0),  # split, 2 packs
    (3, 4100, 0),  # split, 1 pack
    (3, 4100, 1),  # split, another phase: 2 packs, two loads and a shift each
    (2, 40001, 0),  # split, rows too wide for registers: re-read
    (2, 40001, 1),  # the same at another phase
    (5, 7, 3),  # fewer elements than a pack: head and tail only
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    spec = importlib.util.spec_from_file_location("emulate_kernel", SCRIPTS / "emulate_kernel.py")
    assert spec and spec.loader
    emulate_kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emulate_kernel)
    if emulate_kernel.compiler() is None or emulate_kernel.cuda_include() is None:
        pytest.skip("needs g++ and the CUDA headers")
    out = tmp_path_factory.mktemp("emu") / "libqwen3_rms_norm_emu.so"
    sources = [KERNEL_SRC / "rms_norm.cu", KERNEL_SRC / "fused_add_rms_norm.cu", EXAMPLE / "tests" / "emu_entry.cpp"]
    proc = emulate_kernel.build(sources, out, shared=True, includes=[EXAMPLE / "tests" / "emu"])
    assert proc.returncode == 0, proc.stderr[-4000:]
    os.environ["CUDA_EMU_QUIET"] = "1"
    lib = ctypes.CDLL(str(out))
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.q3_rms_norm.restype = ctypes.c_int
    lib.q3_rms_norm.argtypes = [ctypes.c_int, p, i64, p, i64, p, i64, p, i64, p, i64, i64, ctypes.c_float, ctypes.c_int]
    lib.q3_failure.restype = ctypes.c_char_p
    return lib


def guarded_out(rows: int, hidden: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer with SENTINEL guards, the [rows, hidden] view of its middle, poisoned with NaN)."""
    buf = torch.full((rows * hidden + 2 * GUARD,), SENTINEL, dtype=dtype)
    buf[GUARD : GUARD + rows * hidden] = float("nan")
    return buf, buf[GUARD : GUARD + rows * hidden].view(rows, hidden)


def ref_rms_norm(x: torch.Tensor, w: torch.Tensor | None, eps: float) -> torch.Tensor:
    xd = x.double()
    y = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps)
    return y * w.double() if w is not None else y


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", list(CODE), ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize(("rows", "hidden", "offset"), CASES)
def test_rms_norm_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, rows: int, hidden: int, offset: int) -> None:
    g = torch.Generator().manual_seed(rows * 7 + hidden + offset)
    x = (torch.randn(rows, hidden + 8, generator=g) * 3).to(dtype)[:, offset : offset + hidden]
    r = (torch.randn(rows, hidden + 8, generator=g) * 2).to(dtype)[:, offset : offset + hidden]
    w = torch.randn(hidden, generator=g).to(dtype)
    for fused in (False, True):
        for weight in (w, None):
            schedule = int(fused)  # both warp orders over the cases: a missing barrier shows in one
            out_buf, out = guarded_out(rows, hidden, dtype)
            sum_buf, s = guarded_out(rows, hidden, dtype)
            rc = lib.q3_rms_norm(CODE[dtype], out.data_ptr(), hidden, s.data_ptr() if fused else None, hidden,
                                 x.data_ptr(), x.stride(0), r.data_ptr() if fused else None, r.stride(0),
                                 weight.data_ptr() if weight is not None else None, rows, hidden, 1e-6, schedule)
            what = f"{'fused' if fused else 'plain'}, {'weight' if weight is not None else 'no weight'}"
            assert rc == 0, f"{what}: {lib.q3_failure().decode()}"
            for buf in (out_buf, sum_buf):
                assert (buf[:GUARD] == SENTINEL).all() and (buf[-GUARD:] == SENTINEL).all(), f"{what}: wrote past the rows"
            assert torch.isfinite(out).all(), f"{what}: an output element was never written"
            src = (x.float() + r.float()).to(dtype) if fused else x
            if fused:
                assert torch.equal(s, src), f"{what}: the stored residual is not round(x + r)"
            err = rel_err(out, ref_rms_norm(src, weight, 1e-6))
            assert err <= TOLERANCE[dtype], f"{what}: relative error {err:.3g}"
