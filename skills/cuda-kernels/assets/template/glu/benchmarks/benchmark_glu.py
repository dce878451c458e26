"""Benchmark the __NAME__ gated-activation kernel against every peer that could replace it.

The peers: the eager PyTorch code a model runs (`act(gate) * up` in the input dtype),
torch.compile of that code (dynamo reset per shape) and a plain Triton kernel
(benchmarks/triton_peer.py, when triton is installed). The bar is the best of them; the
table ends with the kernel's speedup over it.

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. Bandwidth is (bytes read + bytes written)
/ time = 3 x rows x d x element size / time; "% copy" compares it with a device-to-device
copy measured at the start of the same run, the practical ceiling for a memory-bound op.

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_glu.py --out glu.json
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

# (rows, d): decode and prefill token counts at common MLP widths (d = intermediate size:
# the input is [rows, 2d]), sizes far beyond a 60 MB L2, and a d that is not a multiple of
# 8 (the scalar path in fp16/bf16; fp32 packs of 4 still fit) to show what alignment buys.
DEFAULT_SHAPES = [
    (1, 12288),
    (128, 12288),
    (512, 12288),
    (4096, 12288),
    (16384, 12288),
    (2688, 8192),
    (4096, 11008),
    (4096, 4100),
]
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
# The kernel rounds once; a peer in the input dtype rounds the activation and the product.
TOLERANCE = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}
PEER_TOLERANCE = {dtype: 2 * tol for dtype, tol in TOLERANCE.items()}

Glu = Callable[[torch.Tensor, str, bool], torch.Tensor]


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, d = (int(v) for v in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"shape must look like ROWSxD (e.g. 4096x12288), got {text!r}") from exc
    if rows < 1 or d < 1:
        raise argparse.ArgumentTypeError(f"shape dimensions must be positive, got {text!r}")
    return rows, d


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


def eager(x: torch.Tensor, activation: str, gate_first: bool) -> torch.Tensor:
    """What a model's forward runs: chunk, activation and product in the input dtype."""
    first, second = x.chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    return reference.ACTIVATIONS[activation](gate) * up


def rel_err(out: torch.Tensor, x: torch.Tensor, activation: str, gate_first: bool) -> float:
    first, second = x.double().chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    ref = reference.ACTIVATIONS[activation](gate) * up
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def make_peers(compile_too: bool) -> dict[str, Glu | None]:
    """name -> the peer (None: not available here); compile is compiled per shape in bench_shape."""
    peers: dict[str, Glu | None] = {"eager": eager, "compile": eager if compile_too else None}
    try:
        import triton_peer  # benchmarks/triton_peer.py, beside this file

        peers["triton"] = triton_peer.glu
    except ImportError:  # no triton: the peer is left out and the JSON says so
        peers["triton"] = None
    return peers


def bench_shape(rows: int, d: int, dtype: torch.dtype, activation: str, gate_first: bool, timer: Timer,
                copy_gbps: float, peers: dict[str, Glu | None]) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + d)
    x = torch.randn(rows, 2 * d, device="cuda", dtype=dtype, generator=gen) * 2 + 0.1

    err = rel_err(ops.glu(x, activation, gate_first), x, activation, gate_first)
    if not err <= TOLERANCE[dtype]:
        raise SystemExit(f"kernel output wrong for {rows}x{d} {dtype}: relative error {err:.3g}; not timing it")

    nbytes = 3 * rows * d * x.element_size()
    kernel_ms = timer(lambda: ops.glu(x, activation, gate_first))
    peer_us: dict[str, float | None] = {}
    skipped: dict[str, str] = {}
    for name, fn in peers.items():
        if fn is None:
            peer_us[name] = None
            continue
        if name == "compile":
            torch._dynamo.reset()  # a fresh graph per shape: no recompilation limits, no dynamic shapes
            fn = torch.compile(fn, dynamic=False)
        try:
            peer_err = rel_err(fn(x, activation, gate_first), x, activation, gate_first)
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run this shape is left out, with the reason
            peer_us[name], skipped[name] = None, f"{type(exc).__name__}: {exc}".splitlines()[0]
            continue
        if not peer_err <= PEER_TOLERANCE[dtype]:
            peer_us[name], skipped[name] = None, f"wrong result (relative error {peer_err:.3g})"
            continue
        peer_us[name] = timer(lambda fn=fn: fn(x, activation, gate_first)) * 1e3
    gbps = nbytes / (kernel_ms * 1e-3) / 1e9
    timed = {name: us for name, us in peer_us.items() if us is not None}
    best = min(timed, key=timed.__getitem__) if timed else None
    return {
        "rows": rows,
        "d": d,
        "dtype": str(dtype).removeprefix("torch."),
        "activation": activation,
        "gate_first": gate_first,
        "bytes": nbytes,
        "max_rel_err": err,
        "kernel_us": kernel_ms * 1e3,
        "kernel_GBps": gbps,
        "pct_of_copy_bandwidth": 100.0 * gbps / copy_gbps,
        "peers_us": peer_us,
        "peers_skipped": skipped,
        "speedup": {name: us / (kernel_ms * 1e3) for name, us in timed.items()},
        "best_peer": best,
        "speedup_vs_best": timed[best] / (kernel_ms * 1e3) if best else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", choices=sorted(DTYPES), default=["bfloat16"])
    parser.add_argument("--shapes", nargs="+", type=parse_shape, metavar="ROWSxD", help="default: a model-shaped set")
    parser.add_argument("--activation", choices=sorted(reference.ACTIVATIONS), default="silu")
    parser.add_argument("--gate-second", action="store_true", help="the second half is the gate (diffusers' GEGLU)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer (compiling every shape takes a while)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmark_glu: needs a CUDA GPU", file=sys.stderr)
        return 1

    timer = Timer()
    copy_gbps = copy_bandwidth_gbps(timer)
    device = torch.cuda.get_device_properties(0)
    gate_first = not args.gate_second
    print(f"{device.name} (sm_{device.major}{device.minor}), torch {torch.__version__}, timer {timer.name}")
    print(f"device copy bandwidth (same run): {copy_gbps:.0f} GB/s; {args.activation}, gate {'first' if gate_first else 'second'}\n")
    peers = make_peers(compile_too=not args.no_compile)
    missing = [name for name, fn in peers.items() if fn is None]
    if missing:
        print(f"peers not measured here: {', '.join(missing)}")
    print(f"{'shape':>14} {'dtype':>9} {'kernel us':>10} {'GB/s':>7} {'% copy':>7} "
          + " ".join(f"{name + ' us':>14}" for name in peers) + f" {'best peer':>11} {'vs best':>8}")
    results = []
    for dtype_name in args.dtype:
        for rows, d in args.shapes or DEFAULT_SHAPES:
            r = bench_shape(rows, d, DTYPES[dtype_name], args.activation, gate_first, timer, copy_gbps, peers)
            results.append(r)
            cells = " ".join(f"{us:14.1f}" if us is not None else f"{'-':>14}" for us in r["peers_us"].values())
            vs_best = f"{r['speedup_vs_best']:7.2f}x" if r["best_peer"] else f"{'-':>8}"
            print(f"{rows:>7}x{d:<6} {r['dtype']:>9} {r['kernel_us']:10.1f} {r['kernel_GBps']:7.0f} "
                  f"{r['pct_of_copy_bandwidth']:6.1f}% {cells} {r['best_peer'] or '-':>11} {vs_best}")
            for name, why in r["peers_skipped"].items():
                print(f"    {name} left out at this shape: {why}")
    if args.out:
        try:
            import triton

            triton_version = triton.__version__
        except ImportError:
            triton_version = None
        payload = {
            "op": "glu",
            "project": "__NAME__",
            "package_file": __PKG__.__file__,
            "device": device.name,
            "capability": f"{device.major}.{device.minor}",
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "triton": triton_version,
            "python": platform.python_version(),
            "timer": timer.name,
            "copy_bandwidth_GBps": copy_gbps,
            "peers_not_available": missing,
            "results": results,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
