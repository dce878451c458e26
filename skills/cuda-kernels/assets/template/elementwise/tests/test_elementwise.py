"""Correctness of the __NAME__ elementwise kernel against a float64 reference.

Every comparison uses fresh random inputs and a normwise relative error against float64.
The GPU sweep is the kernel's contract (tests/kernel_checks.py): widths 1 to 16384,
fp32/fp16/bf16, contiguous, misaligned and strided rows, outputs poisoned with NaN.

What the CPU tests here prove: the reference path, the argument checks, the fake kernel
and the op schema. tests/test_elementwise_emulated.py runs the CUDA kernels themselves on the CPU
(the skill's emulator: indexing, tails, reductions, barriers); speed, launch resources and
the memory model need the `gpu` tests.

Run after building (the package must be importable):
    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
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

F64 = {"gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "silu": F.silu}
ACTIVATIONS = sorted(F64)


def reference_f64(x: torch.Tensor, activation: str) -> torch.Tensor:
    return F64[activation](x.double())


# ----------------------------------------------------------------- CPU: reference path


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [*DTYPES, torch.float64])
def test_cpu_tensors_use_the_reference_and_match_float64(dtype: torch.dtype, activation: str) -> None:
    x = random_tensor((3, 7, 33), dtype, "cpu", seed=1, scale=3.0)
    out = __PKG__.elementwise(x, activation)
    torch.testing.assert_close(out, reference.elementwise(x, activation), rtol=0, atol=0)
    check_close(out, reference_f64(x, activation), dtype)


def test_reference_and_tests_know_the_same_formulas() -> None:
    assert sorted(reference.ACTIVATIONS) == ACTIVATIONS


def test_bad_activation_is_refused() -> None:
    with pytest.raises(ValueError, match="activation must be one of"):
        __PKG__.elementwise(torch.ones(3), "relu6")


def test_fake_kernel_describes_the_output_for_torch_compile() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(6, 3, 512, dtype=torch.float16, device="cuda").transpose(0, 1)
        out = ops.elementwise(x, "silu")
    assert out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()


def test_op_schema_is_the_declared_one() -> None:
    assert str(ops.elementwise.default._schema).endswith("elementwise(Tensor input, str activation) -> Tensor")


# ------------------------------------------------------------------------- GPU: kernel


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", WIDTHS)
def test_elementwise_sweep(width: int, dtype: torch.dtype, layout: str) -> None:
    x = make_input((3, 5), width, dtype, layout, seed=width, scale=3.0)
    for activation in ACTIVATIONS:
        out = poisoned(lambda activation=activation: ops.elementwise(x, activation), nbytes_of(x.shape, dtype))
        check_close(out, reference_f64(x, activation), dtype, f"{activation} {width} {dtype} {layout}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_one_flat_misaligned_tensor(dtype: torch.dtype) -> None:
    # A contiguous tensor at any alignment is one row of numel elements.
    x = random_tensor((7 * 300001 + 1,), dtype, "cuda", seed=2)[1:].view(-1, 7)
    check_close(ops.elementwise(x, "gelu_tanh"), reference_f64(x, "gelu_tanh"), dtype)


@pytest.mark.gpu
def test_extremes_give_the_limits_not_nan() -> None:
    x = torch.tensor([-1e4, -100.0, -90.0, 0.0, 90.0, 1e4], dtype=torch.float32, device="cuda")
    for activation in ACTIVATIONS:
        out = ops.elementwise(x, activation)
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, reference_f64(x, activation).float(), atol=1e-6, rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(0,), (4, 0), (2, 0, 64)])
def test_empty_input_launches_nothing(shape: tuple[int, ...]) -> None:
    assert ops.elementwise(torch.empty(shape, device="cuda"), "silu").shape == shape


@pytest.mark.gpu
def test_binding_rejects_bad_arguments() -> None:
    x = random_tensor((4, 64), torch.float16, "cuda", seed=12)
    with pytest.raises(RuntimeError, match="activation must be"):
        ops.elementwise(x, "relu6")
    with pytest.raises(RuntimeError, match="dtype must be"):
        ops.elementwise(x.double(), "silu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(dtype: torch.dtype) -> None:
    x = random_tensor((16, 384), dtype, "cuda", seed=15)
    torch.library.opcheck(ops.elementwise.default, (x, "gelu_tanh"))


@pytest.mark.gpu
def test_torch_compile_fullgraph() -> None:
    torch._dynamo.reset()

    def block(x: torch.Tensor) -> torch.Tensor:
        return __PKG__.elementwise(x * 2.0, "silu") + 1.0

    x = random_tensor((32, 1024), torch.bfloat16, "cuda", seed=17)
    torch.testing.assert_close(torch.compile(block, fullgraph=True)(x), block(x))


def sanitizer_sweep() -> None:
    """A small sweep for compute-sanitizer: every dtype and layout at awkward widths."""
    for width in (1, 33, 1000, 4100):
        for dtype in DTYPES:
            for layout in LAYOUTS:
                ops.elementwise(make_input((3,), width, dtype, layout, seed=width), "gelu_tanh")
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_compute_sanitizer(tool: str) -> None:
    run_under_sanitizer("test___OP__", "sanitizer_sweep", tool)
