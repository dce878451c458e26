#!/usr/bin/env python3
"""Time the headline shapes under both timers, with the copy bandwidth, in one run.

    python benchmarks/both_timers.py --package-path BUILD_DIR --out both_timers.json
    python benchmarks/both_timers.py --list          # the shapes and providers; needs no torch

The two timers answer different questions, and a percentage of copy bandwidth means
little without saying which one made it:

  graph     bench_ops.time_cuda: a CUDA graph of back-to-back calls, replayed 15 times,
            median replay / calls. Inputs rotate over >= 4x the L2 size and every call
            writes its own output, so data comes from DRAM, but one call's tail overlaps
            the next call's start and there is no launch gap: the rate of a kernel inside
            a stream of work (a model step replayed from a graph).
  do_bench  triton.testing.do_bench (median): the L2 is flushed before each call and each
            call is timed alone between two events, inputs rotating the same way: one
            call's latency, fill and drain included. Small calls look slower here.

Both are measured on the same process, inputs and build, against one copy bandwidth: a
2 GiB device-to-device copy_ timed with CUDA events outside any graph (bench_ops). The
JSON lists every provider's time, GB/s and % of that copy under each timer; the
repository's benchmarks/results_tables.py turns it into the both-timers table of the
example README and of references/lessons.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# (op, label as bench_ops.build_cases names it): the shapes the README and the skill quote.
HEADLINE: tuple[tuple[str, str], ...] = (
    ("rms_norm", "1x8192x4096"),
    ("rms_norm", "16x8192x4096"),
    ("rms_norm", "1x1024x4096"),
    ("qk_norm", "16384x32x128 (524288 rows)"),
    ("fused_add_rms_norm", "512x4096"),
    ("fused_add_rms_norm", "4096x4096"),
    ("swiglu", "4096x12288"),
    ("rope", "1x4096, q 32x128, k 8x128"),
    ("qk_norm_rope", "1x4096, q 32x128, k 8x128"),
)
PROVIDERS = ("kernel", "triton", "compile", "F.rms_norm")  # those an op has; eager is slow and says little here
GRAPH_TIMER = ("bench_ops.time_cuda: median of 15 replays of a CUDA graph of back-to-back calls / calls; "
               "inputs rotate over >= 4x L2 of copies; every call writes its own output buffer")
DO_BENCH_TIMER = ("triton.testing.do_bench(return_mode='median', warmup=25 ms, rep=100 ms): L2 flushed before "
                  "each call, each call timed alone between CUDA events; inputs rotate the same way")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--package-path", help="directory containing the built qwen3_8b_kernels (default: import or build)")
    p.add_argument("--arch", help="architecture to build for when building (default: the visible GPU's)")
    p.add_argument("--providers", default=",".join(PROVIDERS),
                   help=f"comma-separated subset of {','.join(PROVIDERS)},eager (default: %(default)s)")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    p.add_argument("--source", help="what was measured, recorded in the JSON (default: this checkout's commit)")
    p.add_argument("--list", action="store_true", help="print the shapes and providers, time nothing")
    return p


def _entry(prefix: str, us: float, nbytes: int, copy_gbps: float) -> dict[str, float]:
    gbps = nbytes / (us * 1e-6) / 1e9
    return {f"{prefix}_us": round(us, 3), f"{prefix}_GBps": round(gbps, 1),
            f"{prefix}_pct_copy": round(100 * gbps / copy_gbps, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    unknown = sorted(set(providers) - {*PROVIDERS, "eager"})
    if unknown:
        print(f"both_timers: unknown provider(s) {unknown}", file=sys.stderr)
        return 2
    if args.list:
        for op, label in HEADLINE:
            print(f"{op:<20} {label}")
        print("providers: " + ", ".join(providers))
        return 0

    import torch

    if not torch.cuda.is_available():
        print("both_timers: no CUDA device (both timers measure GPU time); --list needs none", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    import bench_ops as B
    from triton.testing import do_bench

    def log(msg: str) -> None:
        print(msg, flush=True)

    pkg = B.load_package(args.package_path, args.arch)
    meta = B.environment("cuda")
    meta["source"] = args.source or B.source_revision(HERE)
    copy_gbps = B.copy_bandwidth_gbps()
    log(f"{meta['device']}: copy bandwidth {copy_gbps:.0f} GB/s (2 GiB copy_, CUDA events, outside graphs)")
    meta.update(copy_bandwidth_GBps=round(copy_gbps, 1), copy_bandwidth_method=B.COPY_METHOD,
                timers={"graph": GRAPH_TIMER, "do_bench": DO_BENCH_TIMER})
    l2_bytes = int(meta.get("l2_bytes") or 0)
    wanted = dict.fromkeys(HEADLINE)
    ops = sorted({op for op, _ in HEADLINE})
    cases = {(c.op, c.label): c for c in B.build_cases(pkg, "cuda", ops, quick=False) if (c.op, c.label) in wanted}
    missing = [k for k in HEADLINE if k not in cases]
    eager = B.make_eager_peers()
    results: list[dict[str, Any]] = []
    errors = [f"{op} {label}: bench_ops.build_cases has no such case" for op, label in missing]
    t_start = time.perf_counter()
    for key in HEADLINE:
        case = cases.get(key)
        if case is None:
            continue
        n_sets = B.n_sets_for(case.bytes, l2_bytes, "cuda")
        inputs = [case.make(i) for i in range(n_sets)]
        row: dict[str, Any] = {"op": case.op, "shape": case.label, "bytes": case.bytes, "input_sets": n_sets,
                               "providers": {}}
        torch._dynamo.reset()  # a fresh compile per shape, as bench_ops does
        for name in providers:
            fn = case.providers.get(name)
            if fn is None:
                continue
            try:
                if name == "compile":
                    fn = B.compiled_peer(fn, eager, case)
                graph = B.time_cuda(lambda i, fn=fn, inputs=inputs: fn(*inputs[i]), case.bytes, n_sets)
                state = {"i": 0}

                def alone(fn=fn, state=state, inputs=inputs, n_sets=n_sets) -> Any:
                    state["i"] += 1
                    return fn(*inputs[state["i"] % n_sets])

                alone()
                torch.cuda.synchronize()
                single_us = float(do_bench(alone, warmup=25, rep=100, return_mode="median")) * 1e3
                entry = {**_entry("graph", graph.us, case.bytes, copy_gbps), "graph_method": graph.method,
                         "graph_spread": round(graph.spread, 4), **_entry("do_bench", single_us, case.bytes, copy_gbps)}
                row["providers"][name] = entry
            except Exception as exc:  # noqa: BLE001 - one failing provider must not stop the run
                errors.append(f"{case.op} {case.label} {name}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
                log("ERROR " + errors[-1])
                torch.cuda.synchronize()
        kernel = row["providers"].get("kernel")
        if kernel:
            row["do_bench_over_graph"] = round(kernel["do_bench_us"] / kernel["graph_us"], 3)
            log(f"{case.op:<20} {case.label:<30} graph {kernel['graph_us']:9.2f} us {kernel['graph_pct_copy']:5.1f}%"
                f"   do_bench {kernel['do_bench_us']:9.2f} us {kernel['do_bench_pct_copy']:5.1f}%")
        results.append(row)
        del inputs
        torch.cuda.empty_cache()
    meta["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    payload = {"meta": meta, "results": results, "errors": errors}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(json.dumps(payload, indent=1) + "\n")
        tmp.replace(args.out)
        log(f"wrote {args.out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
