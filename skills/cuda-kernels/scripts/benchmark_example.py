#!/usr/bin/env python3
"""End-to-end model benchmark template: baseline vs kernels vs torch.compile, in one run.

    python benchmark_example.py --device cpu --out /tmp/bench.json            # tiny model, CI smoke test
    python benchmark_example.py --device cuda --out bench.json                # Qwen3-8B sizes, random weights, bf16
    python benchmark_example.py --device cuda --seq-len 512 4096 --variants baseline kernels compile kernels_compile

Copy it for your own model: replace `build_model` and `apply_kernels`, keep the method:
- one process and one model; kernels patched in and out of the same weights;
- fixed random token ids, `model(input_ids, use_cache=False)`, and
  `attention_mask={"full_attention": None}` for every variant: while dynamo traces (or a graph
  captures) transformers 5.17 materializes an [S, S] mask (no flash, K/V repeated for GQA)
  instead of SDPA's is_causal path (`--prefill-mask auto` measures what a plain call gets);
- CUDA events around each forward after warm-up, median; the events include launch gaps,
  which are part of an eager model's cost. CPU: wall clock;
- torch.compile (`dynamic=False`, one graph per shape) is a required peer; compile time is
  reported apart;
- roofline context from the same run: copy bandwidth, TFLOP/s (2 * matmul weights * tokens +
  causal attention) and weight traffic as % of the copy bandwidth (prefill is compute-bound);
- each variant's logits are compared with the baseline's (relative L2, top-1) first.
Exit status: 0 ok, 1 a variant failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
EXAMPLE = SCRIPTS.parent / "examples" / "qwen3_8b"
INTEGRATION = EXAMPLE / "integration"
VARIANTS = ("baseline", "kernels", "compile", "kernels_compile")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark a transformers model end to end: baseline vs custom kernels vs torch.compile.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--device", choices=["cpu", "cuda"], required=True, help="cpu: tiny config; cuda: real Qwen3-8B sizes")
    p.add_argument("--model", choices=["qwen3", "llama"], default="qwen3")
    p.add_argument("--tiny", action="store_true", help="tiny config on cuda too")
    p.add_argument("--seq-len", type=int, nargs="+", help="prompt lengths (default: 512 4096 on cuda, 32 on cpu)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], help="default: bfloat16 on cuda, float32 on cpu")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--warmup", type=int, help="default: 3 on cuda, 2 on cpu")
    p.add_argument("--repeats", type=int, help="default: 10 on cuda, 3 on cpu")
    p.add_argument("--package-path", type=Path, help="directory on which `import qwen3_8b_kernels` works")
    p.add_argument("--arch", action="append", metavar="X.Y",
                   help="compute capability to build the example for (repeatable; default: the GPU's; on cpu, 9.0 only: a CPU check compiles and imports the build, it never runs it)")
    p.add_argument("--build-dir", type=Path, help="build_local.py build directory")
    p.add_argument("--prefill-mask", choices=["prepared", "auto"], default="prepared",
                   help="prepared: pass {'full_attention': None} so every variant runs the same attention")
    p.add_argument("--out", type=Path, help="write the JSON results here")
    args = p.parse_args(argv)
    if args.model == "llama" and args.device == "cuda" and not args.tiny:
        p.error("--model llama has only a tiny config here; add --tiny")
    if args.batch < 1 or any(n < 1 for n in args.seq_len or [1]):
        p.error("--batch and --seq-len must be positive")
    return args


# ------------------------------------------------------------- what to replace for your model


def build_model(args: argparse.Namespace, torch):
    sys.path.insert(0, str(INTEGRATION))
    from qwen3_models import build_random_model, qwen3_8b_config, tiny_llama_config, tiny_qwen3_config

    tiny = args.device == "cpu" or args.tiny
    if args.model == "llama":
        config = tiny_llama_config()
    else:
        config = tiny_qwen3_config() if tiny else qwen3_8b_config()
    dtype = getattr(torch, args.dtype or ("float32" if args.device == "cpu" else "bfloat16"))
    return build_random_model(config, device=args.device, dtype=dtype), config, dtype


def load_kernels(args: argparse.Namespace):
    if args.package_path is not None:
        sys.path.insert(0, str(args.package_path.resolve()))
        return importlib.import_module("qwen3_8b_kernels")
    sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project

    archs = args.arch or ["9.0"]  # on cpu one arch is enough: the build is only compiled and imported
    if args.device == "cuda" and not args.arch:
        import torch

        archs = ["{}.{}".format(*torch.cuda.get_device_capability())]
    result = build_project(EXAMPLE, archs=archs, build_dir=args.build_dir)
    sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


def apply_kernels(model, kernels_pkg):
    from patch_qwen3 import patch_qwen3, unpatch_qwen3

    report = patch_qwen3(model, kernels_pkg)
    return report.counts(), lambda: unpatch_qwen3(model)


# ------------------------------------------------------------------------------ the method


def copy_bandwidth_gbps(torch: Any, device: str) -> float | None:
    """Achievable memory bandwidth: median of 1 GiB device-to-device copies (read + write)."""
    if device != "cuda":
        return None
    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    samples = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    del src, dst
    return 2 * 2**30 / (statistics.median(samples) * 1e-3) / 1e9


def weight_bytes_per_forward(model: Any, tokens: int) -> int:
    """Bytes of weights one forward must read: every parameter in full, except an embedding
    table that no matmul shares (a lookup reads only the prompt's rows). Activations, the
    KV cache and re-reads are not counted, so this is a lower bound of the traffic."""
    import torch.nn as nn

    linear = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    lookup_only = {id(m.weight): m.weight for m in model.modules()
                   if isinstance(m, nn.Embedding) and id(m.weight) not in linear}
    total = sum(p.numel() * p.element_size() for p in model.parameters() if id(p) not in lookup_only)
    return total + sum(tokens * w.shape[1] * w.element_size() for w in lookup_only.values())


def model_costs(model, config, batch: int, seq: int) -> tuple[float, float]:
    """(FLOPs, weight bytes) of one forward: every nn.Linear weight once per token, plus
    causal attention (QK^T and PV over the lower triangle)."""
    import torch.nn as nn

    linear_params = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    weight_bytes = sum(m.weight.numel() * m.weight.element_size() for m in model.modules() if isinstance(m, nn.Linear))
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    attn = 2 * 2 * batch * config.num_attention_heads * head_dim * seq * seq / 2 * config.num_hidden_layers
    return 2.0 * linear_params * batch * seq + attn, float(weight_bytes)


def performance(variants: dict[str, dict[str, Any]], weight_bytes: int, bandwidth: float | None, subject: str,
                timer: str, forward: str) -> dict[str, Any]:
    """The performance block of the model scripts' reports: weight GB/s and % of the same-run copy
    bandwidth per timed variant, and `subject`'s speedups against eager and torch.compile."""
    for entry in variants.values():
        if entry.get("median_ms") is not None:
            entry["weight_gbps"] = weight_bytes / (entry["median_ms"] * 1e-3) / 1e9
            entry["weight_pct_of_copy_bw"] = 100 * entry["weight_gbps"] / bandwidth if bandwidth else None

    def ratio(peer: str, of: str) -> float | None:
        a, b = variants.get(peer, {}).get("median_ms"), variants.get(of, {}).get("median_ms")
        return a / b if a is not None and b else None

    return {
        "timer": timer,
        "forward": forward,
        "copy_bandwidth_gbps": bandwidth,
        "copy_bandwidth_note": ("median of 1 GiB device-to-device copies in this run, read + write bytes" if bandwidth
                                else "measured on CUDA only; a CPU copy says nothing about the GPU"),
        "weight_bytes": weight_bytes,
        "weight_bytes_note": "parameter bytes one forward reads (embedding: the prompt's rows only); "
                             "a lower bound of the traffic",
        "roofline_note": "a prefill forward is matmul-bound: weight GB/s and % of copy bandwidth are context "
                         "for the weight-bytes roofline, not a target",
        "variants": variants,
        f"speedup_{subject}_vs_eager": ratio("eager", subject),
        f"speedup_{subject}_vs_compile": ratio("compile", subject),
        "speedup_compile_vs_eager": ratio("eager", "compile"),
    }


def print_performance(perf: dict[str, Any], subject: str, timing_line: str) -> None:
    bw = perf["copy_bandwidth_gbps"]
    print(timing_line)
    print(f"copy bandwidth (same run): {f'{bw:.0f} GB/s' if bw else 'n/a'}"
          + ("" if bw else f" ({perf['copy_bandwidth_note']})"))
    print(f"weight bytes per forward: {perf['weight_bytes'] / 1e9:.4g} GB ({perf['weight_bytes_note']})")
    width = max(8, len(subject))
    for name in ("eager", subject, "compile"):
        entry = perf["variants"].get(name, {})
        if entry.get("median_ms") is None:
            print(f"  {name:{width}s}: {entry.get('status')}" + (f" ({entry['reason']})" if entry.get("reason") else ""))
            continue
        pct = entry["weight_pct_of_copy_bw"]
        print(f"  {name:{width}s}: {entry['median_ms']:9.3f} ms  weights {entry['weight_gbps']:8.4g} GB/s"
              + (f" = {pct:5.1f} % of copy" if pct is not None else "")
              + (f"  (first call {entry['first_call_s']:.1f} s)" if "first_call_s" in entry else ""))
    vs_compile = perf[f"speedup_{subject}_vs_compile"]
    print(f"speedup {subject} vs eager {perf[f'speedup_{subject}_vs_eager']:.2f}x, vs torch.compile "
          + (f"{vs_compile:.2f}x" if vs_compile is not None else "n/a (compile not measured)"))
    print(f"note: {perf['roofline_note']}")


def time_forward(torch, fn, device: str, warmup: int, repeats: int) -> dict[str, float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "repeats": repeats}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda, but torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    seqs = args.seq_len or ([512, 4096] if args.device == "cuda" and not args.tiny else [32])
    warmup = args.warmup if args.warmup is not None else (3 if args.device == "cuda" else 2)
    repeats = args.repeats or (10 if args.device == "cuda" else 3)

    kernels_pkg = load_kernels(args)
    model, config, dtype = build_model(args, torch)
    sys.path.insert(0, str(INTEGRATION))
    from qwen3_models import compare_logits, random_input_ids

    inputs = {n: random_input_ids(args.batch, n, config.vocab_size, device=args.device, seed=n) for n in seqs}
    # Only models whose forward takes a per-layer-type mask mapping (Qwen3 does, Llama in
    # 5.17 does not) and whose layers are all full attention can be given the mapping.
    layer_types = getattr(config, "layer_types", None)
    prepared = args.prefill_mask == "prepared" and bool(layer_types) and set(layer_types) == {"full_attention"}
    mask_kwargs = {"attention_mask": {"full_attention": None}} if prepared else {}
    bandwidth = copy_bandwidth_gbps(torch, args.device)
    result: dict[str, Any] = {
        "benchmark": "benchmark_example.py (end to end)",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else platform.machine(),
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                     "transformers": importlib.import_module("transformers").__version__,
                     "python": platform.python_version()},
        "model": {"family": args.model, "tiny": args.device == "cpu" or args.tiny, "dtype": str(dtype),
                  "parameters": sum(p.numel() for p in model.parameters())},
        "batch": args.batch,
        "copy_bandwidth_gbps": bandwidth,
        "method": "median of CUDA-event-timed forwards after warm-up (wall clock on cpu); model(input_ids, "
                  "use_cache=False" + (", attention_mask={'full_attention': None}" if prepared else "")
                  + "), logits for all positions; compile: torch.compile(dynamic=False)"
                  + (", backend='eager' on cpu" if args.device == "cpu" else ""),
        "variants": {},
    }
    reference: dict[int, Any] = {}
    failed = False

    def run_variant(name: str) -> None:
        nonlocal failed
        entry: dict[str, Any] = {"status": "ok", "seq": {}}
        result["variants"][name] = entry
        restore = None
        try:
            runner = model
            if name.startswith("kernels"):
                entry["patch"], restore = apply_kernels(model, kernels_pkg)
            if name.endswith("compile"):
                torch._dynamo.reset()
                runner = torch.compile(model, dynamic=False, backend="eager" if args.device == "cpu" else "inductor")
            for n, ids in inputs.items():
                def fn(runner=runner, ids=ids):
                    return runner(input_ids=ids, use_cache=False, **mask_kwargs).logits

                t0 = time.perf_counter()
                logits = fn()  # first call: compiles the graph for this shape, if compiling
                first_s = time.perf_counter() - t0
                stats = time_forward(torch, fn, args.device, warmup, repeats)
                flops, weight_bytes = model_costs(model, config, args.batch, n)
                sec = stats["median_ms"] * 1e-3
                stats.update(
                    first_call_s=round(first_s, 2),
                    tokens_per_s=args.batch * n / sec,
                    tflops=flops / sec / 1e12,
                    weight_gbps=weight_bytes / sec / 1e9,
                )
                if bandwidth:
                    stats["weight_pct_of_copy_bw"] = 100 * stats["weight_gbps"] / bandwidth
                if name == "baseline":
                    reference[n] = logits.clone()
                if n in reference:
                    stats["accuracy"] = compare_logits(logits, reference[n])
                entry["seq"][str(n)] = stats
                print(f"{name:16s} seq {n:5d}: {stats['median_ms']:9.2f} ms  {stats['tflops']:7.1f} TFLOP/s"
                      + (f"  rel err {stats['accuracy']['rel_l2']:.2e}" if "accuracy" in stats else ""), flush=True)
        except Exception as exc:
            failed = True
            entry["status"] = "failed"
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            entry["traceback"] = traceback.format_exc()[-3000:]
            print(f"{name}: FAILED: {entry['error'][:300]}", flush=True)
        finally:
            if restore is not None:
                restore()
            torch._dynamo.reset()

    with torch.no_grad():
        # The baseline runs first: it provides the reference logits for every other variant.
        for name in ["baseline"] + [v for v in args.variants if v != "baseline"]:
            run_variant(name)

    for name, entry in result["variants"].items():
        for n, stats in entry.get("seq", {}).items():
            for peer in ("baseline", "compile"):
                peer_stats = result["variants"].get(peer, {}).get("seq", {}).get(n)
                if peer_stats:
                    stats[f"speedup_vs_{peer}"] = peer_stats["median_ms"] / stats["median_ms"]
    if bandwidth:
        print(f"copy bandwidth (same run): {bandwidth:.0f} GB/s")
    for name, entry in result["variants"].items():
        for n, stats in entry.get("seq", {}).items():
            sp = ", ".join(f"{k.removeprefix('speedup_')} {v:.2f}x" for k, v in stats.items() if k.startswith("speedup_"))
            print(f"{name:16s} seq {n:>5s}: {stats['median_ms']:9.2f} ms  {sp}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
