"""Benchmark the __NAME__ elementwise kernel against every peer that could replace it.

The peers: the eager PyTorch activation a model runs (in the input dtype), torch.compile
of it (dynamo reset per shape) and a plain Triton kernel (benchmarks/triton_peer.py, when
triton is installed). The bar is the best of them; the table ends with the kernel's
speedup over it. Variants: gelu_tanh and silu.

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. "% copy" compares the bandwidth
(2 x numel x element size / time) with a device-to-device copy measured at the start of
the same run. Layouts: aligned, and misaligned (the input one element into its buffer).

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_elementwise.py --out elementwise.json
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
VARIANTS = ["gelu_tanh", "silu"]


def default_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """>= 64 MB inputs at every width of the issue's table, then small shapes."""
    size = torch.empty((), dtype=dtype).element_size()
    return [(rows_for(w, size), w) for w in BIG_WIDTHS] + [(1, 4096), (128, 4096)]


def eager(x: torch.Tensor, activation: str) -> torch.Tensor:
    return reference.ACTIVATIONS[activation](x)  # in the input dtype, as a model runs it


def make_peers(compile_too: bool, variant: str = "gelu_tanh") -> dict[str, Callable | None]:
    return {"eager": eager, "compile": eager if compile_too else None, "triton": triton_peer("elementwise")}


def make_case(rows: int, width: int, dtype: torch.dtype, layout: str, variant: str) -> Case:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + width)
    x = rows_tensor(rows, width, dtype, layout, gen, scale=3.0, mean=0.05)
    ref = reference.ACTIVATIONS[variant](x.double())

    def rel_err(out: torch.Tensor) -> float:
        return ((out.double() - ref).abs().max() / ref.abs().max()).item()

    return Case(kernel=lambda: ops.elementwise(x, variant), call_peer=lambda fn: fn(x, variant), rel_err=rel_err,
                nbytes=2 * x.numel() * x.element_size(), info={})


def main(argv: list[str] | None = None) -> int:
    return run_benchmark(argv, script="benchmark_elementwise", op="elementwise", package=__PKG__,
                         package_error=PACKAGE_ERROR, package_name="__PKG__", project="__NAME__",
                         default_shapes=default_shapes, variants=VARIANTS, make_peers=make_peers, make_case=make_case,
                         tolerance=TOLERANCE, peer_tolerance={dtype: 2 * tol for dtype, tol in TOLERANCE.items()},
                         doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
