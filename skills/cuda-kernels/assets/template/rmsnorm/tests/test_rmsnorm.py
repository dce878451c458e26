"""Correctness of the __NAME__ RMSNorm kernel against a float64 reference.

Every comparison uses fresh random inputs and a normwise relative error,
max|out - ref| / max|ref|, with the float64 reference computed from the same
(already rounded) inputs. The bound per dtype is what one rounding of the output
plus fp32 accumulation allows. Sizes are awkward on purpose: 1, odd, primes,
non-multiples of the 8-element vector width, narrow rows that share a block, rows too
wide for the register cache, strided and non-contiguous views.

Run after building (the package must be importable):
    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests
"""

from __future__ import annotations

import math

import pytest
import torch

try:
    import __PKG__
    from __PKG__ import reference
    from __PKG__._ops import ops
except ImportError as exc:  # pragma: no cover - explains the one setup mistake everyone makes
    raise ImportError(
        "cannot import __PKG__: build it first and put the printed directory on PYTHONPATH, e.g.\n"
        "    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests"
    ) from exc

KERNEL_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Normwise relative error bounds vs float64. fp16/bf16: one output rounding is 2^-11 /
# 2^-8 relative; fp32: rsqrtf (2 ulp) plus a short fp32 summation.
TOLERANCE = {torch.float32: 2e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-12}
EPS = 1e-6

SHAPES = [
    (1, 1),
    (3, 7),
    (5, 127),
    (257, 128),  # narrow rows: several rows per block
    (33, 64),
    (4, 1000),
    (3, 4096),
    (2, 4100),  # not a multiple of 8: scalar kernel
    (2, 5120),
    (1, 8193),
    (2, 3, 256),  # leading dimensions
    (2, 40000),  # fp32: wider than the register cache (1024 threads x 8 vectors x 4): scalar kernel
]


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int, scale: float = 1.0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    # A non-zero mean keeps the rows away from the all-symmetric case.
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * scale + 0.25 * scale
    return x.to(device=device, dtype=dtype)


def reference_f64(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    xd = x.double()
    y = xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + eps)
    return y * weight.double() if weight is not None else y


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def check(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None, eps: float = EPS) -> None:
    assert out.shape == x.shape and out.dtype == x.dtype and out.device == x.device
    assert out.is_contiguous()
    assert torch.isfinite(out).all(), "non-finite values in the output"
    err = rel_err(out, reference_f64(x, weight, eps))
    assert err <= TOLERANCE[x.dtype], f"relative error {err:.3g} > {TOLERANCE[x.dtype]:.3g} for {x.dtype} {tuple(x.shape)}"


# ----------------------------------------------------------------- CPU: reference path


@pytest.mark.parametrize("dtype", [*KERNEL_DTYPES, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (4, 1000), (2, 4100), (2, 3, 256)])
def test_cpu_tensors_use_the_reference_and_match_float64(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = random_tensor(shape, dtype, "cpu", seed=1)
    w = random_tensor(shape[-1:], dtype, "cpu", seed=2)
    out = __PKG__.rms_norm(x, w, EPS)
    torch.testing.assert_close(out, reference.rms_norm(x, w, EPS), rtol=0, atol=0)
    check(out, x, w)


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
    with pytest.raises(ValueError, match="at least one dimension"):
        __PKG__.rms_norm(x[0, 0], None)


def test_fake_kernel_describes_the_output_for_torch_compile() -> None:
    # FakeTensorMode runs the registered fake kernel; it works without a GPU.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(6, 3, 512, dtype=torch.float16, device="cuda").transpose(0, 1)
        w = torch.empty(512, dtype=torch.float16, device="cuda")
        out = ops.rms_norm(x, w, EPS)
        routed = __PKG__.rms_norm(x, None)
    for y in (out, routed):
        assert y.shape == x.shape and y.dtype == x.dtype and y.device.type == "cuda"
        assert y.is_contiguous()


def test_op_schema_is_the_declared_one() -> None:
    schema = str(ops.rms_norm.default._schema)
    assert schema.endswith("rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor")


# ------------------------------------------------------------------------- GPU: kernel


@pytest.mark.gpu
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_kernel_matches_float64(shape: tuple[int, ...], dtype: torch.dtype, with_weight: bool) -> None:
    x = random_tensor(shape, dtype, "cuda", seed=hash(shape) % 1000)
    w = random_tensor(shape[-1:], dtype, "cuda", seed=7) if with_weight else None
    check(ops.rms_norm(x, w, EPS), x, w)
    check(__PKG__.rms_norm(x, w, EPS), x, w)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(
    "layout",
    ["column_slice", "misaligned_slice", "every_other_row", "transposed", "broadcast_rows", "3d_permuted"],
)
def test_non_contiguous_inputs(layout: str, dtype: torch.dtype) -> None:
    hidden = 1024
    base = random_tensor((64, hidden + 40), dtype, "cuda", seed=3)
    x = {
        "column_slice": lambda: base[:, :hidden],  # strided rows, aligned: vector path
        "misaligned_slice": lambda: base[:, 1 : hidden + 1],  # row starts off by one element: scalar path
        "every_other_row": lambda: base[::2, :hidden],
        "transposed": lambda: random_tensor((hidden, 48), dtype, "cuda", seed=4).t(),
        "broadcast_rows": lambda: base[0, :hidden].expand(16, hidden),  # row stride 0
        "3d_permuted": lambda: random_tensor((8, 4, hidden), dtype, "cuda", seed=5).permute(1, 0, 2),
    }[layout]()
    assert not x.is_contiguous()
    w = random_tensor((hidden,), dtype, "cuda", seed=6)
    check(ops.rms_norm(x, w, EPS), x, w)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("shape", [(513, 128), (7, 4096), (3, 4100)])
def test_every_output_element_is_written(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # Poison the block the caching allocator will hand to the op's output with NaN.
    x = random_tensor(shape, dtype, "cuda", seed=8)
    poison = torch.full((math.prod(shape),), float("nan"), dtype=dtype, device="cuda")
    poisoned_ptr = poison.data_ptr()
    del poison
    out = ops.rms_norm(x, None, EPS)
    assert out.data_ptr() == poisoned_ptr, "allocator did not reuse the poisoned block; the test proves nothing"
    check(out, x, None)


@pytest.mark.gpu
@pytest.mark.parametrize("scale", [3e4, 1e-4])
def test_fp16_extremes_accumulate_in_fp32(scale: float) -> None:
    # Squares of 3e4 overflow fp16 and squares of 1e-4 underflow it; fp32 sums do neither.
    x = random_tensor((4, 2048), torch.float16, "cuda", seed=9, scale=scale).clamp(-6e4, 6e4)
    check(ops.rms_norm(x, None, EPS), x, None)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(0, 128), (4, 0), (2, 0, 64)])
def test_empty_input_launches_nothing(shape: tuple[int, ...]) -> None:
    x = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
    out = ops.rms_norm(x, torch.ones(shape[-1], dtype=torch.bfloat16, device="cuda"), EPS)
    assert out.shape == x.shape and out.dtype == x.dtype


@pytest.mark.gpu
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.1])
def test_epsilon_is_applied(eps: float) -> None:
    x = random_tensor((8, 512), torch.float32, "cuda", seed=10, scale=0.01)  # small rows make eps matter
    check(ops.rms_norm(x, None, eps), x, None, eps)


@pytest.mark.gpu
def test_runs_on_the_current_stream() -> None:
    x = random_tensor((4096, 1024), torch.bfloat16, "cuda", seed=11)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = ops.rms_norm(x, None, EPS)
    side.synchronize()
    check(out, x, None)


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


@pytest.mark.gpu
def test_python_api_falls_back_where_the_kernel_does_not_apply() -> None:
    x = random_tensor((4, 64), torch.bfloat16, "cuda", seed=13)
    w32 = random_tensor((64,), torch.float32, "cuda", seed=14)
    torch.testing.assert_close(__PKG__.rms_norm(x, w32), reference.rms_norm(x, w32), rtol=0, atol=0)
    xg = x.float().requires_grad_()
    __PKG__.rms_norm(xg, None).sum().backward()  # the reference is differentiable
    assert xg.grad is not None and torch.isfinite(xg.grad).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
def test_opcheck(dtype: torch.dtype) -> None:
    # Schema, fake kernel and AOT dispatch agree with the real kernel.
    x = random_tensor((16, 384), dtype, "cuda", seed=15)
    w = random_tensor((384,), dtype, "cuda", seed=16)
    torch.library.opcheck(ops.rms_norm.default, (x, w, EPS))
    torch.library.opcheck(ops.rms_norm.default, (x, None, EPS))


@pytest.mark.gpu
def test_torch_compile_fullgraph() -> None:
    torch._dynamo.reset()

    def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return __PKG__.rms_norm(x * 2.0, w, EPS) + 1.0

    x = random_tensor((32, 1024), torch.bfloat16, "cuda", seed=17)
    w = random_tensor((1024,), torch.bfloat16, "cuda", seed=18)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x, w), block(x, w))
