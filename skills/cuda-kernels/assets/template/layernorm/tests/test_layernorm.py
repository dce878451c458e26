"""Correctness of the __NAME__ LayerNorm + AdaLN kernel against a float64 reference.

Every comparison uses fresh random inputs and a normwise relative error against a
float64 reference computed from the same (already rounded) inputs. The GPU sweep is the
kernel's contract (tests/kernel_checks.py): widths 1 to 16384, fp32/fp16/bf16,
contiguous, misaligned and strided rows, outputs poisoned with NaN, zero rows.

What the CPU tests here prove: the reference path, the argument checks, the fake kernel
and the op schema. tests/test_layernorm_emulated.py runs the CUDA kernels themselves on the CPU
(the skill's emulator: indexing, tails, reductions, barriers); speed, launch resources and
the memory model need the `gpu` tests.

Run after building (the package must be importable):
    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests
"""

from __future__ import annotations

import math

import pytest
import torch
from kernel_checks import (
    DTYPES,
    LAYOUTS,
    WIDTHS,
    check_close,
    make_input,
    nbytes_of,
    poisoned,
    random_tensor,
    run_under_sanitizer,
)

try:
    import __PKG__
    from __PKG__ import reference
    from __PKG__._ops import ops
except ImportError as exc:  # pragma: no cover - explains the one setup mistake everyone makes
    raise ImportError(
        "cannot import __PKG__: build it first and put the printed directory on PYTHONPATH, e.g.\n"
        "    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests"
    ) from exc

EPS = 1e-5
LEAD = (3, 5)  # 15 rows: 3 samples of 5 tokens for the AdaLN modulation


def reference_f64(x: torch.Tensor, weight=None, bias=None, scale=None, shift=None, eps: float = EPS) -> torch.Tensor:
    xd = x.double()
    mean = xd.mean(-1, keepdim=True)
    y = (xd - mean) * torch.rsqrt((xd - mean).square().mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    hidden = x.shape[-1]
    groups = (scale if scale is not None else shift).numel() // hidden if (scale is not None or shift is not None) else 1
    y = y.reshape(groups, -1, hidden)
    if scale is not None:
        y = y * (1 + scale.double().reshape(groups, 1, hidden))
    if shift is not None:
        y = y + shift.double().reshape(groups, 1, hidden)
    return y.reshape(x.shape)


# ----------------------------------------------------------------- CPU: reference path


@pytest.mark.parametrize("dtype", [*DTYPES, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (4, 1000), (2, 4100), (2, 3, 256)])
def test_cpu_tensors_use_the_reference_and_match_float64(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = random_tensor(shape, dtype, "cpu", seed=1, scale=2.0)
    w, b = random_tensor(shape[-1:], dtype, "cpu", seed=2), random_tensor(shape[-1:], dtype, "cpu", seed=3)
    sc, sh = random_tensor((shape[0], shape[-1]), dtype, "cpu", seed=4), random_tensor((shape[0], shape[-1]), dtype, "cpu", seed=5)
    out = __PKG__.layer_norm(x, w, b, EPS, sc, sh)
    torch.testing.assert_close(out, reference.layer_norm(x, w, b, EPS, sc, sh), rtol=0, atol=0)
    check_close(out, reference_f64(x, w, b, sc, sh), dtype)
    check_close(__PKG__.layer_norm(x), reference_f64(x), dtype)


def test_cpu_matches_torch_layer_norm() -> None:
    x = random_tensor((4, 96), torch.float32, "cpu", seed=6)
    w, b = random_tensor((96,), torch.float32, "cpu", seed=7), random_tensor((96,), torch.float32, "cpu", seed=8)
    torch.testing.assert_close(__PKG__.layer_norm(x, w, b, EPS), torch.nn.functional.layer_norm(x, (96,), w, b, EPS))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_bad_arguments_are_refused_on_any_device(device: str) -> None:
    x = random_tensor((4, 64), torch.float16, device, seed=3)
    ones = lambda *s: torch.ones(s, dtype=torch.float16, device=device)
    with pytest.raises(ValueError, match=r"weight must have shape \[64\]"):
        __PKG__.layer_norm(x, ones(63))
    with pytest.raises(ValueError, match=r"bias must have shape \[64\]"):
        __PKG__.layer_norm(x, None, ones(1, 64))
    with pytest.raises(ValueError, match="scale has 3 rows"):
        __PKG__.layer_norm(x, scale=ones(3, 64))
    with pytest.raises(ValueError, match="shift must end in 64"):
        __PKG__.layer_norm(x, shift=ones(4, 32))
    for eps in [-1.0, math.nan, math.inf]:
        with pytest.raises(ValueError, match="epsilon must be finite"):
            __PKG__.layer_norm(x, None, None, eps)


def test_fake_kernel_describes_the_output_for_torch_compile() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(6, 3, 512, dtype=torch.float16, device="cuda").transpose(0, 1)
        out = ops.layer_norm(x, None, None, None, None, EPS)
    assert out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()


def test_op_schema_is_the_declared_one() -> None:
    assert str(ops.layer_norm.default._schema).endswith(
        "layer_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? scale, Tensor? shift, float epsilon) -> Tensor")


# ------------------------------------------------------------------------- GPU: kernel


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", WIDTHS)
def test_layer_norm_sweep(width: int, dtype: torch.dtype, layout: str) -> None:
    # A large mean (+3) against unit spread: a one-pass E[x^2] - mean^2 would lose digits here.
    x = make_input(LEAD, width, dtype, layout, seed=width, scale=1.0) + 3.0 if layout == "contiguous" else \
        make_input(LEAD, width, dtype, layout, seed=width)
    w, b = random_tensor((width,), dtype, "cuda", seed=7), random_tensor((width,), dtype, "cuda", seed=8)
    sc = make_input((LEAD[0],), width, dtype, "misaligned", seed=9, scale=0.3)  # per-sample AdaLN rows
    sh = random_tensor((LEAD[0], 1, width), dtype, "cuda", seed=10)
    for args in [(w, b, None, None), (None, None, sc, sh), (w, b, sc, sh), (None, None, None, None)]:
        out = poisoned(lambda args=args: ops.layer_norm(x, *args, EPS), nbytes_of(x.shape, dtype))
        check_close(out, reference_f64(x, *args), dtype, f"layer_norm {width} {dtype} {layout} {[a is not None for a in args]}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 40000), (2, 70000), (257, 128)])
def test_beyond_the_sweep(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # Rows too wide for the register cache (three passes over x) and narrow rows.
    x = random_tensor(shape, dtype, "cuda", seed=11)
    w = random_tensor(shape[-1:], dtype, "cuda", seed=12)
    check_close(ops.layer_norm(x, w, w, None, None, EPS), reference_f64(x, w, w), dtype)


@pytest.mark.gpu
def test_two_reductions_with_one_buffer_have_no_race() -> None:
    # The mean and the variance reduce through one shared buffer; without row_sum's leading
    # barrier a fast warp's variance partial overwrites a slow warp's unread mean partial.
    # Many wide rows (1024-thread blocks, 32 warps) whose means differ from row to row (0..8:
    # far larger offsets would measure fp32 summation error, not races).
    x = random_tensor((4096, 8192), torch.float32, "cuda", seed=13)
    x = x + torch.arange(4096, device="cuda", dtype=torch.float32)[:, None] / 512
    for _ in range(3):
        check_close(ops.layer_norm(x, None, None, None, None, EPS), reference_f64(x), torch.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(0, 128), (4, 0), (2, 0, 64)])
def test_empty_input_launches_nothing(shape: tuple[int, ...]) -> None:
    x = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
    assert ops.layer_norm(x, None, None, None, None, EPS).shape == x.shape


@pytest.mark.gpu
def test_binding_rejects_bad_arguments() -> None:
    x = random_tensor((4, 64), torch.float16, "cuda", seed=12)
    with pytest.raises(RuntimeError, match="weight must have shape"):
        ops.layer_norm(x, torch.ones(63, dtype=torch.float16, device="cuda"), None, None, None, EPS)
    with pytest.raises(RuntimeError, match="bias dtype"):
        ops.layer_norm(x, None, torch.ones(64, dtype=torch.float32, device="cuda"), None, None, EPS)
    with pytest.raises(RuntimeError, match="do not divide"):
        ops.layer_norm(x, None, None, torch.ones(3, 64, dtype=torch.float16, device="cuda"), None, EPS)
    with pytest.raises(RuntimeError, match="epsilon"):
        ops.layer_norm(x, None, None, None, None, -1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(dtype: torch.dtype) -> None:
    x = random_tensor((4, 4, 384), dtype, "cuda", seed=15)
    w = random_tensor((384,), dtype, "cuda", seed=16)
    sc = random_tensor((4, 1, 384), dtype, "cuda", seed=17)
    torch.library.opcheck(ops.layer_norm.default, (x, w, w, sc, sc, EPS))
    torch.library.opcheck(ops.layer_norm.default, (x, None, None, None, None, EPS))


@pytest.mark.gpu
def test_torch_compile_fullgraph() -> None:
    torch._dynamo.reset()

    def block(x: torch.Tensor, sc: torch.Tensor, sh: torch.Tensor) -> torch.Tensor:
        return __PKG__.layer_norm(x * 2.0, None, None, 1e-6, sc, sh) + 1.0

    x = random_tensor((2, 16, 1024), torch.bfloat16, "cuda", seed=17)
    sc, sh = random_tensor((2, 1024), torch.bfloat16, "cuda", seed=18), random_tensor((2, 1024), torch.bfloat16, "cuda", seed=19)
    torch.testing.assert_close(torch.compile(block, fullgraph=True)(x, sc, sh), block(x, sc, sh))


def sanitizer_sweep() -> None:
    """A small sweep for compute-sanitizer: every dtype and layout at awkward widths."""
    for width in (1, 33, 1000, 4100):
        for dtype in DTYPES:
            for layout in LAYOUTS:
                x = make_input((2, 3), width, dtype, layout, seed=width)
                w = random_tensor((width,), dtype, "cuda", seed=1)
                sc = make_input((2,), width, dtype, "misaligned", seed=2)
                ops.layer_norm(x, w, w, sc, sc, EPS)
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_compute_sanitizer(tool: str) -> None:
    run_under_sanitizer("test___OP__", "sanitizer_sweep", tool)
