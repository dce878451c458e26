"""Benchmark the __NAME__ RMSNorm kernel against PyTorch eager and torch.compile.

For every shape: validate the kernel against a float64 reference first (a wrong kernel
gets no number), then time the kernel, the eager PyTorch reference and torch.compile of
the same reference (dynamo reset per shape), all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. Bandwidth is (bytes read + bytes written)
/ time; "% copy" compares it with a device-to-device copy measured at the start of the
same run, the practical ceiling for a memory-bound op.

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_rmsnorm.py --out rmsnorm.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch

import __PKG__
from __PKG__ import reference
from __PKG__._ops import ops

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


class Timer:
    """Median milliseconds of fn(), cold L2."""

    def __init__(self) -> None:
        try:
            from triton.testing import do_bench

            self.name = "triton.testing.do_bench(median)"
            self._do_bench: Callable[..., float] | None = do_bench
        except ImportError:
            self.name = "cuda-events(median)"
            self._do_bench = None
            self._flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")

    def __call__(self, fn: Callable[[], object]) -> float:
        if self._do_bench is not None:
            return float(self._do_bench(fn, warmup=25, rep=200, return_mode="median"))
        for _ in range(10):
            fn()
        times = []
        for _ in range(100):
            self._flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)


def copy_bandwidth_gbps(timer: Timer, nbytes: int = 1 << 30) -> float:
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def rel_err(out: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> float:
    xd = x.double()
    ref = xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + EPS) * w.double()
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def bench_shape(rows: int, hidden: int, dtype: torch.dtype, timer: Timer, copy_gbps: float, compile_too: bool) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + hidden)
    x = torch.randn(rows, hidden, device="cuda", dtype=dtype, generator=gen) + 0.25
    w = torch.randn(hidden, device="cuda", dtype=dtype, generator=gen)

    err = rel_err(ops.rms_norm(x, w, EPS), x, w)
    if not err <= TOLERANCE[dtype]:
        raise SystemExit(f"kernel output wrong for {rows}x{hidden} {dtype}: relative error {err:.3g}; not timing it")

    nbytes = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
    kernel_ms = timer(lambda: ops.rms_norm(x, w, EPS))
    eager_ms = timer(lambda: reference.rms_norm(x, w, EPS))
    compile_ms = None
    if compile_too:
        torch._dynamo.reset()  # a fresh graph per shape: no recompilation limits, no dynamic shapes
        compiled = torch.compile(reference.rms_norm, dynamic=False)
        compiled(x, w, EPS)
        compile_ms = timer(lambda: compiled(x, w, EPS))
    gbps = nbytes / (kernel_ms * 1e-3) / 1e9
    return {
        "rows": rows,
        "hidden": hidden,
        "dtype": str(dtype).removeprefix("torch."),
        "bytes": nbytes,
        "max_rel_err": err,
        "kernel_us": kernel_ms * 1e3,
        "eager_us": eager_ms * 1e3,
        "compile_us": None if compile_ms is None else compile_ms * 1e3,
        "kernel_GBps": gbps,
        "pct_of_copy_bandwidth": 100.0 * gbps / copy_gbps,
        "speedup_vs_eager": eager_ms / kernel_ms,
        "speedup_vs_compile": None if compile_ms is None else compile_ms / kernel_ms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", choices=sorted(DTYPES), default=["bfloat16"])
    parser.add_argument("--shapes", nargs="+", type=parse_shape, metavar="ROWSxHIDDEN", help="default: a model-shaped set")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmark_rmsnorm: needs a CUDA GPU", file=sys.stderr)
        return 1

    timer = Timer()
    copy_gbps = copy_bandwidth_gbps(timer)
    device = torch.cuda.get_device_properties(0)
    print(f"{device.name} (sm_{device.major}{device.minor}), torch {torch.__version__}, timer {timer.name}")
    print(f"device copy bandwidth (same run): {copy_gbps:.0f} GB/s\n")
    header = f"{'shape':>14} {'dtype':>9} {'kernel us':>10} {'GB/s':>7} {'% copy':>7} {'eager us':>9} {'compile us':>10} {'vs eager':>9} {'vs compile':>10}"
    print(header)
    results = []
    for dtype_name in args.dtype:
        for rows, hidden in args.shapes or DEFAULT_SHAPES:
            r = bench_shape(rows, hidden, DTYPES[dtype_name], timer, copy_gbps, not args.no_compile)
            results.append(r)
            compile_us = f"{r['compile_us']:10.1f}" if r["compile_us"] is not None else f"{'-':>10}"
            vs_compile = f"{r['speedup_vs_compile']:9.2f}x" if r["speedup_vs_compile"] is not None else f"{'-':>10}"
            print(
                f"{rows:>7}x{hidden:<6} {r['dtype']:>9} {r['kernel_us']:10.1f} {r['kernel_GBps']:7.0f} "
                f"{r['pct_of_copy_bandwidth']:6.1f}% {r['eager_us']:9.1f} {compile_us} {r['speedup_vs_eager']:8.2f}x {vs_compile}"
            )
    if args.out:
        try:
            import triton

            triton_version = triton.__version__
        except ImportError:
            triton_version = None
        payload = {
            "op": "rms_norm",
            "project": "__NAME__",
            "package_file": __PKG__.__file__,
            "device": device.name,
            "capability": f"{device.major}.{device.minor}",
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "triton": triton_version,
            "python": platform.python_version(),
            "timer": timer.name,
            "eps": EPS,
            "copy_bandwidth_GBps": copy_gbps,
            "results": results,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
