#!/usr/bin/env python3
"""qwen3_8b launch-configuration sweep: the example's bench_ops.py run plus the "tuning" entries.

    python benchmarks/qwen3_8b/tune_ops.py --package-path BUILD_DIR --out results.json [bench_ops.py options]

A repository tool (run_gpu.sh runs it; the skill ships bench_ops.py, which it imports). It
takes bench_ops.py's options and writes the same JSON, with every configuration of
tuning_configs() timed on the TUNED_CASES shapes in "tuning" and each result row's fastest
one in row["tuned"]. The configurations are forced through the benchmark-only ops
rms_norm_tuned, swiglu_tuned and rope_tuned_, whose every configuration the example's GPU
tests run. slim_tuning.py slims the JSON for the skill; make_results.py renders it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "skills/cuda-kernels/examples/qwen3_8b/benchmarks"
sys.path.insert(0, str(BENCH))


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: example_modules
from example_modules import load_example_module  # noqa: E402

bench_ops = load_example_module("qwen3_8b", "benchmarks/bench_ops.py")
EPS, Case, n_sets_for, time_cuda = bench_ops.EPS, bench_ops.Case, bench_ops.n_sets_for, bench_ops.time_cuda


def tuning_configs(op: str, label: str) -> list[dict[str, int]]:
    """Launch configurations the sweep times for one case ({} = the op's built-in choice).

    rms_norm / fused: threads (rows of 4096 bf16: 512 packs -> threads x packs per thread),
    persistent grid, hint (bit 0: streaming loads of x/residual, bit 1: load the weight
    after the reduction instead of with x, 4: the generic row kernel where hint 0 runs the
    full-row instance, 8: the two-pass kernel). q/k norm: threads x rows per lane group, and
    the persistent pipelined kernel. SwiGLU: threads x packs per thread, the exact (IEEE division) variant,
    and the flat kernel at 16 / 8 / 4 bytes per access.
    RoPE: tokens per block, tokens per thread, register cap, heads per thread, kernel variant.
    """
    configs: list[dict[str, int]] = [{}]
    if op == "rms_norm":
        for t in (64, 128, 256, 512):
            for hint in (0, 1, 2, 3, 4):
                configs.append({"threads": t, "rows_per_group": 0, "persistent": 0, "hint": hint})
        for t in (128, 256):
            configs.append({"threads": t, "rows_per_group": 0, "persistent": 1, "hint": 0})
        for t in (256, 512):  # hint 8: the two-pass kernel (torch.compile's looped reduction)
            configs.append({"threads": t, "rows_per_group": 0, "persistent": 0, "hint": 8})
    elif op == "fused_add_rms_norm":
        for t in (128, 256, 512):
            for hint in (0, 1, 2, 3, 4):
                configs.append({"threads": t, "rows_per_group": 0, "persistent": 0, "hint": hint})
        for t in (256, 512):  # hint 8: the two-pass kernel (torch.compile's looped reduction)
            configs.append({"threads": t, "rows_per_group": 0, "persistent": 0, "hint": 8})
    elif op == "qk_norm":
        for t in (128, 256, 512):
            for r in (1, 2, 4):
                configs.append({"threads": t, "rows_per_group": r, "persistent": 0, "hint": 0})
            configs.append({"threads": t, "rows_per_group": 1, "persistent": 1, "hint": 0})
    elif op == "swiglu":
        # 32 / 64 threads: one token (1536 packs) then spreads over 48 / 24 SMs instead of 12
        for t in (32, 64, 128, 256, 512):
            for v in (1, 2, 4):
                configs.append({"threads": t, "vpt": v, "exact": 0, "width": 0, "flat": 0})
        configs.append({"threads": 0, "vpt": 0, "exact": 1, "width": 0, "flat": 0})
        # the flat kernel (one access per thread, no loops) at 16 / 8 / 4 bytes per access
        for t in (64, 128, 256):
            for width in (16, 8, 4):
                configs.append({"threads": t, "vpt": 1, "exact": 0, "width": width, "flat": 1})
    elif op == "rope":
        # variant 1: the token-loop kernels (one or two heads per thread, token / seq divided per thread)
        for by, tpt, cap, hpt in ((1, 1, 0, 1), (1, 1, 1, 1), (2, 1, 1, 1), (1, 2, 0, 1), (1, 1, 0, 2), (2, 1, 0, 2)):
            configs.append({"tokens_per_block": by, "tokens_per_thread": tpt, "reg_cap": cap, "heads_per_thread": hpt,
                            "variant": 1})
        # variant 2 (the default): two heads per thread, batch as a grid dimension
        for by in (1, 2):
            configs.append({"tokens_per_block": by, "tokens_per_thread": 0, "reg_cap": 0, "heads_per_thread": 0,
                            "variant": 2})
    return configs


def _tuned_call(pkg: Any, case: Case, cfg: dict[str, int]) -> Callable[..., Any]:
    ops = pkg.ops
    if case.op in ("rms_norm", "qk_norm"):
        w = case.weight
        if not cfg:
            return lambda x: pkg.rms_norm(x, w, EPS)
        args = (cfg["threads"], cfg["rows_per_group"], cfg["persistent"], cfg["hint"])
        return lambda x: ops.rms_norm_tuned(x, None, w, EPS, *args)
    if case.op == "fused_add_rms_norm":
        w = case.weight
        if not cfg:
            return lambda x, r: pkg.fused_add_rms_norm(x, r, w, EPS)
        args = (cfg["threads"], cfg["rows_per_group"], cfg["persistent"], cfg["hint"])
        return lambda x, r: ops.rms_norm_tuned(x, r, w, EPS, *args)
    if case.op == "swiglu":
        if not cfg:
            return lambda g, u: pkg.swiglu(g, u)
        return lambda g, u: ops.swiglu_tuned(g, u, cfg["threads"], cfg["vpt"], cfg["exact"], cfg.get("width", 0),
                                             cfg.get("flat", -1))
    if case.op == "rope":
        cos, sin = case.weight
        if not cfg:
            return lambda q, k: pkg.rope_(q, k, cos, sin)
        return lambda q, k: ops.rope_tuned_(q, k, cos, sin, cfg["tokens_per_block"], cfg["tokens_per_thread"],
                                            cfg["reg_cap"], cfg["heads_per_thread"], cfg["variant"])
    raise ValueError(case.op)


# The cases the sweep covers: the shapes whose defaults the table in the kernels decides,
# plus two norm shapes where the kernel once lost to a peer (1024 rows of 4096; 4096 tokens x
# 8 k heads of 128).
TUNED_CASES = {
    "rms_norm": ("1x128x4096", "1x512x4096", "1x1024x4096", "1x2048x4096", "1x8192x4096", "16x8192x4096"),
    "qk_norm": ("512x32x128 (16384 rows)", "4096x8x128 (32768 rows)", "4096x32x128 (131072 rows)",
                "16384x32x128 (524288 rows)"),
    "fused_add_rms_norm": ("512x4096", "4096x4096", "16384x4096"),
    "swiglu": ("1x12288", "512x12288", "4096x12288", "16384x12288"),
    "rope": ("1x512, q 32x128, k 8x128", "1x4096, q 32x128, k 8x128", "1x16384, q 32x128, k 8x128"),
}


SHORT_KEYS = {"threads": "t", "rows_per_group": "rpg", "persistent": "pers", "hint": "hint", "vpt": "vpt",
              "exact": "exact", "tokens_per_block": "tpb", "tokens_per_thread": "tpt", "reg_cap": "cap",
              "heads_per_thread": "hpt", "variant": "var", "width": "w", "flat": "flat"}


def config_name(cfg: dict[str, int]) -> str:
    return "default" if not cfg else " ".join(f"{SHORT_KEYS.get(k, k)}={v}" for k, v in cfg.items())


def run_tuning(pkg: Any, cases: list[Case], copy_gbps: float, l2_bytes: int,
               log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Time every launch configuration of tuning_configs() on the TUNED_CASES shapes."""
    import torch

    rows: list[dict[str, Any]] = []
    for case in cases:
        if case.label not in TUNED_CASES.get(case.op, ()):
            continue
        n_sets = n_sets_for(case.bytes, l2_bytes, "cuda")
        inputs = [case.make(i) for i in range(n_sets)]
        mine: list[dict[str, Any]] = []
        for cfg in tuning_configs(case.op, case.label):
            try:
                fn = _tuned_call(pkg, case, cfg)
                t = time_cuda(lambda i, fn=fn: fn(*inputs[i]), case.bytes, n_sets)
                gbps = case.bytes / (t.us * 1e-6) / 1e9
                entry = {"op": case.op, "shape": case.label, "config": cfg, "default": not cfg,
                         "us": round(t.us, 3), "GBps": round(gbps, 1), "pct_copy": round(100 * gbps / copy_gbps, 1)}
                mine.append(entry)
            except Exception as exc:  # noqa: BLE001 - an invalid combination is reported, not fatal
                log(f"tuning {case.op} {case.label} {config_name(cfg)}: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0][:200]}")
        rows += mine
        best = min(mine, key=lambda r: r["us"], default=None)
        default = next((r for r in mine if r["default"]), None)
        if best and default:
            log(f"tune {case.op:<19} {case.label:<30} default {default['us']:8.2f} us {default['pct_copy']:5.1f}%  "
                f"best {config_name(best['config'])}: {best['us']:.2f} us {best['pct_copy']:.1f}% "
                f"(x{default['us'] / best['us']:.3f})")
        del inputs
        torch.cuda.empty_cache()
    return rows


def attach_tuning(results: list[dict[str, Any]], tuning: list[dict[str, Any]]) -> None:
    """Give each result row its sweep's best configuration (row["tuned"])."""
    for row in results:
        mine = [t for t in tuning if t["op"] == row["op"] and t["shape"] == row["shape"]]
        if not mine:
            continue
        best = min(mine, key=lambda t: t["us"])
        entry = {"config": best["config"], "name": config_name(best["config"]), "us": best["us"],
                 "pct_copy": best["pct_copy"]}
        peers = {k: v for k, v in row["providers"].items() if not k.startswith("kernel")}
        if peers:
            bp = min(peers.values(), key=lambda v: v["us"])
            entry["vs_best_peer"] = round(bp["us"] / best["us"], 3)
        row["tuned"] = entry


def tune(pkg: Any, cases: list[Case], copy_gbps: float, l2_bytes: int, log: Callable[[str], None],
         results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """bench_ops.main's tune hook: the sweep's rows, each result row given its best configuration."""
    tuning = run_tuning(pkg, cases, copy_gbps, l2_bytes, log)
    attach_tuning(results, tuning)
    return tuning


def main(argv: Sequence[str] | None = None) -> int:
    return bench_ops.main(argv, tune=tune)


if __name__ == "__main__":
    sys.exit(main())
