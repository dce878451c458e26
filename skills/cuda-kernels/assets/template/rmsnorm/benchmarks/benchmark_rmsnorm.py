"""Benchmark the __NAME__ RMSNorm kernel against every peer that could replace it.

The peers: the eager PyTorch reference, `F.rms_norm` (torch >= 2.4), torch.compile of the
reference (dynamo reset per shape) and a plain Triton kernel (benchmarks/triton_peer.py,
when triton is installed). "Faster than eager" says little, since eager norms run at a
fraction of the memory bandwidth; the bar is the best of the peers, and the table ends
with the kernel's speedup over it.

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. Bandwidth is (bytes read + bytes written)
/ time; "% copy" compares it with a device-to-device copy measured at the start of the
same run, the practical ceiling for a memory-bound op.

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_rmsnorm.py --out rmsnorm.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from benchmarking import (Timer, copy_bandwidth_gbps, import_package, package_missing, print_header, print_row, result,
                          time_peers, triton_peer, write_json)

# None (and the reason) when the package is not built yet: --help still works.
__PKG__, reference, ops, PACKAGE_ERROR = import_package("__PKG__")

# (rows, hidden): decode and prefill token counts at common hidden sizes, per-head q/k
# norms (rows = tokens x heads, hidden = head_dim), sizes far beyond a 60 MB L2, and a
# hidden size that is not a multiple of 8 (scalar kernel) to show what alignment buys.
DEFAULT_SHAPES = [
    (1, 4096),
    (128, 4096),
    (4096, 4096),
    (32768, 4096),
    (131072, 128),
    (16384, 2048),
    (8192, 5120),
    (4096, 8192),
    (4096, 4100),
]
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
TOLERANCE = {torch.float32: 2e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}
EPS = 1e-6


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, hidden = (int(v) for v in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"shape must look like 4096x4096, got {text!r}") from exc
    if rows < 1 or hidden < 1:
        raise argparse.ArgumentTypeError(f"shape dimensions must be positive, got {text!r}")
    return rows, hidden


def rel_err(out: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> float:
    xd = x.double()
    ref = xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + EPS) * w.double()
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


Norm = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


def make_peers(compile_too: bool) -> dict[str, Norm | None]:
    """name -> a callable building its peer for one shape (None: not available here)."""
    peers: dict[str, Norm | None] = {"eager": reference.rms_norm}
    peers["F.rms_norm"] = (lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps)) if hasattr(F, "rms_norm") else None
    peers["compile"] = reference.rms_norm if compile_too else None  # compiled per shape by time_peers
    peers["triton"] = triton_peer("rms_norm")  # benchmarks/triton_peer.py; None without triton
    return peers


def bench_shape(rows: int, hidden: int, dtype: torch.dtype, timer: Timer, copy_gbps: float,
                peers: dict[str, Norm | None]) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + hidden)
    x = torch.randn(rows, hidden, device="cuda", dtype=dtype, generator=gen) + 0.25
    w = torch.randn(hidden, device="cuda", dtype=dtype, generator=gen)

    err = rel_err(ops.rms_norm(x, w, EPS), x, w)
    if not err <= TOLERANCE[dtype]:
        raise SystemExit(f"kernel output wrong for {rows}x{hidden} {dtype}: relative error {err:.3g}; not timing it")

    nbytes = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
    kernel_ms = timer(lambda: ops.rms_norm(x, w, EPS))
    peer_us, skipped = time_peers(peers, lambda fn: fn(x, w, EPS), lambda out: rel_err(out, x, w), TOLERANCE[dtype], timer)
    return {
        "rows": rows,
        "hidden": hidden,
        "dtype": str(dtype).removeprefix("torch."),
        "max_rel_err": err,
        **result(kernel_ms, nbytes, copy_gbps, peer_us, skipped),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", choices=sorted(DTYPES), default=["bfloat16"])
    parser.add_argument("--shapes", nargs="+", type=parse_shape, metavar="ROWSxHIDDEN", help="default: a model-shaped set")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer (compiling every shape takes a while)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if PACKAGE_ERROR is not None:
        return package_missing("benchmark_rmsnorm", "__PKG__", PACKAGE_ERROR)
    if not torch.cuda.is_available():
        print("benchmark_rmsnorm: needs a CUDA GPU", file=sys.stderr)
        return 1

    timer = Timer()
    copy_gbps = copy_bandwidth_gbps(timer)
    peers = make_peers(compile_too=not args.no_compile)
    missing = print_header(timer, copy_gbps, peers)
    results = []
    for dtype_name in args.dtype:
        for rows, hidden in args.shapes or DEFAULT_SHAPES:
            r = bench_shape(rows, hidden, DTYPES[dtype_name], timer, copy_gbps, peers)
            results.append(r)
            print_row(rows, hidden, r)
    if args.out:
        op = {"op": "rms_norm", "project": "__NAME__", "package_file": __PKG__.__file__, "eps": EPS}
        write_json(args.out, op, timer, copy_gbps, missing, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
