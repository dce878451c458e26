#!/usr/bin/env python3
"""Launch-configuration sweeps of the ltx_video kernels: how the defaults in the example's
kernel_src/ltx_ops.cpp were chosen (repository only; the shipped example keeps the plain
benchmark).

This is the example's benchmarks/bench_ops.py with five more options. Each times every
launch configuration of an op through its *_with_config op after the main table, with the
same rotated graph timer and do_bench, and writes it under its own JSON key:
  --sweep        RMSNorm threads x chunks                         "rms_norm_config_sweep"
  --sweep-adaln  rms_norm_modulate / add_rms_norm_modulate grid   "adaln_sweep"
  --sweep-rope   rope_interleaved's kernels                       "rope_sweep"
  --sweep-qk     rms_norm_rope_qk threads x chunks (+ lean)       "qk_sweep"
  --sweep-gelu   gelu_tanh threads per block x chunks             "gelu_sweep"
--adaln-rows-only leaves the column-stationary grid out; --adaln-ungated sweeps the fused add
without its gate (h = residual + x), the call LTX's blocks make after attn2. The plan
(--plan, no GPU needed) counts the sweeps' measurements too.

    python benchmarks/ltx_video/sweep_ops.py --out sweep.json --package-path BUILD_DIR \\
        --ops rms_norm_rope_qk --sweep-qk [any bench_ops.py option]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels" / "examples" / "ltx_video" / "benchmarks"
sys.path.insert(0, str(BENCH))


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: example_modules
from example_modules import load_example_module  # noqa: E402

bench_ops = load_example_module("ltx_video", "benchmarks/bench_ops.py")
import torch  # noqa: E402

ISSUE_SHAPES = bench_ops.ISSUE_SHAPES
LTX_FF_SHAPES = bench_ops.LTX_FF_SHAPES
LTX_SHAPES = bench_ops.LTX_SHAPES
Runner = bench_ops.Runner
max_rel_diff = bench_ops.max_rel_diff
qk_bytes = bench_ops.qk_bytes
qk_inputs = bench_ops.qk_inputs
randn = bench_ops.randn
rope_inputs = bench_ops.rope_inputs

# Configurations the RMSNorm sweep (--sweep) tries (threads per row, 16-byte chunks per thread).
SWEEP = {
    2048: [(32, 8), (64, 4), (128, 2), (256, 1), (16, 16)],
    3072: [(32, 12), (64, 6), (96, 4), (128, 3), (192, 2), (384, 1)],
}

# The AdaLN sweep (--sweep-adaln): rms_norm_modulate and add_rms_norm_modulate through their
# *_with_config ops on every issue shape and the 2688-token LTX shapes. For each (threads per
# row, chunks per thread): rows_per_block 0 with flags 0, 4, 8, 16 and, at 1-2 chunks, the lean
# kernels 64, 128 and 320 (the package's ADALN_* constants say what each is), and unless
# --adaln-rows-only the column-stationary kernel at every rows_per_block x flags below. The
# default op itself is timed in the same row.
ADALN_SWEEP_TPR_VPT = {
    2048: [(64, 4), (128, 2), (256, 1)],
    3072: [(96, 4), (128, 3), (192, 2), (384, 1)],
}
ADALN_SWEEP_ROWS = [1, 4, 16, 64]
ADALN_SWEEP_FLAGS = [0, 1, 2, 3]
ADALN_ROWS_FLAGS = [0, 4, 8, 16, 64, 128, 320]
ADALN_LATE_MAX_TPR = 256  # flags 4, 8, 16 run blocks of at most 256 threads (kMaxLateBlock, kMaxPipeBlock)
ADALN_LEAN = 64  # the lean kernel exists at 1-2 chunks per thread (kMaxVptLean)
ADALN_RELOAD = 128  # the lean kernel's two-read variant, same limits
LEAN_HINTS = 256  # with ADALN_LEAN / QK_LEAN: the lean kernel with cache hints
ADALN_LEAN_FLAGS = (ADALN_LEAN, ADALN_RELOAD, ADALN_LEAN | LEAN_HINTS)
ADALN_SWEEP_OPS = ("rms_norm_modulate", "add_rms_norm_modulate")


def adaln_sweep_shapes() -> list[tuple[int, int, int]]:
    return ISSUE_SHAPES + LTX_SHAPES


def adaln_sweep_grid(d: int, colstat: bool = True) -> list[tuple[int, int, int, int]]:
    """(threads_per_row, chunks_per_thread, rows_per_block, flags) timed for hidden size d."""
    grid = []
    for tpr, vpt in ADALN_SWEEP_TPR_VPT.get(d, []):
        grid += [(tpr, vpt, 0, f) for f in ADALN_ROWS_FLAGS
                 if f == 0 or (vpt <= 2 if f in ADALN_LEAN_FLAGS else tpr <= ADALN_LATE_MAX_TPR)]
        if colstat and tpr <= ADALN_LATE_MAX_TPR:  # the column-stationary kernel: blocks of <= 256 too
            grid += [(tpr, vpt, r, f) for r in ADALN_SWEEP_ROWS for f in ADALN_SWEEP_FLAGS]
    return grid


def adaln_sweep_count(ops: set[str], colstat: bool = True) -> int:
    """Measurements of --sweep-adaln: every grid point plus the default op, per op and shape."""
    n_ops = sum(1 for op in ADALN_SWEEP_OPS if not ops or op in ops)
    return n_ops * sum(len(adaln_sweep_grid(s[-1], colstat)) + 1 for s in adaln_sweep_shapes()
                       if s[-1] in ADALN_SWEEP_TPR_VPT)


# The RoPE sweep (--sweep-rope): rope_interleaved_with_config at each kernel choice next to
# the default op, on every issue and LTX shape, inputs as in the main table. Key:
# (chunks_per_thread, elements_per_thread, flags): (0, 0, 0) the per-row kernel, (1|2|4, 0, 0)
# the flat kernel with that many 16-byte chunks per thread, (1, 2|4, 0) the narrow flat kernel
# with that many elements per thread, flags 1 (ROPE_STREAMING) its streaming-hint variant.
ROPE_STREAMING = 1  # the package's ROPE_STREAMING flag
ROPE_SWEEP_POINTS = {"cpt0": (0, 0, 0), "cpt1": (1, 0, 0), "cpt2": (2, 0, 0), "cpt4": (4, 0, 0),
                     "narrow2": (1, 2, 0), "narrow4": (1, 4, 0), "narrow2/cs": (1, 2, ROPE_STREAMING),
                     "narrow4/cs": (1, 4, ROPE_STREAMING)}


def rope_sweep_count() -> int:
    return len(ISSUE_SHAPES + LTX_SHAPES) * (len(ROPE_SWEEP_POINTS) + 1)


# The q/k sweep (--sweep-qk): rms_norm_rope_qk_with_config at each threads x chunks that
# covers a row, next to the default op, on every issue and LTX shape.
QK_SWEEP = {
    2048: [(256, 1), (128, 2), (96, 3), (64, 4)],
    3072: [(384, 1), (192, 2), (128, 3), (96, 4)],
}


QK_LEAN = 64  # the package's QK_LEAN flag: the lean one-chunk kernel (the default op's choice at 2048)
QK_PREFETCH = 512  # with QK_LEAN: the persistent kernel that prefetches the next row (QK_PREFETCH)
QK_LEAN_MAX_TPR = 256  # its blocks hold at most 256 threads (kMaxLeanRopeBlock)
QK_LEAN_FLAGS = (QK_LEAN, QK_LEAN | LEAN_HINTS, QK_LEAN | QK_PREFETCH, QK_LEAN | QK_PREFETCH | LEAN_HINTS)


def qk_sweep_points(d: int) -> list[tuple[int, int, int]]:
    """(threads_per_row, chunks_per_thread, flags) of the q/k sweep for hidden size d."""
    points = [(t, v, 0) for t, v in QK_SWEEP.get(d, [])]
    return points + [(t, v, f) for t, v in QK_SWEEP.get(d, []) if v == 1 and t <= QK_LEAN_MAX_TPR
                     for f in QK_LEAN_FLAGS]


def qk_sweep_key(tpr: int, vpt: int, flags: int) -> str:
    """The sweep table's name for a point: threads x chunks, then the lean variant."""
    variant = ""
    if flags & QK_LEAN:
        variant = "/lean" + ("+prefetch" if flags & QK_PREFETCH else "") + ("+hints" if flags & LEAN_HINTS else "")
    return f"{tpr}x{vpt}{variant}"


def qk_sweep_count() -> int:
    return sum(len(qk_sweep_points(s[-1])) + 1 for s in ISSUE_SHAPES + LTX_SHAPES if s[-1] in QK_SWEEP)


# The GELU sweep (--sweep-gelu): gelu_tanh_with_config at every (threads per block, 16-byte
# chunks per thread per grid-stride step) next to the default op, on the main table's GELU shapes.
GELU_SWEEP_POINTS = [(t, u) for t in (64, 128, 256) for u in (1, 2, 4, 8)]


def gelu_sweep_count() -> int:
    return len(ISSUE_SHAPES + LTX_FF_SHAPES) * (len(GELU_SWEEP_POINTS) + 1)

def run_sweep(pkg, runner: Runner, shapes: list[tuple[int, int, int]]) -> list[dict]:
    rows = []
    for shape in shapes:
        d = shape[-1]
        if d not in SWEEP:
            continue
        nbytes = 2 * math.prod(shape) * 2 + d * 2
        case = {"bytes": nbytes, "make": lambda i, shape=shape, d=d: (randn(shape, seed=i), randn((d,), seed=9, shift=1.0))}
        sets = runner.inputs(case)
        row = {"shape": list(shape), "bytes": nbytes, "input_sets": len(sets), "configs": {}}
        for tpr, vpt in SWEEP[d]:
            fn = lambda x, w, t=tpr, v=vpt: pkg.rms_norm_with_config(x, w, 1e-5, t, v)  # noqa: E731
            e = runner.measure(fn, sets, nbytes)
            row["configs"][f"{tpr}x{vpt}"] = {k: v for k, v in e.items() if k in
                                              ("us", "pct_copy", "graph_us", "graph_pct_copy", "error", "graph_error")}
        rows.append(row)
        del sets
        torch.cuda.empty_cache()
    return rows


SWEEP_KEEP = ("us", "pct_copy", "graph_us", "graph_pct_copy", "graph_spread", "error", "graph_error")


def sweep_point(runner: Runner, fn: Callable, sets: list, nbytes: int, entry: dict[str, Any],
                check: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """One point of the AdaLN / RoPE sweeps: check(output on input set 0) adds its fields
    (a failure is recorded, the sweep goes on), then both timers."""
    try:
        entry.update(check(fn(*sets[0])))
    except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
        entry["check_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    entry.update({k: v for k, v in runner.measure(fn, sets, nbytes).items() if k in SWEEP_KEEP})
    return entry


def mark_best(row: dict[str, Any]) -> None:
    """The sweep row's fastest point by the graph timer and its speedup over the default op."""
    best = min(((k, e["graph_us"]) for k, e in row["configs"].items() if e.get("graph_us")),
               key=lambda kv: kv[1], default=None)
    if best and row["default"].get("graph_us"):
        row["best_graph"] = best[0]
        row["best_graph_speedup_vs_default"] = round(row["default"]["graph_us"] / best[1], 3)


def run_adaln_sweep(pkg, runner: Runner, ops: set[str], colstat: bool = True,
                    gated: bool = True) -> Iterator[dict]:
    """Times every adaln_sweep_grid point of each AdaLN op against the default op, per shape,
    and yields each shape's row as it completes (the caller saves it, so a run cut short keeps
    the shapes it finished); each point's output on input set 0 is compared with the default
    op's (max_rel_diff). gated=False runs the fused add without its gate (h = residual + x)."""
    for op in ADALN_SWEEP_OPS:
        if ops and op not in ops:
            continue
        for shape in adaln_sweep_shapes():
            b, _, d = shape
            if d not in ADALN_SWEEP_TPR_VPT:
                continue
            n = math.prod(shape)
            if op == "rms_norm_modulate":
                nbytes = 2 * n * 2 + 2 * b * d * 2

                def make(i, shape=shape, b=b, d=d):
                    table = randn((b, 1, 6, d), seed=1000 + i, scale=0.3)
                    return randn(shape, seed=i, scale=2.0), table[:, :, 1], table[:, :, 0]

                default = lambda x, s, h: pkg.rms_norm_modulate(x, None, s, h, 1e-6)  # noqa: E731

                def configured(t, v, r, f):
                    return lambda x, s, h: pkg.rms_norm_modulate_with_config(x, None, s, h, 1e-6, t, v, r, f)
            else:
                nbytes = 4 * n * 2 + (3 if gated else 2) * b * d * 2

                def make(i, shape=shape, b=b, d=d):
                    table = randn((b, 1, 6, d), seed=2000 + i, scale=0.3)
                    return (randn(shape, seed=i, scale=0.7), randn(shape, seed=500 + i, scale=2.0),
                            table[:, :, 5] if gated else None, table[:, :, 4], table[:, :, 3])

                default = lambda x, r, g, s, h: pkg.add_rms_norm_modulate(x, r, g, None, s, h, 1e-6)  # noqa: E731

                def configured(t, v, r, f):
                    return lambda x, res, g, s, h: pkg.add_rms_norm_modulate_with_config(
                        x, res, g, None, s, h, 1e-6, t, v, r, f)

            sets = runner.inputs({"bytes": nbytes, "make": make})
            row: dict[str, Any] = {"op": op, "shape": list(shape), "dtype": "bfloat16", "bytes": nbytes,
                                   "input_sets": len(sets), "configs": {}}
            if op == "add_rms_norm_modulate":
                row["gated"] = gated
            row["default"] = {k: v for k, v in runner.measure(default, sets, nbytes).items() if k in SWEEP_KEEP}
            want = default(*sets[0])
            want = want if isinstance(want, tuple) else (want,)

            def rel_diff(got, want=want) -> dict[str, Any]:
                got = got if isinstance(got, tuple) else (got,)
                return {"max_rel_diff_vs_default": max(max_rel_diff(g, w) for g, w in zip(got, want))}

            for tpr, vpt, rpb, flags in adaln_sweep_grid(d, colstat):
                entry = {"threads_per_row": tpr, "chunks_per_thread": vpt, "rows_per_block": rpb, "flags": flags}
                row["configs"][f"{tpr}x{vpt}/r{rpb}/f{flags}"] = sweep_point(
                    runner, configured(tpr, vpt, rpb, flags), sets, nbytes, entry, rel_diff)
            mark_best(row)
            print(f"adaln sweep {op:<22} {str(shape):<18} default graph {row['default'].get('graph_us', float('nan')):8.2f} us"
                  f" {row['default'].get('graph_pct_copy', float('nan')):5.1f}%  best {row.get('best_graph')}"
                  f" x{row.get('best_graph_speedup_vs_default', float('nan')):.3f}", flush=True)
            del sets
            torch.cuda.empty_cache()
            yield row


def run_rope_sweep(pkg, runner: Runner) -> list[dict]:
    """Times rope_interleaved_with_config at every ROPE_SWEEP_POINTS choice against the default
    op, per shape; each choice's output on input set 0 must equal the default's."""
    rows = []
    for shape in ISSUE_SHAPES + LTX_SHAPES:
        nbytes = math.prod(shape) * (2 + 2 + 4 + 4)
        sets = runner.inputs({"bytes": nbytes, "make": rope_inputs(pkg.reference, shape)})
        row: dict[str, Any] = {"shape": list(shape), "dtype": "bfloat16", "bytes": nbytes, "input_sets": len(sets),
                               "configs": {}}
        default = pkg.rope_interleaved
        row["default"] = {k: v for k, v in runner.measure(default, sets, nbytes).items() if k in SWEEP_KEEP}
        want = default(*sets[0])
        for key, (cpt, elems, flags) in ROPE_SWEEP_POINTS.items():
            fn = lambda x, c, s, k=cpt, e=elems, f=flags: pkg.rope_interleaved_with_config(x, c, s, k, e, f)  # noqa: E731
            row["configs"][key] = sweep_point(runner, fn, sets, nbytes,
                                              {"chunks_per_thread": cpt, "elements_per_thread": elems, "flags": flags},
                                              lambda got: {"equal_to_default": bool(torch.equal(got, want))})
        mark_best(row)
        cells = "  ".join(f"{k} {e.get('graph_us', float('nan')):7.2f} us {e.get('graph_pct_copy', float('nan')):5.1f}%"
                          for k, e in row["configs"].items())
        print(f"rope sweep {str(shape):<18} default {row['default'].get('graph_us', float('nan')):7.2f} us  {cells}",
              flush=True)
        rows.append(row)
        del sets
        torch.cuda.empty_cache()
    return rows


def run_gelu_sweep(pkg, runner: Runner) -> list[dict]:
    """Times gelu_tanh_with_config at every GELU_SWEEP_POINTS configuration against the default
    op, per shape; each configuration's output on input set 0 must equal the default's."""
    rows = []
    for shape in ISSUE_SHAPES + LTX_FF_SHAPES:
        nbytes = 2 * math.prod(shape) * 2
        sets = runner.inputs({"bytes": nbytes, "make": lambda i, shape=shape: (randn(shape, seed=i, scale=2.0),)})
        row: dict[str, Any] = {"shape": list(shape), "dtype": "bfloat16", "bytes": nbytes, "input_sets": len(sets),
                               "configs": {}}
        row["default"] = {k: v for k, v in runner.measure(pkg.gelu_tanh, sets, nbytes).items() if k in SWEEP_KEEP}
        want = pkg.gelu_tanh(*sets[0])
        for threads, unroll in GELU_SWEEP_POINTS:
            fn = lambda x, t=threads, u=unroll: pkg.gelu_tanh_with_config(x, t, u)  # noqa: E731
            row["configs"][f"{threads}x{unroll}"] = sweep_point(
                runner, fn, sets, nbytes, {"threads_per_block": threads, "unroll": unroll},
                lambda got: {"equal_to_default": bool(torch.equal(got, want))})
        mark_best(row)
        print(f"gelu sweep {str(shape):<18} default {row['default'].get('graph_us', float('nan')):7.2f} us"
              f" {row['default'].get('graph_pct_copy', float('nan')):5.1f}%  best {row.get('best_graph')}"
              f" x{row.get('best_graph_speedup_vs_default', float('nan')):.3f}", flush=True)
        rows.append(row)
        del sets
        torch.cuda.empty_cache()
    return rows


def run_qk_sweep(pkg, runner: Runner) -> list[dict]:
    """Times rms_norm_rope_qk_with_config at every QK_SWEEP point against the default op,
    per shape; each point's outputs on input set 0 are compared with the default's."""
    rows = []
    for shape in ISSUE_SHAPES + LTX_SHAPES:
        d = shape[-1]
        if d not in QK_SWEEP:
            continue
        nbytes = qk_bytes(shape)
        sets = runner.inputs({"bytes": nbytes, "make": qk_inputs(pkg.reference, shape)})
        row: dict[str, Any] = {"shape": list(shape), "dtype": "bfloat16", "bytes": nbytes, "input_sets": len(sets),
                               "configs": {}}
        default = lambda q, k, wq, wk, c, s: pkg.rms_norm_rope_qk(q, k, wq, wk, c, s, 1e-5)  # noqa: E731
        row["default"] = {k: v for k, v in runner.measure(default, sets, nbytes).items() if k in SWEEP_KEEP}
        want = default(*sets[0])

        def rel_diff(got, want=want) -> dict[str, Any]:
            return {"max_rel_diff_vs_default": max(max_rel_diff(g, w) for g, w in zip(got, want))}

        for tpr, vpt, flags in qk_sweep_points(d):
            fn = lambda q, k, wq, wk, c, s, t=tpr, v=vpt, f=flags: pkg.rms_norm_rope_qk_with_config(  # noqa: E731
                q, k, wq, wk, c, s, 1e-5, t, v, f)
            key = qk_sweep_key(tpr, vpt, flags)
            row["configs"][key] = sweep_point(
                runner, fn, sets, nbytes, {"threads_per_row": tpr, "chunks_per_thread": vpt, "flags": flags}, rel_diff)
        mark_best(row)
        cells = "  ".join(f"{k} {e.get('graph_us', float('nan')):7.2f} us {e.get('graph_pct_copy', float('nan')):5.1f}%"
                          for k, e in row["configs"].items())
        print(f"qk sweep {str(shape):<18} default {row['default'].get('graph_us', float('nan')):7.2f} us"
              f" {row['default'].get('graph_pct_copy', float('nan')):5.1f}%  {cells}", flush=True)
        rows.append(row)
        del sets
        torch.cuda.empty_cache()
    return rows


# ------------------------------------------------------------------------------ bench_ops.main's hooks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", action="store_true", help="also time RMSNorm launch configurations")
    parser.add_argument("--sweep-adaln", action="store_true",
                        help="also time the AdaLN *_with_config grid (rows kernel, late scale/shift, pipelined"
                             " kernel, column-stationary kernel: threads x chunks, rows per block, flags) on every"
                             " issue and LTX shape; written under 'adaln_sweep'")
    parser.add_argument("--sweep-rope", action="store_true",
                        help="also time rope_interleaved's kernels (per-row, flat at 1/2/4 chunks per thread,"
                             " narrow at 2/4 elements per thread with and without streaming hints) on every shape;"
                             " written under 'rope_sweep'")
    parser.add_argument("--sweep-qk", action="store_true",
                        help="also time rms_norm_rope_qk at every threads x chunks of QK_SWEEP on every shape;"
                             " written under 'qk_sweep'")
    parser.add_argument("--sweep-gelu", action="store_true",
                        help="also time gelu_tanh at every threads per block x chunks per thread of"
                             " GELU_SWEEP_POINTS on every GELU shape; written under 'gelu_sweep'")
    parser.add_argument("--adaln-rows-only", action="store_true",
                        help="with --sweep-adaln: only rows_per_block 0 (flags 0, 4, 8, 16, 64), not the"
                             " column-stationary grid")
    parser.add_argument("--adaln-ungated", action="store_true",
                        help="with --sweep-adaln: the fused add without its gate (h = residual + x, LTX's call"
                             " after attn2)")


def counts(args: argparse.Namespace, ops: set[str]) -> dict[str, int]:
    """bench_ops.plan's measurement counts of the sweeps asked for."""
    return {
        "sweep_n": sum(len(SWEEP[s[-1]]) for s in ISSUE_SHAPES + LTX_SHAPES if s[-1] in SWEEP) if args.sweep else 0,
        "adaln_sweep_n": adaln_sweep_count(ops, not args.adaln_rows_only) if args.sweep_adaln else 0,
        "rope_sweep_n": rope_sweep_count() if args.sweep_rope else 0,
        "qk_sweep_n": qk_sweep_count() if args.sweep_qk else 0,
        "gelu_sweep_n": gelu_sweep_count() if args.sweep_gelu else 0,
    }


def _stream(result: dict[str, Any], key: str, method: str, rows: Iterable[dict[str, Any]],
            save: Callable[[], None]) -> None:
    """A sweep's method text and its rows under result[key], saved after every row."""
    result[f"{key}_method"] = method
    result[key] = []
    for row in rows:
        result[key].append(row)
        save()


def run(args: argparse.Namespace, pkg, runner: Runner, ops: set[str], result: dict[str, Any],
        save: Callable[[], None]) -> None:
    """The sweeps asked for, after bench_ops' main table, into its result (saved row by row)."""
    if args.sweep and (not ops or "rms_norm" in ops):
        result["rms_norm_config_sweep"] = run_sweep(pkg, runner, ISSUE_SHAPES + LTX_SHAPES)
    if args.sweep_rope:
        _stream(result, "rope_sweep", (
            "bf16 x, fp32 cos/sin of x's shape (LTX's tables at the 2688-token shapes); per shape the default"
            " op and rope_interleaved_with_config at chunks_per_thread 0 (the per-row kernel) and 1/2/4 (the"
            " flat kernel), same rotated graph timer and do_bench as the main table"),
                run_rope_sweep(pkg, runner), save)
    if args.sweep_gelu:
        _stream(result, "gelu_sweep", (
            "bf16 x of the main table's GELU shapes; per shape the default op and gelu_tanh_with_config at"
            " every GELU_SWEEP_POINTS threads per block x 16-byte chunks per thread, same rotated graph timer"
            " and do_bench as the main table"),
                run_gelu_sweep(pkg, runner), save)
    if args.sweep_qk:
        _stream(result, "qk_sweep", (
            "bf16 q/k with weights, fp32 cos/sin of q's shape (LTX's tables at the 2688-token shapes); per"
            " shape the default op and rms_norm_rope_qk_with_config at every QK_SWEEP threads x chunks, same"
            " rotated graph timer and do_bench as the main table"),
                run_qk_sweep(pkg, runner), save)
    if args.sweep_adaln:
        _stream(result, "adaln_sweep", (
            "bf16, scale/shift (and gate) [B,1,D] slices of a [B,1,6,D] table, no weight; per shape the"
            " default op and every threads x chunks / rows_per_block / flags point of the *_with_config op,"
            " same rotated graph timer and do_bench as the main table; rows_per_block 0 = the default rows"
            " kernel at that config, >= 1 = the column-stationary kernel; flags 1 = streaming cache hints,"
            " 2 = prefetch the next row (column-stationary), 4 = scale/shift read after the reduction (rows"
            " kernel), 8 / 16 = the pipelined kernel with 2 / 3 stages (rows_per_block 0), 64 = the lean rows"
            " kernel (1-2 chunks)" + ("; the fused add without its gate (gate=None)" if args.adaln_ungated else "")),
                run_adaln_sweep(pkg, runner, ops, not args.adaln_rows_only, not args.adaln_ungated), save)


def main(argv: list[str] | None = None) -> int:
    return bench_ops.main(argv, sweeps=sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
