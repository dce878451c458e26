#!/usr/bin/env python3
"""Micro-benchmark of the ltx_video kernels against their peers, on one GPU, in one run.

For every op and shape: the kernel, PyTorch eager (diffusers' own expression, from
reference.py), torch.compile of that same expression (torch._dynamo.reset() before every
shape, so no shape falls back to eager after the recompile limit), F.rms_norm and a plain
Triton kernel where they apply. Every row reports time, bytes moved (cos/sin included),
% of the copy bandwidth measured in the same run and the speedup against each peer, as
JSON (one record per line); the repository's benchmarks/ltx_video/make_results.py renders it.

Two timers per implementation:
  graph     (the verdicts use this one) a CUDA graph of back-to-back calls, replayed 15
            times and timed with CUDA events; median replay / calls = per-call GPU time,
            free of launch overhead. Inputs rotate over enough sets to move at least 4x the
            device's L2 (at least 2 sets), and the call count is a multiple of the set
            count, so no call finds its inputs in L2, as in a model. Replaying ONE input set
            lets a 100-200 MB kernel read part of it from L2 and report > 100 % of copy.
            Every call writes its own output buffer: calls that rewrite one buffer
            (--one-output-buffer) absorb each other's writes in L2, which flattered kernels
            with evict-first loads by 1-8 %.
  do_bench  triton.testing.do_bench median (L2 flushed before every call, inputs rotating
            the same way); includes launch overhead and the write-back of the flush's dirty
            lines. Shown next to the graph timer, not used for verdicts.
Copy reference (one per run, for both timers): a 2 GiB device-to-device copy_ timed with
CUDA events on the stream, outside any CUDA graph (captured, copy_ becomes a memcpy node
that a copy engine serves, ~35 % slower on an H200).

torch.compile is the slow part (~3-8 s per shape cold). --compile-workers subprocesses
first compile (and run once) each shape's torch.compile peer, filling the on-disk
Inductor/Triton caches; the main process waits for all of them to exit before it times
anything, because their kernels would share the GPU with the timed ones (an AdaLN shape read
58 % of copy bandwidth with seven workers running, 69 % alone). It then measures every other
implementation, and compiles each peer itself (a cache hit, ~1 s) and times it. The plan
(measurement and compile counts, estimated seconds) is printed first; --plan prints it and
exits (no GPU needed).

    python bench_ops.py --out results.json [--package-path DIR] [--quick] [--ops rms_norm,...]
                        [--max-seconds 600] [--compile-workers 8] [--plan]

The launch sweeps that chose the defaults in kernel_src/ltx_ops.cpp (through the
*_with_config ops) are the kernel-skills repository's benchmarks/ltx_video/sweep_ops.py,
which runs this benchmark with main(sweeps=...).

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
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

try:  # the Triton peer below; nothing else here needs Triton at import
    import triton
    import triton.language as tl
except ImportError:
    triton = None

HERE = Path(__file__).resolve().parent
FORMAT = 2  # bench.json layout: 2 = rotated-input graph timer (make_results.py renders 1 and 2)
DEFAULT_L2_BYTES = 60 * 1024 * 1024  # H200; used only when the device does not report its L2
GRAPH_REPLAYS = 15

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

# Seconds per item for the printed estimate (H200, 16 cores; measured).
EST_MEASURE_S = 0.35  # one implementation on one shape: do_bench + graph capture and replays
EST_COMPILE_COLD_S = 6.0  # torch.compile of one small function after dynamo reset, empty caches
EST_COMPILE_WARM_S = 1.2  # the same with the Inductor/Triton caches filled
EST_FIXED_S = 15.0  # imports, copy reference, worker start-up


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


def device_l2_bytes() -> int:
    size = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
    return size if size > 0 else DEFAULT_L2_BYTES


def n_sets_for(bytes_per_call: int, l2_bytes: int) -> int:
    """Input sets to rotate: together they move >= 4x L2, so a set is evicted before its reuse."""
    return int(min(256, max(2, math.ceil(4 * l2_bytes / max(bytes_per_call, 1)))))


# ------------------------------------------------------------------------------ timing


def do_bench_us(call: Callable[[], Any], warmup_ms: int, rep_ms: int) -> float:
    from triton.testing import do_bench

    call()  # first call outside the timing
    torch.cuda.synchronize()
    return float(do_bench(call, warmup=warmup_ms, rep=rep_ms, return_mode="median")) * 1e3


def graph_calls(bytes_per_call: int, n_sets: int, copy_gbs: float) -> int:
    """~3 ms of traffic at copy speed per replay, rounded up to a multiple of the set count
    (so a replay starts on the set touched longest ago)."""
    want = min(500, max(5, math.ceil(3e-3 * copy_gbs * 1e9 / max(bytes_per_call, 1))))
    return n_sets * math.ceil(want / n_sets)


def graph_us(fn: Callable[[int], Any], calls: int, n_sets: int, keep_outputs: bool = True) -> tuple[float, float]:
    """(median per-call µs, (p80 - p20) / median) of replays of a graph of `calls` calls,
    call j on input set j % n_sets.

    keep_outputs: each call writes its own buffer, as in a model. Discarded
    (--one-output-buffer) the graph's pool hands each call the previous call's block, and a
    line still dirty in L2 reaches DRAM once for both calls (the module docstring's trap)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream
        for i in range(3):
            fn(i % n_sets)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    kept = []
    with torch.cuda.graph(graph):
        for j in range(calls):
            out = fn(j % n_sets)
            if keep_outputs:
                kept.append(out)
            del out
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(GRAPH_REPLAYS):
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


COPY_METHOD = (
    "2 GiB uint8 dst.copy_(src) timed with CUDA events on the stream, outside any CUDA graph (3 warm-up"
    " copies, median of 9); GB/s = bytes read + written / time. The one reference for both timers."
)


def copy_bandwidth_gbs(nbytes: int = 2 << 30) -> float:
    """Device-to-device copy bandwidth, read + write counted; see COPY_METHOD (never
    graph-captured: the module docstring says why)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    samples = []
    for _ in range(9):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / statistics.median(samples) / 1e9


def pct_of_copy(nbytes: int, us: float, copy_gbs: float) -> float:
    """% of the reference copy bandwidth for a call moving `nbytes` in `us` microseconds."""
    return 100.0 * nbytes / (us * 1e-6) / 1e9 / copy_gbs


def randn(shape, dtype=torch.bfloat16, seed=0, scale=1.0, shift=0.0) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32) * scale + shift).to(dtype)


def rope_inputs(ref, shape: tuple[int, int, int]) -> Callable[[int], tuple[torch.Tensor, ...]]:
    """Input set i of the RoPE cases: bf16 x and fp32 cos/sin of x's shape - LTX's own tables
    at the 2688-token shapes, random values elsewhere."""
    def make(i: int) -> tuple[torch.Tensor, ...]:
        b, s, d = shape
        if shape in LTX_SHAPES and d == 2048:
            cos, sin = ref.rope_tables(b, 7, 16, 24, d, device="cuda")
        else:
            cos, sin = randn(shape, torch.float32, seed=300 + i), randn(shape, torch.float32, seed=400 + i)
        return randn(shape, seed=i, scale=2.0), cos, sin

    return make


def qk_inputs(ref, shape: tuple[int, int, int]) -> Callable[[int], tuple[torch.Tensor, ...]]:
    """Input set i of rms_norm_rope_qk: q, k, weight_q, weight_k, cos, sin (LTX's own tables
    at the 2688-token shapes, random fp32 elsewhere)."""

    rope = rope_inputs(ref, shape)  # q is RoPE's x: the same tensors for the same i

    def make(i: int) -> tuple[torch.Tensor, ...]:
        q, cos, sin = rope(i)
        d = shape[-1]
        return (q, randn(shape, seed=700 + i, scale=2.0),
                randn((d,), seed=98, scale=0.3, shift=1.0), randn((d,), seed=97, scale=0.3, shift=1.0), cos, sin)

    return make


def qk_bytes(shape: tuple[int, int, int], el: int = 2) -> int:
    """Bytes one rms_norm_rope_qk call moves: q and k read and written, fp32 cos and sin read,
    both weights read."""
    return math.prod(shape) * (4 * el + 4 + 4) + 2 * shape[-1] * el


def max_rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


# ------------------------------------------------------------------------------ cases
# A case: name, shape, bytes moved by one call, a maker of input tuples, and the
# implementations (label -> callable taking the inputs). "kernel" is ours; the rest are
# peers. compile_* entries are compiled per shape after torch._dynamo.reset().


if triton is not None:
    # A plain Triton RMSNorm, the "what a competent first Triton kernel gets" peer: one program
    # per row, the whole row in one block (BLOCK = next power of two of D), fp32 math, one
    # rounding; no tuning beyond the usual warp-count rule.
    @triton.jit
    def _rms_norm_row(x_ptr, w_ptr, y_ptr, row_stride, d, eps, HAS_WEIGHT: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < d
        x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / d + eps)
        y = x * rstd
        if HAS_WEIGHT:
            y = y * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * d + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rows = x2.shape[0]
    if rows == 0:
        return y
    block = triton.next_power_of_2(d)
    num_warps = min(max(block // 256, 1), 8)
    _rms_norm_row[(rows,)](
        x2, weight if weight is not None else x2, y, x2.stride(0), d, eps,
        HAS_WEIGHT=weight is not None, BLOCK=block, num_warps=num_warps,
    )
    return y


def cases(pkg, quick: bool) -> list[dict]:
    ref = pkg.reference
    el = 2  # bf16
    out: list[dict] = []
    issue = ISSUE_SHAPES[:3] + ISSUE_SHAPES[-1:] if quick else ISSUE_SHAPES
    norm_shapes = issue + LTX_SHAPES

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
        make = qk_inputs(ref, shape)

        def unfused(q, k, wq, wk, c, s):
            return pkg.rope_interleaved(pkg.rms_norm(q, wq, 1e-5), c, s), pkg.rope_interleaved(pkg.rms_norm(k, wk, 1e-5), c, s)

        out.append({
            "op": "rms_norm_rope_qk", "variant": "norm_q/norm_k + RoPE on q and k", "shape": shape,
            "bytes": qk_bytes(shape, el),
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
        make = rope_inputs(ref, shape)
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


def is_compiled(impl: Any) -> bool:
    return isinstance(impl, tuple) and impl[0] == "compile"


# The kernel row again with programmatic dependent launch switched off (set_pdl(False) while
# it is captured and timed): the graph timer's calls run back to back, so with PDL each call
# starts while the previous one drains. In a model the kernel before ours is mostly a GEMM
# or an Inductor kernel, so this row is what the same launch gets without that overlap.
NO_PDL = "kernel, PDL off"
# The kernel row again with the default ops' cache-hint rule switched on (set_cache_hints(True)):
# the A/B for the rule, on the ops it touches (the q/k norm + RoPE, the weightless fused add,
# small weightless modulate calls). Bit for bit the same outputs.
HINTS = "kernel, cache hints"
HINT_OPS = ("rms_norm_rope_qk", "add_rms_norm_modulate", "rms_norm_modulate")


def add_switch_rows(pkg, out: list[dict]) -> list[dict]:
    """Add the NO_PDL row (and HINTS on HINT_OPS): ("switch", fn, setter, value) impls."""
    for case in out:
        kernel = case["impls"]["kernel"]
        if hasattr(pkg, "set_pdl"):  # packages built before PDL have no switch
            case["impls"][NO_PDL] = ("switch", kernel, pkg.set_pdl, False)
        if hasattr(pkg, "set_cache_hints") and case["op"] in HINT_OPS:
            case["impls"][HINTS] = ("switch", kernel, pkg.set_cache_hints, True)
    return out


def select_cases(pkg, quick: bool, ops: set[str]) -> list[dict]:
    return add_switch_rows(pkg, [c for c in cases(pkg, quick) if not ops or c["op"] in ops])


class Runner:
    """Times implementations of one case on its rotating input sets."""

    def __init__(self, copy_gbs: float, l2_bytes: int, warmup_ms: int, rep_ms: int,
                 keep_outputs: bool = True) -> None:
        self.copy_gbs, self.l2_bytes = copy_gbs, l2_bytes
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        self.keep_outputs = keep_outputs

    def inputs(self, case: dict) -> list[tuple]:
        return [case["make"](i) for i in range(n_sets_for(case["bytes"], self.l2_bytes))]

    def measure(self, fn: Callable[..., Any], sets: list[tuple], nbytes: int) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        n = len(sets)
        state = {"i": 0}

        def rotating() -> Any:
            s = sets[state["i"] % n]
            state["i"] += 1
            return fn(*s)

        try:
            gus, spread = graph_us(lambda i: fn(*sets[i]), graph_calls(nbytes, n, self.copy_gbs), n, self.keep_outputs)
            entry.update(graph_us=round(gus, 3), graph_gbs=round(nbytes / (gus * 1e-6) / 1e9, 1),
                         graph_pct_copy=round(pct_of_copy(nbytes, gus, self.copy_gbs), 1),
                         graph_spread=round(spread, 4))
        except Exception as exc:  # noqa: BLE001 - recorded in the JSON, the run goes on
            entry["graph_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            torch.cuda.synchronize()
        try:
            us = do_bench_us(rotating, self.warmup_ms, self.rep_ms)
            entry.update(us=round(us, 3), gbs=round(nbytes / (us * 1e-6) / 1e9, 1),
                         pct_copy=round(pct_of_copy(nbytes, us, self.copy_gbs), 1))
        except Exception as exc:  # noqa: BLE001
            entry["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        return entry


def new_row(case: dict, n_sets: int, calls: int) -> dict[str, Any]:
    return {
        "op": case["op"], "variant": case["variant"], "shape": list(case["shape"]), "dtype": "bfloat16",
        "bytes": case["bytes"], "input_sets": n_sets, "graph_calls": calls, "impls": {},
    }


def measure_plain(case: dict, runner: Runner) -> dict[str, Any]:
    """Phase 1: correctness against eager, then every implementation except torch.compile."""
    sets = runner.inputs(case)
    row = new_row(case, len(sets), graph_calls(case["bytes"], len(sets), runner.copy_gbs))
    a, b = case["check"]
    try:
        ka, kb = case["impls"][a](*sets[0]), case["impls"][b](*sets[0])
        ka = ka if isinstance(ka, tuple) else (ka,)
        kb = kb if isinstance(kb, tuple) else (kb,)
        row["max_rel_diff_vs_eager"] = max(max_rel_diff(x, y) for x, y in zip(ka, kb))
    except Exception as exc:  # noqa: BLE001
        row["check_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    for label, impl in case["impls"].items():
        if is_compiled(impl):
            row["impls"][label] = {"skipped": "not reached: the run ended before phase 2 timed it"}
        elif isinstance(impl, tuple) and impl[0] == "switch":
            _, fn, setter, value = impl
            was = setter(value)
            try:
                row["impls"][label] = runner.measure(fn, sets, case["bytes"])
            finally:
                setter(was)
        else:
            row["impls"][label] = runner.measure(impl, sets, case["bytes"])
    del sets
    torch.cuda.empty_cache()
    return row


def measure_compiled(case: dict, row: dict, runner: Runner) -> None:
    """Phase 2: torch.compile each compile peer for this shape (after a dynamo reset) and time it."""
    sets = None
    for label, impl in case["impls"].items():
        if not is_compiled(impl):
            continue
        try:
            sets = sets or runner.inputs(case)
            torch._dynamo.reset()  # per shape: no recompile-limit fallback, no dynamic-shape kernel
            fn = torch.compile(impl[1])
            t0 = time.perf_counter()
            fn(*sets[0])
            torch.cuda.synchronize()
            compile_s = round(time.perf_counter() - t0, 2)
            entry = runner.measure(fn, sets, case["bytes"])
            entry["compile_s"] = compile_s
        except Exception as exc:  # noqa: BLE001
            entry = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
            traceback.print_exc()
        row["impls"][label] = entry
    del sets
    torch.cuda.empty_cache()


def add_speedups(row: dict) -> None:
    """Convenience fields (make_results.py recomputes everything from the raw µs)."""
    for key, suffix in (("graph_us", "_graph"), ("us", "")):
        kern = (row["impls"].get("kernel") or {}).get(key)
        if not kern:
            continue
        ratios = {label: round(e[key] / kern, 3) for label, e in row["impls"].items()
                  if label != "kernel" and e and e.get(key)}
        row["speedup" + suffix] = ratios
        peers = {k: v for k, v in ratios.items() if k not in ("kernels unfused", NO_PDL, HINTS)}
        if peers:
            best = min(peers, key=peers.get)
            row["best_peer" + suffix] = best
            row["speedup_vs_best_peer" + suffix] = peers[best]


def print_row(row: dict) -> None:
    nan = float("nan")
    k = row["impls"].get("kernel") or {}
    print(f"{row['op']:<22} {str(tuple(row['shape'])):<18} sets {row['input_sets']:>3}  kernel graph "
          f"{k.get('graph_us', nan):8.2f} us {k.get('graph_pct_copy', nan):5.1f}% copy, do_bench "
          f"{k.get('us', nan):8.2f} us {k.get('pct_copy', nan):5.1f}%  best peer graph "
          f"{row.get('best_peer_graph')} x{row.get('speedup_vs_best_peer_graph', nan):.2f}", flush=True)


# ------------------------------------------------------------------------------ plan


def dumps_records(data: dict[str, Any]) -> str:
    """JSON with one top-level key per line and one record per line: small and diffable."""
    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{compact(key)}:[\n" + ",\n".join(compact(v) for v in value) + "]")
        else:
            lines.append(f"{compact(key)}:{compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def plan(selected: list[dict], workers: int, sweep_n: int = 0, adaln_sweep_n: int = 0, rope_sweep_n: int = 0,
         qk_sweep_n: int = 0, gelu_sweep_n: int = 0) -> dict[str, Any]:
    """Counts of measurements and compiles, and the seconds they should take (EST_* rates);
    the *_sweep_n counts come from the repository's sweep tool (0 here)."""
    plain = sum(1 for c in selected for impl in c["impls"].values() if not is_compiled(impl))
    compiles = sum(1 for c in selected for impl in c["impls"].values() if is_compiled(impl))
    phase1 = (plain + sweep_n + adaln_sweep_n + rope_sweep_n + qk_sweep_n + gelu_sweep_n) * EST_MEASURE_S
    if workers > 0:
        # the workers fill the caches before any timing (phase 0); phase 2 then hits them
        phase0 = compiles * EST_COMPILE_COLD_S / workers
        phase2 = compiles * (EST_COMPILE_WARM_S + EST_MEASURE_S)
    else:
        phase0, phase2 = 0.0, compiles * (EST_COMPILE_COLD_S + EST_MEASURE_S)
    return {
        "cases": len(selected),
        "measurements": plain + compiles + sweep_n + adaln_sweep_n + rope_sweep_n + qk_sweep_n + gelu_sweep_n,
        "compiles": compiles, "compile_workers": workers, "sweep_measurements": sweep_n,
        "adaln_sweep_measurements": adaln_sweep_n, "rope_sweep_measurements": rope_sweep_n,
        "qk_sweep_measurements": qk_sweep_n, "gelu_sweep_measurements": gelu_sweep_n,
        "timers_per_measurement": 2, "estimated_s": round(EST_FIXED_S + phase0 + phase1 + phase2),
    }


def plan_text(p: dict[str, Any]) -> str:
    return (f"plan: {p['cases']} op x shape cases, {p['measurements']} measurements x {p['timers_per_measurement']} timers"
            f" (incl. {p['sweep_measurements']} sweep, {p['adaln_sweep_measurements']} AdaLN sweep,"
            f" {p['rope_sweep_measurements']} RoPE sweep, {p.get('qk_sweep_measurements', 0)} q/k sweep,"
            f" {p.get('gelu_sweep_measurements', 0)} GELU sweep),"
            f" {p['compiles']} torch.compile peers"
            f" ({p['compile_workers']} warm-up workers); estimated ~{p['estimated_s']} s on an H200")


# ------------------------------------------------------------------------------ compile warm-up workers


def compile_worker(shard: str, warm_dir: Path, pkg, quick: bool, ops: set[str]) -> int:
    """Compile (and run once) the torch.compile peers of every case index = k mod n, leaving
    the Inductor FX-graph and Triton caches warm for the main process; a marker per case."""
    k, n = (int(v) for v in shard.split("/"))
    parent = os.getppid()
    sys.path.insert(0, str(HERE))
    for idx, case in enumerate(select_cases(pkg, quick, ops)):
        if idx % n != k:
            continue
        if os.getppid() != parent:  # the benchmark is gone (killed by a timeout): stop
            return 1
        status = "done"
        try:
            args = case["make"](0)
            for impl in case["impls"].values():
                if is_compiled(impl):
                    torch._dynamo.reset()
                    torch.compile(impl[1])(*args)
            torch.cuda.synchronize()
            del args
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001 - the main process compiles it cold instead
            status = f"failed: {type(exc).__name__}: {exc}".splitlines()[0][:300]
        (warm_dir / f"{idx}.tmp").write_text(status)
        (warm_dir / f"{idx}.tmp").replace(warm_dir / f"{idx}.done")
    return 0


class Warmers:
    """The compile warm-up subprocesses (this script with --compile-worker k/n)."""

    def __init__(self, n: int, args: argparse.Namespace) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ltx_bench_warm_"))
        self.n = n
        self.procs: list[subprocess.Popen] = []
        env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1")  # not in the cache key
        for k in range(n):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--compile-worker", f"{k}/{n}",
                   "--warm-dir", str(self.dir), "--out", os.devnull, "--ops", args.ops]
            if args.package_path:
                cmd += ["--package-path", args.package_path]
            if args.quick:
                cmd.append("--quick")
            log = open(self.dir / f"worker{k}.log", "w")  # noqa: SIM115 - closed with the process
            self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))

    def wait_all(self, timeout_s: float) -> int:
        """Blocks until every worker has exited (or the timeout); returns how many still run."""
        deadline = time.perf_counter() + timeout_s
        for proc in self.procs:
            try:
                proc.wait(max(0.0, deadline - time.perf_counter()))
            except subprocess.TimeoutExpired:
                pass
        return sum(1 for proc in self.procs if proc.poll() is None)

    def wait_for(self, idx: int, timeout_s: float) -> str:
        marker = self.dir / f"{idx}.done"
        proc = self.procs[idx % self.n] if self.n else None
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            if marker.exists():
                return marker.read_text()
            if proc is None or proc.poll() is not None:
                return marker.read_text() if marker.exists() else "worker exited"
            time.sleep(0.05)
        return "timed out"

    def close(self) -> list[str]:
        tails = []
        for k, p in enumerate(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if p.returncode not in (0, None):
                text = (self.dir / f"worker{k}.log").read_text(errors="replace")
                tails.append(f"worker {k} exit {p.returncode}: " + text[-600:])
        return tails


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None, sweeps: Any = None) -> int:
    """sweeps: a module with add_arguments(parser), counts(args, ops) (plan's *_sweep_n) and
    run(args, pkg, runner, ops, result, save), run after the main table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--package-path", help="directory holding the built ltx_video_kernels")
    parser.add_argument("--quick", action="store_true", help="fewer shapes, shorter timing (smoke test)")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="after this many seconds, skip the torch.compile peers not yet measured (default 600)")
    parser.add_argument("--ops", default="", help="comma-separated op names to run (default: all)")
    parser.add_argument("--compile-workers", type=int, default=min(8, max(0, (os.cpu_count() or 2) // 2 - 1)),
                        help="subprocesses that pre-compile the torch.compile peers (default: cores/2 - 1, at most 8)")
    parser.add_argument("--one-output-buffer", action="store_true",
                        help="graph timer: discard each call's output, so the calls rewrite one buffer (the old"
                             " timer; flatters kernels with evict-first loads)")
    parser.add_argument("--plan", action="store_true", help="print the measurement plan and estimate, then exit")
    parser.add_argument("--compile-worker", help=argparse.SUPPRESS)  # k/n, internal
    parser.add_argument("--warm-dir", type=Path, help=argparse.SUPPRESS)
    if sweeps is not None:
        sweeps.add_arguments(parser)
    args = parser.parse_args(argv)
    ops = {o for o in args.ops.split(",") if o}
    sweep_counts = sweeps.counts(args, ops) if sweeps is not None else {}
    sys.path.insert(0, str(HERE))
    if args.plan:
        try:
            pkg = load_package(args.package_path)
        except (ImportError, OSError):  # the plan only counts cases: no package or GPU needed
            # a stand-in for this tree's package, which has both switches: their rows count too
            pkg = types.SimpleNamespace(reference=None, set_pdl=lambda enable: True,
                                        set_cache_hints=lambda enable: False)
        p = plan(select_cases(pkg, args.quick, ops), max(0, args.compile_workers), **sweep_counts)
        print(plan_text(p))
        print(json.dumps(p))
        return 0
    if not torch.cuda.is_available():
        print("bench_ops.py needs a CUDA GPU (--plan works without one)", file=sys.stderr)
        return 2
    pkg = load_package(args.package_path)
    if args.compile_worker:
        return compile_worker(args.compile_worker, args.warm_dir, pkg, args.quick, ops)
    import triton

    start = time.perf_counter()
    selected = select_cases(pkg, args.quick, ops)
    n_workers = max(0, args.compile_workers)
    if not any(is_compiled(i) for c in selected for i in c["impls"].values()):
        n_workers = 0
    p = plan(selected, n_workers, **sweep_counts)
    print(plan_text(p), flush=True)
    # a `timeout` SIGTERM must still run the finally below, which ends the worker processes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    warmers = Warmers(n_workers, args) if n_workers else None
    if warmers is not None:
        # Nothing is timed while a worker can still launch kernels on the same GPU.
        running = warmers.wait_all(timeout_s=max(30.0, args.max_seconds / 2))
        print(f"[{time.perf_counter() - start:.0f}s] compile warm-up done"
              + (f"; {running} worker(s) still running were stopped" if running else ""), flush=True)
        if running:
            warmers.close()
    copy_gbs = copy_bandwidth_gbs()
    l2 = device_l2_bytes()
    print(f"copy bandwidth {copy_gbs:.0f} GB/s (events, outside graphs); L2 {l2 / 2**20:.0f} MiB: "
          "inputs rotate over >= 4x L2", flush=True)
    runner = Runner(copy_gbs, l2, warmup_ms=5 if args.quick else 10, rep_ms=20 if args.quick else 40,
                    keep_outputs=not args.one_output_buffer)
    props = torch.cuda.get_device_properties(0)
    result: dict[str, Any] = {
        "format": FORMAT,
        "device": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "capability": f"{props.major}.{props.minor}",
        "l2_bytes": l2,
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "copy_bandwidth_gbs": round(copy_gbs, 1),
        "copy_bandwidth_method": COPY_METHOD,
        "graph_timer": (f"median of {GRAPH_REPLAYS} replays of a CUDA graph of back-to-back calls / calls; inputs"
                        " rotate over >= 4x L2 of sets (at least 2), calls a multiple of the set count, no flush; "
                        + ("outputs discarded: every call rewrites one buffer (--one-output-buffer)"
                           if args.one_output_buffer else "every call writes its own output buffer")),
        "timer": "triton.testing.do_bench median (L2 flushed before each call), inputs rotating the same way",
        "verdict_timer": "graph",
        "compile_warmup": (f"{n_workers} subprocesses compiled each torch.compile peer once and exited before"
                           " anything was timed (Inductor/Triton caches; TORCHINDUCTOR_COMPILE_THREADS=1)"
                           if n_workers else "none: each peer compiled cold in the main process"),
        "plan": p,
        "results": [],
    }

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(dumps_records(result))
        tmp.replace(args.out)  # partial results survive a timeout, never half a file

    try:
        rows = []
        for case in selected:  # phase 1: everything but torch.compile
            row = measure_plain(case, runner)
            rows.append(row)
            result["results"].append(row)
            add_speedups(row)
            save()
        print(f"[{time.perf_counter() - start:.0f}s] phase 1 done ({len(rows)} cases); torch.compile peers next",
              flush=True)
        for idx, (case, row) in enumerate(zip(selected, rows)):  # phase 2: torch.compile peers
            if not any(is_compiled(i) for i in case["impls"].values()):
                print_row(row)
                continue
            if time.perf_counter() - start >= args.max_seconds:
                for label, impl in case["impls"].items():
                    if is_compiled(impl):
                        row["impls"][label] = {"skipped": "time budget"}
            else:
                if warmers is not None:
                    status = warmers.wait_for(idx, timeout_s=60.0)
                    if status != "done":
                        row["compile_warmup"] = status
                measure_compiled(case, row, runner)
            add_speedups(row)
            print_row(row)
            save()
        if sweeps is not None:
            sweeps.run(args, pkg, runner, ops, result, save)
    finally:
        if warmers is not None:
            problems = warmers.close()
            if problems:
                result["compile_warmup_problems"] = problems
                print("\n".join(problems), file=sys.stderr)
    result["elapsed_s"] = round(time.perf_counter() - start, 1)
    save()
    print(f"wrote {args.out} in {result['elapsed_s']} s (estimated {p['estimated_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
