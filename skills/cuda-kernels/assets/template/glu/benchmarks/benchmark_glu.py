"""Benchmark the __NAME__ gated-activation kernel against every peer that could replace it.

The peers: the eager PyTorch code a model runs (`act(gate) * up` in the input dtype),
torch.compile of that code (dynamo reset per shape) and a plain Triton kernel
(benchmarks/triton_peer.py, when triton is installed). The bar is the best of them; the
table ends with the kernel's speedup over it. Variants: silu (SwiGLU, gate first) and
gelu (diffusers' GEGLU, gate second).

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. Bandwidth is (bytes read + bytes written)
/ time = 3 x rows x d x element size / time; "% copy" compares it with a device-to-device
copy measured at the start of the same run. Shapes are ROWSxD (the input is [rows, 2d]).
Layouts: aligned, and misaligned (the input one element into its buffer).

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_glu.py --out glu.json
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

# The kernel rounds once; a peer in the input dtype rounds the activation and the product.
TOLERANCE = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}
VARIANTS = ["silu", "gelu"]


def default_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """>= 64 MB inputs at every d of the issue's table, then MLP shapes (d = intermediate size)."""
    size = torch.empty((), dtype=dtype).element_size()
    return [(rows_for(2 * d, size), d) for d in BIG_WIDTHS] + [(1, 12288), (128, 12288), (4096, 11008)]


def eager(x: torch.Tensor, activation: str, gate_first: bool) -> torch.Tensor:
    """What a model's forward runs: chunk, activation and product in the input dtype."""
    first, second = x.chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    return reference.ACTIVATIONS[activation](gate) * up


def make_peers(compile_too: bool, variant: str = "silu") -> dict[str, Callable | None]:
    """name -> the peer (None: not available here); compile is compiled per shape by time_peers."""
    return {"eager": eager, "compile": eager if compile_too else None, "triton": triton_peer("glu")}


def make_case(rows: int, d: int, dtype: torch.dtype, layout: str, variant: str) -> Case:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + d)
    x = rows_tensor(rows, 2 * d, dtype, layout, gen, scale=2.0, mean=0.05)
    gate_first = variant == "silu"
    first, second = x.double().chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    ref = reference.ACTIVATIONS[variant](gate) * up

    def rel_err(out: torch.Tensor) -> float:
        return ((out.double() - ref).abs().max() / ref.abs().max()).item()

    return Case(kernel=lambda: ops.glu(x, variant, gate_first), call_peer=lambda fn: fn(x, variant, gate_first),
                rel_err=rel_err, nbytes=3 * rows * d * x.element_size(), info={"gate_first": gate_first})


def main(argv: list[str] | None = None) -> int:
    return run_benchmark(argv, script="benchmark_glu", op="glu", package=__PKG__, package_error=PACKAGE_ERROR,
                         package_name="__PKG__", project="__NAME__", default_shapes=default_shapes, variants=VARIANTS,
                         make_peers=make_peers, make_case=make_case, tolerance=TOLERANCE,
                         peer_tolerance={dtype: 2 * tol for dtype, tol in TOLERANCE.items()}, doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
