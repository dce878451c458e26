"""Benchmark the __NAME__ RMSNorm kernels against every peer that could replace them.

The peers: the eager PyTorch reference, `F.rms_norm` (torch >= 2.4), torch.compile of the
reference (dynamo reset per shape) and a plain Triton kernel (benchmarks/triton_peer.py,
when triton is installed). "Faster than eager" says little, since eager norms run at a
fraction of the memory bandwidth; the bar is the best of the peers, and the table ends
with the kernel's speedup over it. Variants: rms_norm, and fused_add (x + residual, then
the norm; two outputs).

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. Bandwidth is (bytes read + bytes written)
/ time; "% copy" compares it with a device-to-device copy measured at the start of the
same run, the practical ceiling for a memory-bound op. Layouts: aligned, and misaligned
(the input one element into its buffer: not 16-byte aligned).

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_rmsnorm.py --out rmsnorm.json
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

TOLERANCE = {torch.float32: 2e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}
EPS = 1e-6
VARIANTS = ["rms_norm", "fused_add"]


def default_shapes(dtype: torch.dtype) -> list[tuple[int, int]]:
    """>= 64 MB inputs at every width of the issue's table, then decode/prefill and q/k-norm shapes."""
    size = torch.empty((), dtype=dtype).element_size()
    return [(rows_for(w, size), w) for w in BIG_WIDTHS] + [(1, 4096), (128, 4096), (131072, 128)]


def eager_fused(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    s = x + r  # what a decoder layer runs: the add in the dtype, then the norm
    return reference.rms_norm(s, w, eps), s


def make_peers(compile_too: bool, variant: str = "rms_norm") -> dict[str, Callable | None]:
    """name -> the peer (None: not available here); "compile" is compiled per shape by time_peers."""
    if variant == "fused_add":
        return {"eager": eager_fused, "compile": eager_fused if compile_too else None,
                "triton": triton_peer("fused_add_rms_norm")}
    peers: dict[str, Callable | None] = {"eager": reference.rms_norm}
    peers["F.rms_norm"] = (lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps)) if hasattr(F, "rms_norm") else None
    peers["compile"] = reference.rms_norm if compile_too else None
    peers["triton"] = triton_peer("rms_norm")  # benchmarks/triton_peer.py; None without triton
    return peers


def _ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xd = x.double()
    return xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + EPS) * w.double()


def _err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def make_case(rows: int, width: int, dtype: torch.dtype, layout: str, variant: str) -> Case:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + width)
    x = rows_tensor(rows, width, dtype, layout, gen)
    w = rows_tensor(1, width, dtype, "aligned", gen).view(width)
    size = x.element_size()
    if variant == "fused_add":
        r = rows_tensor(rows, width, dtype, "aligned", gen)
        s = (x.float() + r.float()).to(dtype)
        ref_y, ref_s = _ref(s, w), s.double()
        return Case(kernel=lambda: ops.fused_add_rms_norm(x, r, w, EPS),
                    call_peer=lambda fn: fn(x, r, w, EPS),
                    rel_err=lambda out: max(_err(out[0], ref_y), _err(out[1], ref_s)),
                    nbytes=4 * x.numel() * size + width * size, info={})
    ref = _ref(x, w)
    return Case(kernel=lambda: ops.rms_norm(x, w, EPS), call_peer=lambda fn: fn(x, w, EPS),
                rel_err=lambda out: _err(out, ref), nbytes=2 * x.numel() * size + width * size, info={})


def main(argv: list[str] | None = None) -> int:
    return run_benchmark(argv, script="benchmark_rmsnorm", op="rms_norm", package=__PKG__, package_error=PACKAGE_ERROR,
                         package_name="__PKG__", project="__NAME__", default_shapes=default_shapes, variants=VARIANTS,
                         make_peers=make_peers, make_case=make_case, tolerance=TOLERANCE,
                         peer_tolerance={dtype: 2 * tol for dtype, tol in TOLERANCE.items()}, doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
