#!/usr/bin/env python3
"""Compare the kernel times of two bench_ops.py runs, and estimate what the difference
is worth in the end-to-end prefill measured with the older kernels.

    python benchmarks/qwen3_8b/compare_runs.py OLD.json NEW.json [--e2e E2E.json]

Compares microseconds, never % of copy bandwidth: two runs may have measured (or, like
the first H200 run, mis-measured) the copy bandwidth differently, while a kernel's time
needs no reference. Both runs' peers (compile, triton) are listed too: when their times
agree between the runs, the runs are comparable and a kernel's change is the kernel's.

With --e2e, the per-call savings are summed over what one patched Qwen3 decoder layer
runs at a prefill length (LAYER_CALLS below), times the model's decoder layers (from the
e2e JSON), plus the final norm, and subtracted from the measured patched prefill. That
is an ESTIMATE: micro-benchmark inputs come from DRAM, while in the model a 32 MB
activation may still sit in the 60 MB L2, and launch gaps do not shrink with kernel time.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# What one patched decoder layer runs per prefill length: (op, bench_ops shape, provider).
# patch_qwen3 runs input_layernorm as rms_norm, q_norm and k_norm as rms_norm over
# head_dim 128, out-of-place rope on the transposed q/k views, the residual add with
# post_attention_layernorm as fused_add_rms_norm, and swiglu on the halves of the merged
# gate_up projection. At 512 tokens bench_ops has no k-norm shape (512 x 8 heads) and
# times SwiGLU on contiguous gate/up only; those entries are the nearest measured shapes.
LAYER_CALLS: dict[int, list[tuple[str, str, str]]] = {
    4096: [
        ("rms_norm", "1x4096x4096", "kernel"),
        ("qk_norm", "4096x32x128 (131072 rows)", "kernel"),
        ("qk_norm", "4096x8x128 (32768 rows)", "kernel"),
        ("rope", "1x4096, q 32x128, k 8x128", "kernel (out of place)"),
        ("fused_add_rms_norm", "4096x4096", "kernel"),
        ("swiglu", "4096x12288 (halves of gate_up [4096, 24576])", "kernel"),
    ],
    512: [
        ("rms_norm", "1x512x4096", "kernel"),
        ("qk_norm", "512x32x128 (16384 rows)", "kernel"),
        ("rope", "1x512, q 32x128, k 8x128", "kernel (out of place)"),
        ("fused_add_rms_norm", "512x4096", "kernel"),
        ("swiglu", "512x12288", "kernel"),
    ],
}
FINAL_NORM = {4096: ("rms_norm", "1x4096x4096", "kernel"), 512: ("rms_norm", "1x512x4096", "kernel")}
# The e2e variant each estimate starts from: at 4096 tokens the GPU is busy end to end,
# at 512 the plain patched forward waits on kernel launches, so only the CUDA-graph
# variant turns kernel time into wall time.
E2E_VARIANT = {4096: "patched", 512: "patched_cudagraph"}


def _index(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["op"], r["shape"]): r["providers"] for r in data["results"]}


def _us(providers: dict[str, Any] | None, name: str) -> float | None:
    entry = (providers or {}).get(name)
    return entry.get("us") if entry else None


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def compare_table(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Markdown: per shape, kernel us old -> new and the peers' us in both runs."""
    before = _index(old)
    lines = ["| op | shape | kernel us (old) | kernel us (new) | change | compile us (old / new) | triton us (old / new) |",
             "|---|---|--:|--:|--:|--:|--:|"]
    for row in new["results"]:
        prev = before.get((row["op"], row["shape"]))
        if prev is None:
            continue
        k_old, k_new = _us(prev, "kernel"), _us(row["providers"], "kernel")
        change = f"{(k_new / k_old - 1) * 100:+.1f} %" if k_old and k_new else "-"
        peers = []
        for peer in ("compile", "triton"):
            a, b = _us(prev, peer), _us(row["providers"], peer)
            peers.append("-" if a is None and b is None else f"{_fmt(a)} / {_fmt(b)}")
        lines.append(f"| {row['op']} | {row['shape']} | {_fmt(k_old)} | {_fmt(k_new)} | {change} | {' | '.join(peers)} |")
    return "\n".join(lines)


def repeat_table(data: dict[str, Any]) -> str:
    """Markdown: the default kernel timed twice in one run (results table and sweep's `default`
    entry call the same function on the same inputs), a floor for what a difference must
    exceed to mean something."""
    table = _index(data)
    lines = ["| op | shape | table us | sweep default us | difference |", "|---|---|--:|--:|--:|"]
    for t in data.get("tuning", []):
        if not t.get("default"):
            continue
        first = _us(table.get((t["op"], t["shape"])), "kernel")
        if first is None:
            continue
        diff = t["us"] - first
        lines.append(f"| {t['op']} | {t['shape']} | {first:.2f} | {t['us']:.2f} | {diff:+.2f} us ({diff / first * 100:+.1f} %) |")
    return "\n".join(lines)


def estimate(old: dict[str, Any], new: dict[str, Any], e2e: dict[str, Any]) -> str:
    """Markdown: per prefill length, us saved per layer and the estimated prefill time."""
    before, after = _index(old), _index(new)
    layers = int(e2e["model"]["decoder_layers"])
    eager = e2e["variants"]["eager"]["prefill"]
    out = []
    for tokens, calls in LAYER_CALLS.items():
        variant = E2E_VARIANT[tokens]
        measured = e2e["variants"].get(variant, {}).get("prefill", {}).get(str(tokens), {}).get("median_ms")
        if measured is None:
            continue
        out.append(f"Prefill {tokens} tokens, starting from `{variant}` = {measured:.2f} ms (measured):")
        out.append("")
        out.append("| call per layer | old us | new us | saved us |")
        out.append("|---|--:|--:|--:|")
        per_layer = 0.0
        for op, shape, provider in calls:
            a, b = _us(before.get((op, shape)), provider), _us(after.get((op, shape)), provider)
            if a is None or b is None:
                out.append(f"| {op} {shape} ({provider}) | {_fmt(a)} | {_fmt(b)} | not in both runs |")
                continue
            per_layer += a - b
            out.append(f"| {op} {shape} ({provider}) | {a:.2f} | {b:.2f} | {a - b:.2f} |")
        op, shape, provider = FINAL_NORM[tokens]
        a, b = _us(before.get((op, shape)), provider), _us(after.get((op, shape)), provider)
        final = (a - b) if a is not None and b is not None else 0.0
        saved_ms = (per_layer * layers + final) / 1000
        est = measured - saved_ms
        eager_ms = eager.get(str(tokens), {}).get("median_ms")
        ratio = f"; eager {eager_ms:.2f} ms / estimate = **{eager_ms / est:.3f}x** (estimate)" if eager_ms else ""
        out.append("")
        out.append(f"{per_layer:.2f} us per layer x {layers} layers + {final:.2f} us final norm = {saved_ms:.3f} ms; "
                   f"{measured:.2f} - {saved_ms:.3f} = **{est:.2f} ms** (estimate){ratio}.")
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Compare two bench_ops.py runs in microseconds (and estimate e2e).")
    p.add_argument("old", type=Path, help="results JSON of the earlier run")
    p.add_argument("new", type=Path, help="results JSON of the later run")
    p.add_argument("--e2e", type=Path, help="benchmark_e2e.py JSON measured with the OLD run's kernels")
    args = p.parse_args(argv)
    try:
        old, new = json.loads(args.old.read_text()), json.loads(args.new.read_text())
        e2e = json.loads(args.e2e.read_text()) if args.e2e else None
    except (OSError, json.JSONDecodeError) as exc:
        print(f"compare_runs: cannot read input: {exc}", file=sys.stderr)
        return 1
    print(compare_table(old, new))
    print()
    print(f"Same call timed twice in {args.new}:")
    print()
    print(repeat_table(new))
    if e2e is not None:
        print()
        print(estimate(old, new, e2e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
