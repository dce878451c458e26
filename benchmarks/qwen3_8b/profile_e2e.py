#!/usr/bin/env python3
"""Where a Qwen3-8B prefill spends its GPU time: kernel time by category, per variant.

    python benchmarks/qwen3_8b/profile_e2e.py --package-path BUILD_DIR --out profile_h200.json   # GPU
    python benchmarks/qwen3_8b/profile_e2e.py --check --out /tmp/profile.json                    # CPU smoke test

For each variant (unpatched eager, patched) one random-weight model runs a prefill of --tokens tokens
(batch 1, logits for all positions, the mask mapping benchmark_e2e.py passes) under
torch.profiler after --warmup untimed forwards. Every GPU kernel of --repeats forwards is
put in one category by its name:

  matmul     cuBLAS / CUTLASS GEMMs (q/k/v, o, gate/up, down projections and the lm_head)
  attention  SDPA's flash / cuDNN / efficient-attention kernels
  ours       the qwen3_8b_kernels ops (norms, fused add, SwiGLU, RoPE, q/k norm + RoPE)
  other      everything else: PyTorch's elementwise, reduction, copy, embedding kernels

The JSON holds, per variant and category, milliseconds per forward and the top kernel
names, plus the forward's median time from CUDA events measured outside the profiler;
"gaps" is that time minus the summed kernel time (launch latency and idle GPU), and "gpu"
is the SM clock, power draw and clock event reasons nvidia-smi reported over the timed
and profiled forwards (gpu_clocks.py). The answer it gives is the one benchmark_e2e.py
cannot: which part of the forward a kernel change can still move, and whether the same
matmuls ran at the same clock in both variants.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# A repository tool over the shipped example's integration modules.
INTEGRATION = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels" / "examples" / "qwen3_8b" / "integration"

VARIANTS = ("eager", "patched")
# Order matters: the first pattern that matches a kernel name decides its category.
CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("attention", re.compile(r"flash|fmha|attention|sdpa|cudnn", re.I)),
    ("matmul", re.compile(r"gemm|nvjet|cutlass|xmma|cublas|sm90_", re.I)),
    ("ours", re.compile(r"rms_norm|rope|swiglu|qk_norm|fused_add", re.I)),
)


def category(kernel_name: str) -> str:
    for name, pattern in CATEGORIES:
        if pattern.search(kernel_name):
            return name
    return "other"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Kernel time by category (matmul, attention, ours, other) of a Qwen3-8B prefill.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--check", action="store_true", help="tiny config on the CPU (no kernels are profiled): a smoke test")
    p.add_argument("--out", type=Path, required=True, help="write the JSON here")
    p.add_argument("--package-path", type=Path, help="directory on which `import qwen3_8b_kernels` works")
    p.add_argument("--tokens", type=int, default=None, help="prefill length (default 4096; --check: 32)")
    p.add_argument("--warmup", type=int, default=3, help="untimed forwards before timing and profiling")
    p.add_argument("--repeats", type=int, default=5, help="forwards timed (median) and forwards profiled")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS), metavar="NAME",
                   help=f"any of {', '.join(VARIANTS)}")
    p.add_argument("--top", type=int, default=10, help="kernel names kept per category")
    args = p.parse_args(argv)
    args.tokens = args.tokens or (32 if args.check else 4096)
    if args.tokens < 1 or args.warmup < 0 or args.repeats < 1 or args.top < 0:
        p.error("--tokens and --repeats must be >= 1, --warmup and --top >= 0")
    return args


def kernel_times(prof: Any, device_type: Any) -> dict[str, tuple[float, int]]:
    """Summed microseconds and launch count of each GPU kernel name in a profile."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for evt in prof.events():
        if evt.device_type != device_type:
            continue
        entry = totals[evt.name]
        entry[0] += evt.time_range.elapsed_us()
        entry[1] += 1
    return {name: (us, int(n)) for name, (us, n) in totals.items()}


def breakdown(times: dict[str, tuple[float, int]], forwards: int, top: int) -> dict[str, Any]:
    per_cat: dict[str, dict[str, Any]] = {}
    for name, (us, n) in times.items():
        cat = per_cat.setdefault(category(name), {"ms": 0.0, "launches": 0, "kernels": []})
        cat["ms"] += us / 1000 / forwards
        cat["launches"] += n // forwards
        cat["kernels"].append({"name": name[:160], "ms": us / 1000 / forwards, "launches": n // forwards})
    for cat in per_cat.values():
        cat["kernels"] = sorted(cat["kernels"], key=lambda k: -k["ms"])[:top]
        cat["ms"] = round(cat["ms"], 3)
        for k in cat["kernels"]:
            k["ms"] = round(k["ms"], 3)
    return dict(sorted(per_cat.items(), key=lambda kv: -kv[1]["ms"]))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    sys.path.insert(0, str(INTEGRATION))
    from benchmark_e2e import Timer, compact_json, environment, import_kernels
    from gpu_clocks import ClockLog
    from patch_qwen3 import patch_qwen3, unpatch_qwen3
    from qwen3_models import build_random_model, qwen3_8b_config, random_input_ids, tiny_qwen3_config

    device = "cpu" if args.check else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU (use --check for the CPU smoke test)", file=sys.stderr)
        return 2
    args.device, args.arch, args.build_dir = device, None, None
    kernels_pkg = import_kernels(args)
    config = tiny_qwen3_config() if args.check else qwen3_8b_config()
    dtype = torch.float32 if args.check else torch.bfloat16
    model = build_random_model(config, device=device, dtype=dtype, seed=0)
    ids = random_input_ids(1, args.tokens, config.vocab_size, device=device, seed=args.tokens)
    kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": False}
    if set(model.config.layer_types) == {"full_attention"}:
        kwargs["attention_mask"] = {"full_attention": None}  # as benchmark_e2e.py: SDPA's is_causal path

    result: dict[str, Any] = {
        "benchmark": "qwen3_8b prefill, GPU kernel time by category (torch.profiler)",
        "argv": sys.argv[1:] if argv is None else argv,
        "environment": environment(device),
        "method": f"batch 1, {args.tokens} tokens, logits for all positions; median of {args.repeats} CUDA-event-timed "
        f"forwards after {args.warmup} warm-ups, then {args.repeats} forwards under torch.profiler; per forward",
        "categories": {name: pattern.pattern for name, pattern in CATEGORIES} | {"other": "anything else"},
        "variants": {},
    }
    device_type = torch.autograd.DeviceType.CUDA

    timer = Timer(device)

    def measure(fn: Callable[[], Any]) -> dict[str, Any]:
        for _ in range(args.warmup):
            fn()
        timer.sync()
        # One clock log over the timed and the profiled forwards (not the warm-ups).
        with ClockLog() as clocks:
            timed = timer.median(fn, 0, args.repeats)
            activities = [torch.profiler.ProfilerActivity.CPU]
            if device == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=activities) as prof:
                for _ in range(args.repeats):
                    fn()
                timer.sync()
        cats = breakdown(kernel_times(prof, device_type), args.repeats, args.top)
        kernel_ms = sum(c["ms"] for c in cats.values())
        median = timed["median_ms"]
        return {
            "median_ms": round(median, 3),
            "kernel_ms": round(kernel_ms, 3),
            "gaps_ms": round(median - kernel_ms, 3),
            "gpu": clocks.summary(),
            "categories": cats,
        }

    for name in args.variants:
        patched = name.startswith("patched")
        entry: dict[str, Any] = {"status": "ok"}
        try:
            if patched:
                entry["patch"] = patch_qwen3(model, kernels_pkg).counts()
            try:
                with torch.no_grad():
                    entry |= measure(lambda: model(**kwargs).logits)
            finally:
                if patched:
                    unpatch_qwen3(model)
        except Exception as exc:  # keep the other variants' numbers
            entry = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
        result["variants"][name] = entry
        print(summary_line(name, entry), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(compact_json(result))
    return 1 if any(v["status"] != "ok" for v in result["variants"].values()) else 0


def summary_line(name: str, entry: dict[str, Any]) -> str:
    if entry.get("status") != "ok":
        return f"{name}: {entry.get('status')}: {entry.get('error', '')[:300]}"
    cats = ", ".join(f"{cat} {c['ms']:.2f}" for cat, c in entry["categories"].items())
    gpu = entry.get("gpu")
    clock = f"; SM {gpu['sm_mhz']:.0f} MHz, {gpu['power_w']:.0f} W, power-capped {gpu['power_capped']:.0%}" if gpu else ""
    return (f"{name}: {entry['median_ms']:.2f} ms per forward; kernels {entry['kernel_ms']:.2f} ms ({cats}); "
            f"gaps {entry['gaps_ms']:.2f} ms{clock}")


if __name__ == "__main__":
    sys.exit(main())
