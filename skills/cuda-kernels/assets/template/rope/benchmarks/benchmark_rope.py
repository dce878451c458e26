"""Benchmark the __NAME__ RoPE kernel against every peer that could replace it.

The peers: the eager PyTorch formula transformers runs (`x * cos + rotate(x) * sin` in
the input dtype), torch.compile of it (dynamo reset per shape) and a plain Triton kernel
(benchmarks/triton_peer.py, when triton is installed). The bar is the best of them; the
table ends with the kernel's speedup over it. Variants: rotate_half and interleaved.

Shapes are ROWSxDIM: x = [1, 32 heads, rows / 32 positions, dim], cos/sin = [positions,
dim] (read once from DRAM, then from L2 by the other heads). For every shape: validate
the kernel and each peer against a float64 reference first, then time them all in this
process (medians of `triton.testing.do_bench`, cold L2). "% copy" compares the bandwidth
((2 x numel + 2 x table) x element size / time) with a device-to-device copy measured at
the start of the same run. Layouts: aligned, and misaligned (x one element into its buffer).

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_rope.py --out rope.json
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
from benchmarking import (
    BIG_WIDTHS,
    Case,
    import_package,
    rows_for,
    rows_tensor,
    run_benchmark,
    triton_peer,
)

# None (and the reason) when the package is not built yet: --help still works.
__PKG__, reference, ops, PACKAGE_ERROR = import_package("__PKG__")

TOLERANCE = {torch.float32: 2e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}
VARIANTS = ["rotate_half", "interleaved"]
HEADS = 32


def default_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """>= 64 MB at head dims 64 and 128 and at every width of the issue's table, then decode shapes."""
    size = torch.empty((), dtype=dtype).element_size()
    big = [(-(-rows_for(d, size) // HEADS) * HEADS, d) for d in (64, 128, *BIG_WIDTHS)]
    return big + [(HEADS, 128), (HEADS * 512, 128)]


def eager(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool) -> torch.Tensor:
    return x * cos + reference.rotate(x, interleaved) * sin  # in the input dtype, as transformers runs it


def make_peers(compile_too: bool, variant: str = "rotate_half") -> dict[str, Callable | None]:
    return {"eager": eager, "compile": eager if compile_too else None, "triton": triton_peer("rope")}


def make_case(rows: int, dim: int, dtype: torch.dtype, layout: str, variant: str) -> Case:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + dim)
    heads = HEADS if rows % HEADS == 0 else 1
    seq = rows // heads
    x = rows_tensor(rows, dim, dtype, layout, gen).view(1, heads, seq, dim)
    interleaved = variant == "interleaved"
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, device="cuda", dtype=torch.float64) / dim))
    ang = torch.arange(seq, device="cuda", dtype=torch.float64)[:, None] * inv
    ang = ang.repeat_interleave(2, dim=-1) if interleaved else torch.cat((ang, ang), dim=-1)
    cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
    ref = x.double() * cos.double() + reference.rotate(x.double(), interleaved) * sin.double()

    def rel_err(out: torch.Tensor) -> float:
        return ((out.double() - ref).abs().max() / ref.abs().max()).item()

    return Case(kernel=lambda: ops.rope(x, cos, sin, interleaved), call_peer=lambda fn: fn(x, cos, sin, interleaved),
                rel_err=rel_err, nbytes=(2 * x.numel() + 2 * cos.numel()) * x.element_size(), info={"heads": heads})


def main(argv: list[str] | None = None) -> int:
    return run_benchmark(argv, script="benchmark_rope", op="rope", package=__PKG__, package_error=PACKAGE_ERROR,
                         package_name="__PKG__", project="__NAME__", default_shapes=default_shapes, variants=VARIANTS,
                         make_peers=make_peers, make_case=make_case, tolerance=TOLERANCE,
                         peer_tolerance={dtype: 2 * tol for dtype, tol in TOLERANCE.items()}, doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
