"""Correctness of the __NAME__ RoPE kernel against a float64 reference.

Every comparison uses fresh random inputs and a normwise relative error against float64.
The GPU sweep is the kernel's contract (tests/kernel_checks.py) with every width made
even (RoPE rotates pairs: 2, 34, 1000, ..., 16384), fp32/fp16/bf16, contiguous,
misaligned and strided rows, outputs poisoned with NaN, both pairings.

What the CPU tests here prove: the reference path, the argument checks, the fake kernel
and the op schema. tests/test_rope_emulated.py runs the CUDA kernels themselves on the CPU
(the skill's emulator: indexing, tails, reductions, barriers); speed, launch resources and
the memory model need the `gpu` tests.

Run after building (the package must be importable):
    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python -m pytest tests
"""

from __future__ import annotations

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

ROPE_WIDTHS = [w + w % 2 for w in WIDTHS]


def tables(batch: int, seq: int, dim: int, dtype: torch.dtype, device: str, interleaved: bool,
           per_batch: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of real rotary angles: cat(freqs, freqs) (rotate-half) or each frequency twice (interleaved)."""
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    pos = torch.arange(seq, dtype=torch.float64)[:, None] + (torch.arange(batch, dtype=torch.float64)[:, None, None]
                                                             * 7 if per_batch else 0)
    ang = pos * inv
    ang = ang.repeat_interleave(2, dim=-1) if interleaved else torch.cat((ang, ang), dim=-1)
    return ang.cos().to(device=device, dtype=dtype), ang.sin().to(device=device, dtype=dtype)


def reference_f64(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool) -> torch.Tensor:
    return reference.rope(x.double().cpu(), cos.double().cpu(), sin.double().cpu(), interleaved).to(x.device)


# ----------------------------------------------------------------- CPU: reference path


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [*DTYPES, torch.float64])
def test_cpu_tensors_use_the_reference_and_match_float64(dtype: torch.dtype, interleaved: bool) -> None:
    x = random_tensor((2, 3, 5, 34), dtype, "cpu", seed=1)
    cos, sin = tables(2, 5, 34, dtype, "cpu", interleaved)
    out = __PKG__.rope(x, cos, sin, interleaved)
    torch.testing.assert_close(out, reference.rope(x, cos, sin, interleaved), rtol=0, atol=0)
    check_close(out, reference_f64(x, cos, sin, interleaved), dtype)


def test_rotate_half_matches_the_transformers_formula() -> None:
    x = random_tensor((1, 2, 3, 8), torch.float64, "cpu", seed=2)
    cos, sin = tables(1, 3, 8, torch.float64, "cpu", False)
    rotated = torch.cat((-x[..., 4:], x[..., :4]), dim=-1)
    torch.testing.assert_close(__PKG__.rope(x, cos, sin), x * cos + rotated * sin)


def test_bad_arguments_are_refused() -> None:
    x = random_tensor((2, 3, 5, 8), torch.float32, "cpu", seed=3)
    cos, sin = tables(2, 5, 8, torch.float32, "cpu", False)
    with pytest.raises(ValueError, match="must be even"):
        __PKG__.rope(x[..., :7], cos[:, :7], sin[:, :7])
    with pytest.raises(ValueError, match=r"cos must be \[seq, dim\]"):
        __PKG__.rope(x, cos[:4], sin)
    with pytest.raises(ValueError, match="input must be"):
        __PKG__.rope(x[0, 0], cos, sin)


def test_fake_kernel_describes_the_output_for_torch_compile() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 5, 4, 64, dtype=torch.float16, device="cuda").transpose(1, 2)
        t = torch.empty(5, 64, dtype=torch.float16, device="cuda")
        out = ops.rope(x, t, t, False)
    assert out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()


def test_op_schema_is_the_declared_one() -> None:
    assert str(ops.rope.default._schema).endswith("rope(Tensor input, Tensor cos, Tensor sin, bool interleaved) -> Tensor")


# ------------------------------------------------------------------------- GPU: kernel


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", ROPE_WIDTHS)
def test_rope_sweep(width: int, dtype: torch.dtype, layout: str) -> None:
    x = make_input((2, 3, 4), width, dtype, layout, seed=width)  # [batch, heads, seq, dim]
    for interleaved in (False, True):
        cos, sin = tables(2, 4, width, dtype, "cuda", interleaved, per_batch=layout == "strided")
        if layout == "misaligned":  # tables at another 16-byte phase than x and out
            cos = torch.cat([cos, cos[..., :1]], dim=-1)[..., :width]
            sin = torch.cat([sin[..., :1], sin], dim=-1)[..., 1:]
        out = poisoned(lambda c=cos, s=sin, i=interleaved: ops.rope(x, c, s, i), nbytes_of(x.shape, dtype))
        check_close(out, reference_f64(x, cos, sin, interleaved), dtype, f"rope {width} {dtype} {layout} {interleaved}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_transformers_layout_and_3d_input(dtype: torch.dtype) -> None:
    q = random_tensor((2, 7, 8, 128), dtype, "cuda", seed=4).transpose(1, 2)  # [batch, heads, seq, dim] view
    cos, sin = tables(2, 7, 128, dtype, "cuda", False, per_batch=True)
    check_close(ops.rope(q, cos, sin, False), reference_f64(q, cos, sin, False), dtype)
    x3 = random_tensor((2, 7, 96), dtype, "cuda", seed=5)
    cos, sin = tables(1, 7, 96, dtype, "cuda", True)
    check_close(ops.rope(x3, cos, sin, True), reference_f64(x3, cos, sin, True), dtype)


@pytest.mark.gpu
def test_empty_input_launches_nothing() -> None:
    x = torch.empty(2, 0, 5, 64, dtype=torch.bfloat16, device="cuda")
    cos, sin = tables(2, 5, 64, torch.bfloat16, "cuda", False)
    assert ops.rope(x, cos, sin, False).shape == x.shape


@pytest.mark.gpu
def test_binding_rejects_bad_arguments() -> None:
    x = random_tensor((2, 3, 5, 8), torch.float16, "cuda", seed=12)
    cos, sin = tables(2, 5, 8, torch.float16, "cuda", False)
    with pytest.raises(RuntimeError, match="cos dtype"):
        ops.rope(x, cos.float(), sin, False)
    with pytest.raises(RuntimeError, match="must be even"):
        ops.rope(x[..., :7], cos[:, :7], sin[:, :7], False)
    with pytest.raises(RuntimeError, match=r"cos must be \[seq, dim\]"):
        ops.rope(x, cos[:4], sin, False)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(dtype: torch.dtype) -> None:
    x = random_tensor((2, 4, 16, 64), dtype, "cuda", seed=15)
    cos, sin = tables(2, 16, 64, dtype, "cuda", False)
    torch.library.opcheck(ops.rope.default, (x, cos, sin, False))
    torch.library.opcheck(ops.rope.default, (x, cos, sin, True))


@pytest.mark.gpu
def test_torch_compile_fullgraph() -> None:
    torch._dynamo.reset()

    def block(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return __PKG__.rope(q * 2.0, cos, sin) + 1.0

    q = random_tensor((1, 8, 32, 128), torch.bfloat16, "cuda", seed=17)
    cos, sin = tables(1, 32, 128, torch.bfloat16, "cuda", False)
    torch.testing.assert_close(torch.compile(block, fullgraph=True)(q, cos, sin), block(q, cos, sin))


def sanitizer_sweep() -> None:
    """A small sweep for compute-sanitizer: every dtype and layout at awkward widths."""
    for width in (2, 34, 1000, 4100):
        for dtype in DTYPES:
            for layout in LAYOUTS:
                x = make_input((2, 2, 3), width, dtype, layout, seed=width)
                for interleaved in (False, True):
                    cos, sin = tables(2, 3, width, dtype, "cuda", interleaved)
                    ops.rope(x, cos, sin, interleaved)
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_compute_sanitizer(tool: str) -> None:
    run_under_sanitizer("test___OP__", "sanitizer_sweep", tool)
