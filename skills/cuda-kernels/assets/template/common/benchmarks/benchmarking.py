"""What this project's benchmarks share: the timer, the copy-bandwidth reference, timing
the peers of one shape, and the table and JSON every benchmark writes.

An op's benchmark (benchmark_<op>.py beside this file) only says what is op-specific:
its shapes, inputs, float64 check, bytes moved and peers. Keeping the rest here means two
benchmarks of one project time and report the same way.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch


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


def import_package(name: str) -> tuple[Any, Any, Any, str | None]:
    """(the built package, its reference module, its ops, None), or (None, None, None, why)
    when it cannot be imported: the benchmark's --help then still works, and main() says
    how to build it (package_missing)."""
    try:
        package = importlib.import_module(name)
        reference = importlib.import_module(f"{name}.reference")
        ops = importlib.import_module(f"{name}._ops").ops
    except ImportError as exc:
        return None, None, None, f"{type(exc).__name__}: {exc}"
    return package, reference, ops, None


def package_missing(script: str, name: str, error: str) -> int:
    """Say why the package did not import and how to build it; the exit code for main()."""
    print(f"{script}: cannot import {name} ({error}); build it and put it on PYTHONPATH:\n"
          f"  PYTHONPATH=$(python __SKILL_SCRIPTS__/build_local.py .) python benchmarks/{script}.py", file=sys.stderr)
    return 1


def copy_bandwidth_gbps(timer: Timer, nbytes: int = 1 << 30) -> float:
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def triton_peer(name: str) -> Callable[..., Any] | None:
    """`name` from benchmarks/triton_peer.py, or None without triton (the JSON then says so)."""
    try:
        import triton_peer as module  # beside this file
    except ImportError:
        return None
    return getattr(module, name)


def time_peers(peers: dict[str, Callable[..., Any] | None], call: Callable[[Callable[..., Any]], Any],
               rel_err: Callable[[Any], float], bound: float, timer: Timer) -> tuple[dict[str, float | None], dict[str, str]]:
    """Check each peer's result against float64 (`rel_err(call(peer)) <= bound`), then time it.

    Returns (µs per peer, None where left out; why each left-out peer was). "compile" is
    compiled here, per shape with dynamo reset: no recompilation limits, no dynamic shapes.
    """
    peer_us: dict[str, float | None] = {}
    skipped: dict[str, str] = {}
    for name, fn in peers.items():
        if fn is None:
            peer_us[name] = None
            continue
        if name == "compile":
            torch._dynamo.reset()
            fn = torch.compile(fn, dynamic=False)
        try:
            err = rel_err(call(fn))
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run this shape is left out, with the reason
            peer_us[name], skipped[name] = None, f"{type(exc).__name__}: {exc}".splitlines()[0]
            continue
        if not err <= bound:
            peer_us[name], skipped[name] = None, f"wrong result (relative error {err:.3g})"
            continue
        peer_us[name] = timer(lambda fn=fn: call(fn)) * 1e3
    return peer_us, skipped


def result(kernel_ms: float, nbytes: int, copy_gbps: float, peer_us: dict[str, float | None],
           skipped: dict[str, str]) -> dict[str, Any]:
    """The measured part of one shape's JSON entry: time, bandwidth, and speedup over each peer and the best."""
    kernel_us = kernel_ms * 1e3
    gbps = nbytes / (kernel_ms * 1e-3) / 1e9
    timed = {name: us for name, us in peer_us.items() if us is not None}
    best = min(timed, key=timed.__getitem__) if timed else None
    return {
        "bytes": nbytes,
        "kernel_us": kernel_us,
        "kernel_GBps": gbps,
        "pct_of_copy_bandwidth": 100.0 * gbps / copy_gbps,
        "peers_us": peer_us,
        "peers_skipped": skipped,
        "speedup": {name: us / kernel_us for name, us in timed.items()},
        "best_peer": best,
        "speedup_vs_best": timed[best] / kernel_us if best else None,
    }


def print_header(timer: Timer, copy_gbps: float, peers: dict[str, Callable[..., Any] | None], detail: str = "") -> list[str]:
    """The run's first lines and the table header; returns the peers not available here."""
    device = torch.cuda.get_device_properties(0)
    print(f"{device.name} (sm_{device.major}{device.minor}), torch {torch.__version__}, timer {timer.name}")
    print(f"device copy bandwidth (same run): {copy_gbps:.0f} GB/s{detail}\n")
    missing = [name for name, fn in peers.items() if fn is None]
    if missing:
        print(f"peers not measured here: {', '.join(missing)}")
    print(f"{'shape':>14} {'dtype':>9} {'kernel us':>10} {'GB/s':>7} {'% copy':>7} "
          + " ".join(f"{name + ' us':>14}" for name in peers) + f" {'best peer':>11} {'vs best':>8}")
    return missing


def print_row(rows: int, width: int, r: dict[str, Any], prefix: str = "") -> None:
    cells = " ".join(f"{us:14.1f}" if us is not None else f"{'-':>14}" for us in r["peers_us"].values())
    vs_best = f"{r['speedup_vs_best']:7.2f}x" if r["best_peer"] else f"{'-':>8}"
    print(f"{prefix}{rows:>7}x{width:<6} {r['dtype']:>9} {r['kernel_us']:10.1f} {r['kernel_GBps']:7.0f} "
          f"{r['pct_of_copy_bandwidth']:6.1f}% {cells} {r['best_peer'] or '-':>11} {vs_best}")
    for name, why in r["peers_skipped"].items():
        print(f"    {name} left out at this shape: {why}")


def write_json(path: Path, op: dict[str, Any], timer: Timer, copy_gbps: float, missing: list[str],
               results: list[dict[str, Any]], quiet: bool = False) -> None:
    """`op`: the op-specific head of the file (op, project, package_file, ...); then the run's environment."""
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    device = torch.cuda.get_device_properties(0)
    payload = {
        **op,
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    if not quiet:
        print(f"\nwrote {path}")


# ---------------------------------------------------------------- the shared main loop

# Widths every scaffold is held to at >= 64 MB (issue: >= 85 % of copy bandwidth, at least
# the best peer), plus small shapes that show launch overhead.
BIG_WIDTHS = (1024, 2048, 4096, 4100, 5120, 8192)
BIG_BYTES = 64 * 1024 * 1024
LAYOUTS = ("aligned", "misaligned")
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def rows_for(width: int, element_size: int, nbytes: int = BIG_BYTES) -> int:
    """Rows that make a [rows, width] tensor at least `nbytes` (beyond any GPU's L2)."""
    return -(-nbytes // (width * element_size))


def rows_tensor(rows: int, width: int, dtype: torch.dtype, layout: str, gen: torch.Generator,
                scale: float = 1.0, mean: float = 0.25) -> torch.Tensor:
    """[rows, width] of fresh random values: aligned (a fresh contiguous tensor) or
    misaligned (the same, one element into a larger buffer: data_ptr is not 16-byte aligned)."""
    offset = 1 if layout == "misaligned" else 0
    buf = torch.randn(rows * width + offset, device="cuda", dtype=torch.float32, generator=gen)
    buf = (buf * scale + mean * scale).to(dtype)
    x = buf[offset:].view(rows, width)
    assert (x.data_ptr() % 16 != 0) == (layout == "misaligned")
    return x


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, width = (int(v) for v in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"shape must look like ROWSxWIDTH (e.g. 4096x4096), got {text!r}") from exc
    if rows < 1 or width < 1:
        raise argparse.ArgumentTypeError(f"shape dimensions must be positive, got {text!r}")
    return rows, width


@dataclass
class Case:
    """One timed configuration: the kernel call, the peers' call, the float64 check, the bytes."""

    kernel: Callable[[], Any]
    call_peer: Callable[[Callable[..., Any]], Any]
    rel_err: Callable[[Any], float]
    nbytes: int
    info: dict[str, Any]


def run_benchmark(argv: list[str] | None, *, script: str, op: str, package: Any, package_error: str | None,
                  package_name: str, project: str, default_shapes: Callable[[torch.dtype], list[tuple[int, int]]],
                  variants: list[str], make_peers: Callable[[bool, str], dict[str, Any]],
                  make_case: Callable[[int, int, torch.dtype, str, str], Case], tolerance: dict[torch.dtype, float],
                  peer_tolerance: dict[torch.dtype, float], doc: str) -> int:
    """The command line every scaffold's benchmark shares: parse, check, time, print, write JSON."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", choices=sorted(DTYPES), default=["bfloat16"])
    parser.add_argument("--shapes", nargs="+", type=parse_shape, metavar="ROWSxWIDTH",
                        help="default: >= 64 MB at widths 1024-8192 (4100 and 5120 too) and small shapes")
    parser.add_argument("--layout", nargs="+", choices=LAYOUTS, default=list(LAYOUTS),
                        help="aligned: fresh tensors; misaligned: data_ptr one element past a 16-byte boundary")
    parser.add_argument("--variant", nargs="+", choices=variants, default=variants[:1])
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer (compiling every shape takes a while)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if package_error is not None:
        return package_missing(script, package_name, package_error)
    if not torch.cuda.is_available():
        print(f"{script}: needs a CUDA GPU", file=sys.stderr)
        return 1

    timer = Timer()
    copy_gbps = copy_bandwidth_gbps(timer)
    results = []
    missing: list[str] = []
    for variant in args.variant:
        peers = make_peers(not args.no_compile, variant)
        missing = print_header(timer, copy_gbps, peers, f"; {op} {variant}")
        for dtype_name in args.dtype:
            dtype = DTYPES[dtype_name]
            for rows, width in args.shapes or default_shapes(dtype):
                for layout in args.layout:  # aligned and misaligned side by side: a cut run keeps both
                    case = make_case(rows, width, dtype, layout, variant)
                    err = case.rel_err(case.kernel())
                    if not err <= tolerance[dtype]:
                        raise SystemExit(f"{script}: kernel output wrong for {rows}x{width} {dtype_name} {layout} "
                                         f"{variant}: relative error {err:.3g}; not timing it")
                    kernel_ms = timer(case.kernel)
                    peer_us, skipped = time_peers(peers, case.call_peer, case.rel_err, peer_tolerance[dtype], timer)
                    r = {"rows": rows, "width": width, "dtype": dtype_name, "layout": layout, "variant": variant,
                         **case.info, "max_rel_err": err, **result(kernel_ms, case.nbytes, copy_gbps, peer_us, skipped)}
                    results.append(r)
                    print_row(rows, width, r, f"{layout[:5]} ")
                    if args.out:  # after every row: a run cut short keeps what it measured
                        write_json(args.out, {"op": op, "project": project, "package_file": package.__file__}, timer,
                                   copy_gbps, missing, results, quiet=True)
    if args.out:
        write_json(args.out, {"op": op, "project": project, "package_file": package.__file__}, timer, copy_gbps,
                   missing, results)
    return 0
