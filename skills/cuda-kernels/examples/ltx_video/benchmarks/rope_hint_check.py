#!/usr/bin/env python3
"""Does the streaming cache hint make RoPE faster, or only the benchmark? (H200 run 34)

bench_ops.py's graph timer discards each call's output, so inside the captured graph every
call writes the same output buffer (the graph's memory pool hands the freed block straight
back). An output line still dirty in L2 when the next call overwrites it reaches DRAM once
for both calls. Evict-first loads (ROPE_STREAMING) leave such lines in L2 longer, so part of
what the hint gains there may be DRAM writes that a model, whose next op writes elsewhere,
would pay.

This script times rope_interleaved_with_config's narrow kernel (4 elements per thread) with
and without ROPE_STREAMING, and torch.compile of the reference expression, in two graph
modes on the same rotating input sets as bench_ops.py:
  same      the bench_ops timer: outputs discarded, one output buffer for all calls;
  distinct  every call's output kept alive during capture, so each call writes fresh
            memory and no write can be absorbed by a later call.
If the hint's gain is real DRAM efficiency it shows in both modes.

    python rope_hint_check.py --package-path BUILD_DIR --out rope_hint_check.json

Exit code 2 without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_ops  # noqa: E402  (same directory: shapes, inputs, copy reference, timer)

SHAPES = [(4, 1024, 2048), (1, 2688, 2048), (2, 2688, 2048), (1, 8192, 2048), (4, 4096, 3072)]
REPLAYS = 15


def graph_us_distinct(fn: Callable[[int], Any], calls: int, n_sets: int) -> tuple[float, float]:
    """bench_ops.graph_us, but every call's output stays alive until the graph is captured,
    so the calls write `calls` different buffers."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            fn(i % n_sets)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    kept = []
    with torch.cuda.graph(graph):
        for j in range(calls):
            kept.append(fn(j % n_sets))
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    del graph, kept
    samples.sort()
    med = statistics.median(samples)
    spread = (samples[int(0.8 * (len(samples) - 1))] - samples[int(0.2 * (len(samples) - 1))]) / med
    return med, spread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package-path", help="build_local.py output dir (else LTX_VIDEO_KERNELS_PATH)")
    parser.add_argument("--out", default="rope_hint_check.json")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("rope_hint_check: needs a CUDA GPU", file=sys.stderr)
        return 2
    pkg = bench_ops.load_package(args.package_path)
    copy_gbs = bench_ops.copy_bandwidth_gbs()
    l2 = bench_ops.device_l2_bytes()
    print(f"copy bandwidth {copy_gbs:.0f} GB/s, L2 {l2 >> 20} MiB", flush=True)
    rows = []
    for shape in SHAPES:
        nbytes = math.prod(shape) * (2 + 2 + 4 + 4)
        n_sets = bench_ops.n_sets_for(nbytes, l2)
        make = bench_ops.rope_inputs(pkg.reference, shape)
        sets = [make(i) for i in range(n_sets)]
        calls = bench_ops.graph_calls(nbytes, n_sets, copy_gbs)
        torch._dynamo.reset()
        compiled = torch.compile(pkg.reference.rope_interleaved)
        impls: dict[str, Callable[..., torch.Tensor]] = {
            "narrow4": lambda x, c, s: pkg.rope_interleaved_with_config(x, c, s, 1, 4),
            "narrow4/cs": lambda x, c, s: pkg.rope_interleaved_with_config(x, c, s, 1, 4, pkg.ROPE_STREAMING),
            "compile": compiled,
        }
        want = impls["narrow4"](*sets[0])
        row: dict[str, Any] = {"shape": list(shape), "bytes": nbytes, "input_sets": n_sets, "calls": calls,
                               "impls": {}}
        for name, impl in impls.items():
            got = impl(*sets[0])
            if name != "compile" and not torch.equal(got, want):
                print(f"rope_hint_check: {name} differs from narrow4 at {shape}", file=sys.stderr)
                return 1
            fn = lambda i, impl=impl: impl(*sets[i])  # noqa: E731
            entry = {}
            for mode, timer in (("same", bench_ops.graph_us), ("distinct", graph_us_distinct)):
                us, spread = timer(fn, calls, n_sets)
                entry[mode] = {"graph_us": round(us, 3), "graph_pct_copy": round(bench_ops.pct_of_copy(nbytes, us, copy_gbs), 1),
                               "graph_spread": round(spread, 4)}
            row["impls"][name] = entry
        cells = "  ".join(f"{n} {e['same']['graph_us']:7.2f} / {e['distinct']['graph_us']:7.2f} us" for n, e in row["impls"].items())
        print(f"{str(shape):<18} {nbytes / 1e6:6.1f} MB  same / distinct: {cells}", flush=True)
        rows.append(row)
        del sets, want
        torch.cuda.empty_cache()
    out = {
        "device": torch.cuda.get_device_name(0),
        "driver": bench_ops.driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "copy_bandwidth_gbs": round(copy_gbs, 1),
        "copy_bandwidth_method": bench_ops.COPY_METHOD,
        "graph_timer": f"median of {REPLAYS} replays of a CUDA graph of back-to-back calls / calls; inputs rotate"
                       " over >= 4x L2 of sets; 'same': outputs discarded (one buffer), 'distinct': each call's"
                       " output kept (fresh memory per call)",
        "results": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
