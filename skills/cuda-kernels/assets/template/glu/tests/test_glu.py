"""Correctness of the __NAME__ gated-activation kernel against a float64 reference.

Every comparison uses fresh random inputs and a normwise relative error,
max|out - ref| / max|ref|, with the float64 reference computed from the same (already
rounded) inputs. The bound per dtype is what one rounding of the output plus fp32 math
allows. Sizes are awkward on purpose: one element, halves that are odd or not a multiple
of the 16-byte pack, strided and misaligned views, leading dimensions.

The GPU sweep is the kernel's contract (tests/kernel_checks.py): output widths 1 to 16384,
fp32/fp16/bf16, contiguous, misaligned and strided rows, outputs poisoned with NaN.
What the CPU tests here prove: the reference path, the argument checks, the fake kernel
and the op schema. tests/test_glu_emulated.py runs the CUDA kernels themselves on the CPU
(the skill's emulator: indexing, tails, reductions, barriers); speed, launch resources and
the memory model need the `gpu` tests.

Run after building (the package must be importable):
    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from kernel_checks import (
    DTYPES,
    LAYOUTS,
    WIDTHS,
    make_input,
    nbytes_of,
    poisoned,
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

KERNEL_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Normwise relative error bounds vs float64: one output rounding (fp16 2^-11, bf16 2^-8)
# plus fp32 transcendental functions (a few ulp).
TOLERANCE = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-12}
ACTIVATIONS = ["silu", "gelu", "gelu_tanh"]
F64 = {
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
}

SHAPES = [
    (1, 2),  # d = 1
    (3, 14),  # d = 7: scalar kernel
    (5, 200),  # d = 100: not a multiple of 8 halves (scalar for fp16/bf16, vector for fp32)
    (4, 256),
    (2, 3, 512),  # leading dimensions
    (7, 8192),
    (1, 24576),  # one token of a 12288-wide MLP
    (33, 2 * 4100),  # d = 4100
]


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int, scale: float = 2.0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    # Spread over the activations' curved region (|x| up to ~8) and both signs.
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * scale + 0.1
    return x.to(device=device, dtype=dtype)


def reference_f64(x: torch.Tensor, activation: str, gate_first: bool) -> torch.Tensor:
    first, second = x.double().chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    return F64[activation](gate) * up


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def check(out: torch.Tensor, x: torch.Tensor, activation: str, gate_first: bool) -> None:
    assert out.shape == (*x.shape[:-1], x.shape[-1] // 2) and out.dtype == x.dtype and out.device == x.device
    assert out.is_contiguous()
    assert torch.isfinite(out).all(), "non-finite values in the output"
    err = rel_err(out, reference_f64(x, activation, gate_first))
    assert err <= TOLERANCE[x.dtype], f"relative error {err:.3g} > {TOLERANCE[x.dtype]:.3g} for {x.dtype} {tuple(x.shape)}"


# ----------------------------------------------------------------- CPU: reference path


@pytest.mark.parametrize("gate_first", [True, False])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [*KERNEL_DTYPES, torch.float64])
def test_cpu_tensors_use_the_reference_and_match_float64(dtype: torch.dtype, activation: str, gate_first: bool) -> None:
    x = random_tensor((3, 5, 64), dtype, "cpu", seed=1)
    out = __PKG__.glu(x, activation, gate_first)
    torch.testing.assert_close(out, reference.glu(x, activation, gate_first), rtol=0, atol=0)
    check(out, x, activation, gate_first)


def test_gate_first_picks_the_half_that_goes_through_the_activation() -> None:
    x = torch.tensor([[-1.0, 3.0]])  # halves: a = -1, b = 3
    assert __PKG__.glu(x, "silu", gate_first=True).item() == pytest.approx(F.silu(torch.tensor(-1.0)).item() * 3.0)
    assert __PKG__.glu(x, "silu", gate_first=False).item() == pytest.approx(F.silu(torch.tensor(3.0)).item() * -1.0)


@pytest.mark.parametrize("shape", [(0, 64), (3, 0), (2, 0, 16)])
def test_cpu_empty_input_keeps_shape(shape: tuple[int, ...]) -> None:
    x = torch.empty(shape, dtype=torch.bfloat16)
    out = __PKG__.glu(x)
    assert out.shape == (*shape[:-1], shape[-1] // 2) and out.dtype == x.dtype


def test_bad_arguments_are_refused_on_any_device() -> None:
    with pytest.raises(ValueError, match="activation must be one of"):
        __PKG__.glu(torch.ones(2, 4), "relu")
    with pytest.raises(ValueError, match="last dimension must be even"):
        __PKG__.glu(torch.ones(2, 5))


def test_fake_kernel_describes_the_output_for_torch_compile() -> None:
    # FakeTensorMode runs the registered fake kernel; it works without a GPU.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(6, 3, 512, dtype=torch.float16, device="cuda").transpose(0, 1)
        out = ops.glu(x, "gelu", False)
        routed = __PKG__.glu(x, "silu")
        for y in (out, routed):
            assert y.shape == (3, 6, 256) and y.dtype == x.dtype and y.device.type == "cuda"
            assert y.is_contiguous()
        with pytest.raises(RuntimeError, match="last dimension must be even"):
            ops.glu(torch.empty(4, 7, dtype=torch.float16, device="cuda"), "silu", True)


def test_op_schema_is_the_declared_one() -> None:
    schema = str(ops.glu.default._schema)
    assert schema.endswith("glu(Tensor input, str activation, bool gate_first) -> Tensor")


# ------------------------------------------------------------------------- GPU: kernel


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", WIDTHS)
def test_glu_sweep(width: int, dtype: torch.dtype, layout: str) -> None:
    # width = d, the output's last dimension; the input rows hold both halves (2d).
    x = make_input((3, 5), 2 * width, dtype, layout, seed=width, scale=2.0)
    for activation, gate_first in [("silu", True), ("gelu", False), ("gelu_tanh", True)]:
        out = poisoned(lambda a=activation, g=gate_first: ops.glu(x, a, g), nbytes_of(x.shape, dtype) // 2)
        check(out, x, activation, gate_first)


def sanitizer_sweep() -> None:
    """A small sweep for compute-sanitizer: every dtype and layout at awkward widths."""
    for width in (1, 33, 1000, 4100):
        for dtype in DTYPES:
            for layout in LAYOUTS:
                x = make_input((3,), 2 * width, dtype, layout, seed=width)
                ops.glu(x, "silu", True)
                ops.glu(x, "gelu", False)
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_compute_sanitizer(tool: str) -> None:
    run_under_sanitizer("test___OP__", "sanitizer_sweep", tool)


@pytest.mark.gpu
@pytest.mark.parametrize("gate_first", [True, False])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_kernel_matches_float64(shape: tuple[int, ...], dtype: torch.dtype, activation: str, gate_first: bool) -> None:
    x = random_tensor(shape, dtype, "cuda", seed=sum(shape))
    check(ops.glu(x, activation, gate_first), x, activation, gate_first)
    check(__PKG__.glu(x, activation, gate_first), x, activation, gate_first)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(
    "layout", ["column_slice", "misaligned_slice", "every_other_row", "transposed", "broadcast_rows", "3d_permuted"]
)
def test_non_contiguous_inputs(layout: str, dtype: torch.dtype) -> None:
    width = 1024
    base = random_tensor((64, width + 40), dtype, "cuda", seed=3)
    x = {
        "column_slice": lambda: base[:, :width],  # strided rows, aligned: vector path
        "misaligned_slice": lambda: base[:, 1 : width + 1],  # rows start one element off: scalar path
        "every_other_row": lambda: base[::2, :width],
        "transposed": lambda: random_tensor((width, 48), dtype, "cuda", seed=4).t(),
        "broadcast_rows": lambda: base[0, :width].expand(16, width),  # row stride 0
        "3d_permuted": lambda: random_tensor((8, 4, width), dtype, "cuda", seed=5).permute(1, 0, 2),
    }[layout]()
    assert not x.is_contiguous()
    for gate_first in (True, False):
        check(ops.glu(x, "silu", gate_first), x, "silu", gate_first)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("shape", [(513, 256), (7, 8192), (3, 2 * 4100)])
def test_every_output_element_is_written(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # Poison the block the caching allocator will hand to the op's output with NaN.
    x = random_tensor(shape, dtype, "cuda", seed=8)
    poison = torch.full((math.prod(shape) // 2,), float("nan"), dtype=dtype, device="cuda")
    poisoned_ptr = poison.data_ptr()
    del poison
    out = ops.glu(x, "gelu_tanh", True)
    assert out.data_ptr() == poisoned_ptr, "allocator did not reuse the poisoned block; the test proves nothing"
    check(out, x, "gelu_tanh", True)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(0, 128), (4, 0), (2, 0, 64)])
def test_empty_input_launches_nothing(shape: tuple[int, ...]) -> None:
    x = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
    out = ops.glu(x, "silu", True)
    assert out.shape == (*shape[:-1], shape[-1] // 2) and out.dtype == x.dtype


@pytest.mark.gpu
def test_large_activations_saturate_without_nan() -> None:
    # exp(100) overflows fp32 to inf: v / (1 + exp(-v)) must give -0 at v = -100, not NaN.
    x = torch.tensor([[-100.0, 50.0, 100.0, -3.0, 2.0, 2.0, 2.0, 2.0]], device="cuda")
    for activation in ACTIVATIONS:
        check(ops.glu(x, activation, True), x, activation, True)


@pytest.mark.gpu
def test_runs_on_the_current_stream() -> None:
    x = random_tensor((4096, 2048), torch.bfloat16, "cuda", seed=11)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = ops.glu(x, "silu", True)
    side.synchronize()
    check(out, x, "silu", True)


@pytest.mark.gpu
def test_binding_rejects_bad_arguments() -> None:
    x = random_tensor((4, 64), torch.float16, "cuda", seed=12)
    with pytest.raises(RuntimeError, match="last dimension must be even"):
        ops.glu(x[:, :63], "silu", True)
    with pytest.raises(RuntimeError, match="dtype must be"):
        ops.glu(x.double(), "silu", True)
    with pytest.raises(RuntimeError, match="activation must be"):
        ops.glu(x, "relu", True)


@pytest.mark.gpu
def test_python_api_falls_back_where_the_kernel_does_not_apply() -> None:
    x = random_tensor((4, 64), torch.float64, "cuda", seed=13)
    torch.testing.assert_close(__PKG__.glu(x, "gelu"), reference.glu(x, "gelu"), rtol=0, atol=0)
    xg = random_tensor((4, 64), torch.float32, "cuda", seed=14).requires_grad_()
    __PKG__.glu(xg, "silu").sum().backward()  # the reference is differentiable
    assert xg.grad is not None and torch.isfinite(xg.grad).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
def test_opcheck(dtype: torch.dtype) -> None:
    # Schema, fake kernel and AOT dispatch agree with the real kernel.
    x = random_tensor((16, 384), dtype, "cuda", seed=15)
    torch.library.opcheck(ops.glu.default, (x, "silu", True))
    torch.library.opcheck(ops.glu.default, (x, "gelu", False))


@pytest.mark.gpu
def test_torch_compile_fullgraph() -> None:
    torch._dynamo.reset()

    def block(x: torch.Tensor) -> torch.Tensor:
        return __PKG__.glu(x * 2.0, "gelu_tanh", True) + 1.0

    x = random_tensor((32, 2048), torch.bfloat16, "cuda", seed=17)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x), block(x))
