#!/usr/bin/env python3
"""Micro-benchmark of the ltx_video kernels against their peers, on one GPU, in one run.

For every op and shape: the kernel, PyTorch eager (diffusers' own expression, from
reference.py), torch.compile of that same expression (torch._dynamo.reset() before every
shape, so no shape falls back to eager after the recompile limit), F.rms_norm and a plain
Triton kernel where they apply. Medians from triton.testing.do_bench (which also flushes
L2 before every call); inputs rotate through enough copies to exceed the 60 MB L2 for
shapes that would fit in it. The device copy bandwidth is measured in the same run and
every row reports time, bytes moved (cos/sin included), GB/s, % of copy bandwidth and
the speedup against each peer. Writes JSON; make_results.py turns it into RESULTS.md.

A second timer replays a CUDA graph of back-to-back calls (inputs rotating, no L2 flush,
no launch overhead). do_bench's flush leaves up to an L2's worth of dirty lines that the
timed kernel then has to write back, which inflates the time of a 100 MB kernel by up to
~25 %; the graph timer shows what the kernels do in a steady stream, as in a model.

Both timers are reported against ONE copy bandwidth: a 1 GiB copy_ timed by do_bench on
the stream, outside any CUDA graph, where it runs as a copy kernel on the SMs. The same
copy_ captured in a graph becomes a memcpy node served by a copy engine (2765 GB/s vs
4228 GB/s on an H200): using that as the graph timer's denominator inflated every "graph
% of copy" by ~1.5x. That figure is still recorded (copy_bandwidth_graph_gbs) as a
diagnostic, never used as a reference.

    python bench_ops.py --out results.json [--package-path DIR] [--quick] [--max-seconds 240]

The package comes from --package-path (a build_local.py output dir), else
LTX_VIDEO_KERNELS_PATH, else an importable ltx_video_kernels. No diffusers needed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
L2_BYTES = 60 * 1024 * 1024  # H200 (and H100 SXM: 50 MB); rotate inputs below 2x this

# The issue's bf16 shapes [batch, tokens, hidden] plus the real LTX-Video shapes at 2688
# latent tokens (49 frames at 512 x 768), batch 1 and 2.
ISSUE_SHAPES = [
    (1, 1024, 2048),
    (2, 1024, 2048),
    (4, 1024, 2048),
    (1, 4096, 2048),
    (2, 4096, 3072),
    (1, 8192, 2048),
    (4, 4096, 3072),
]
LTX_TOKENS = 2688
LTX_SHAPES = [(1, LTX_TOKENS, 2048), (2, LTX_TOKENS, 2048)]
LTX_FF_SHAPES = [(1, LTX_TOKENS, 8192), (2, LTX_TOKENS, 8192)]  # FeedForward GELU input (4 x 2048)
LTX_CROSS_K = [(1, 128, 2048), (2, 128, 2048)]  # attn2.norm_k on the 128 text tokens

# Configurations the RMSNorm sweep tries (threads per row, 16-byte chunks per thread).
SWEEP = {
    2048: [(32, 8), (64, 4), (128, 2), (256, 1), (16, 16)],
    3072: [(32, 12), (64, 6), (96, 4), (128, 3), (192, 2), (384, 1)],
}


def load_package(path: str | None):
    path = path or os.environ.get("LTX_VIDEO_KERNELS_PATH")
    if path:
        sys.path.insert(0, path)
    return importlib.import_module("ltx_video_kernels")


def driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()
        return out.splitlines()[0] if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Bench:
    def __init__(self, warmup_ms: int, rep_ms: int) -> None:
        from triton.testing import do_bench

        self._do_bench = do_bench
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms

    def time_us(self, fn: Callable[[], Any]) -> float:
        fn()  # first call outside the timing (torch.compile compiles here)
        torch.cuda.synchronize()
        ms = self._do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median")
        return float(ms) * 1e3

    def graph_us(self, fn: Callable[[], Any], estimate_us: float, replays: int = 7) -> float:
        """Median per-call time of a CUDA graph holding enough back-to-back calls to run ~1 ms."""
        calls = max(5, min(200, math.ceil(1000.0 / max(estimate_us, 1.0))))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(replays):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / calls)
        del graph
        return sorted(times)[len(times) // 2]


COPY_METHOD = (
    "1 GiB bf16 dst.copy_(src), median of triton.testing.do_bench on the stream, outside any CUDA"
    " graph (an SM copy kernel); GB/s = bytes read + written / time. The one reference for both timers."
)


def copy_bandwidth(bench: Bench) -> tuple[float, float]:
    """(reference, diagnostic) GB/s of a 1 GiB device-to-device copy, read + write counted.

    The reference is do_bench of ``copy_`` outside any graph. The diagnostic replays the
    same ``copy_`` from a CUDA graph, where it is a memcpy node that a copy engine serves
    (~35 % slower on an H200): recorded to show the trap, never a denominator.
    """
    n = 1 << 29  # bf16 elements = 1 GiB
    src = torch.randn(n, device="cuda", dtype=torch.float32).to(torch.bfloat16)
    dst = torch.empty_like(src)
    nbytes = 2 * src.numel() * src.element_size()
    us = bench.time_us(lambda: dst.copy_(src))
    gus = bench.graph_us(lambda: dst.copy_(src), us)
    del src, dst
    torch.cuda.empty_cache()
    return nbytes / (us * 1e-6) / 1e9, nbytes / (gus * 1e-6) / 1e9


def pct_of_copy(nbytes: int, us: float, copy_gbs: float) -> float:
    """% of the reference copy bandwidth for a call moving `nbytes` in `us` microseconds."""
    return 100.0 * nbytes / (us * 1e-6) / 1e9 / copy_gbs


def rotating(make: Callable[[int], tuple], bytes_per_call: int) -> Callable[[], tuple]:
    """Input sets to cycle through: enough copies that consecutive calls never find their
    inputs in L2 (do_bench flushes L2 too; this also covers a no-flush timer)."""
    copies = 1 if bytes_per_call >= 2 * L2_BYTES else min(16, math.ceil(2 * L2_BYTES / max(bytes_per_call, 1)))
    sets = [make(i) for i in range(copies)]
    state = {"i": 0}

    def next_set() -> tuple:
        s = sets[state["i"] % copies]
        state["i"] += 1
        return s

    return next_set


def randn(shape, dtype=torch.bfloat16, seed=0, scale=1.0, shift=0.0) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32) * scale + shift).to(dtype)


def max_rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


# ------------------------------------------------------------------------------ cases
# A case: name, shape, bytes moved by one call, a maker of input tuples, and the
# implementations (label -> callable taking the inputs). "kernel" is ours; the rest are
# peers. compile_* entries are compiled per shape after torch._dynamo.reset().


def cases(pkg, quick: bool) -> list[dict]:
    ref = pkg.reference
    el = 2  # bf16
    out: list[dict] = []
    issue = ISSUE_SHAPES[:3] + ISSUE_SHAPES[-1:] if quick else ISSUE_SHAPES
    norm_shapes = issue + LTX_SHAPES
    from triton_rmsnorm import rms_norm as triton_rms_norm

    # torch.nn.RMSNorm (LTX's norm_q / norm_k: weight over inner_dim, eps 1e-5)
    for shape in norm_shapes + ([] if quick else LTX_CROSS_K):
        d = shape[-1]
        n = math.prod(shape)
        out.append({
            "op": "rms_norm", "variant": "weight (norm_q/norm_k)", "shape": shape,
            "bytes": 2 * n * el + d * el,
            "make": lambda i, shape=shape, d=d: (randn(shape, seed=i, scale=2.0), randn((d,), seed=99, scale=0.3, shift=1.0)),
            "impls": {
                "kernel": lambda x, w: pkg.rms_norm(x, w, 1e-5),
                "eager": lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-5),
                "compile": ("compile", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-5)),
                "triton": lambda x, w: triton_rms_norm(x, w, 1e-5),
            },
            "check": ("kernel", "eager"),
        })
    # diffusers RMSNorm(elementwise_affine=False): norm1/norm2 before the AdaLN
    for shape in LTX_SHAPES:
        n = math.prod(shape)
        out.append({
            "op": "rms_norm", "variant": "no weight (norm1/norm2)", "shape": shape,
            "bytes": 2 * n * el,
            "make": lambda i, shape=shape: (randn(shape, seed=i, scale=2.0),),
            "impls": {
                "kernel": lambda x: pkg.rms_norm(x, None, 1e-6),
                "eager": lambda x: ref.rms_norm(x, None, 1e-6),
                "F.rms_norm": lambda x: F.rms_norm(x, (x.shape[-1],), None, 1e-6),
                "compile": ("compile", lambda x: ref.rms_norm(x, None, 1e-6)),
                "triton": lambda x: triton_rms_norm(x, None, 1e-6),
            },
            "check": ("kernel", "eager"),
        })
    # AdaLN: norm1(x) * (1 + scale_msa) + shift_msa with [B, 1, D] slices of the ada table
    for shape in norm_shapes:
        b, _, d = shape
        n = math.prod(shape)

        def make(i, shape=shape, b=b, d=d):
            table = randn((b, 1, 6, d), seed=1000 + i, scale=0.3)
            return randn(shape, seed=i, scale=2.0), table[:, :, 1], table[:, :, 0]

        out.append({
            "op": "rms_norm_modulate", "variant": "AdaLN, scale/shift [B,1,D]", "shape": shape,
            "bytes": 2 * n * el + 2 * b * d * el,
            "make": make,
            "impls": {
                "kernel": lambda x, s, h: pkg.rms_norm_modulate(x, None, s, h, 1e-6),
                "eager": lambda x, s, h: ref.rms_norm_modulate(x, None, s, h, 1e-6),
                "compile": ("compile", lambda x, s, h: ref.rms_norm_modulate(x, None, s, h, 1e-6)),
            },
            "check": ("kernel", "eager"),
        })
    # attn1's norm_q(q), norm_k(k), apply_rotary_emb(q), apply_rotary_emb(k)
    for shape in norm_shapes:
        n = math.prod(shape)
        d = shape[-1]

        def make(i, shape=shape, d=d):
            b, s, _ = shape
            if shape in LTX_SHAPES and d == 2048:
                cos, sin = ref.rope_tables(b, 7, 16, 24, d, device="cuda")
            else:
                cos, sin = randn(shape, torch.float32, seed=300 + i), randn(shape, torch.float32, seed=400 + i)
            return (randn(shape, seed=i, scale=2.0), randn(shape, seed=700 + i, scale=2.0),
                    randn((d,), seed=98, scale=0.3, shift=1.0), randn((d,), seed=97, scale=0.3, shift=1.0), cos, sin)

        def unfused(q, k, wq, wk, c, s):
            return pkg.rope_interleaved(pkg.rms_norm(q, wq, 1e-5), c, s), pkg.rope_interleaved(pkg.rms_norm(k, wk, 1e-5), c, s)

        out.append({
            "op": "rms_norm_rope_qk", "variant": "norm_q/norm_k + RoPE on q and k", "shape": shape,
            "bytes": n * (4 * el + 4 + 4) + 2 * d * el,
            "make": make,
            "impls": {
                "kernel": lambda q, k, wq, wk, c, s: pkg.rms_norm_rope_qk(q, k, wq, wk, c, s, 1e-5),
                "eager": lambda q, k, wq, wk, c, s: ref.rms_norm_rope_qk(q, k, wq, wk, c, s, 1e-5),
                "compile": ("compile", lambda q, k, wq, wk, c, s: ref.rms_norm_rope_qk(q, k, wq, wk, c, s, 1e-5)),
                "kernels unfused": unfused,
            },
            "check": ("kernel", "eager"),
        })
    # GELU-tanh: the issue's shapes as tensors, and the FeedForward's [B, 2688, 8192]
    for shape in issue + LTX_FF_SHAPES:
        n = math.prod(shape)
        out.append({
            "op": "gelu_tanh", "variant": "FeedForward activation", "shape": shape,
            "bytes": 2 * n * el,
            "make": lambda i, shape=shape: (randn(shape, seed=i, scale=2.0),),
            "impls": {
                "kernel": lambda x: pkg.gelu_tanh(x),
                "eager": lambda x: F.gelu(x, approximate="tanh"),
                "compile": ("compile", lambda x: F.gelu(x, approximate="tanh")),
            },
            "check": ("kernel", "eager"),
        })
    # RoPE as LTX applies it: bf16 x, fp32 cos/sin of x's shape
    for shape in norm_shapes:
        n = math.prod(shape)

        def make(i, shape=shape):
            b, s, d = shape
            if shape in LTX_SHAPES and d == 2048:
                cos, sin = ref.rope_tables(b, 7, 16, 24, d, device="cuda")
            else:
                cos, sin = randn(shape, torch.float32, seed=300 + i), randn(shape, torch.float32, seed=400 + i)
            return randn(shape, seed=i, scale=2.0), cos, sin

        out.append({
            "op": "rope_interleaved", "variant": "x bf16, cos/sin fp32", "shape": shape,
            "bytes": n * (el + el + 4 + 4),
            "make": make,
            "impls": {
                "kernel": lambda x, c, s: pkg.rope_interleaved(x, c, s),
                "eager": lambda x, c, s: ref.rope_interleaved(x, c, s),
                "compile": ("compile", lambda x, c, s: ref.rope_interleaved(x, c, s)),
            },
            "check": ("kernel", "eager"),
        })
    # residual (+ gate) add fused with the next AdaLN norm
    for shape in norm_shapes:
        b, _, d = shape
        n = math.prod(shape)

        def make(i, shape=shape, b=b, d=d):
            table = randn((b, 1, 6, d), seed=2000 + i, scale=0.3)
            return (randn(shape, seed=i, scale=0.7), randn(shape, seed=500 + i, scale=2.0),
                    table[:, :, 5], table[:, :, 4], table[:, :, 3])

        out.append({
            "op": "add_rms_norm_modulate", "variant": "h = r + x*gate; AdaLN(h)", "shape": shape,
            "bytes": 4 * n * el + 3 * b * d * el,
            "make": make,
            "impls": {
                "kernel": lambda x, r, g, s, h: pkg.add_rms_norm_modulate(x, r, g, None, s, h, 1e-6),
                "eager": lambda x, r, g, s, h: ref.add_rms_norm_modulate(x, r, g, None, s, h, 1e-6),
                "compile": ("compile", lambda x, r, g, s, h: ref.add_rms_norm_modulate(x, r, g, None, s, h, 1e-6)),
            },
            "check": ("kernel", "eager"),
        })
    return out


def run_case(case: dict, bench: Bench, copy_gbs: float, allow_compile: bool) -> dict:
    shape, nbytes = case["shape"], case["bytes"]
    next_set = rotating(case["make"], nbytes)
    row: dict[str, Any] = {
        "op": case["op"], "variant": case["variant"], "shape": list(shape), "dtype": "bfloat16",
        "bytes": nbytes, "impls": {},
    }
    # correctness against eager on one input set
    a, b = case["check"]
    args = next_set()
    try:
        ka = case["impls"][a](*args)
        kb = case["impls"][b](*args)
        ka = ka if isinstance(ka, tuple) else (ka,)
        kb = kb if isinstance(kb, tuple) else (kb,)
        row["max_rel_diff_vs_eager"] = max(max_rel_diff(x, y) for x, y in zip(ka, kb))
    except Exception as exc:  # noqa: BLE001 - recorded in the JSON, the run goes on
        row["check_error"] = f"{type(exc).__name__}: {exc}"
    for label, impl in case["impls"].items():
        entry: dict[str, Any] = {}
        try:
            if isinstance(impl, tuple):
                if not allow_compile:
                    row["impls"][label] = {"skipped": "time budget"}
                    continue
                torch._dynamo.reset()  # per shape: no recompile-limit fallback to eager
                fn = torch.compile(impl[1])
                t0 = time.perf_counter()
                fn(*next_set())
                torch.cuda.synchronize()
                entry["compile_s"] = round(time.perf_counter() - t0, 2)
            else:
                fn = impl
            call = lambda fn=fn: fn(*next_set())  # noqa: E731
            us = bench.time_us(call)
            entry.update(us=round(us, 3), gbs=round(nbytes / (us * 1e-6) / 1e9, 1))
            entry["pct_copy"] = round(pct_of_copy(nbytes, us, copy_gbs), 1)
        except Exception as exc:  # noqa: BLE001
            entry = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
            traceback.print_exc()
        if "us" in entry:
            try:
                gus = bench.graph_us(call, entry["us"])
                entry.update(graph_us=round(gus, 3), graph_gbs=round(nbytes / (gus * 1e-6) / 1e9, 1))
                entry["graph_pct_copy"] = round(pct_of_copy(nbytes, gus, copy_gbs), 1)  # same reference
            except Exception as exc:  # noqa: BLE001
                entry["graph_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        row["impls"][label] = entry
    kern = row["impls"].get("kernel", {}).get("us")
    if kern:
        row["speedup"] = {
            label: round(e["us"] / kern, 3) for label, e in row["impls"].items() if label != "kernel" and "us" in e
        }
        peers = {k: v for k, v in row["speedup"].items() if k != "kernels unfused"}
        if peers:
            best = min(peers, key=peers.get)
            row["best_peer"] = best
            row["speedup_vs_best_peer"] = peers[best]
    gk = row["impls"].get("kernel", {}).get("graph_us")
    if gk:
        row["speedup_graph"] = {
            label: round(e["graph_us"] / gk, 3)
            for label, e in row["impls"].items()
            if label != "kernel" and "graph_us" in e
        }
        peers = {k: v for k, v in row["speedup_graph"].items() if k != "kernels unfused"}
        if peers:
            best = min(peers, key=peers.get)
            row["best_peer_graph"] = best
            row["speedup_vs_best_peer_graph"] = peers[best]
    torch.cuda.synchronize()
    return row


def run_sweep(pkg, bench: Bench, copy_gbs: float, shapes: list[tuple[int, int, int]]) -> list[dict]:
    rows = []
    for shape in shapes:
        d = shape[-1]
        if d not in SWEEP:
            continue
        n = math.prod(shape)
        nbytes = 2 * n * 2 + d * 2
        next_set = rotating(lambda i, shape=shape, d=d: (randn(shape, seed=i), randn((d,), seed=9, shift=1.0)), nbytes)
        row = {"shape": list(shape), "bytes": nbytes, "configs": {}}
        for tpr, vpt in SWEEP[d]:
            key = f"{tpr}x{vpt}"
            try:
                call = lambda t=tpr, v=vpt: pkg.rms_norm_with_config(*next_set(), 1e-5, t, v)  # noqa: E731
                us = bench.time_us(call)
                gus = bench.graph_us(call, us)
                row["configs"][key] = {
                    "us": round(us, 3), "pct_copy": round(pct_of_copy(nbytes, us, copy_gbs), 1),
                    "graph_us": round(gus, 3),
                    "graph_pct_copy": round(pct_of_copy(nbytes, gus, copy_gbs), 1),
                }
            except Exception as exc:  # noqa: BLE001
                row["configs"][key] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--package-path", help="directory holding the built ltx_video_kernels")
    parser.add_argument("--quick", action="store_true", help="fewer shapes, shorter timing (smoke test)")
    parser.add_argument("--max-seconds", type=float, default=240.0,
                        help="after this many seconds, skip the remaining torch.compile peers (default 240)")
    parser.add_argument("--ops", default="", help="comma-separated op names to run (default: all)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_ops.py needs a CUDA GPU", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    pkg = load_package(args.package_path)
    import triton

    start = time.perf_counter()
    bench = Bench(warmup_ms=10 if args.quick else 15, rep_ms=30 if args.quick else 60)
    copy_gbs, copy_graph_gbs = copy_bandwidth(bench)
    print(f"copy bandwidth: {copy_gbs:.0f} GB/s (do_bench, outside graphs: the reference for both timers); "
          f"graph-captured copy_ {copy_graph_gbs:.0f} GB/s (copy engine, diagnostic only)", flush=True)
    props = torch.cuda.get_device_properties(0)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "capability": f"{props.major}.{props.minor}",
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "copy_bandwidth_gbs": round(copy_gbs, 1),
        "copy_bandwidth_method": COPY_METHOD,
        # diagnostic only: a graph-captured copy_ is a copy-engine memcpy node, not a reference
        "copy_bandwidth_graph_gbs": round(copy_graph_gbs, 1),
        "timer": "triton.testing.do_bench median (L2 flushed before each call)",
        "graph_timer": "median of 7 replays of a CUDA graph of back-to-back calls, inputs rotated, no flush",
        "results": [],
    }
    wanted = {o for o in args.ops.split(",") if o}
    for case in cases(pkg, args.quick):
        if wanted and case["op"] not in wanted:
            continue
        allow_compile = time.perf_counter() - start < args.max_seconds
        row = run_case(case, bench, copy_gbs, allow_compile)
        result["results"].append(row)
        k = row["impls"].get("kernel", {})
        print(f"{row['op']:<22} {str(tuple(row['shape'])):<18} kernel {k.get('us', float('nan')):8.2f} us "
              f"{k.get('pct_copy', float('nan')):5.1f}% copy (graph {k.get('graph_pct_copy', float('nan')):5.1f}%)  "
              f"vs best peer ({row.get('best_peer')}) x{row.get('speedup_vs_best_peer', float('nan')):.2f} "
              f"(graph {row.get('best_peer_graph')} x{row.get('speedup_vs_best_peer_graph', float('nan')):.2f})",
              flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))  # partial results survive a timeout
    if not wanted or "rms_norm" in wanted:
        result["rms_norm_config_sweep"] = run_sweep(pkg, bench, copy_gbs, ISSUE_SHAPES + LTX_SHAPES)
    result["elapsed_s"] = round(time.perf_counter() - start, 1)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out} in {result['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
