"""GPU specification of ltx_video_kernels: every op against float64 math.

Rules every test follows: random inputs (never zeros or ones; weights and AdaLN tables
random too), outputs allocated from poisoned memory (every byte 0xFF: NaN in fp32, fp16
and bf16) so an element the kernel forgets to write fails, per-dtype relative-error bounds
against float64, awkward shapes (odd sizes, sizes that are not a multiple of the 16-byte
chunk, one row, empty), non-contiguous views, views misaligned by one element, the exact
layouts LTX passes (strided AdaLN slices, fp32 cos/sin), > 2^31-element tensors for the
64-bit indexing, and torch.compile(fullgraph=True) / torch.library.opcheck on every op.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

import float64_math as exact  # noqa: E402 - tests/ is put on sys.path by conftest

pytestmark = pytest.mark.gpu

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Bound on |out - exact| / (max(|exact|, magnitude) + floor): one rounding to the output
# dtype is at most 2^-24, 2^-11, 2^-8 relative; the rest is room for fp32 accumulation,
# rsqrtf and __expf. Cases that round twice by design pass rounds=2.
RTOL = {torch.float32: 2e-5, torch.float16: 1.5e-3, torch.bfloat16: 8e-3}


def randn(*shape: int, dtype: torch.dtype = torch.bfloat16, seed: int = 0, scale: float = 1.0, shift: float = 0.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32) * scale + shift).to(dtype)


def poison(*tensors_like: tuple[tuple[int, ...], torch.dtype]) -> None:
    """Leave freed allocator blocks of the outputs' sizes filled with 0xFF bytes (NaN), so
    the op's freshly allocated outputs start as NaN instead of stale plausible numbers."""
    blocks = []
    for shape, dtype in tensors_like:
        n = max(1, int(torch.Size(shape).numel()) * torch.empty((), dtype=dtype).element_size())
        blocks.append(torch.full((n,), 255, dtype=torch.uint8, device="cuda"))
    del blocks


def misaligned(t: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of t whose data pointer is one element past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    view = flat[1:].view(t.shape)
    view.copy_(t)
    assert view.is_contiguous() and view.data_ptr() % 16 != 0
    return view


def row_strided(t: torch.Tensor, pad: int = 8) -> torch.Tensor:
    """t as a slice of a wider tensor: last dim contiguous, rows `pad` elements apart more."""
    wide = torch.empty(*t.shape[:-1], t.shape[-1] + pad, dtype=t.dtype, device=t.device)
    view = wide[..., : t.shape[-1]]
    view.copy_(t)
    return view


def transposed(t: torch.Tensor) -> torch.Tensor:
    """t as a transpose of a contiguous tensor: rows are not in memory order (the kernels
    address them through the strides, without a copy)."""
    assert t.dim() >= 3
    return t.transpose(0, 1).contiguous().transpose(0, 1)


LAYOUTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "contiguous": lambda t: t,
    "row_strided": row_strided,
    "transposed": transposed,
    "misaligned": misaligned,
}


def assert_close(
    out: torch.Tensor,
    expected: torch.Tensor,
    dtype: torch.dtype,
    magnitude: torch.Tensor | None = None,
    rounds: int = 1,
) -> None:
    assert out.shape == expected.shape, (out.shape, expected.shape)
    assert out.dtype == dtype, (out.dtype, dtype)
    assert out.is_contiguous()
    if out.numel() == 0:
        return
    o, e = out.double(), expected.double()
    assert torch.isfinite(o).all(), "non-finite output (an element left unwritten?)"
    scale = e.abs() if magnitude is None else torch.maximum(e.abs(), magnitude.double())
    floor = 1e-3 * scale.max().item() + 1e-30
    rel = ((o - e).abs() / (scale + floor)).max().item()
    assert rel <= rounds * RTOL[dtype], f"max relative error {rel:.3g} > {rounds * RTOL[dtype]:.3g}"


def rope_magnitude(y: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """|y[2i] cos| + |y[2i+1] sin| (and the mirror): the size of the terms summed per output."""
    y, cos, sin = torch.broadcast_tensors(y.double().abs(), cos.double().abs(), sin.double().abs())
    m = torch.empty_like(y)
    m[..., 0::2] = y[..., 0::2] * cos[..., 0::2] + y[..., 1::2] * sin[..., 0::2]
    m[..., 1::2] = y[..., 1::2] * cos[..., 1::2] + y[..., 0::2] * sin[..., 1::2]
    return m


# ------------------------------------------------------------------------------ RMSNorm

NORM_SHAPES = [
    (0, 2048),  # empty
    (1, 2048),  # one row
    (3, 17, 2048),  # LTX hidden
    (2, 5, 3072),
    (4, 1),
    (3, 7),
    (5, 33),
    (2, 127),
    (3, 1001),  # not a multiple of the 8-element chunk
    (2, 4096),
    (2, 8200),
    (1, 140000),  # too long for registers: looping kernel
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", NORM_SHAPES, ids=str)
@pytest.mark.parametrize("with_weight", [False, True], ids=["no_weight", "weight"])
def test_rms_norm(kernels: ModuleType, dtype, shape, with_weight) -> None:
    x = randn(*shape, dtype=dtype, scale=2.0, shift=0.3)
    w = randn(shape[-1], dtype=dtype, seed=1, scale=0.4, shift=1.0) if with_weight else None
    poison((shape, dtype))
    out = kernels.rms_norm(x, w, 1e-6)
    assert_close(out, exact.rms_norm(x, w, 1e-6), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("d", [2048, 3072, 1001])
def test_rms_norm_layouts(kernels: ModuleType, dtype, layout, d) -> None:
    x = LAYOUTS[layout](randn(3, 9, d, dtype=dtype, scale=2.0))
    w = randn(d, dtype=dtype, seed=1, scale=0.4, shift=1.0)
    poison((tuple(x.shape), dtype))
    assert_close(kernels.rms_norm(x, w, 1e-5), exact.rms_norm(x, w, 1e-5), dtype)


def _configs(d: int, n: int) -> list[tuple[int, int]]:
    tprs = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512]
    vpts = [1, 2, 3, 4, 6, 8, 12, 16]
    found = [(t, v) for t, v in itertools.product(tprs, vpts) if t * v * n >= d and t * (v - 1) * n < d]
    found += [(t, 0) for t in (32, 128, 256, 512)]  # the looping kernel
    return found


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [64, 2048, 3072])
def test_rms_norm_every_launch_config(kernels: ModuleType, dtype, d) -> None:
    # Every register-resident instantiation (chunks per thread) and the looping kernel
    # compute the same thing; the benchmark sweeps these for speed.
    n = 16 // torch.empty((), dtype=dtype).element_size()
    x = randn(37, d, dtype=dtype, scale=2.0)
    w = randn(d, dtype=dtype, seed=1, scale=0.4, shift=1.0)
    expected = exact.rms_norm(x, w, 1e-6)
    for tpr, vpt in _configs(d, n):
        poison(((37, d), dtype))
        out = kernels.rms_norm_with_config(x, w, 1e-6, tpr, vpt)
        assert_close(out, expected, dtype)


def test_rms_norm_with_config_rejects_bad_configs(kernels: ModuleType) -> None:
    x = randn(4, 2048)
    with pytest.raises(RuntimeError, match="threads_per_row"):
        kernels.rms_norm_with_config(x, None, 1e-6, 48, 8)
    with pytest.raises(RuntimeError, match="do not cover"):
        kernels.rms_norm_with_config(x, None, 1e-6, 32, 4)
    with pytest.raises(RuntimeError, match="chunks_per_thread"):
        kernels.rms_norm_with_config(x, None, 1e-6, 32, 5)


def test_rms_norm_errors_are_one_line_and_name_the_argument(kernels: ModuleType) -> None:
    x = randn(4, 64)
    with pytest.raises(RuntimeError, match="weight must have shape"):
        kernels.ops.rms_norm(x, randn(32), 1e-6)
    with pytest.raises(NotImplementedError, match="CPU"):  # the dispatcher: no CPU kernel
        kernels.ops.rms_norm(x.cpu(), None, 1e-6)
    with pytest.raises(RuntimeError, match="weight has dtype"):
        kernels.ops.rms_norm(x, randn(64, dtype=torch.float32), 1e-6)


# ------------------------------------------------------------------------------- AdaLN


def _ada_table(b: int, t: int, d: int, dtype: torch.dtype, seed: int = 7) -> torch.Tensor:
    """The block's ada_values: [B, T, 6, D] = scale_shift_table + temb, random."""
    return randn(b, t, 6, d, dtype=dtype, seed=seed, scale=0.3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_token", [False, True], ids=["one_timestep", "per_token_timestep"])
@pytest.mark.parametrize("d", [2048, 3072, 1001, 40])
@pytest.mark.parametrize("with_weight", [False, True], ids=["no_weight", "weight"])
def test_rms_norm_modulate_ltx_layout(kernels: ModuleType, dtype, per_token, d, with_weight) -> None:
    b, s = 2, 11
    x = randn(b, s, d, dtype=dtype, scale=2.0)
    table = _ada_table(b, s if per_token else 1, d, dtype)
    shift, scale = table[:, :, 0], table[:, :, 1]  # strided views, as the block unbinds them
    w = randn(d, dtype=dtype, seed=1, scale=0.4, shift=1.0) if with_weight else None
    poison(((b, s, d), dtype))
    out = kernels.rms_norm_modulate(x, w, scale, shift, 1e-6)
    assert_close(out, exact.modulate(exact.rms_norm(x, w, 1e-6), scale, shift), dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize(
    "scale_shape",
    [(2048,), (1, 1, 2048), (3, 1, 2048), (3, 5, 2048), (5, 1), (1,)],
    ids=str,
)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_rms_norm_modulate_broadcasts(kernels: ModuleType, dtype, scale_shape, layout) -> None:
    x = LAYOUTS[layout](randn(3, 5, 2048, dtype=dtype, scale=2.0))
    scale = randn(*scale_shape, dtype=dtype, seed=2, scale=0.3)
    shift = randn(*scale_shape, dtype=dtype, seed=3, scale=0.3)
    poison(((3, 5, 2048), dtype))
    out = kernels.rms_norm_modulate(x, None, scale, shift, 1e-6)
    assert_close(out, exact.modulate(exact.rms_norm(x, None, 1e-6), scale, shift), dtype)


def test_rms_norm_modulate_with_mixed_dtypes_follows_diffusers_promotion(kernels: ModuleType) -> None:
    # An fp32 scale with bf16 x: diffusers' expression returns fp32; so does the fallback.
    x = randn(2, 3, 64)
    scale = randn(2, 1, 64, dtype=torch.float32, seed=2, scale=0.3)
    out = kernels.rms_norm_modulate(x, None, scale, scale, 1e-6)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, kernels.reference.rms_norm_modulate(x, None, scale, scale, 1e-6))


# ------------------------------------------------------------ residual add + AdaLN norm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gated", [True, False], ids=["gated", "ungated"])
@pytest.mark.parametrize("modulated", [True, False], ids=["modulated", "plain"])
@pytest.mark.parametrize("d,layout", [(2048, "contiguous"), (3072, "contiguous"), (2048, "misaligned"),
                                      (1001, "contiguous"), (2048, "transposed"), (140000, "contiguous")])
def test_add_rms_norm_modulate(kernels: ModuleType, dtype, gated, modulated, d, layout) -> None:
    b, s = 2, 3 if d > 100000 else 13
    branch = LAYOUTS[layout](randn(b, s, d, dtype=dtype, scale=0.7))
    residual = randn(b, s, d, dtype=dtype, seed=1, scale=2.0)
    table = _ada_table(b, 1, d, dtype)
    gate = table[:, :, 2] if gated else None
    shift, scale = (table[:, :, 0], table[:, :, 1]) if modulated else (None, None)
    poison(((b, s, d), dtype), ((b, s, d), dtype))
    out, h = kernels.add_rms_norm_modulate(branch, residual, gate, None, scale, shift, 1e-6)
    h_exact = residual.double() + branch.double() * (gate.double() if gated else 1.0)
    assert_close(h, h_exact, dtype)
    # The sum is stored in x's dtype and that stored value is normalized, like eager.
    expected = exact.rms_norm(h_exact.to(dtype), None, 1e-6)
    if modulated:
        expected = exact.modulate(expected, scale, shift)
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("d", [2048, 3072])
def test_adaln_operands_laid_out_differently(kernels: ModuleType, dtype, d) -> None:
    # The kernels evaluate one row offset for operands addressed alike (LTX: scale, shift
    # and gate from one table; residual and x of one layout) and reuse it. Here no two are
    # alike - x row-strided, residual contiguous, scale per batch, shift and gate per token -
    # so every operand must be addressed by its own strides.
    b, s = 2, 37
    branch = row_strided(randn(b, s, d, dtype=dtype, scale=0.7))
    residual = randn(b, s, d, dtype=dtype, seed=1, scale=2.0)
    scale = _ada_table(b, 1, d, dtype)[:, :, 1]
    per_token = _ada_table(b, s, d, dtype, seed=8)
    shift, gate = per_token[:, :, 0], per_token[:, :, 2]
    poison(((b, s, d), dtype), ((b, s, d), dtype))
    out, h = kernels.add_rms_norm_modulate(branch, residual, gate, None, scale, shift, 1e-6)
    h_exact = residual.double() + branch.double() * gate.double()
    assert_close(h, h_exact, dtype)
    assert_close(out, exact.modulate(exact.rms_norm(h_exact.to(dtype), None, 1e-6), scale, shift), dtype)
    out = kernels.rms_norm_modulate(branch, None, scale, shift, 1e-6)
    assert_close(out, exact.modulate(exact.rms_norm(branch, None, 1e-6), scale, shift), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [128, 2304, 8192, 16392])
@pytest.mark.parametrize("per_token", [False, True], ids=["one_timestep", "per_token_timestep"])
def test_norm_family_where_the_launch_path_switches(kernels: ModuleType, dtype, d, per_token) -> None:
    # Each operand set has its own chunks-per-thread target and limit (ltx_ops.cpp):
    # 128 = a head (several rows per block), 2304 = chunks that do not fill the last
    # thread evenly (96x3, 160x2), 8192 = the fused add at 512x2 bf16, 16392 = past the
    # modulate/add rows kernels (loop kernel, unfused add) but not past plain's.
    b, s = 2, 5
    x = randn(b, s, d, dtype=dtype, scale=2.0)
    residual = randn(b, s, d, dtype=dtype, seed=1, scale=1.5)
    w = randn(d, dtype=dtype, seed=4, scale=0.4, shift=1.0)
    table = _ada_table(b, s if per_token else 1, d, dtype)
    shift, scale, gate = table[:, :, 0], table[:, :, 1], table[:, :, 2]
    for weight in (None, w):
        poison(((b, s, d), dtype))
        assert_close(kernels.rms_norm(x, weight, 1e-6), exact.rms_norm(x, weight, 1e-6), dtype)
        poison(((b, s, d), dtype))
        out = kernels.rms_norm_modulate(x, weight, scale, shift, 1e-6)
        assert_close(out, exact.modulate(exact.rms_norm(x, weight, 1e-6), scale, shift), dtype)
        poison(((b, s, d), dtype), ((b, s, d), dtype))
        out, h = kernels.add_rms_norm_modulate(x, residual, gate, weight, scale, shift, 1e-6)
        h_exact = residual.double() + x.double() * gate.double()
        assert_close(h, h_exact, dtype)
        expected = exact.modulate(exact.rms_norm(h_exact.to(dtype), weight, 1e-6), scale, shift)
        assert_close(out, expected, dtype)


# ------------------------------------------- AdaLN *_with_config (the opt-in sweep ops)
# rows_per_block 0 forces the default rows kernel (flag 4: scale/shift read after the
# reduction; flags 8 / 16: the pipelined kernel with 2 / 3 stages; flag 64: the lean kernel
# at 1-2 chunks per thread, 32-bit row offsets; flag 128: the lean kernel reading x, or the
# h it stored, again after the reduction; flags 64 | 256: the lean kernel with cache hints);
# >= 1 runs the
# column-stationary kernel (one batch's scale/shift/gate/weight held in registers over
# rows_per_block rows).
ADALN_FLAGS = [0, 1, 2, 3]  # bit 0: streaming cache hints, bit 1: prefetch the next row


def _adaln_configs(d: int, n: int) -> list[tuple[int, int]]:
    tprs = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256]
    return [(t, v) for t, v in itertools.product(tprs, [1, 2, 3, 4]) if t * v * n >= d and t * (v - 1) * n < d]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [2048, 3072, 64])
@pytest.mark.parametrize("rows_per_block", [0, 1, 3, 8, 64])
def test_adaln_with_config_matches_float64_and_the_rows_kernel(kernels: ModuleType, dtype, d, rows_per_block) -> None:
    # 3 batches of 13 rows: 13 % 3 and 13 % 8 leave short last strips; 64 > 13: one strip
    # per batch. Every flag, weight or not, gated and ungated add; rows_per_block 0 with flag
    # 4, 8 or 16 must equal the rows kernel with scale/shift held early bit for bit.
    b, s = 3, 13
    n = 16 // torch.empty((), dtype=dtype).element_size()
    x = randn(b, s, d, dtype=dtype, scale=2.0)
    residual = randn(b, s, d, dtype=dtype, seed=1, scale=1.5)
    w = randn(d, dtype=dtype, seed=4, scale=0.4, shift=1.0)
    table = _ada_table(b, 1, d, dtype)
    shift, scale, gate = table[:, :, 0], table[:, :, 1], table[:, :, 2]

    def flags_for(tpr: int, vpt: int) -> list[int]:
        if rows_per_block:
            return ADALN_FLAGS
        lean = [64, 128, 320] if vpt <= 2 else []
        return ([0, 4, 8, 16] if tpr <= 256 else [0]) + lean  # flags 4, 8, 16: blocks of at most 256 threads

    points = [(t, v, wt, f) for (t, v), wt in itertools.product(_adaln_configs(d, n), (None, w))
              for f in flags_for(t, v)]
    for tpr, vpt, weight, fl in points:
        poison(((b, s, d), dtype))
        out = kernels.rms_norm_modulate_with_config(x, weight, scale, shift, 1e-6, tpr, vpt, rows_per_block, fl)
        assert_close(out, exact.modulate(exact.rms_norm(x, weight, 1e-6), scale, shift), dtype)
        # bit for bit the rows kernel at the same threads x chunks (same summation order)
        same = kernels.rms_norm_modulate_with_config(x, weight, scale, shift, 1e-6, tpr, vpt, 0, 0)
        assert torch.equal(out, same)
        for g in (gate, None):
            poison(((b, s, d), dtype), ((b, s, d), dtype))
            out, h = kernels.add_rms_norm_modulate_with_config(
                x, residual, g, weight, scale, shift, 1e-6, tpr, vpt, rows_per_block, fl)
            h_exact = residual.double() + x.double() * (g.double() if g is not None else 1.0)
            assert_close(h, h_exact, dtype)
            assert_close(out, exact.modulate(exact.rms_norm(h_exact.to(dtype), weight, 1e-6), scale, shift), dtype)
            d_out, d_h = kernels.add_rms_norm_modulate_with_config(
                x, residual, g, weight, scale, shift, 1e-6, tpr, vpt, 0, 0)
            assert torch.equal(h, d_h) and torch.equal(out, d_out)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_adaln_with_config_per_token_tables_and_strided_rows(kernels: ModuleType, dtype) -> None:
    # Per-token scale/shift fall back to the rows kernel; strided x rows (a slice of a wider
    # tensor) and a 4-d x whose leading dims collapse stay on the column-stationary kernel.
    d = 2048
    n = 16 // torch.empty((), dtype=dtype).element_size()
    tpr, vpt = (64, 4) if n == 8 else (128, 4)
    x = row_strided(randn(2, 9, d, dtype=dtype, scale=2.0))
    per_tok = _ada_table(2, 9, d, dtype)
    for table in (per_tok, _ada_table(2, 1, d, dtype, seed=8)):
        shift, scale = table[:, :, 0], table[:, :, 1]
        out = kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 4, 3)
        assert_close(out, exact.modulate(exact.rms_norm(x, None, 1e-6), scale, shift), dtype)
    x4 = randn(2, 3, 5, d, dtype=dtype, scale=2.0)
    t4 = randn(2, 3, 1, 6, d, dtype=dtype, seed=9, scale=0.3)
    out = kernels.rms_norm_modulate_with_config(x4, None, t4[:, :, :, 1], t4[:, :, :, 0], 1e-6, tpr, vpt, 2, 1)
    assert_close(out, exact.modulate(exact.rms_norm(x4, None, 1e-6), t4[:, :, :, 1], t4[:, :, :, 0]), dtype)
    # per-token tables, strided rows and a 4-d x, bit for bit the rows kernel at the same
    # threads x chunks: the pipelined kernel (flags 8 / 16) at tpr x vpt; the lean kernel
    # (flag 64), its reload variant (128) and with cache hints (320) at 2 chunks per thread
    lt, lv = 2048 // n // 2, 2
    for fl, t, v in ((8, tpr, vpt), (16, tpr, vpt), (64, lt, lv), (128, lt, lv), (320, lt, lv)):
        for table in (per_tok, _ada_table(2, 1, d, dtype, seed=8)):
            shift, scale, gate = table[:, :, 0], table[:, :, 1], table[:, :, 2]
            out = kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, t, v, 0, fl)
            assert torch.equal(out, kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, t, v, 0, 0))
            out, h = kernels.add_rms_norm_modulate_with_config(x, x.flip(1), gate, None, scale, shift, 1e-6,
                                                               t, v, 0, fl)
            d_out, d_h = kernels.add_rms_norm_modulate_with_config(x, x.flip(1), gate, None, scale, shift, 1e-6,
                                                                   t, v, 0, 0)
            assert torch.equal(out, d_out) and torch.equal(h, d_h)
        out = kernels.rms_norm_modulate_with_config(x4, None, t4[:, :, :, 1], t4[:, :, :, 0], 1e-6, t, v, 0, fl)
        assert_close(out, exact.modulate(exact.rms_norm(x4, None, 1e-6), t4[:, :, :, 1], t4[:, :, :, 0]), dtype)
    empty = randn(0, 7, d, dtype=dtype)
    assert kernels.rms_norm_modulate_with_config(empty, None, randn(0, 1, d, dtype=dtype),
                                                 randn(0, 1, d, dtype=dtype), 1e-6, tpr, vpt, 8, 0).shape == empty.shape


@pytest.mark.parametrize("shape", [(2, 4096, 3072), (1, 8192, 2048), (3, 1001, 2048)])
def test_adaln_pipelined_kernel_walks_many_row_groups(kernels: ModuleType, shape) -> None:
    # The persistent grid holds far fewer blocks than these shapes have row groups, so each
    # block refills its stages many times; the result must equal the rows kernel bit for bit.
    b, s, d = shape
    x = randn(b, s, d, scale=2.0)
    residual = randn(b, s, d, seed=1, scale=1.5)
    table = _ada_table(b, 1, d, torch.bfloat16)
    shift, scale, gate = table[:, :, 0], table[:, :, 1], table[:, :, 2]
    tpr, vpt = (64, 4) if d == 2048 else (128, 3)
    want = kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 0, 0)
    d_out, d_h = kernels.add_rms_norm_modulate_with_config(x, residual, gate, None, scale, shift, 1e-6, tpr, vpt, 0, 0)
    for fl in (8, 16):
        poison(((b, s, d), torch.bfloat16))
        assert torch.equal(kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 0, fl), want)
        poison(((b, s, d), torch.bfloat16), ((b, s, d), torch.bfloat16))
        out, h = kernels.add_rms_norm_modulate_with_config(x, residual, gate, None, scale, shift, 1e-6, tpr, vpt, 0, fl)
        assert torch.equal(out, d_out) and torch.equal(h, d_h)


@pytest.mark.parametrize("rows", [1024, 2048, 8192])
def test_default_modulate_runs_lean_on_calls_within_a_third_of_l2(kernels: ModuleType, rows: int) -> None:
    # adaln_default_lean (ltx_ops.cpp): a weightless modulate whose x and output fit in 1/3 of
    # the L2 runs the lean kernel at 128x2 (flags 320, with cache hints, is bit-identical to
    # plain lean and what set_cache_hints(True) runs), bigger ones the pipelined kernel at 64x4. The two sum a row in different orders,
    # so the default must equal exactly one of them.
    x = randn(1, rows, 2048, scale=2.0)
    table = _ada_table(1, 1, 2048, torch.bfloat16)
    scale, shift = table[:, :, 1], table[:, :, 0]
    lean = kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, 128, 2, 0, 320)
    piped = kernels.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, 64, 4, 0, 8)
    if torch.equal(lean, piped):
        pytest.skip("the two kernels round this input identically: nothing tells them apart")
    l2 = torch.cuda.get_device_properties(x.device).L2_cache_size
    small = 3 * (2 * x.numel() * x.element_size()) <= l2
    poison(((1, rows, 2048), torch.bfloat16))
    got = kernels.rms_norm_modulate(x, None, scale, shift, 1e-6)
    assert torch.equal(got, lean if small else piped), f"{rows} rows, L2 {l2} bytes: expected the " + (
        "lean kernel" if small else "pipelined kernel")


def test_adaln_with_config_refuses_what_it_cannot_run(kernels: ModuleType) -> None:
    x = randn(2, 5, 2048)
    t = _ada_table(2, 1, 2048, torch.bfloat16)
    s, h = t[:, :, 1], t[:, :, 0]
    f = kernels.rms_norm_modulate_with_config
    with pytest.raises(RuntimeError, match="threads_per_row"):
        f(x, None, s, h, 1e-6, 48, 4, 4, 0)
    with pytest.raises(RuntimeError, match="at most 256 threads per row"):
        f(x, None, s, h, 1e-6, 512, 1, 4, 0)
    with pytest.raises(RuntimeError, match="chunks_per_thread 1..4"):
        f(x, None, s, h, 1e-6, 32, 8, 4, 0)
    with pytest.raises(RuntimeError, match="do not cover"):
        f(x, None, s, h, 1e-6, 32, 4, 4, 0)
    with pytest.raises(RuntimeError, match="rows_per_block"):
        f(x, None, s, h, 1e-6, 64, 4, -1, 0)
    with pytest.raises(RuntimeError, match="flags 1 and 2 need"):
        f(x, None, s, h, 1e-6, 64, 4, 0, 1)
    with pytest.raises(RuntimeError, match="bit set"):
        f(x, None, s, h, 1e-6, 64, 4, 4, 32)
    for fl in (4, 8, 16):
        with pytest.raises(RuntimeError, match="take rows_per_block 0"):
            f(x, None, s, h, 1e-6, 64, 4, 4, fl)
    with pytest.raises(RuntimeError, match="at most 256 threads per row"):
        f(x, None, s, h, 1e-6, 512, 1, 0, 4)
    with pytest.raises(RuntimeError, match="exclude each other"):
        f(x, None, s, h, 1e-6, 64, 4, 0, 24)
    with pytest.raises(RuntimeError, match="at most 256 threads per row"):
        f(x, None, s, h, 1e-6, 512, 1, 0, 8)
    with pytest.raises(RuntimeError, match="chunks_per_thread 1..4"):
        f(x, None, s, h, 1e-6, 256, 0, 0, 16)
    with pytest.raises(RuntimeError, match="no flag 4"):
        f(x, None, s, h, 1e-6, 64, 4, 0, 12)
    # flags 64 and 128: the lean kernels exist for 1-2 chunks, alone, on the rows kernel's grid
    for tpr, vpt, rpb, fl in ((64, 4, 0, 64), (128, 2, 0, 72), (128, 2, 4, 64), (128, 2, 0, 68), (128, 2, 0, 192)):
        with pytest.raises(RuntimeError, match="flag 64"):
            f(x, None, s, h, 1e-6, tpr, vpt, rpb, fl)
    for tpr, vpt, rpb, fl in ((64, 4, 0, 128), (128, 2, 0, 136), (128, 2, 4, 128), (128, 2, 0, 132)):
        with pytest.raises(RuntimeError, match="flag 128"):
            f(x, None, s, h, 1e-6, tpr, vpt, rpb, fl)
    # flag 256 (cache hints) exists only with flag 64, so with its limits
    for tpr, vpt, rpb, fl in ((128, 2, 0, 256), (128, 2, 0, 384), (128, 2, 0, 264)):
        with pytest.raises(RuntimeError, match="flag 256"):
            f(x, None, s, h, 1e-6, tpr, vpt, rpb, fl)
    for tpr, vpt, rpb, fl in ((64, 4, 0, 320), (128, 2, 4, 320)):
        with pytest.raises(RuntimeError, match="flag 64"):
            f(x, None, s, h, 1e-6, tpr, vpt, rpb, fl)
    # awkward widths and misaligned views: only the 16-byte path exists, so refused, not rerouted
    odd = randn(2, 5, 1001)
    to = _ada_table(2, 1, 1001, torch.bfloat16)
    with pytest.raises(RuntimeError, match="16-byte path"):
        f(odd, None, to[:, :, 1], to[:, :, 0], 1e-6, 128, 1, 4, 0)
    for fl in (64, 128, 320):
        with pytest.raises(RuntimeError, match="16-byte path"):
            f(odd, None, to[:, :, 1], to[:, :, 0], 1e-6, 128, 1, 0, fl)
    with pytest.raises(RuntimeError, match="16-byte path"):
        kernels.add_rms_norm_modulate_with_config(misaligned(x), x, None, None, s, h, 1e-6, 64, 4, 4, 0)
    with pytest.raises(RuntimeError, match="16-byte path"):
        f(odd, None, to[:, :, 1], to[:, :, 0], 1e-6, 128, 1, 0, 8)
    with pytest.raises(RuntimeError, match="16-byte path"):
        kernels.add_rms_norm_modulate_with_config(misaligned(x), x, None, None, s, h, 1e-6, 64, 4, 0, 16)
    # rows_per_block 0 takes them (the default kernels' scalar path)
    out = f(odd, None, to[:, :, 1], to[:, :, 0], 1e-6, 128, 0, 0, 0)
    assert_close(out, exact.modulate(exact.rms_norm(odd, None, 1e-6), to[:, :, 1], to[:, :, 0]), torch.bfloat16)


# -------------------------------------------------------------------------------- GELU

GELU_SIZES = [0, 1, 7, 8, 1000, 1_000_003, 3 * 2688 * 8]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("numel", GELU_SIZES)
@pytest.mark.parametrize("layout", ["contiguous", "misaligned"])
def test_gelu_tanh(kernels: ModuleType, dtype, numel, layout) -> None:
    x = randn(numel, dtype=dtype, scale=3.0)
    if layout == "misaligned" and numel:
        x = misaligned(x)
    poison(((numel,), dtype))
    assert_close(kernels.gelu_tanh(x), exact.gelu_tanh(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_tanh_ltx_shape_non_contiguous_and_extremes(kernels: ModuleType, dtype) -> None:
    x = randn(2, 64, 8192, dtype=dtype, scale=3.0).transpose(0, 1)  # [S, B, 4 * 2048] view
    assert_close(kernels.gelu_tanh(x), exact.gelu_tanh(x), dtype)
    big = 60000.0 if dtype == torch.float16 else 1e6
    ext = torch.tensor([-big, -30.0, -10.0, -5.0, -1e-3, 0.0, 1e-3, 5.0, 10.0, 30.0, big], device="cuda", dtype=dtype)
    assert_close(kernels.gelu_tanh(ext), exact.gelu_tanh(ext), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "misaligned"])
def test_gelu_tanh_with_config_every_configuration_gives_the_default_s_bits(kernels: ModuleType, dtype, layout) -> None:
    # sizes around a block's reach, with a scalar tail, and one past several grid-stride steps
    for numel in (1, 8 * 64 + 3, 8 * 256 * 8 + 5, 1_000_003):
        x = randn(numel, dtype=dtype, seed=numel % 97, scale=3.0)
        if layout == "misaligned":
            x = misaligned(x)
        want = kernels.gelu_tanh(x)
        assert_close(want, exact.gelu_tanh(x), dtype)
        for threads, unroll in itertools.product((64, 128, 256), (1, 2, 4, 8)):
            poison(((numel,), dtype))
            got = kernels.gelu_tanh_with_config(x, threads, unroll)
            assert torch.equal(got, want), (numel, threads, unroll)


def test_gelu_tanh_with_config_refuses_what_it_cannot_run(kernels: ModuleType) -> None:
    x = randn(1000)
    for threads, unroll, match in ((96, 1, "threads_per_block"), (512, 1, "threads_per_block"),
                                   (128, 3, "unroll"), (128, 0, "unroll")):
        with pytest.raises(RuntimeError, match=match):
            kernels.gelu_tanh_with_config(x, threads, unroll)


# -------------------------------------------------------------------------------- RoPE


def _tables(kind: str, b: int, s: int, d: int, seed: int = 11) -> tuple[torch.Tensor, torch.Tensor]:
    if kind == "ltx" and d >= 6:  # LTXVideoRotaryPosEmbed's tables for a 1 x 1 x s latent grid
        # (below 6 channels LTX's own padding code returns empty tables: random ones then)
        cos, sin = REFERENCE.rope_tables(b, 1, 1, s, d, device="cuda")
        return cos, sin
    # arbitrary values (not a rotation): every element of cos/sin must be used as given
    return randn(b, s, d, dtype=torch.float32, seed=seed), randn(b, s, d, dtype=torch.float32, seed=seed + 1)


REFERENCE: ModuleType  # set by the autouse fixture below


@pytest.fixture(autouse=True)
def _reference_module(reference: ModuleType) -> None:
    global REFERENCE
    REFERENCE = reference


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [2048, 3072, 64, 66, 6, 2])
@pytest.mark.parametrize("tables", ["ltx", "random"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_rope_interleaved(kernels: ModuleType, dtype, d, tables, layout) -> None:
    b, s = 2, 19
    x = LAYOUTS[layout](randn(b, s, d, dtype=dtype, scale=2.0))
    cos, sin = _tables(tables, b, s, d)
    poison(((b, s, d), dtype))
    out = kernels.rope_interleaved(x, cos, sin)
    assert_close(out, exact.rope_interleaved(x, cos, sin), dtype, magnitude=rope_magnitude(x, cos, sin))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_rope_broadcast_tables_and_empty(kernels: ModuleType, dtype) -> None:
    x = randn(3, 10, 128, dtype=dtype)
    cos, sin = _tables("random", 1, 10, 128)  # [1, S, D]: shared by the batch, read in place
    out = kernels.rope_interleaved(x, cos, sin)
    assert_close(out, exact.rope_interleaved(x, cos, sin), dtype, magnitude=rope_magnitude(x, cos, sin))
    empty = randn(0, 10, 128, dtype=dtype)
    assert kernels.rope_interleaved(empty, cos[:0], sin[:0]).shape == (0, 10, 128)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 19, 2048), (1, 7, 3072), (3, 5, 64), (1, 1, 8), (2, 2688, 2048)])
def test_rope_with_config_flat_kernel_equals_the_row_kernel(kernels: ModuleType, dtype, shape) -> None:
    # The flat kernel (1, 2, 4 chunks per thread) and the narrow flat kernel (2, 4 elements per
    # thread) on dense rows, incl. chunk counts that leave a partial last round of a block,
    # must match float64 and the per-row kernel bit for bit.
    x = randn(*shape, dtype=dtype, scale=2.0)
    cos, sin = _tables("ltx" if shape[-1] >= 6 else "random", shape[0], shape[1], shape[-1])
    row = kernels.rope_interleaved_with_config(x, cos, sin, 0)
    assert_close(row, exact.rope_interleaved(x, cos, sin), dtype, magnitude=rope_magnitude(x, cos, sin))
    for cpt in (1, 2, 4):
        poison((shape, dtype))
        assert torch.equal(kernels.rope_interleaved_with_config(x, cos, sin, cpt), row)
    for elems in (2, 4):
        for flags in (0, kernels.ROPE_STREAMING):
            poison((shape, dtype))
            assert torch.equal(kernels.rope_interleaved_with_config(x, cos, sin, 1, elems, flags), row)
    assert torch.equal(kernels.rope_interleaved(x, cos, sin), row)  # whichever kernel the default picks


def test_rope_with_config_refuses_layouts_the_flat_kernel_cannot_run(kernels: ModuleType) -> None:
    x = randn(2, 5, 64)
    cos, sin = _tables("random", 2, 5, 64)
    f = kernels.rope_interleaved_with_config
    with pytest.raises(RuntimeError, match="chunks_per_thread"):
        f(x, cos, sin, 3)
    with pytest.raises(RuntimeError, match="elements_per_thread"):
        f(x, cos, sin, 1, 3)  # the narrow kernel rotates whole pairs: 2 or 4
    with pytest.raises(RuntimeError, match="elements_per_thread"):
        f(x, cos, sin, 2, 2)  # one narrow unit per thread only
    with pytest.raises(RuntimeError, match="flags"):
        f(x, cos, sin, 1, 0, kernels.ROPE_STREAMING)  # streaming hints on the narrow kernel only
    with pytest.raises(RuntimeError, match="flags"):
        f(x, cos, sin, 1, 4, 2)
    with pytest.raises(RuntimeError, match="rows back to back"):
        f(x, cos[:1], sin[:1], 1, 2)  # the narrow kernel has the flat kernel's layout checks
    with pytest.raises(RuntimeError, match="rows back to back"):
        f(x, cos[:1], sin[:1], 2)  # [1, S, D] tables broadcast over the batch
    with pytest.raises(RuntimeError, match="rows back to back"):
        f(LAYOUTS["misaligned"](x), cos, sin, 1)
    with pytest.raises(RuntimeError, match="rows back to back"):
        f(LAYOUTS["row_strided"](x), cos, sin, 2)
    with pytest.raises(RuntimeError, match="rows back to back"):
        f(randn(2, 5, 66), *_tables("random", 2, 5, 66), 1)  # 66 is not a multiple of the 8-element chunk
    # the per-row kernel takes all of them
    for args in ((x, cos[:1], sin[:1]), (LAYOUTS["misaligned"](x), cos, sin), (LAYOUTS["row_strided"](x), cos, sin)):
        assert_close(f(*args, 0), exact.rope_interleaved(*args), torch.bfloat16, magnitude=rope_magnitude(*args))


def test_rope_rejects_odd_dims_and_non_fp32_tables(kernels: ModuleType) -> None:
    x = randn(2, 3, 7)
    c = randn(2, 3, 7, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="must be even"):
        kernels.ops.rope_interleaved(x, c, c)
    x = randn(2, 3, 8)
    with pytest.raises(RuntimeError, match="float32"):
        kernels.ops.rope_interleaved(x, x, x)
    # The Python API sends bf16 tables to the reference instead (diffusers' promotion).
    out = kernels.rope_interleaved(x, x, x)
    torch.testing.assert_close(out, kernels.reference.rope_interleaved(x, x, x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [2048, 3072, 64, 66])
@pytest.mark.parametrize("layout", ["contiguous", "misaligned", "transposed"])
@pytest.mark.parametrize("with_weight", [True, False], ids=["weight", "no_weight"])
def test_rms_norm_rope_qk(kernels: ModuleType, dtype, d, layout, with_weight) -> None:
    b, s = 2, 21
    q = LAYOUTS[layout](randn(b, s, d, dtype=dtype, scale=2.0))
    k = randn(b, s, d, dtype=dtype, seed=5, scale=0.5, shift=0.2)
    wq = randn(d, dtype=dtype, seed=1, scale=0.4, shift=1.0) if with_weight else None
    wk = randn(d, dtype=dtype, seed=2, scale=0.4, shift=1.0) if with_weight else None
    cos, sin = _tables("random", b, s, d)
    poison(((b, s, d), dtype), ((b, s, d), dtype))
    q_out, k_out = kernels.rms_norm_rope_qk(q, k, wq, wk, cos, sin, 1e-5)
    # Every path rotates the unrounded normalized value and rounds once: the fused kernel,
    # and the fallback for misaligned or odd sizes (normalize and rotate in fp32).
    for out, t, w in ((q_out, q, wq), (k_out, k, wk)):
        y = exact.rms_norm(t, w, 1e-5)
        assert_close(out, exact.rope_interleaved(y, cos, sin), dtype, rope_magnitude(y, cos, sin), 1)
    single = kernels.rms_norm_rope(q, wq, cos, sin, 1e-5)
    assert torch.equal(single, q_out)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rms_norm_rope_rounds_once_at_widths_off_the_16_byte_path(kernels: ModuleType, dtype) -> None:
    # d = 2050 is not a multiple of 8: the fallback (normalize, then rotate) runs. Rounding the
    # normalized rows before the rotation gave 2.35e-3 relative L2 error in bf16 here against
    # 1.66e-3 for the exact value rounded once; the fallback must round once too.
    b, s, d = 2, 33, 2050
    x = randn(b, s, d, dtype=dtype, scale=2.0)
    w = randn(d, dtype=dtype, seed=1, scale=0.4, shift=1.0)
    cos, sin = _tables("random", b, s, d)
    ref = exact.rope_interleaved(exact.rms_norm(x, w, 1e-5), cos, sin)
    rounded_once = ref.to(dtype).double()

    def rel_l2(t: torch.Tensor) -> float:
        return ((t.double() - ref).norm() / ref.norm()).item()

    for out in (kernels.rms_norm_rope(x, w, cos, sin, 1e-5), kernels.rms_norm_rope_qk(x, x, w, w, cos, sin, 1e-5)[1]):
        assert rel_l2(out) <= 1.15 * rel_l2(rounded_once), (rel_l2(out), rel_l2(rounded_once))


def test_negative_eps_is_refused_like_qwen3(kernels: ModuleType) -> None:
    # rsqrt of a negative mean square is NaN: the binding refuses it, as qwen3's does.
    x = randn(2, 8, 64, dtype=torch.bfloat16)
    cos, sin = _tables("random", 2, 8, 64)
    with pytest.raises(RuntimeError, match="eps must be >= 0"):
        kernels.rms_norm(x, None, eps=-1.0)
    with pytest.raises(RuntimeError, match="eps must be >= 0"):
        kernels.rms_norm_rope(x, None, cos, sin, -1.0)
    with pytest.raises(RuntimeError, match="eps must be >= 0"):
        kernels.rms_norm_modulate(x, None, x[:, :1], x[:, :1], -1e-6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("d", [2048, 3072])
def test_rms_norm_rope_qk_operands_laid_out_differently(kernels: ModuleType, dtype, d) -> None:
    # q and k (and cos and sin) share one row offset when laid out alike; here k is
    # row-strided and sin broadcasts over the batch while cos does not.
    b, s = 2, 21
    q = randn(b, s, d, dtype=dtype, scale=2.0)
    k = row_strided(randn(b, s, d, dtype=dtype, seed=5, scale=0.5, shift=0.2))
    cos = randn(b, s, d, dtype=torch.float32, seed=11)
    sin = randn(1, s, d, dtype=torch.float32, seed=12)
    poison(((b, s, d), dtype), ((b, s, d), dtype))
    q_out, k_out = kernels.rms_norm_rope_qk(q, k, None, None, cos, sin, 1e-5)
    for out, t in ((q_out, q), (k_out, k)):
        y = exact.rms_norm(t, None, 1e-5)
        assert_close(out, exact.rope_interleaved(y, cos, sin), dtype, rope_magnitude(y, cos, sin))
    out = kernels.rope_interleaved(k, cos, sin)
    assert_close(out, exact.rope_interleaved(k, cos, sin), dtype, magnitude=rope_magnitude(k, cos, sin))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [2048, 3072, 64])
def test_rms_norm_rope_qk_with_config_every_launch_config(kernels: ModuleType, dtype, d) -> None:
    # Every threads x chunks that covers a row (the last chunk round partly idle where the
    # chunks do not divide evenly); the default op's own configuration equals it bit for bit.
    b, s = 2, 13
    n = 16 // torch.empty((), dtype=dtype).element_size()
    q = randn(b, s, d, dtype=dtype, scale=2.0)
    k = row_strided(randn(b, s, d, dtype=dtype, seed=5, scale=0.5, shift=0.2))
    wq = randn(d, dtype=dtype, seed=1, scale=0.4, shift=1.0)
    cos, sin = _tables("random", b, s, d)
    tprs = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512]
    configs = [(t, v) for t, v in itertools.product(tprs, [1, 2, 3, 4]) if t * v * n >= d and t * (v - 1) * n < d]
    assert configs
    default = kernels.rms_norm_rope_qk(q, k, wq, None, cos, sin, 1e-5)
    matched = False
    for tpr, vpt in configs:
        poison(((b, s, d), dtype), ((b, s, d), dtype))
        q_out, k_out = kernels.rms_norm_rope_qk_with_config(q, k, wq, None, cos, sin, 1e-5, tpr, vpt)
        for out, t, w in ((q_out, q, wq), (k_out, k, None)):
            y = exact.rms_norm(t, w, 1e-5)
            assert_close(out, exact.rope_interleaved(y, cos, sin), dtype, rope_magnitude(y, cos, sin))
        matched |= torch.equal(q_out, default[0]) and torch.equal(k_out, default[1])
        if vpt == 1 and tpr <= 256:
            # flag 64: the lean kernel, bit for bit the same; + 256 with cache hints, + 512 the
            # persistent kernel that prefetches the next row
            for fl in (64, 64 | 256, 64 | 512, 64 | 256 | 512):
                poison(((b, s, d), dtype), ((b, s, d), dtype))
                lq, lk = kernels.rms_norm_rope_qk_with_config(q, k, wq, None, cos, sin, 1e-5, tpr, vpt, fl)
                assert torch.equal(lq, q_out) and torch.equal(lk, k_out)
    assert matched  # the default configuration is one of the swept ones


def test_rms_norm_rope_qk_with_config_refuses_what_it_cannot_run(kernels: ModuleType) -> None:
    q = randn(2, 5, 2048)
    cos, sin = _tables("random", 2, 5, 2048)
    f = kernels.rms_norm_rope_qk_with_config
    with pytest.raises(RuntimeError, match="threads_per_row"):
        f(q, q, None, None, cos, sin, 1e-5, 48, 2)
    with pytest.raises(RuntimeError, match="chunks_per_thread must be 1..4"):
        f(q, q, None, None, cos, sin, 1e-5, 32, 8)
    with pytest.raises(RuntimeError, match="do not cover"):
        f(q, q, None, None, cos, sin, 1e-5, 32, 4)
    with pytest.raises(RuntimeError, match="16-byte path"):
        f(misaligned(q), q, None, None, cos, sin, 1e-5, 128, 2)
    odd = randn(2, 5, 1002)  # even (pairs) but not a multiple of 8
    oc, os_ = _tables("random", 2, 5, 1002)
    with pytest.raises(RuntimeError, match="16-byte path"):
        f(odd, odd, None, None, oc, os_, 1e-5, 128, 1)
    for fl in (64, 320):
        with pytest.raises(RuntimeError, match="16-byte path"):
            f(odd, odd, None, None, oc, os_, 1e-5, 128, 1, fl)
    # flag 64 (+ 256 cache hints, + 512 prefetch): one chunk per thread, blocks of at most 256
    # threads; the variants only with flag 64; no other flag exists
    for tpr, vpt, fl in ((128, 2, 64), (512, 1, 64), (256, 1, 8), (256, 1, 65), (256, 1, 256), (128, 2, 320),
                         (256, 1, 512), (256, 1, 768), (128, 2, 64 | 512), (512, 1, 64 | 512),
                         (256, 1, 64 | 1024)):
        with pytest.raises(RuntimeError, match="flag"):
            f(q, q, None, None, cos, sin, 1e-5, tpr, vpt, fl)


def test_rms_norm_rope_qk_at_the_ltx_shape(kernels: ModuleType) -> None:
    # attn1 at 49 frames x 512 x 768: q, k [2, 2688, 2048] bf16, cos/sin [2, 2688, 2048] fp32.
    ref = kernels.reference
    cos, sin = ref.rope_tables(2, 7, 16, 24, device="cuda")
    q, k = randn(2, 2688, 2048, scale=3.0), randn(2, 2688, 2048, seed=1, scale=3.0)
    wq, wk = randn(2048, seed=2, scale=0.4, shift=1.0), randn(2048, seed=3, scale=0.4, shift=1.0)
    q_out, k_out = kernels.rms_norm_rope_qk(q, k, wq, wk, cos, sin, 1e-5)
    for out, t, w in ((q_out, q, wq), (k_out, k, wk)):
        y = exact.rms_norm(t, w, 1e-5)
        assert_close(out, exact.rope_interleaved(y, cos, sin), torch.bfloat16, rope_magnitude(y, cos, sin))
    # and it agrees with diffusers' unfused bf16 path to within bf16 rounding
    eager_q = ref.rope_interleaved(ref.rms_norm(q, wq, 1e-5), cos, sin)
    assert ((q_out.float() - eager_q.float()).abs().max() < 0.05 * eager_q.float().abs().max())


@pytest.mark.parametrize("rows", [1024, 2688, 8192])
def test_the_cache_hint_switch_changes_no_output_bit(kernels: ModuleType, rows: int) -> None:
    # set_cache_hints(True) gives the default q/k, fused-add and small modulate calls
    # evict-first loads (1024 and 2688 rows are inside the rule's L2 limits on an H200, 8192
    # outside): the same arithmetic, so the same bits, and the switch is restored after.
    x, r = randn(1, rows, 2048, scale=2.0), randn(1, rows, 2048, seed=3)
    k = randn(1, rows, 2048, seed=4, scale=0.5)
    table = _ada_table(1, 1, 2048, torch.bfloat16)
    scale, shift, gate = table[:, :, 1], table[:, :, 0], table[:, :, 2]
    w = randn(2048, seed=2, scale=0.4, shift=1.0)
    cos, sin = kernels.reference.rope_tables(1, rows // 64, 8, 8, device="cuda")

    def run_all() -> list[torch.Tensor]:
        poison(((1, rows, 2048), torch.bfloat16), ((1, rows, 2048), torch.bfloat16))
        return [
            *kernels.rms_norm_rope_qk(x, k, w, w, cos, sin, 1e-5),
            *kernels.add_rms_norm_modulate(x, r, gate, None, scale, shift, 1e-6),
            *kernels.add_rms_norm_modulate(x, r, None, None, scale, shift, 1e-6),
            kernels.rms_norm_modulate(x, None, scale, shift, 1e-6),
        ]

    was = kernels.set_cache_hints(False)
    try:
        plain = run_all()
        kernels.set_cache_hints(True)
        hinted = run_all()
    finally:
        kernels.set_cache_hints(was)
    for i, (a, b) in enumerate(zip(plain, hinted)):
        assert torch.equal(a, b), f"output {i} differs with the cache hints on"


def _kernel_names(fn: Callable[[], object]) -> list[str]:
    """Names of the CUDA kernels one call of fn launches (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    fn()  # first-call work (allocations, attribute queries) outside the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


@pytest.mark.parametrize(("rows", "prefetch"), [(1024, True), (2688, True), (4096, False)])
def test_the_default_qk_op_prefetches_on_calls_of_a_few_waves(kernels: ModuleType, rows: int, prefetch: bool) -> None:
    # qk_prefetch_default: up to 7 rounds of the persistent grid (3 blocks per SM) take the
    # prefetching kernel, longer calls the one-row-per-block lean kernel (measured on an H200); with
    # the cache hints switched on the hinted lean kernel instead, but only where the hint rule
    # applies: calls moving at most 3/2 of L2 (default_hints, kQkHintsNum / kQkHintsDen). Each
    # SM count moves the prefetch line (2772 rows on a 132-SM H200), so the sizes sit well
    # inside either side of it there; each L2 size moves the hint line (2688 rows move 88 MB:
    # inside it with the H200's 60 MiB, outside with the H100's 50 MiB, which keeps prefetching).
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    # q and k read and written in bf16, cos and sin read in fp32: the bytes default_hints weighs
    hints_apply = rows * 2048 * (4 * 2 + 2 * 4) * 2 <= props.L2_cache_size * 3
    if (rows <= 7 * 3 * sms) != prefetch:
        pytest.skip(f"{rows} rows are on the other side of the prefetch line with {sms} SMs")
    q, k = randn(1, rows, 2048, scale=2.0), randn(1, rows, 2048, seed=4, scale=0.5)
    cos, sin = kernels.reference.rope_tables(1, rows // 64, 8, 8, device="cuda")
    call = lambda: kernels.rms_norm_rope_qk(q, k, None, None, cos, sin, 1e-5)  # noqa: E731
    names = [n for n in _kernel_names(call) if "rms_norm_rope" in n]
    assert len(names) == 1, names
    assert ("rms_norm_rope_prefetch_kernel" in names[0]) == prefetch, names
    was = kernels.set_cache_hints(True)
    try:
        hinted = [n for n in _kernel_names(call) if "rms_norm_rope" in n]
    finally:
        kernels.set_cache_hints(was)
    assert len(hinted) == 1, hinted
    assert ("rms_norm_rope_prefetch_kernel" in hinted[0]) == (prefetch and not hints_apply), hinted


# --------------------------------------------------------------------- 64-bit indexing


@pytest.mark.slow
def test_more_than_2_31_elements(kernels: ModuleType) -> None:
    # 2^31 + 4096 bf16 elements (4.3 GB each for input and output): offsets past 2^31 must not
    # wrap. Checked on the last rows only (float64 of the whole tensor would need 17 GB).
    d = 2048
    rows = 2**31 // d + 2
    x = torch.empty(rows, d, device="cuda", dtype=torch.bfloat16)
    x.view(-1)[: 2**20].normal_()
    x[-16:].normal_()
    x.view(torch.int16)[2**20 // d : -16].fill_(0x3F80)  # 1.0 in bf16, cheap to fill
    out = kernels.rms_norm(x, None, 1e-6)
    assert_close(out[-16:], exact.rms_norm(x[-16:], None, 1e-6), torch.bfloat16)
    del out
    g = kernels.gelu_tanh(x)
    assert_close(g[-16:], exact.gelu_tanh(x[-16:]), torch.bfloat16)
    del g
    x3 = x.view(2, rows // 2, d)
    cos, sin = _tables("random", 1, rows // 2, d)  # broadcast over the batch: big row offsets
    r = kernels.rope_interleaved(x3, cos, sin)
    tail = x3[1, -8:]
    assert_close(r[1, -8:], exact.rope_interleaved(tail, cos[0, -8:], sin[0, -8:]), torch.bfloat16,
                 rope_magnitude(tail, cos[0, -8:], sin[0, -8:]))


# --------------------------------------------------------------------- API-level rules


def test_autograd_inputs_use_the_reference(kernels: ModuleType) -> None:
    x = randn(4, 64, dtype=torch.float32).requires_grad_()
    out = kernels.rms_norm(x, None, 1e-6)
    assert out.grad_fn is not None
    out.sum().backward()
    assert x.grad is not None


def test_runs_on_the_current_stream(kernels: ModuleType) -> None:
    x = randn(64, 2048, scale=2.0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2  # produced on the side stream; the kernel must run after it, on it
        out = kernels.rms_norm(y, None, 1e-6)
    side.synchronize()
    assert_close(out, exact.rms_norm(x * 2, None, 1e-6), torch.bfloat16)


@pytest.fixture
def pdl_restored(kernels: ModuleType):
    was = kernels.set_pdl(True)
    yield
    kernels.set_pdl(was)


def _dependent_chain(kernels: ModuleType, x: torch.Tensor, h: torch.Tensor, w: torch.Tensor, table: torch.Tensor,
                     cos: torch.Tensor, sin: torch.Tensor, rounds: int) -> list[torch.Tensor]:
    """Every op of the package back to back, each reading what the one before it wrote."""
    outs = []
    for _ in range(rounds):
        x = kernels.gelu_tanh(x)
        x = kernels.rms_norm(x, w, 1e-5)
        x = kernels.rms_norm_modulate(x, None, table[:, :, 1], table[:, :, 0], 1e-6)
        x, h = kernels.add_rms_norm_modulate(x, h, table[:, :, 2], None, table[:, :, 4], table[:, :, 3], 1e-6)
        q, k = kernels.rms_norm_rope_qk(x, h, w, w, cos, sin, 1e-5)
        x = kernels.rope_interleaved(q, cos, sin)
        h = kernels.rms_norm_rope(k, None, cos, sin, 1e-6)
        outs += [x, h]
    return outs


def test_pdl_chain_in_a_cuda_graph_equals_the_chain_without_pdl(kernels: ModuleType, pdl_restored) -> None:
    # With PDL each kernel's blocks start while its producer drains; only griddepcontrol.wait
    # keeps them from reading the producer's output early. A chain of dependent calls on
    # 8 MB tensors, replayed from a CUDA graph (back to back, the launches' tightest
    # packing), must give the PDL-off result bit for bit.
    x, h = randn(2, 1024, 2048, scale=2.0), randn(2, 1024, 2048, seed=3)
    w = randn(2048, seed=1, scale=0.4, shift=1.0)
    table = _ada_table(2, 1, 2048, torch.bfloat16)
    cos, sin = _tables("ltx", 2, 1024, 2048)
    kernels.set_pdl(False)
    want = _dependent_chain(kernels, x, h, w, table, cos, sin, rounds=4)
    kernels.set_pdl(True)
    eager = _dependent_chain(kernels, x, h, w, table, cos, sin, rounds=4)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up outside capture, as torch.cuda.graph asks
        _dependent_chain(kernels, x, h, w, table, cos, sin, rounds=1)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _dependent_chain(kernels, x, h, w, table, cos, sin, rounds=4)
    for _ in range(3):
        for t in captured:
            t.fill_(float("nan"))  # poisoned before every replay
        graph.replay()
        torch.cuda.synchronize()
        for i, (got, exp) in enumerate(zip(captured, want)):
            assert torch.equal(got, exp), f"output {i} differs with PDL in a graph"
    for i, (got, exp) in enumerate(zip(eager, want)):
        assert torch.equal(got, exp), f"output {i} differs with PDL"


@pytest.mark.parametrize("with_config", [False, True], ids=["default_ops", "with_config_ops"])
def test_pdl_on_and_off_give_identical_outputs(kernels: ModuleType, pdl_restored, with_config: bool) -> None:
    for name, (fn, args) in _api_calls(kernels).items():
        if name.endswith("_with_config") != with_config:
            continue
        kernels.set_pdl(False)
        off = fn(*args)
        kernels.set_pdl(True)
        on = fn(*args)
        off = off if isinstance(off, tuple) else (off,)
        on = on if isinstance(on, tuple) else (on,)
        for a, b in zip(off, on):
            assert torch.equal(a, b), name


def _api_calls(kernels: ModuleType) -> dict[str, tuple[Callable, tuple]]:
    x = randn(2, 24, 2048, scale=2.0)
    w = randn(2048, seed=1, scale=0.4, shift=1.0)
    table = _ada_table(2, 1, 2048, torch.bfloat16)
    cos, sin = _tables("random", 2, 24, 2048)
    return {
        "rms_norm": (kernels.rms_norm, (x, w, 1e-5)),
        "rms_norm_modulate": (kernels.rms_norm_modulate, (x, None, table[:, :, 1], table[:, :, 0], 1e-6)),
        "add_rms_norm_modulate": (
            kernels.add_rms_norm_modulate,
            (x, x * 0.5, table[:, :, 2], None, table[:, :, 4], table[:, :, 3], 1e-6),
        ),
        "gelu_tanh": (kernels.gelu_tanh, (x,)),
        "gelu_tanh_with_config": (kernels.gelu_tanh_with_config, (x, 128, 2)),
        "rope_interleaved": (kernels.rope_interleaved, (x, cos, sin)),
        "rms_norm_rope": (kernels.rms_norm_rope, (x, w, cos, sin, 1e-5)),
        "rms_norm_rope_qk": (kernels.rms_norm_rope_qk, (x, x * 0.5, w, w, cos, sin, 1e-5)),
        "rms_norm_modulate_with_config": (
            kernels.rms_norm_modulate_with_config, (x, w, table[:, :, 1], table[:, :, 0], 1e-6, 64, 4, 8, 3)),
        "add_rms_norm_modulate_with_config": (
            kernels.add_rms_norm_modulate_with_config,
            (x, x * 0.5, table[:, :, 2], w, table[:, :, 4], table[:, :, 3], 1e-6, 64, 4, 8, 3),
        ),
    }


@pytest.mark.parametrize(
    "name",
    ["rms_norm", "rms_norm_modulate", "add_rms_norm_modulate", "gelu_tanh", "gelu_tanh_with_config",
     "rope_interleaved", "rms_norm_rope", "rms_norm_rope_qk", "rms_norm_modulate_with_config",
     "add_rms_norm_modulate_with_config"],
)
def test_torch_compile_fullgraph(kernels: ModuleType, name: str) -> None:
    fn, args = _api_calls(kernels)[name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: fn(*a), fullgraph=True)
    eager = fn(*args)
    got = compiled(*args)
    eager = eager if isinstance(eager, tuple) else (eager,)
    got = got if isinstance(got, tuple) else (got,)
    for e, g in zip(eager, got):
        assert torch.equal(e, g)


@pytest.mark.parametrize(
    "name",
    ["rms_norm", "rms_norm_modulate", "add_rms_norm_modulate", "gelu_tanh", "gelu_tanh_with_config",
     "rope_interleaved", "rms_norm_rope", "rms_norm_rope_qk", "rms_norm_modulate_with_config",
     "add_rms_norm_modulate_with_config"],
)
def test_opcheck(kernels: ModuleType, name: str) -> None:
    _, args = _api_calls(kernels)[name]
    op = getattr(kernels.ops, name).default
    torch.library.opcheck(op, tuple(float(a) if isinstance(a, float) else a for a in args))
