"""The kernels themselves (kernel_src/*.cu), run on the CPU emulator against float64.

kernel_src/*.cu + tests/emu_entry.cpp are built with the skill's scripts/emulate_kernel.py
into a shared library (assets/emulator/cuda_emu.h stands in for the GPU; tests/emu/ for c10's
error macros; the few PTX asm lines have C++ twins under `#if defined(__CUDA_ARCH__)`) and
called through ctypes on CPU tensors. RMSNorm's shapes reach every kernel its launcher picks:
the packed kernel (rows of <= 32 packs), the row kernel at 1, 2 and 4 packs per thread, and
each instance of the split kernel (widths not a multiple of the pack, rows at another 16-byte
phase than the output, rows too wide for registers); SwiGLU, RoPE and q/k norm + RoPE run
their vector and scalar kernels on contiguous, row-strided and transposed views. Outputs
carry guard elements on both sides, which must stay untouched.
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
    out = tmp_path_factory.mktemp("emu") / "libqwen3_kernels_emu.so"
    sources = sorted(KERNEL_SRC.glob("*.cu")) + [EXAMPLE / "tests" / "emu_entry.cpp"]
    proc = emulate_kernel.build(sources, out, shared=True, includes=[EXAMPLE / "tests" / "emu"])
    assert proc.returncode == 0, proc.stderr[-4000:]
    os.environ["CUDA_EMU_QUIET"] = "1"
    lib = ctypes.CDLL(str(out))
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.q3_rms_norm.restype = ctypes.c_int
    lib.q3_rms_norm.argtypes = [ctypes.c_int, p, i64, p, i64, p, i64, p, i64, p, i64, i64, ctypes.c_float, ctypes.c_int]
    i64p, f32 = ctypes.POINTER(ctypes.c_int64), ctypes.c_float
    lib.q3_swiglu.argtypes = [ctypes.c_int, p, i64, p, i64, p, i64, i64, i64, ctypes.c_int]
    lib.q3_rope.argtypes = [ctypes.c_int, i64, i64, i64, i64, i64, p, i64p, p, i64p, p, p, i64p, ctypes.c_int]
    lib.q3_qk_norm_rope.argtypes = [ctypes.c_int, i64, i64, i64, i64, i64, p, i64p, p, i64p, p, p, p, p, i64p, f32,
                                    ctypes.c_int]
    for fn in (lib.q3_swiglu, lib.q3_rope, lib.q3_qk_norm_rope):
        fn.restype = ctypes.c_int
    lib.q3_failure.restype = ctypes.c_char_p
    return lib


def guarded_out(rows: int, hidden: int, dtype: torch.dtype, shift: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer with SENTINEL guards, the [rows, hidden] view of its middle, poisoned with NaN),
    the view `shift` elements past the guard (another 16-byte phase than an unshifted one)."""
    buf = torch.full((rows * hidden + 2 * GUARD + shift,), SENTINEL, dtype=dtype)
    start = GUARD + shift
    buf[start : start + rows * hidden] = float("nan")
    return buf, buf[start : start + rows * hidden].view(rows, hidden)


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
            # At offset 1 the stored residual also sits at another phase than the output: its
            # packs are stored element by element.
            sum_buf, s = guarded_out(rows, hidden, dtype, shift=offset)
            rc = lib.q3_rms_norm(CODE[dtype], out.data_ptr(), hidden, s.data_ptr() if fused else None, hidden,
                                 x.data_ptr(), x.stride(0), r.data_ptr() if fused else None, r.stride(0),
                                 weight.data_ptr() if weight is not None else None, rows, hidden, 1e-6, schedule)
            what = f"{'fused' if fused else 'plain'}, {'weight' if weight is not None else 'no weight'}"
            assert rc == 0, f"{what}: {lib.q3_failure().decode()}"
            for buf in (out_buf, sum_buf):
                assert (buf[:GUARD] == SENTINEL).all() and (buf[-GUARD:] == SENTINEL).all(), f"{what}: wrote past the rows"
            assert offset == 0 or (sum_buf[GUARD] == SENTINEL).item(), f"{what}: wrote before the stored residual"
            assert torch.isfinite(out).all(), f"{what}: an output element was never written"
            src = (x.float() + r.float()).to(dtype) if fused else x
            if fused:
                assert torch.equal(s, src), f"{what}: the stored residual is not round(x + r)"
            err = rel_err(out, ref_rms_norm(src, weight, 1e-6))
            assert err <= TOLERANCE[dtype], f"{what}: relative error {err:.3g}"


# ------------------------------------------------------------------- SwiGLU, RoPE, q/k norm + RoPE


def strides(t: torch.Tensor) -> ctypes.Array:
    return (ctypes.c_int64 * t.dim())(*t.stride())


def cos_sin_strides(cos: torch.Tensor) -> ctypes.Array:
    return (ctypes.c_int64 * 3)(0 if cos.shape[0] == 1 else cos.stride(0), cos.stride(1), cos.stride(2))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


@pytest.mark.parametrize("dtype", list(CODE), ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize(("rows", "cols", "strided"), [(3, 7, False), (5, 100, False), (17, 1000, False),
                                                      (9, 1000, True), (4, 4100, True)])
def test_swiglu_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, rows: int, cols: int, strided: bool) -> None:
    g = torch.Generator().manual_seed(rows + cols)
    if strided:  # the halves of a fused gate_up projection: rows 2 * cols apart
        gate_up = (torch.randn(rows, 2 * cols, generator=g) * 4).to(dtype)
        gate, up = gate_up[:, :cols], gate_up[:, cols:]
    else:
        gate = (torch.randn(rows, cols, generator=g) * 4).to(dtype)
        up = torch.randn(rows, cols, generator=g).to(dtype)
    out_buf, out = guarded_out(rows, cols, dtype)
    rc = lib.q3_swiglu(CODE[dtype], out.data_ptr(), cols, gate.data_ptr(), gate.stride(0), up.data_ptr(), up.stride(0),
                       rows, cols, 0)
    assert rc == 0, lib.q3_failure().decode()
    assert (out_buf[:GUARD] == SENTINEL).all() and (out_buf[-GUARD:] == SENTINEL).all(), "wrote past the rows"
    ref = torch.nn.functional.silu(gate.double()) * up.double()
    assert rel_err(out, ref) <= TOLERANCE[dtype], f"relative error {rel_err(out, ref):.3g}"


# head_dim 128 takes the vector kernel; 96 (half of 6 packs) and 6 the scalar one.
@pytest.mark.parametrize("dtype", list(CODE), ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize("head_dim", [128, 96, 6])
def test_rope_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, head_dim: int) -> None:
    batch, seq, hq, hk = 2, 5, 4, 2
    g = torch.Generator().manual_seed(head_dim)
    # Qwen3's layout: projections [B, S, H, D] viewed as [B, H, S, D] (transposed, in place).
    q = torch.randn(batch, seq, hq, head_dim, generator=g).to(dtype).transpose(1, 2)
    k = torch.randn(batch, seq, hk, head_dim, generator=g).to(dtype).transpose(1, 2)
    cos = torch.randn(1, seq, head_dim, generator=g).to(dtype)  # a batch of 1 broadcasts
    sin = torch.randn(1, seq, head_dim, generator=g).to(dtype)
    ref = [x.double() * cos.double().unsqueeze(1) + rotate_half(x.double()) * sin.double().unsqueeze(1) for x in (q, k)]
    for schedule in (0, 1):
        qq, kk = q.clone().transpose(1, 2).contiguous().transpose(1, 2), k.clone().transpose(1, 2).contiguous().transpose(1, 2)
        rc = lib.q3_rope(CODE[dtype], batch, seq, hq, hk, head_dim, qq.data_ptr(), strides(qq), kk.data_ptr(),
                         strides(kk), cos.data_ptr(), sin.data_ptr(), cos_sin_strides(cos), schedule)
        assert rc == 0, lib.q3_failure().decode()
        for got, want, name in ((qq, ref[0], "q"), (kk, ref[1], "k")):
            assert rel_err(got, want) <= TOLERANCE[dtype], f"{name}: relative error {rel_err(got, want):.3g}"


@pytest.mark.parametrize("dtype", list(CODE), ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize(("head_dim", "offset"), [(128, 0), (96, 0), (128, 1)])
def test_qk_norm_rope_kernels_match_float64(lib: ctypes.CDLL, dtype: torch.dtype, head_dim: int, offset: int) -> None:
    batch, seq, hq, hk = 2, 3, 4, 2
    g = torch.Generator().manual_seed(head_dim + offset)
    # q and k in [B, S, H, D] (before the transpose); offset 1: one element off the 16-byte grid.
    q = (torch.randn(batch * seq * hq * head_dim + offset, generator=g) * 3).to(dtype)[offset:].view(batch, seq, hq, head_dim)
    k = (torch.randn(batch * seq * hk * head_dim + offset, generator=g) * 3).to(dtype)[offset:].view(batch, seq, hk, head_dim)
    qw, kw = torch.randn(head_dim, generator=g).to(dtype), torch.randn(head_dim, generator=g).to(dtype)
    cos = torch.randn(batch, seq, head_dim, generator=g).to(dtype)
    sin = torch.randn(batch, seq, head_dim, generator=g).to(dtype)
    ref = []
    for x, w in ((q, qw), (k, kw)):
        y = ref_rms_norm(x, w, 1e-6)
        ref.append(y * cos.double().unsqueeze(2) + rotate_half(y) * sin.double().unsqueeze(2))
    rc = lib.q3_qk_norm_rope(CODE[dtype], batch, seq, hq, hk, head_dim, q.data_ptr(), strides(q), k.data_ptr(),
                             strides(k), qw.data_ptr(), kw.data_ptr(), cos.data_ptr(), sin.data_ptr(),
                             cos_sin_strides(cos), 1e-6, 1)
    assert rc == 0, lib.q3_failure().decode()
    for got, want, name in ((q, ref[0], "q"), (k, ref[1], "k")):
        assert rel_err(got, want) <= TOLERANCE[dtype], f"{name}: relative error {rel_err(got, want):.3g}"
