#!/usr/bin/env python3
"""Micro-benchmark of every qwen3_8b_kernels op against its peers, in one process.

    python benchmarks/bench_ops.py --package-path BUILD_DIR --out results.json [--ops rms_norm,rope] [--quick]
    python benchmarks/bench_ops.py --package-path BUILD_DIR --ops qk_norm_rope --out results_qk_norm_rope.json

For each op and shape (bf16; the issue's RMSNorm shapes, q/k norm, and the fused ops at
Qwen3-8B shapes up to >= 64 MB) it times:
  kernel      this package's CUDA op
  eager       the transformers code (Qwen3RMSNorm.forward, act_fn(gate) * up, apply_rotary_pos_emb;
              for qk_norm_rope: q_norm, k_norm, then apply_rotary_pos_emb, as Qwen3Attention runs them)
  F.rms_norm  torch.nn.functional.rms_norm (norms only)
  compile     torch.compile of the eager code, torch._dynamo.reset() before every shape
  triton      a plain one-row-per-program Triton kernel (norms only; triton_peers.py)
and reports median us, GB/s and % of the device-to-device copy bandwidth measured in the
same run (bytes read + written / time). Timing: each measurement is a CUDA graph of many
back-to-back calls, replayed and timed with CUDA events; the median replay / calls is the
per-call GPU time, free of Python launch overhead. Inputs rotate over enough copies to
exceed 4x the L2 cache, so small shapes are read from DRAM as in the model.

The JSON is what benchmarks/make_results.py turns into RESULTS.md. --device cpu runs a
few tiny shapes through the CPU fallback (reference vs F.rms_norm vs compile) with wall
clock timing: it checks the harness, it is not a performance result.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent
SCRIPTS = EXAMPLE.parents[1] / "scripts"

EPS = 1e-6
HIDDEN = 4096
INTERMEDIATE = 12288
Q_HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128


# ------------------------------------------------------------------------------- loading


def load_package(package_path: str | None, arch: str | None = None) -> Any:
    """Import qwen3_8b_kernels from package_path, else from sys.path, else build it."""
    if package_path:
        sys.path.insert(0, str(Path(package_path).resolve()))
        return importlib.import_module("qwen3_8b_kernels")
    try:
        return importlib.import_module("qwen3_8b_kernels")
    except ModuleNotFoundError as exc:
        if exc.name not in ("qwen3_8b_kernels", "qwen3_8b_kernels._ops"):
            raise
    sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project

    result = build_project(EXAMPLE, archs=[arch] if arch else None)
    sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


# ------------------------------------------------------------------------------- timing


@dataclass
class Timing:
    us: float
    method: str
    spread: float = 0.0  # (p80 - p20) / median of the replays


def time_cuda(fn: Callable[[int], Any], bytes_per_call: int, n_sets: int, *, graph: bool = True,
              calls: int | None = None) -> Timing:
    """Median GPU time of fn(i) (i = input set), from replays of a CUDA graph of many calls.

    Every call's output stays alive while the calls are captured (or run), so each call writes
    its own buffer, as in a model: discarded, the allocator hands the next call the same block
    and output lines still dirty in L2 are overwritten there instead of reaching DRAM, which
    flattered kernels with evict-first loads by up to 8 % on the H200 (ltx_video's hinted
    kernels); this example's kernels carry no L2 eviction hints, so it changes their times little."""
    import torch

    if calls is None:  # about 3 ms of traffic per replay at 4 TB/s
        calls = int(min(500, max(5, math.ceil(3e-3 * 4e12 / max(bytes_per_call, 1)))))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (and compilation) off the capture stream
        for i in range(3):
            fn(i % n_sets)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples: list[float] = []
    method = "cuda-graph"
    g = None
    kept: list[Any] = []
    if graph:
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(calls):
                    kept.append(fn(i % n_sets))
            g.replay()
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - any capture failure falls back to stream timing
            g = None
            kept.clear()
            torch.cuda.synchronize()
    if g is None:
        method = "events"
    for _ in range(15):
        start.record()
        if g is not None:
            g.replay()
        else:
            kept = [fn(i % n_sets) for i in range(calls)]
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
        if g is None:
            kept.clear()
    del g, kept
    samples.sort()
    med = statistics.median(samples)
    spread = (samples[int(0.8 * (len(samples) - 1))] - samples[int(0.2 * (len(samples) - 1))]) / med
    return Timing(med, method, spread)


def time_cpu(fn: Callable[[int], Any], n_sets: int) -> Timing:
    for i in range(3):
        fn(i % n_sets)
    samples = []
    for r in range(7):
        t0 = time.perf_counter()
        for i in range(5):
            fn((r + i) % n_sets)
        samples.append((time.perf_counter() - t0) * 1e6 / 5)
    return Timing(statistics.median(samples), "wall-clock")


COPY_METHOD = ("torch copy_ of a 2 GiB uint8 buffer into another, timed with CUDA events on the stream "
               "outside any CUDA graph (3 warm-up copies, median of 9 timed copies); GB/s = bytes read + "
               "written / time. A graph-captured copy_ becomes a memcpy node that a copy engine serves, "
               "far below what SMs reach, so it is not timed that way.")


def copy_bandwidth_gbps(nbytes: int = 2 << 30) -> float:
    """Device-to-device copy bandwidth in GB/s (read + written bytes / time); see COPY_METHOD.

    Same-dtype contiguous copy_ is a cudaMemcpyAsync. On the stream it runs as an SM copy
    kernel (~4.2-4.3 TB/s on an H200); captured into a CUDA graph it becomes a memcpy node
    run by a copy engine (~2.8 TB/s measured), which would flatter every kernel by ~50 %.
    """
    import torch

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


# ------------------------------------------------------------------------- eager peers


def _transformers_qwen3() -> Any | None:
    try:
        return importlib.import_module("transformers.models.qwen3.modeling_qwen3")
    except Exception:  # noqa: BLE001 - benchmarks fall back to the same code written out
        return None


def eager_rms_norm(x: Any, weight: Any, eps: float = EPS) -> Any:
    """Qwen3RMSNorm.forward (transformers 5), written out for when transformers is absent."""
    import torch

    dtype = x.dtype
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


def make_eager_peers() -> dict[str, Callable[..., Any]]:
    import torch
    import torch.nn.functional as F

    qwen3 = _transformers_qwen3()
    peers: dict[str, Callable[..., Any]] = {}
    if qwen3 is not None:
        modules: dict[int, Any] = {}

        def module(w, eps=EPS):  # noqa: ANN001, ANN202
            # A real Qwen3RMSNorm module holding w (one per weight tensor, built once).
            mod = modules.get(id(w))
            if mod is None:
                mod = qwen3.Qwen3RMSNorm(w.shape[0], eps=eps).to(device=w.device, dtype=w.dtype)
                mod.weight = torch.nn.Parameter(w, requires_grad=False)
                modules[id(w)] = mod
            return mod

        def rms(x, w, eps=EPS):  # noqa: ANN001, ANN202
            return module(w, eps)(x)

        peers["rms_norm"] = rms
        peers["rms_module"] = module
        peers["rope"] = qwen3.apply_rotary_pos_emb
        peers["source"] = "transformers"
    else:
        peers["rms_norm"] = eager_rms_norm
        peers["rms_module"] = lambda w, eps=EPS: (lambda x: eager_rms_norm(x, w, eps))

        def rope(q, k, cos, sin):  # noqa: ANN001, ANN202
            def rot(t):  # noqa: ANN001, ANN202
                h = t.shape[-1] // 2
                return torch.cat((-t[..., h:], t[..., :h]), dim=-1)

            c, s = cos.unsqueeze(1), sin.unsqueeze(1)
            return q * c + rot(q) * s, k * c + rot(k) * s

        peers["rope"] = rope
        peers["source"] = "written-out copy (transformers not importable)"

    rms = peers["rms_norm"]

    def fused(x, residual, w, eps=EPS):  # noqa: ANN001, ANN202
        s = residual + x  # Qwen3DecoderLayer: hidden_states = residual + hidden_states
        return rms(s, w, eps), s

    def swiglu(gate, up):  # noqa: ANN001, ANN202
        return F.silu(gate) * up  # Qwen3MLP: act_fn(gate_proj(x)) * up_proj(x), act_fn = SiLU

    rope = peers["rope"]

    def qk_norm_rope(q_norm, k_norm, q, k, cos, sin):  # noqa: ANN001, ANN202
        # Qwen3Attention.forward's three steps on q, k viewed as [B, S, H, D].
        return rope(q_norm(q).transpose(1, 2), k_norm(k).transpose(1, 2), cos, sin)

    peers["fused_add_rms_norm"] = fused
    peers["swiglu"] = swiglu
    peers["qk_norm_rope"] = qk_norm_rope
    return peers


# -------------------------------------------------------------------------------- cases


@dataclass
class Case:
    op: str  # rms_norm | qk_norm | fused_add_rms_norm | swiglu | swiglu_fused_halves | rope | qk_norm_rope
    label: str
    make: Callable[[int], tuple]  # seed -> inputs
    bytes: int
    providers: dict[str, Any] = field(default_factory=dict)
    weight: Any = None  # the norm weight the kernel and every peer use


def _rope_tables(seq: int, device: str, dtype: Any) -> tuple[Any, Any]:
    import torch

    inv_freq = 1.0 / (1e6 ** (torch.arange(0, HEAD_DIM, 2, device=device, dtype=torch.float32) / HEAD_DIM))
    angles = torch.arange(seq, device=device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat((angles, angles), dim=-1)[None]
    return emb.cos().to(dtype), emb.sin().to(dtype)


def build_cases(pkg: Any, device: str, ops: Sequence[str], quick: bool,
                rms_shapes: Sequence[tuple[int, ...]] | None = None) -> list[Case]:
    """The benchmark cases; rms_shapes (any dims, hidden last) replaces the RMSNorm shapes."""
    import torch
    import torch.nn.functional as F

    dt = torch.bfloat16 if device == "cuda" else torch.float32
    es = torch.empty((), dtype=dt).element_size()
    eager = make_eager_peers()
    cases: list[Case] = []

    def randn(*shape: int, seed: int) -> Any:
        g = torch.Generator(device=device).manual_seed(seed)
        return torch.randn(*shape, generator=g, device=device, dtype=torch.float32).to(dt)

    triton_mod = None
    if device == "cuda":
        try:
            sys.path.insert(0, str(HERE))
            triton_mod = importlib.import_module("triton_peers")
        except Exception:  # noqa: BLE001 - no triton: the peer is left out
            triton_mod = None

    def norm_providers(w: Any) -> dict[str, Callable[..., Any]]:
        p: dict[str, Callable[..., Any]] = {
            "kernel": lambda x: pkg.rms_norm(x, w, EPS),
            "eager": lambda x: eager["rms_norm"](x, w, EPS),
            "F.rms_norm": lambda x: F.rms_norm(x, (x.shape[-1],), w, EPS),
            "compile": "compile:rms_norm",
        }
        if triton_mod is not None:
            p["triton"] = lambda x: triton_mod.rms_norm(x, w, EPS)
        return p

    if "rms_norm" in ops:
        shapes = [(1, 128), (1, 512), (1, 1024), (1, 2048), (1, 4096), (4, 512), (8, 256), (1, 8192), (16, 8192)]
        if device == "cpu":
            shapes = [(1, 16), (2, 64)]
        elif quick:
            shapes = [(1, 128), (1, 8192), (16, 8192)]
        hidden = HIDDEN if device == "cuda" else 256
        full = [(b, s, hidden) for b, s in shapes] if rms_shapes is None else [tuple(x) for x in rms_shapes]
        weights: dict[int, Any] = {}
        for shape in full:
            h = shape[-1]
            w = weights.setdefault(h, randn(h, seed=1))
            n = math.prod(shape)
            cases.append(Case("rms_norm", "x".join(map(str, shape)),
                              lambda i, shape=shape: (randn(*shape, seed=100 + i),),
                              2 * n * es + h * es, norm_providers(w), w))

    if "qk_norm" in ops:
        specs = [(512, Q_HEADS), (4096, Q_HEADS), (4096, KV_HEADS), (16384, Q_HEADS)]
        if device == "cpu":
            specs = [(8, 4)]
        elif quick:
            specs = [(4096, Q_HEADS)]
        w = randn(HEAD_DIM, seed=2)
        for tokens, heads in specs:
            n = tokens * heads * HEAD_DIM
            cases.append(Case("qk_norm", f"{tokens}x{heads}x{HEAD_DIM} ({tokens * heads} rows)",
                              lambda i, t=tokens, h=heads: (randn(t, h, HEAD_DIM, seed=200 + i),),
                              2 * n * es + HEAD_DIM * es, norm_providers(w), w))

    tokens_list = [1, 512, 4096, 16384] if device == "cuda" else [4]
    if quick and device == "cuda":
        tokens_list = [4096]

    if "fused_add_rms_norm" in ops:
        hidden = HIDDEN if device == "cuda" else 256
        w = randn(hidden, seed=3)
        for t in tokens_list:
            n = t * hidden
            prov: dict[str, Any] = {
                "kernel": lambda x, r: pkg.fused_add_rms_norm(x, r, w, EPS),
                "eager": lambda x, r: eager["fused_add_rms_norm"](x, r, w, EPS),
                "compile": "compile:fused_add_rms_norm",
            }
            if triton_mod is not None:
                prov["triton"] = lambda x, r: triton_mod.fused_add_rms_norm(x, r, w, EPS)
            cases.append(Case("fused_add_rms_norm", f"{t}x{hidden}",
                              lambda i, t=t: (randn(t, hidden, seed=300 + i), randn(t, hidden, seed=400 + i)),
                              4 * n * es + hidden * es, prov, w))

    if "swiglu" in ops:
        inter = INTERMEDIATE if device == "cuda" else 96
        prov = {
            "kernel": lambda g, u: pkg.swiglu(g, u),
            "eager": lambda g, u: eager["swiglu"](g, u),
            "compile": "compile:swiglu",
        }
        for t in tokens_list:
            n = t * inter
            cases.append(Case("swiglu", f"{t}x{inter}",
                              lambda i, t=t: (randn(t, inter, seed=500 + i), randn(t, inter, seed=600 + i)),
                              3 * n * es, prov))
        if device == "cuda":
            t = 4096
            n = t * inter

            def halves(i: int, t: int = t) -> tuple:
                gu = randn(t, 2 * inter, seed=700 + i)
                return gu[:, :inter], gu[:, inter:]

            cases.append(Case("swiglu", f"{t}x{inter} (halves of gate_up [{t}, {2 * inter}])", halves, 3 * n * es, prov))

    if "rope" in ops:
        seqs = [1, 512, 4096, 16384] if device == "cuda" else [4]
        if quick and device == "cuda":
            seqs = [4096]
        d = HEAD_DIM
        for seq in seqs:
            cos, sin = _rope_tables(seq, device, dt)

            def make(i: int, seq: int = seq) -> tuple:
                # q/k exactly as Qwen3Attention makes them: transposed views of [B, S, H, D].
                q = randn(1, seq, Q_HEADS, d, seed=800 + i).transpose(1, 2)
                k = randn(1, seq, KV_HEADS, d, seed=900 + i).transpose(1, 2)
                return q, k

            n = seq * (Q_HEADS + KV_HEADS) * d
            prov = {
                "kernel": lambda q, k, cos=cos, sin=sin: pkg.rope_(q, k, cos, sin),
                "kernel (out of place)": lambda q, k, cos=cos, sin=sin: pkg.rope(q, k, cos, sin),
                "eager": lambda q, k, cos=cos, sin=sin: eager["rope"](q, k, cos, sin),
                "compile": ("compile:rope", cos, sin),
            }
            cases.append(Case("rope", f"1x{seq}, q {Q_HEADS}x{d}, k {KV_HEADS}x{d}", make,
                              2 * n * es + 2 * seq * d * es, prov, (cos, sin)))

    if "qk_norm_rope" in ops:
        seqs = [512, 4096, 16384] if device == "cuda" else [4]
        if quick and device == "cuda":
            seqs = [4096]
        d = HEAD_DIM
        qw, kw = randn(d, seed=3), randn(d, seed=4)
        q_norm, k_norm = eager["rms_module"](qw), eager["rms_module"](kw)
        for seq in seqs:
            cos, sin = _rope_tables(seq, device, dt)

            def make_qk(i: int, seq: int = seq) -> tuple:
                # q and k as q_proj / k_proj return them, viewed as heads: [1, S, H, D], packed.
                # (With q/k/v merged the kernel gets the same rows at token stride 48 x 128; the
                # packed layout keeps the unfused and eager peers free of copies.)
                return randn(1, seq, Q_HEADS, d, seed=1000 + i), randn(1, seq, KV_HEADS, d, seed=1100 + i)

            def unfused(q, k, cos=cos, sin=sin):  # noqa: ANN001, ANN202
                # This package's previous path: two rms_norm launches, then rope_ in place.
                qn = pkg.rms_norm(q, qw, EPS).transpose(1, 2)
                kn = pkg.rms_norm(k, kw, EPS).transpose(1, 2)
                pkg.rope_(qn, kn, cos, sin)
                return qn, kn

            n = seq * (Q_HEADS + KV_HEADS) * d
            prov = {
                "kernel": lambda q, k, cos=cos, sin=sin: pkg.qk_norm_rope_(q, k, qw, kw, cos, sin, EPS),
                "kernel (unfused)": unfused,
                "eager": lambda q, k, cos=cos, sin=sin: eager["qk_norm_rope"](q_norm, k_norm, q, k, cos, sin),
                "compile": ("compile:qk_norm_rope", cos, sin, q_norm, k_norm),
            }
            # q/k read and written once, cos/sin read once, the two weights.
            cases.append(Case("qk_norm_rope", f"1x{seq}, q {Q_HEADS}x{d}, k {KV_HEADS}x{d}", make_qk,
                              2 * n * es + 2 * seq * d * es + 2 * d * es, prov, (cos, sin)))
    return cases


def compiled_peer(spec: Any, eager: dict[str, Callable[..., Any]], case: Case) -> Callable[..., Any]:
    """torch.compile of the eager code for one shape (after torch._dynamo.reset())."""
    import torch

    name = spec[0] if isinstance(spec, tuple) else spec
    kind = name.split(":", 1)[1]
    if kind == "rms_norm":
        return torch.compile(eager["rms_module"](case.weight), fullgraph=True)
    if kind == "fused_add_rms_norm":
        norm = eager["rms_module"](case.weight)

        def decoder_tail(x, residual):  # noqa: ANN001, ANN202
            s = residual + x  # Qwen3DecoderLayer's residual add, then the next RMSNorm
            return norm(s), s

        return torch.compile(decoder_tail, fullgraph=True)
    if kind == "swiglu":
        return torch.compile(eager["swiglu"], fullgraph=True)
    if kind == "rope":
        _, cos, sin = spec
        fn = torch.compile(eager["rope"], fullgraph=True)
        return lambda q, k: fn(q, k, cos, sin)
    if kind == "qk_norm_rope":
        _, cos, sin, q_norm, k_norm = spec
        step = eager["qk_norm_rope"]
        fn = torch.compile(lambda q, k: step(q_norm, k_norm, q, k, cos, sin), fullgraph=True)
        return fn
    raise ValueError(kind)


# ----------------------------------------------------------------------------- running


def n_sets_for(bytes_per_call: int, l2_bytes: int, device: str) -> int:
    if device != "cuda":
        return 2
    return int(min(256, max(1, math.ceil(4 * l2_bytes / bytes_per_call))))


def run_cases(cases: list[Case], device: str, copy_gbps: float | None, l2_bytes: int, log: Callable[[str], None],
              skip_compile: bool) -> tuple[list[dict[str, Any]], list[str]]:
    import torch

    eager = make_eager_peers()
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    for case in cases:
        n_sets = n_sets_for(case.bytes, l2_bytes, device)
        inputs = [case.make(i) for i in range(n_sets)]
        row: dict[str, Any] = {"op": case.op, "shape": case.label, "dtype": str(inputs[0][0].dtype).replace("torch.", ""),
                               "bytes": case.bytes, "input_sets": n_sets, "providers": {}}
        if device == "cuda":
            torch._dynamo.reset()  # fresh compile per shape: no recompile limit, no dynamic-shape graph
        for name, fn in case.providers.items():
            if name == "compile" and skip_compile:
                continue
            try:
                t0 = time.perf_counter()
                if name == "compile":
                    fn = compiled_peer(fn, eager, case)
                call = (lambda i, fn=fn: fn(*inputs[i]))
                timing = time_cuda(call, case.bytes, n_sets) if device == "cuda" else time_cpu(call, n_sets)
                entry: dict[str, Any] = {"us": round(timing.us, 3), "method": timing.method,
                                         "spread": round(timing.spread, 4),
                                         "GBps": round(case.bytes / (timing.us * 1e-6) / 1e9, 1)}
                if copy_gbps:
                    entry["pct_copy"] = round(100 * entry["GBps"] / copy_gbps, 1)
                if name == "compile":
                    entry["compile_and_time_s"] = round(time.perf_counter() - t0, 1)
                row["providers"][name] = entry
            except Exception as exc:  # noqa: BLE001 - one failing peer must not stop the run
                msg = f"{case.op} {case.label} {name}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                errors.append(msg)
                log("ERROR " + msg)
                if os.environ.get("BENCH_TRACEBACK"):
                    traceback.print_exc()
        kernel = row["providers"].get("kernel")
        peers = {k: v for k, v in row["providers"].items() if not k.startswith("kernel")}
        if kernel:
            row["speedup"] = {k: round(v["us"] / kernel["us"], 3) for k, v in peers.items()}
            best = min(peers.items(), key=lambda kv: kv[1]["us"], default=None)
            if best is not None:
                row["best_peer"] = best[0]
                row["kernel_vs_best_peer"] = round(best[1]["us"] / kernel["us"], 3)
        results.append(row)
        k = row["providers"].get("kernel", {})
        log(f"{case.op:<20} {case.label:<44} kernel {k.get('us', float('nan')):9.2f} us "
            f"{k.get('pct_copy', float('nan')):6.1f}%  best peer {row.get('best_peer', '-')} "
            f"x{row.get('kernel_vs_best_peer', float('nan')):.2f}")
        del inputs
        if device == "cuda":
            torch.cuda.empty_cache()
    return results, errors


def environment(device: str) -> dict[str, Any]:
    import torch

    meta: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device_kind": device,
    }
    for mod in ("triton", "transformers"):
        try:
            meta[mod] = importlib.import_module(mod).__version__
        except Exception:  # noqa: BLE001
            meta[mod] = None
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        meta.update(device=props.name, sm_count=props.multi_processor_count,
                    l2_bytes=getattr(props, "L2_cache_size", 0), memory_bytes=props.total_memory,
                    capability=f"{props.major}.{props.minor}")
        try:
            meta["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True,
                timeout=30, check=False).stdout.strip().splitlines()[0]
        except Exception:  # noqa: BLE001
            meta["driver"] = None
    else:
        meta.update(device=platform.processor() or platform.machine(), driver=None)
    return meta


ALL_OPS = ("rms_norm", "qk_norm", "fused_add_rms_norm", "swiglu", "rope", "qk_norm_rope")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--package-path", help="directory containing the built qwen3_8b_kernels (default: import or build)")
    p.add_argument("--arch", help="architecture to build for when building (default: the visible GPU's)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--ops", default=",".join(ALL_OPS), help=f"comma-separated subset of {','.join(ALL_OPS)}")
    p.add_argument("--quick", action="store_true", help="one or two shapes per op")
    p.add_argument("--skip-compile", action="store_true", help="leave out the torch.compile peer")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--source", help="what was measured, recorded in the JSON (e.g. the commit of the sources); "
                   "default: `git rev-parse HEAD` of this checkout, when it is a git checkout with a commit")
    return p


def source_revision(here: Path) -> str | None:
    """The commit of the checkout holding this file, or None (not a git checkout, no commit yet)."""
    try:
        proc = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=10, check=False)
        # A failed rev-parse can still print its argument ("HEAD") on stdout: trust only a hex sha.
        sha = proc.stdout.strip()
        if proc.returncode != 0 or len(sha) < 7 or any(c not in "0123456789abcdef" for c in sha):
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--", str(here.parent)], cwd=here,
                               capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"commit {sha}" + (" with uncommitted changes in the example" if dirty else "")


def main(argv: Sequence[str] | None = None, tune: Callable[..., list[dict[str, Any]]] | None = None) -> int:
    """tune(pkg, cases, copy_gbps, l2_bytes, log, results) -> the "tuning" rows: the launch-configuration
    sweep, which the kernel-skills repository keeps in benchmarks/qwen3_8b/tune_ops.py."""
    args = _parser().parse_args(argv)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = sorted(set(ops) - set(ALL_OPS))
    if unknown:
        print(f"bench_ops: unknown op(s) {unknown}; choose from {', '.join(ALL_OPS)}", file=sys.stderr)
        return 2
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_ops: no CUDA device; use --device cpu for the harness check", file=sys.stderr)
        return 2
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    pkg = load_package(args.package_path, args.arch)
    meta = environment(args.device)
    meta["eager_source"] = make_eager_peers()["source"]
    meta["source"] = args.source or source_revision(Path(__file__).resolve().parent)
    copy_gbps = None
    if args.device == "cuda":
        copy_gbps = copy_bandwidth_gbps()
        log(f"{meta['device']}: copy bandwidth {copy_gbps:.0f} GB/s (2 GiB device-to-device copy_, events, no graph)")
    meta["copy_bandwidth_GBps"] = round(copy_gbps, 1) if copy_gbps else None
    meta["copy_bandwidth_method"] = COPY_METHOD if copy_gbps else None
    meta["timing"] = ("median of 15 replays of a CUDA graph of back-to-back calls / calls; inputs rotate over "
                      ">= 4x L2 of copies; every call writes its own output buffer" if args.device == "cuda"
                      else "wall clock, CPU (harness check only)")
    cases = build_cases(pkg, args.device, ops, args.quick)
    results, errors = run_cases(cases, args.device, copy_gbps, int(meta.get("l2_bytes") or 0), log, args.skip_compile)
    tuning = (tune(pkg, cases, copy_gbps, int(meta.get("l2_bytes") or 0), log, results)
              if tune and copy_gbps else [])
    payload = {"meta": meta, "results": results, "tuning": tuning, "errors": errors}
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(payload, indent=1) + "\n")
        tmp.replace(out)
        log(f"wrote {out}")
    return 1 if errors and not results else 0


if __name__ == "__main__":
    sys.exit(main())
