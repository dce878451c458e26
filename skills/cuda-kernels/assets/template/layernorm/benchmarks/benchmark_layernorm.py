"""Benchmark the __NAME__ LayerNorm + AdaLN kernel against every peer that could replace it.

The peers: the eager PyTorch code a model runs (`F.layer_norm`, then the modulation in
the input dtype), torch.compile of that code (dynamo reset per shape) and a plain Triton
kernel (benchmarks/triton_peer.py, when triton is installed). The bar is the best of
them; the table ends with the kernel's speedup over it. Variants: adaln (no affine,
per-sample scale/shift over 4 samples: a DiT block's norm1/norm2) and affine (weight and
bias: nn.LayerNorm).

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. "% copy" compares the bandwidth with a
device-to-device copy measured at the start of the same run. Layouts: aligned, and
misaligned (the input one element into its buffer: not 16-byte aligned).

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_layernorm.py --out layernorm.json
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F
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

TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
EPS = 1e-6
VARIANTS = ["adaln", "affine"]
SAMPLES = 4  # AdaLN: rows split into 4 samples, each with its own scale/shift row


def default_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """>= 64 MB inputs at every width of the issue's table, then small shapes."""
    size = torch.empty((), dtype=dtype).element_size()
    big = [(-(-rows_for(w, size) // SAMPLES) * SAMPLES, w) for w in BIG_WIDTHS]
    return big + [(4, 4096), (256, 2048)]


def eager(x: torch.Tensor, weight, bias, eps: float, scale=None, shift=None) -> torch.Tensor:
    """What a model runs: F.layer_norm, then the modulation in the input dtype."""
    y = F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
    if scale is not None:
        groups = scale.shape[0]
        y = (y.view(groups, -1, x.shape[-1]) * (1 + scale[:, None]) + shift[:, None]).view(x.shape)
    return y


def make_peers(compile_too: bool, variant: str = "adaln") -> dict[str, Callable | None]:
    return {"eager": eager, "compile": eager if compile_too else None, "triton": triton_peer("layer_norm")}


def make_case(rows: int, width: int, dtype: torch.dtype, layout: str, variant: str) -> Case:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + width)
    x = rows_tensor(rows, width, dtype, layout, gen, scale=2.0, mean=1.5)
    if variant == "affine":
        w, b = (rows_tensor(1, width, dtype, "aligned", gen).view(width) for _ in range(2))
        args: tuple = (w, b, EPS, None, None)
        extra = 2 * width
    else:
        groups = SAMPLES if rows % SAMPLES == 0 else 1
        sc, sh = (rows_tensor(groups, width, dtype, "aligned", gen, scale=0.3) for _ in range(2))
        args = (None, None, EPS, sc, sh)
        extra = 2 * groups * width
    w, b, _, sc, sh = args
    xd = x.double()
    mean = xd.mean(-1, keepdim=True)
    ref = (xd - mean) * torch.rsqrt((xd - mean).square().mean(-1, keepdim=True) + EPS)
    if w is not None:
        ref = ref * w.double() + b.double()
    if sc is not None:
        g = sc.shape[0]
        ref = (ref.view(g, -1, width) * (1 + sc.double()[:, None]) + sh.double()[:, None]).view(rows, width)

    def rel_err(out: torch.Tensor) -> float:
        return ((out.double() - ref).abs().max() / ref.abs().max()).item()

    return Case(kernel=lambda: ops.layer_norm(x, w, b, sc, sh, EPS), call_peer=lambda fn: fn(x, *args),
                rel_err=rel_err, nbytes=(2 * x.numel() + extra) * x.element_size(), info={})


def main(argv: list[str] | None = None) -> int:
    return run_benchmark(argv, script="benchmark_layernorm", op="layer_norm", package=__PKG__,
                         package_error=PACKAGE_ERROR, package_name="__PKG__", project="__NAME__",
                         default_shapes=default_shapes, variants=VARIANTS, make_peers=make_peers, make_case=make_case,
                         tolerance=TOLERANCE, peer_tolerance={dtype: 2 * tol for dtype, tol in TOLERANCE.items()},
                         doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
