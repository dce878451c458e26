"""Correctness of the __NAME__ RMSNorm kernels against a float64 reference.

Every comparison uses fresh random inputs and a normwise relative error against a
float64 reference computed from the same (already rounded) inputs. The GPU sweep is the
kernels' contract (tests/kernel_checks.py): widths 1 to 16384, fp32/fp16/bf16,
contiguous, misaligned and strided rows, outputs poisoned with NaN, zero rows.

What the CPU tests here prove: the reference path, the argument checks, the fake kernel
and the op schema. tests/test_rmsnorm_emulated.py runs the CUDA kernels themselves on the CPU
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

EPS = 1e-6
LEAD = (3, 5)  # 15 rows: several blocks, and narrow rows share blocks


def reference_f64(x: torch.Tensor, weight: torch.Tensor | None, eps: float = EPS) -> torch.Tensor:
    xd = x.double()
    y = xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + eps)
    return y * weight.double() if weight is not None else y


def fused_reference_f64(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None,
                        eps: float = EPS) -> tuple[torch.Tensor, torch.Tensor]:
    compute = torch.promote_types(x.dtype, torch.float32)
    s = (x.to(compute) + residual.to(compute)).to(x.dtype)  # the sum is rounded to the dtype, as the kernel does
    return reference_f64(s, weight, eps), s.double()


# ----------------------------------------------------------------- CPU: reference path


@pytest.mark.parametrize("dtype", [*DTYPES, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (4, 1000), (2, 4100), (2, 3, 256)])
def test_cpu_tensors_use_the_reference_and_match_float64(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = random_tensor(shape, dtype, "cpu", seed=1)
    w = random_tensor(shape[-1:], dtype, "cpu", seed=2)
    out = __PKG__.rms_norm(x, w, EPS)
    torch.testing.assert_close(out, reference.rms_norm(x, w, EPS), rtol=0, atol=0)
    check_close(out, reference_f64(x, w), dtype)
    r = random_tensor(shape, dtype, "cpu", seed=3)
    y, s = __PKG__.fused_add_rms_norm(x, r, w, EPS)
    ref_y, ref_s = fused_reference_f64(x, r, w)
    check_close(y, ref_y, dtype)
    check_close(s, ref_s, dtype)


@pytest.mark.parametrize("shape", [(0, 64), (3, 0), (2, 0, 16)])
def test_cpu_empty_input_keeps_shape(shape: tuple[int, ...]) -> None:
    x = torch.empty(shape, dtype=torch.bfloat16)
    out = __PKG__.rms_norm(x, torch.ones(shape[-1], dtype=torch.bfloat16))
    assert out.shape == x.shape and out.dtype == x.dtype


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_bad_arguments_are_refused_on_any_device(device: str) -> None:
    x = random_tensor((4, 64), torch.float16, device, seed=3)
    # A [1] weight would broadcast on the reference path: refused like the binding refuses it.
    for shape in [(1,), (63,), (1, 64)]:
        with pytest.raises(ValueError, match=r"weight must have shape \[64\]"):
            __PKG__.rms_norm(x, torch.ones(shape, dtype=torch.float16, device=device))
    for eps in [-1.0, math.nan, math.inf]:
        with pytest.raises(ValueError, match="epsilon must be finite"):
            __PKG__.rms_norm(x, None, eps)
        with pytest.raises(ValueError, match="epsilon must be finite"):
            __PKG__.fused_add_rms_norm(x, x, None, eps)
    with pytest.raises(ValueError, match="at least one dimension"):
        __PKG__.rms_norm(x[0, 0], None)
    with pytest.raises(ValueError, match="residual must have the input's shape"):
        __PKG__.fused_add_rms_norm(x, x[:2], None)


def test_fake_kernels_describe_the_outputs_for_torch_compile() -> None:
    # FakeTensorMode runs the registered fake kernels; it works without a GPU.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(6, 3, 512, dtype=torch.float16, device="cuda").transpose(0, 1)
        w = torch.empty(512, dtype=torch.float16, device="cuda")
        outs = [ops.rms_norm(x, w, EPS), __PKG__.rms_norm(x, None), *ops.fused_add_rms_norm(x, x, w, EPS)]
    for y in outs:
        assert y.shape == x.shape and y.dtype == x.dtype and y.device.type == "cuda"
        assert y.is_contiguous()


def test_op_schemas_are_the_declared_ones() -> None:
    assert str(ops.rms_norm.default._schema).endswith("rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor")
    assert str(ops.fused_add_rms_norm.default._schema).endswith(
        "fused_add_rms_norm(Tensor input, Tensor residual, Tensor? weight, float epsilon) -> (Tensor, Tensor)")


# ------------------------------------------------------------------------- GPU: kernel


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", WIDTHS)
def test_rms_norm_sweep(width: int, dtype: torch.dtype, layout: str) -> None:
    x = make_input(LEAD, width, dtype, layout, seed=width)
    w = random_tensor((width,), dtype, "cuda", seed=7)
    for weight in (w, None):
        out = poisoned(lambda weight=weight: ops.rms_norm(x, weight, EPS), nbytes_of(x.shape, dtype))
        check_close(out, reference_f64(x, weight), dtype, f"rms_norm {width} {dtype} {layout} weight={weight is not None}")


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", WIDTHS)
def test_fused_add_rms_norm_sweep(width: int, dtype: torch.dtype, layout: str) -> None:
    x = make_input(LEAD, width, dtype, layout, seed=width)
    # The residual in the other layout than x (contiguous when x is not): their phases differ.
    r = make_input(LEAD, width, dtype, "contiguous" if layout != "contiguous" else "misaligned", seed=width + 1)
    w = random_tensor((width,), dtype, "cuda", seed=8)
    y, s = poisoned(lambda: ops.fused_add_rms_norm(x, r, w, EPS), 2 * nbytes_of(x.shape, dtype))
    ref_y, ref_s = fused_reference_f64(x, r, w)
    check_close(s, ref_s, dtype, f"sum {width} {dtype} {layout}")
    check_close(y, ref_y, dtype, f"norm {width} {dtype} {layout}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(40000,), (2, 3, 70000), (5, 7, 128)])
def test_beyond_the_sweep(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # Rows too wide for the register cache (the re-reading path) and narrow q/k-norm rows.
    x = random_tensor(shape, dtype, "cuda", seed=9)
    w = random_tensor(shape[-1:], dtype, "cuda", seed=10)
    check_close(ops.rms_norm(x, w, EPS), reference_f64(x, w), dtype)
    y, s = ops.fused_add_rms_norm(x, x, w, EPS)
    ref_y, ref_s = fused_reference_f64(x, x, w)
    check_close(y, ref_y, dtype)
    check_close(s, ref_s, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["transposed", "broadcast_rows", "3d_permuted"])
def test_other_non_contiguous_inputs(layout: str) -> None:
    dtype, hidden = torch.bfloat16, 1024
    x = {
        "transposed": lambda: random_tensor((hidden, 48), dtype, "cuda", seed=4).t(),
        "broadcast_rows": lambda: random_tensor((hidden,), dtype, "cuda", seed=5).expand(16, hidden),  # row stride 0
        "3d_permuted": lambda: random_tensor((8, 4, hidden), dtype, "cuda", seed=6).permute(1, 0, 2),
    }[layout]()
    w = random_tensor((hidden,), dtype, "cuda", seed=6)
    check_close(ops.rms_norm(x, w, EPS), reference_f64(x, w), dtype)


@pytest.mark.gpu
def test_poisoned_block_is_the_output() -> None:
    # The sweep's poisoning proves something only if the allocator reuses the block.
    x = random_tensor((7, 4100), torch.bfloat16, "cuda", seed=8)
    poison = torch.full((7 * 4100,), float("nan"), dtype=torch.bfloat16, device="cuda")
    poisoned_ptr = poison.data_ptr()
    del poison
    out = ops.rms_norm(x, None, EPS)
    assert out.data_ptr() == poisoned_ptr, "allocator did not reuse the poisoned block; the test proves nothing"
    check_close(out, reference_f64(x, None), torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(0, 128), (4, 0), (2, 0, 64)])
def test_empty_input_launches_nothing(shape: tuple[int, ...]) -> None:
    x = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
    w = torch.ones(shape[-1], dtype=torch.bfloat16, device="cuda")
    assert ops.rms_norm(x, w, EPS).shape == x.shape
    assert all(t.shape == x.shape for t in ops.fused_add_rms_norm(x, x, w, EPS))


@pytest.mark.gpu
@pytest.mark.parametrize("scale", [3e4, 1e-4])
def test_fp16_extremes_accumulate_in_fp32(scale: float) -> None:
    # Squares of 3e4 overflow fp16 and squares of 1e-4 underflow it; fp32 sums do neither.
    x = random_tensor((4, 2048), torch.float16, "cuda", seed=9, scale=scale).clamp(-6e4, 6e4)
    check_close(ops.rms_norm(x, None, EPS), reference_f64(x, None), torch.float16)


@pytest.mark.gpu
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.1])
def test_epsilon_is_applied(eps: float) -> None:
    x = random_tensor((8, 512), torch.float32, "cuda", seed=10, scale=0.01)  # small rows make eps matter
    check_close(ops.rms_norm(x, None, eps), reference_f64(x, None, eps), torch.float32)


@pytest.mark.gpu
def test_runs_on_the_current_stream() -> None:
    x = random_tensor((4096, 1024), torch.bfloat16, "cuda", seed=11)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = ops.rms_norm(x, None, EPS)
    side.synchronize()
    check_close(out, reference_f64(x, None), torch.bfloat16)


@pytest.mark.gpu
def test_binding_rejects_bad_arguments() -> None:
    x = random_tensor((4, 64), torch.float16, "cuda", seed=12)
    with pytest.raises(RuntimeError, match="weight must have shape"):
        ops.rms_norm(x, torch.ones(63, dtype=torch.float16, device="cuda"), EPS)
    with pytest.raises(RuntimeError, match="weight dtype"):
        ops.rms_norm(x, torch.ones(64, dtype=torch.float32, device="cuda"), EPS)
    with pytest.raises(RuntimeError, match="dtype must be"):
        ops.rms_norm(x.double(), None, EPS)
    with pytest.raises(RuntimeError, match="epsilon"):
        ops.rms_norm(x, None, -1.0)
    with pytest.raises(RuntimeError, match="residual must have"):
        ops.fused_add_rms_norm(x, x[:2], None, EPS)


@pytest.mark.gpu
def test_python_api_falls_back_where_the_kernel_does_not_apply() -> None:
    x = random_tensor((4, 64), torch.bfloat16, "cuda", seed=13)
    w32 = random_tensor((64,), torch.float32, "cuda", seed=14)
    torch.testing.assert_close(__PKG__.rms_norm(x, w32), reference.rms_norm(x, w32), rtol=0, atol=0)
    xg = x.float().requires_grad_()
    __PKG__.rms_norm(xg, None).sum().backward()  # the reference is differentiable
    assert xg.grad is not None and torch.isfinite(xg.grad).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(dtype: torch.dtype) -> None:
    # Schema, fake kernel and AOT dispatch agree with the real kernel.
    x = random_tensor((16, 384), dtype, "cuda", seed=15)
    w = random_tensor((384,), dtype, "cuda", seed=16)
    torch.library.opcheck(ops.rms_norm.default, (x, w, EPS))
    torch.library.opcheck(ops.rms_norm.default, (x, None, EPS))
    torch.library.opcheck(ops.fused_add_rms_norm.default, (x, x * 0.5, w, EPS))


@pytest.mark.gpu
def test_torch_compile_fullgraph() -> None:
    torch._dynamo.reset()

    def block(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y, s = __PKG__.fused_add_rms_norm(x * 2.0, r, w, EPS)
        return __PKG__.rms_norm(y, w, EPS) + s

    x = random_tensor((32, 1024), torch.bfloat16, "cuda", seed=17)
    r = random_tensor((32, 1024), torch.bfloat16, "cuda", seed=19)
    w = random_tensor((1024,), torch.bfloat16, "cuda", seed=18)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x, r, w), block(x, r, w))


def sanitizer_sweep() -> None:
    """A small sweep for compute-sanitizer: every dtype and layout at awkward widths."""
    for width in (1, 33, 1000, 4100):
        for dtype in DTYPES:
            for layout in LAYOUTS:
                x = make_input((3,), width, dtype, layout, seed=width)
                w = random_tensor((width,), dtype, "cuda", seed=1)
                ops.rms_norm(x, w, EPS)
                ops.fused_add_rms_norm(x, x, w, EPS)
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_compute_sanitizer(tool: str) -> None:
    run_under_sanitizer("test___OP__", "sanitizer_sweep", tool)
