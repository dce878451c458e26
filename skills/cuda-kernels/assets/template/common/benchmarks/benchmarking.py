"""What this project's benchmarks share: the timer, the copy-bandwidth reference, timing
the peers of one shape, and the table and JSON every benchmark writes.

An op's benchmark (benchmark_<op>.py beside this file) only says what is op-specific:
its shapes, inputs, float64 check, bytes moved and peers. Keeping the rest here means two
benchmarks of one project time and report the same way.
"""

from __future__ import annotations

import importlib
import json
import platform
import statistics
import sys
from collections.abc import Callable
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


def print_row(rows: int, width: int, r: dict[str, Any]) -> None:
    cells = " ".join(f"{us:14.1f}" if us is not None else f"{'-':>14}" for us in r["peers_us"].values())
    vs_best = f"{r['speedup_vs_best']:7.2f}x" if r["best_peer"] else f"{'-':>8}"
    print(f"{rows:>7}x{width:<6} {r['dtype']:>9} {r['kernel_us']:10.1f} {r['kernel_GBps']:7.0f} "
          f"{r['pct_of_copy_bandwidth']:6.1f}% {cells} {r['best_peer'] or '-':>11} {vs_best}")
    for name, why in r["peers_skipped"].items():
        print(f"    {name} left out at this shape: {why}")


def write_json(path: Path, op: dict[str, Any], timer: Timer, copy_gbps: float, missing: list[str],
               results: list[dict[str, Any]]) -> None:
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
    print(f"\nwrote {path}")
