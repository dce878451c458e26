#!/usr/bin/env python3
"""End-to-end benchmark: random-weight Qwen3-8B-shaped model, unpatched vs patched vs torch.compile.

    python benchmark_e2e.py --out results/e2e_h200.json          # GPU, bf16, full size
    python benchmark_e2e.py --check --out /tmp/e2e_check.json     # CPU, tiny config (CI)

What is measured (identical for every variant, one model instance, one process):
- prefill: batch 1, prompts of 512 and 4096 random tokens, `model(input_ids,
  use_cache=False)`, logits for ALL positions (transformers' default logits_to_keep=0:
  a 4096 x 151936 bf16 lm_head output, about 5 TFLOP of the ~67 in the forward; a
  generate() prefill would keep only the last position). Median of --repeats forwards
  timed with CUDA events after --warmup untimed ones. At 512 tokens the eager model is
  bound by Python/launch overhead, which is why CUDA-graph variants are included.
- decode: greedy argmax, batch 1, a `StaticCache` sized prompt + steps (static shapes,
  so every variant, compiled and graphed ones included, runs the same attention over the
  same cache length); a 512-token prompt is prefilled untimed, then --decode-steps
  single-token forwards are timed as one block -> ms/token and tokens/s.
- accuracy: each variant's 512-token logits against the unpatched eager logits of the
  same run (relative L2 error, top-1 agreement).

Variants: eager (transformers as is) | eager_cudagraph (the same, captured once in a
torch.cuda.CUDAGraph and replayed) | patched (patch_qwen3: all kernels) |
patched_cudagraph | ablations (patched subsets: which fusion buys what) | compile
(torch.compile(model), default mode, dynamic=False, i.e. one graph per shape) |
patched_compile. Variants run in that order; compiled ones are skipped, and say so in
the JSON, when the --deadline (seconds since start) would be exceeded. The JSON is
rewritten after every variant, so a run cut short still leaves its measurements.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
SCRIPTS = PROJECT.parent.parent / "scripts"

ABLATIONS = {
    # name: patch_qwen3 keyword arguments
    "patched_norms": dict(norms=True, fuse_residual=False, swiglu=False, fuse_mlp=False, rope=False),
    "patched_norms_residual": dict(norms=True, fuse_residual=True, swiglu=False, fuse_mlp=False, rope=False),
    "patched_norms_residual_swiglu": dict(norms=True, fuse_residual=True, swiglu=True, fuse_mlp=False, rope=False),
    "patched_no_gate_up_merge": dict(norms=True, fuse_residual=True, swiglu=True, fuse_mlp=False, rope=True),
    "patched_no_qkv_merge": dict(fuse_qkv=False),
    "patched_no_down_residual": dict(fuse_down_residual=False),
}
# Everything but the attention fusion (q_norm + k_norm + RoPE in one kernel, q/k/v merged):
# what `patched` was before that fusion existed; prefill and decode, like `patched`.
NO_QK_ROPE_FUSION = dict(fuse_qk_norm_rope=False, fuse_qkv=False)
DESCRIPTIONS = {
    "eager": "transformers 5.17 Qwen3ForCausalLM as is (sdpa attention)",
    "eager_cudagraph": "unpatched forward captured once in torch.cuda.CUDAGraph, replayed",
    "patched": "patch_qwen3, everything: every RMSNorm, residual add + post-attention norm fused, "
    "swiglu with gate/up merged into one matmul, q_norm + k_norm + RoPE fused into one kernel "
    "with q/k/v merged into one matmul, the residual add after the MLP done by the down projection",
    "patched_no_qk_rope_fusion": "patch_qwen3 without the attention fusion: separate q_norm/k_norm "
    "(rms_norm) and rope kernels, separate q/k/v matmuls",
    "patched_no_qkv_merge": "everything, but separate q_proj/k_proj/v_proj matmuls",
    "patched_cudagraph": "patched forward captured once in torch.cuda.CUDAGraph, replayed",
    "patched_norms": "only the 145 RMSNorm modules replaced",
    "patched_norms_residual": "norms + residual add fused with post_attention_layernorm",
    "patched_norms_residual_swiglu": "norms + residual fusion + swiglu (separate gate/up matmuls)",
    "patched_no_gate_up_merge": "everything except merging gate_proj/up_proj into one matmul",
    "patched_no_down_residual": "everything, but the residual add after the MLP as its own kernel "
    "(down_proj does not accumulate into the residual)",
    "compile": "torch.compile(model), default mode, dynamic=False",
    "patched_compile": "torch.compile(patched model), default mode, dynamic=False",
    "compile_auto_mask": "torch.compile(model) called without the prepared mask mapping: transformers "
    "materializes the causal mask while tracing (prefill only; opt-in variant)",
}
# Run only when named in --variants.
OPT_IN = ("compile_auto_mask",)
VARIANT_NAMES = ("eager", "eager_cudagraph", "patched", "patched_cudagraph", "patched_no_qk_rope_fusion",
                 *ABLATIONS, "compile", "patched_compile", *OPT_IN)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="End-to-end prefill/decode benchmark of the Qwen3-8B example kernels (random weights).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--device", choices=["cuda", "cpu"], default=None, help="default: cuda, or cpu with --check")
    p.add_argument("--check", action="store_true", help="tiny config on the CPU, few repeats: a smoke test for CI")
    p.add_argument("--out", type=Path, help="write the JSON results here (rewritten after every variant)")
    p.add_argument("--package-path", type=Path, help="directory on which `import qwen3_8b_kernels` works (skips the build)")
    p.add_argument("--build-dir", type=Path, help="build_local.py build directory (default: its cache dir)")
    p.add_argument("--arch", action="append", help="CUDA arch to build, e.g. 9.0 (default: the GPU's)")
    p.add_argument("--prefill", type=int, nargs="+", help="prompt lengths (default 512 4096; --check: 16 48)")
    p.add_argument("--decode-steps", type=int, help="timed greedy steps (default 64; --check: 4)")
    p.add_argument("--decode-prompt", type=int, help="prompt length before decoding (default 512; --check: 16)")
    p.add_argument("--warmup", type=int, help="untimed runs before timing (default 3; --check: 1)")
    p.add_argument("--repeats", type=int, help="timed runs, median reported (default 10; --check: 2)")
    p.add_argument("--variants", nargs="+", metavar="NAME",
                   help=f"subset to run, in the fixed order ({', '.join(VARIANT_NAMES)}); "
                   f"default: all but the opt-in {', '.join(OPT_IN)}")
    p.add_argument("--prefill-mask", choices=["prepared", "auto"], default="prepared",
                   help="prepared: pass transformers' eager-mode mask mapping {'full_attention': None} to every "
                   "prefill so all variants run the same (flash, is_causal) attention; auto: let transformers decide")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile variants")
    p.add_argument("--deadline", type=float, default=420.0,
                   help="seconds since start; a compile that would end past it is skipped (and recorded as skipped)")
    p.add_argument("--compile-estimate", type=float, default=60.0,
                   help="seconds assumed per compiled shape until one has been measured")
    args = p.parse_args(argv)
    unknown = [v for v in args.variants or () if v not in VARIANT_NAMES]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANT_NAMES)}")
    if args.device is None:
        args.device = "cpu" if args.check else "cuda"
    small = args.check
    args.prefill = args.prefill or ([16, 48] if small else [512, 4096])
    args.decode_steps = args.decode_steps or (4 if small else 64)
    args.decode_prompt = args.decode_prompt or (16 if small else 512)
    args.warmup = args.warmup if args.warmup is not None else (1 if small else 3)
    args.repeats = args.repeats or (2 if small else 10)
    return args


# ------------------------------------------------------------------------ environment


def compact_json(data: dict[str, Any]) -> str:
    """One top-level entry per line, and one item per line of each top-level dict or list, no
    indentation: published results stay small and still diff record by record."""
    def dumps(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    def block(value: Any) -> str:
        if isinstance(value, dict) and value:
            return "{\n" + ",\n".join(f"{dumps(k)}:{dumps(v)}" for k, v in value.items()) + "\n}"
        if isinstance(value, list) and value:
            return "[\n" + ",\n".join(dumps(v) for v in value) + "\n]"
        return dumps(value)

    return "{\n" + ",\n".join(f"{dumps(k)}:{block(v)}" for k, v in data.items()) + "\n}\n"


def import_kernels(args: argparse.Namespace):
    import importlib

    if args.package_path is not None:
        sys.path.insert(0, str(args.package_path.resolve()))
        return importlib.import_module("qwen3_8b_kernels")
    sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project

    archs = args.arch
    if archs is None and args.device == "cuda":
        import torch

        major, minor = torch.cuda.get_device_capability()
        archs = [f"{major}.{minor}"]
    result = build_project(PROJECT, archs=archs, build_dir=args.build_dir)
    sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


def environment(device: str) -> dict[str, Any]:
    import torch
    import transformers

    env: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
    }
    for name in ("triton", "kernels"):
        try:
            env[name] = __import__(name).__version__
        except Exception:
            env[name] = None
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=HERE, capture_output=True, text=True, timeout=10
        )
        sha = proc.stdout.strip()
        # In a git checkout without commits rev-parse fails but still prints "HEAD" on stdout
        # (the first H200 run recorded that): keep only a real sha.
        env["git_commit"] = sha if proc.returncode == 0 and sha and all(c in "0123456789abcdef" for c in sha) else None
    except Exception:
        env["git_commit"] = None
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["device"] = {
            "name": props.name,
            "capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "memory_gib": round(props.total_memory / 2**30, 1),
        }
        try:
            env["device"]["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20,
            ).stdout.strip().splitlines()[0]
        except Exception:
            env["device"]["driver"] = None
    else:
        env["device"] = {"name": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    return env


# ---------------------------------------------------------------------------- timing


class Timer:
    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.cuda = device == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def once(self, fn: Callable[[], Any]) -> float:
        """Milliseconds for one call: CUDA events on the GPU (device timeline, which
        includes the gaps where the GPU waits for the CPU to launch), wall clock on CPU."""
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def median(self, fn: Callable[[], Any], warmup: int, repeats: int) -> dict[str, float]:
        for _ in range(warmup):
            fn()
        self.sync()
        samples = [self.once(fn) for _ in range(repeats)]
        return {
            "median_ms": statistics.median(samples),
            "min_ms": min(samples),
            "max_ms": max(samples),
            "repeats": repeats,
        }

    def median_with_clocks(self, fn: Callable[[], Any], warmup: int, repeats: int) -> dict[str, Any]:
        """median(), plus what nvidia-smi saw meanwhile under "gpu" (absent without nvidia-smi)."""
        from gpu_clocks import ClockLog

        with ClockLog() as clocks:
            stats: dict[str, Any] = self.median(fn, warmup, repeats)
        if (gpu := clocks.summary()) is not None:
            stats["gpu"] = gpu
        return stats


# ------------------------------------------------------------------------- workloads


class Workloads:
    """Prefill / decode closures over one model, in eager, CUDA-graph or compiled form."""

    def __init__(self, args: argparse.Namespace, model, vocab: int) -> None:
        import torch

        from qwen3_models import random_input_ids

        self.args = args
        self.model = model
        self.torch = torch
        self.device = args.device
        self.timer = Timer(args.device)
        self.prompts = {n: random_input_ids(1, n, vocab, device=args.device, seed=n) for n in args.prefill}
        self.decode_ids = random_input_ids(1, args.decode_prompt, vocab, device=args.device, seed=99)

    # -- prefill
    def prefill_kwargs(self, prepared: bool = True) -> dict[str, Any]:
        """`attention_mask={"full_attention": None}` is the prepared mask mapping transformers
        itself computes for a no-padding, no-cache prefill in eager mode (SDPA is_causal ->
        flash attention). Passing it keeps that attention in every variant: while dynamo
        traces or a CUDA graph captures, transformers 5.17 cannot run its data-dependent
        mask checks and materializes a [S, S] mask instead, which turns SDPA's flash path
        off and repeats K/V for GQA (see the `compile_auto_mask` variant)."""
        layer_types = set(self.model.config.layer_types)
        if prepared and self.args.prefill_mask == "prepared" and layer_types == {"full_attention"}:
            return {"attention_mask": {"full_attention": None}}
        return {}

    def prefill_fn(self, runner, n: int, prepared: bool = True) -> Callable[[], Any]:
        ids = self.prompts[n]
        kwargs = self.prefill_kwargs(prepared)
        return lambda: runner(input_ids=ids, use_cache=False, **kwargs).logits

    def graphed_prefill_fn(self, n: int) -> tuple[Callable[[], Any], Any]:
        torch = self.torch
        static_ids = self.prompts[n].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        kwargs = self.prefill_kwargs()
        with torch.cuda.stream(side):
            for _ in range(2):  # warm-up outside the graph: lazy inits, cuBLAS workspaces
                self.model(input_ids=static_ids, use_cache=False, **kwargs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.model(input_ids=static_ids, use_cache=False, **kwargs).logits

        def replay():
            graph.replay()
            return out

        return replay, graph

    # -- decode
    def _new_cache(self):
        from transformers import StaticCache

        extra = self.args.warmup + 2
        return StaticCache(config=self.model.config, max_cache_len=self.args.decode_prompt + self.args.decode_steps + extra)

    def decode(self, runner, *, graphed: bool = False) -> dict[str, Any]:
        torch = self.torch
        args = self.args
        from qwen3_models import cache_keyword

        cache = self._new_cache()
        with_cache = {cache_keyword(self.model): cache}
        tok = torch.zeros((1, 1), dtype=torch.long, device=self.device)

        def prefill():
            cache.reset()
            logits = self.model(input_ids=self.decode_ids, use_cache=True, logits_to_keep=1, **with_cache).logits
            tok.copy_(logits[:, -1:].argmax(-1))

        def step():
            logits = runner(input_ids=tok, use_cache=True, **with_cache).logits
            tok.copy_(logits[:, -1:].argmax(-1))

        prefill()
        for _ in range(args.warmup):  # compile / autotune / lazy init of the decode shape
            step()
        graph = None
        if graphed:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                step()
            torch.cuda.current_stream().wait_stream(side)
            prefill()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()  # the captured step reads and writes `tok` and the cache in place
            run_step = graph.replay
        else:
            run_step = step
        tokens = []
        samples = []
        for _ in range(max(1, min(3, args.repeats))):
            prefill()
            self.timer.sync()

            def block():
                for _ in range(args.decode_steps):
                    run_step()

            samples.append(self.timer.once(block))
            tokens.append(int(tok.flatten()[0]))
        del graph
        ms = statistics.median(samples) / args.decode_steps
        return {
            "ms_per_token": ms,
            "tokens_per_s": 1e3 / ms,
            "steps": args.decode_steps,
            "prompt": args.decode_prompt,
            "blocks_timed": len(samples),
            "last_token": tokens[-1],
        }


# ---------------------------------------------------------------------------- driver


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.t0 = time.monotonic()
        self.result: dict[str, Any] = {}
        self.compile_estimate = args.compile_estimate  # seconds per compiled shape
        self.compiled_once = False

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def save(self) -> None:
        if self.args.out is None:
            return
        self.args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.args.out.with_suffix(self.args.out.suffix + ".tmp")
        tmp.write_text(compact_json(self.result))
        tmp.replace(self.args.out)

    def log(self, msg: str) -> None:
        print(f"[{self.elapsed():7.1f}s] {msg}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run(args)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch.cuda.is_available() is False (use --check for the CPU path)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    from patch_qwen3 import patch_qwen3, unpatch_qwen3
    from qwen3_models import build_random_model, compare_logits, count_modules, qwen3_8b_config, tiny_qwen3_config

    run.log("importing / building qwen3_8b_kernels")
    kernels_pkg = import_kernels(args)

    dtype = torch.float32 if args.check else torch.bfloat16
    config = tiny_qwen3_config() if args.check else qwen3_8b_config()
    run.log(f"building the random-weight model ({'tiny' if args.check else 'Qwen3-8B'}, {dtype}) on {args.device}")
    model = build_random_model(config, device=args.device, dtype=dtype, seed=0)
    counts = count_modules(model)
    run.result = {
        "benchmark": "qwen3_8b end-to-end (random weights)",
        "argv": sys.argv[1:] if argv is None else argv,
        "environment": environment(args.device),
        "model": {
            "config": "tiny Qwen3 (CI smoke test)" if args.check else "Qwen3-8B (config.json of Qwen/Qwen3-8B)",
            "dtype": str(dtype).replace("torch.", ""),
            "attn_implementation": model.config._attn_implementation,
            **counts,
        },
        "method": {
            "prefill": "batch 1, model(input_ids, use_cache=False"
            + (", attention_mask={'full_attention': None})" if args.prefill_mask == "prepared" else ")")
            + ", logits for all positions (logits_to_keep=0), "
            f"median of {args.repeats} timed forwards after {args.warmup} warm-ups, "
            + ("CUDA events" if args.device == "cuda" else "wall clock"),
            "decode": f"greedy, batch 1, StaticCache(max_cache_len=prompt+steps+warm-up), prompt {args.decode_prompt} "
            f"tokens prefilled untimed, {args.decode_steps} single-token forwards timed as one block, median of up to 3 blocks",
            "accuracy": "logits of the first prefill length vs the unpatched eager logits of the same run",
            "compile": "torch.compile(model, dynamic=False), default mode"
            + (", backend='eager' (CPU smoke test)" if args.device == "cpu" else ""),
        },
        "variants": {},
    }
    run.save()

    work = Workloads(args, model, config.vocab_size)
    ref_len = args.prefill[0]
    reference: dict[str, Any] = {}
    selected = set(args.variants) if args.variants else None

    def wanted(name: str) -> bool:
        return name not in OPT_IN if selected is None else name in selected

    def record(name: str, fn: Callable[[dict[str, Any]], None]) -> None:
        if not wanted(name):
            return
        entry: dict[str, Any] = {"description": DESCRIPTIONS.get(name, name), "status": "ok"}
        run.result["variants"][name] = entry
        run.log(f"variant {name}")
        if args.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        start = time.monotonic()
        try:
            with torch.no_grad():
                fn(entry)
        except Exception as exc:
            entry["status"] = "failed"
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            entry["traceback"] = traceback.format_exc()[-4000:]
            run.log(f"  FAILED: {entry['error'][:300]}")
        entry["wall_s"] = round(time.monotonic() - start, 1)
        if args.device == "cuda":
            entry["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
            torch.cuda.empty_cache()
        run.save()

    def measure_prefill(
        entry: dict[str, Any], runner, *, accuracy: bool = True, budgeted: bool = False, prepared: bool = True
    ) -> None:
        entry.setdefault("prefill", {})
        for n in args.prefill:
            left = args.deadline - run.elapsed()
            if budgeted and left < run.compile_estimate:
                entry.setdefault("skipped", []).append(f"prefill {n}: {left:.0f}s left before the deadline, "
                                                       f"a compile takes ~{run.compile_estimate:.0f}s")
                run.log(f"  prefill {n}: skipped (deadline)")
                continue
            fn = work.prefill_fn(runner, n, prepared)
            t0 = time.monotonic()
            logits = fn()  # first call: compiles this shape when `runner` is compiled
            work.timer.sync()
            first = time.monotonic() - t0
            stats = work.timer.median_with_clocks(fn, max(args.warmup - 1, 0), args.repeats)
            stats["first_call_s"] = round(first, 2)
            entry["prefill"][str(n)] = stats
            if budgeted:
                run.compile_estimate = max(run.compile_estimate if run.compiled_once else 0.0, first)
                run.compiled_once = True
            run.log(f"  prefill {n}: {stats['median_ms']:.2f} ms (first call {first:.1f}s)")
            if n == ref_len and accuracy:
                if "logits" not in reference:
                    reference["logits"] = logits.clone()
                entry["accuracy"] = compare_logits(logits, reference["logits"])
            del logits

    def measure_graphed(entry: dict[str, Any]) -> None:
        entry["prefill"] = {}
        for n in args.prefill:
            replay, graph = work.graphed_prefill_fn(n)
            entry["prefill"][str(n)] = work.timer.median_with_clocks(replay, args.warmup, args.repeats)
            run.log(f"  prefill {n}: {entry['prefill'][str(n)]['median_ms']:.2f} ms")
            if n == ref_len and "logits" in reference:
                entry["accuracy"] = compare_logits(replay(), reference["logits"])
            del replay, graph
            torch.cuda.empty_cache()
        entry["decode"] = work.decode(model, graphed=True)

    patch_state: dict[str, Any] = {}

    def with_patch(kwargs: dict[str, Any], body: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        def fn(entry: dict[str, Any]) -> None:
            report = patch_qwen3(model, kernels_pkg, **kwargs)
            entry["patch"] = report.counts()
            patch_state.setdefault("report", report.counts())
            try:
                body(entry)
            finally:
                unpatch_qwen3(model)

        return fn

    def eager_body(entry: dict[str, Any]) -> None:
        measure_prefill(entry, model)
        entry["decode"] = work.decode(model)

    # 1. unpatched eager (also produces the reference logits)
    record("eager", eager_body)
    if "logits" not in reference:  # eager not selected: still need a reference
        with torch.no_grad():
            reference["logits"] = work.prefill_fn(model, ref_len)().clone()
    # 2. CUDA graphs without kernels
    if args.device == "cuda":
        record("eager_cudagraph", measure_graphed)
    # 3. patched, and patched in a CUDA graph
    record("patched", with_patch({}, eager_body))
    if args.device == "cuda":
        record("patched_cudagraph", with_patch({}, measure_graphed))
    record("patched_no_qk_rope_fusion", with_patch(NO_QK_ROPE_FUSION, eager_body))
    # 4. ablations: prefill only
    for name, kwargs in ABLATIONS.items():
        record(name, with_patch(kwargs, lambda entry: measure_prefill(entry, model)))
    run.result["patch_report"] = patch_state.get("report")

    # 5. torch.compile, unpatched then patched. Every new shape is a new compile; the
    # deadline is checked before each one (estimate: the slowest compile seen so far).
    def compiled_body(entry: dict[str, Any], prepared: bool = True) -> None:
        torch._dynamo.reset()
        backend = "eager" if args.device == "cpu" else "inductor"
        compiled = torch.compile(model, dynamic=False, backend=backend)
        measure_prefill(entry, compiled, budgeted=True, prepared=prepared)
        if not prepared:
            torch._dynamo.reset()
            return  # prefill-only variant
        left = args.deadline - run.elapsed()
        if left < run.compile_estimate:
            entry.setdefault("skipped", []).append(f"decode: {left:.0f}s left before the deadline")
            run.log("  decode: skipped (deadline)")
        else:
            entry["decode"] = work.decode(compiled)
        torch._dynamo.reset()

    compiled_variants = [("compile", None), ("patched_compile", {})]
    if selected is not None and "compile_auto_mask" in selected:
        compiled_variants.append(("compile_auto_mask", None))
    for name, kwargs in compiled_variants:
        if args.no_compile or not wanted(name):
            continue
        left = args.deadline - run.elapsed()
        if left < run.compile_estimate:
            run.result["variants"][name] = {
                "description": DESCRIPTIONS[name],
                "status": "skipped",
                "error": f"deadline: {left:.0f}s left, a compile takes ~{run.compile_estimate:.0f}s",
            }
            run.log(f"variant {name}: skipped ({run.result['variants'][name]['error']})")
            run.save()
            continue
        if name == "compile_auto_mask":
            record(name, lambda entry: compiled_body(entry, prepared=False))
        else:
            record(name, compiled_body if kwargs is None else with_patch(kwargs, compiled_body))

    summarize(run.result, args.prefill)
    run.result["total_s"] = round(run.elapsed(), 1)
    run.save()
    print(summary_text(run.result))
    failed = [n for n, v in run.result["variants"].items() if v.get("status") == "failed"]
    return 1 if failed else 0


# --------------------------------------------------------------------------- summary


def _ms(entry: dict[str, Any], n: int) -> float | None:
    if entry.get("status") != "ok":
        return None
    return entry.get("prefill", {}).get(str(n), {}).get("median_ms")


def summarize(result: dict[str, Any], lengths: list[int]) -> None:
    """Add speedups vs eager and vs compile, and the 1.3x target verdict."""
    variants = result["variants"]
    base = variants.get("eager", {})
    comp = variants.get("compile", {})
    for entry in variants.values():
        sp: dict[str, float] = {}
        for n in lengths:
            t = _ms(entry, n)
            for ref_name, ref in (("eager", base), ("compile", comp)):
                r = _ms(ref, n)
                if t and r:
                    sp[f"prefill_{n}_vs_{ref_name}"] = r / t
        dec = entry.get("decode", {}).get("tokens_per_s") if entry.get("status") == "ok" else None
        for ref_name, ref in (("eager", base), ("compile", comp)):
            rdec = ref.get("decode", {}).get("tokens_per_s") if ref.get("status") == "ok" else None
            if dec and rdec:
                sp[f"decode_vs_{ref_name}"] = dec / rdec
        if sp:
            entry["speedup"] = sp
    longest = max(lengths)
    patched = variants.get("patched", {})
    value = patched.get("speedup", {}).get(f"prefill_{longest}_vs_eager")
    result["target"] = {
        "metric": f"prefill {longest} tokens, patched vs unpatched eager",
        "required": 1.3,
        "measured": value,
        "met": None if value is None else value >= 1.3,
    }


def summary_text(result: dict[str, Any]) -> str:
    lengths = sorted({int(n) for v in result["variants"].values() for n in v.get("prefill", {})})
    head = ["variant"] + [f"prefill {n} ms" for n in lengths] + ["decode tok/s", "rel err", "status"]
    rows = [head]
    for name, v in result["variants"].items():
        row = [name]
        for n in lengths:
            t = v.get("prefill", {}).get(str(n), {}).get("median_ms")
            row.append(f"{t:.2f}" if t is not None else "-")
        dec = v.get("decode", {}).get("tokens_per_s")
        row.append(f"{dec:.1f}" if dec else "-")
        acc = v.get("accuracy", {}).get("rel_l2")
        row.append(f"{acc:.2e}" if acc is not None else "-")
        row.append(v.get("status", "?"))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    target = result.get("target", {})
    if target.get("measured") is not None:
        lines.append(f"target ({target['metric']} >= {target['required']}x): "
                     f"{target['measured']:.3f}x -> {'met' if target['met'] else 'NOT met'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
