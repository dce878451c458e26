#!/usr/bin/env python3
"""Do the cache hints make the kernels faster, or only the benchmark? (H200 runs 34-35)

Up to run 34 bench_ops.py's graph timer discarded each call's output, so inside the captured
graph every call wrote the same output buffer (the graph's memory pool hands the freed block
straight back). An output line still dirty in L2 when the next call overwrites it reaches
DRAM once for both calls. Evict-first loads leave such lines in L2 longer, so part of what a
hint gained there could be DRAM writes that a model, whose next op writes elsewhere, pays.

For each kernel with an evict-first variant this script times it with and without the
hints, next to torch.compile of the reference expression, in two graph modes on the same
rotating input sets as bench_ops.py:
  same      outputs discarded, one output buffer for all calls (bench_ops.py
            --one-output-buffer, its timer up to run 34);
  distinct  every call's output kept alive during capture, so each call writes fresh
            memory and no write can be absorbed by a later call (bench_ops.py's timer now).
The cases: rope_interleaved's narrow kernel (4 elements per thread) plain and with
ROPE_STREAMING (ld/st.global.cs); the default ops that set_cache_hints(True) gives
LEAN_HINTS on small calls - rms_norm_rope_qk, add_rms_norm_modulate, rms_norm_modulate -
against their lean kernel forced with the hints ("lean, hints"). A gain that is DRAM
efficiency shows in both modes. (In run 35 the default ops still carried the hints on these
calls: its JSON names the hinted default "kernel" and the twin "lean, no hints". Run 35 found
the hints slower in the distinct mode, so they are off by default since.)

    python hint_check.py --package-path BUILD_DIR --out hint_check.json

Exit code 2 without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import torch

BENCH = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels" / "examples" / "ltx_video" / "benchmarks"

ROPE_SHAPES = [(4, 1024, 2048), (2, 2688, 2048), (1, 8192, 2048)]
QK_SHAPES = [(2, 1024, 2048), (1, 2688, 2048)]  # within kQkHints' 3/2 of L2: the rule would hint them
ADD_SHAPES = [(4, 1024, 2048), (1, 2688, 2048)]  # within kAddHints' 5/4 of L2
MOD_SHAPES = [(2, 1024, 2048)]  # within kModLean's 1/3 of L2: the default is the lean kernel
Case = tuple[str, tuple[int, int, int], int, Callable[[int], tuple], dict[str, Callable[..., Any]]]


def cases(pkg, ref) -> list[Case]:
    """(op, shape, bytes per call, input set maker, impls): 'kernel' (for the norms the default
    op, the lean kernel without hints at these sizes), the hinted variant, and torch.compile
    of the reference."""
    out: list[Case] = []
    for shape in ROPE_SHAPES:
        out.append(("rope_interleaved", shape, math.prod(shape) * (2 + 2 + 4 + 4), bench_ops.rope_inputs(ref, shape), {
            "kernel": lambda x, c, s: pkg.rope_interleaved_with_config(x, c, s, 1, 4),
            "kernel/cs": lambda x, c, s: pkg.rope_interleaved_with_config(x, c, s, 1, 4, pkg.ROPE_STREAMING),
            "compile": torch.compile(ref.rope_interleaved),
        }))
    for shape in QK_SHAPES:
        out.append(("rms_norm_rope_qk", shape, bench_ops.qk_bytes(shape), bench_ops.qk_inputs(ref, shape), {
            "kernel": lambda q, k, wq, wk, c, s: pkg.rms_norm_rope_qk(q, k, wq, wk, c, s, 1e-5),
            "lean, hints": lambda q, k, wq, wk, c, s: pkg.rms_norm_rope_qk_with_config(
                q, k, wq, wk, c, s, 1e-5, 256, 1, pkg.QK_LEAN | pkg.LEAN_HINTS),
            "compile": torch.compile(lambda q, k, wq, wk, c, s: ref.rms_norm_rope_qk(q, k, wq, wk, c, s, 1e-5)),
        }))
    for shape in ADD_SHAPES:
        b, _, d = shape

        def make_add(i: int, shape=shape, b=b, d=d) -> tuple:
            table = bench_ops.randn((b, 1, 6, d), seed=2000 + i, scale=0.3)
            return (bench_ops.randn(shape, seed=i, scale=0.7), bench_ops.randn(shape, seed=500 + i, scale=2.0),
                    table[:, :, 5], table[:, :, 4], table[:, :, 3])

        out.append(("add_rms_norm_modulate", shape, 4 * math.prod(shape) * 2 + 3 * b * d * 2, make_add, {
            "kernel": lambda x, r, g, s, h: pkg.add_rms_norm_modulate(x, r, g, None, s, h, 1e-6),
            "lean, hints": lambda x, r, g, s, h: pkg.add_rms_norm_modulate_with_config(
                x, r, g, None, s, h, 1e-6, 128, 2, 0, pkg.ADALN_LEAN | pkg.LEAN_HINTS),
            "compile": torch.compile(lambda x, r, g, s, h: ref.add_rms_norm_modulate(x, r, g, None, s, h, 1e-6)),
        }))
    for shape in MOD_SHAPES:
        b, _, d = shape

        def make_mod(i: int, shape=shape, b=b, d=d) -> tuple:
            table = bench_ops.randn((b, 1, 6, d), seed=2000 + i, scale=0.3)
            return bench_ops.randn(shape, seed=i, scale=2.0), table[:, :, 1], table[:, :, 0]

        out.append(("rms_norm_modulate", shape, 2 * math.prod(shape) * 2 + 2 * b * d * 2, make_mod, {
            "kernel": lambda x, s, h: pkg.rms_norm_modulate(x, None, s, h, 1e-6),
            "lean, hints": lambda x, s, h: pkg.rms_norm_modulate_with_config(
                x, None, s, h, 1e-6, 128, 2, 0, pkg.ADALN_LEAN | pkg.LEAN_HINTS),
            "compile": torch.compile(lambda x, s, h: ref.rms_norm_modulate(x, None, s, h, 1e-6)),
        }))
    return out


def same_bits(got: Any, want: Any) -> bool:
    if isinstance(got, tuple):
        return all(torch.equal(g, w) for g, w in zip(got, want))
    return torch.equal(got, want)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package-path", help="build_local.py output dir (else LTX_VIDEO_KERNELS_PATH)")
    parser.add_argument("--out", default="hint_check.json")
    args = parser.parse_args(argv)  # --help and usage errors never import torch
    global torch, bench_ops
    import torch

    sys.path.insert(0, str(BENCH))
    import bench_ops  # the example's: shapes, inputs, copy reference, timer

    if not torch.cuda.is_available():
        print("hint_check: needs a CUDA GPU", file=sys.stderr)
        return 2
    pkg = bench_ops.load_package(args.package_path)
    copy_gbs = bench_ops.copy_bandwidth_gbs()
    l2 = bench_ops.device_l2_bytes()
    print(f"copy bandwidth {copy_gbs:.0f} GB/s, L2 {l2 >> 20} MiB", flush=True)
    ref = pkg.reference
    rows = []
    for op, shape, nbytes, make, impls in cases(pkg, ref):
        n_sets = bench_ops.n_sets_for(nbytes, l2)
        sets = [make(i) for i in range(n_sets)]
        calls = bench_ops.graph_calls(nbytes, n_sets, copy_gbs)
        torch._dynamo.reset()
        want = impls["kernel"](*sets[0])
        row: dict[str, Any] = {"op": op, "shape": list(shape), "bytes": nbytes, "input_sets": n_sets, "calls": calls,
                               "impls": {}}
        for name, impl in impls.items():
            got = impl(*sets[0])  # compiles the torch.compile peer before any capture
            entry: dict[str, Any] = {}
            if name != "compile":
                entry["equal_to_kernel"] = same_bits(got, want)  # the hints never change results
                if not entry["equal_to_kernel"]:
                    print(f"hint_check: {op} {name} differs from the kernel at {shape}", file=sys.stderr)
            fn = lambda i, impl=impl: impl(*sets[i])  # noqa: E731
            for mode, keep in (("same", False), ("distinct", True)):
                us, spread = bench_ops.graph_us(fn, calls, n_sets, keep_outputs=keep)
                entry[mode] = {"graph_us": round(us, 3), "graph_pct_copy": round(bench_ops.pct_of_copy(nbytes, us, copy_gbs), 1),
                               "graph_spread": round(spread, 4)}
            row["impls"][name] = entry
        cells = "  ".join(f"{n} {e['same']['graph_us']:7.2f} / {e['distinct']['graph_us']:7.2f}" for n, e in row["impls"].items())
        print(f"{op:<22} {str(shape):<16} {nbytes / 1e6:6.1f} MB  same / distinct us: {cells}", flush=True)
        rows.append(row)
        del sets, want
        torch.cuda.empty_cache()
        write(args.out, copy_gbs, rows)  # after every case: a run cut short keeps what it measured
    print(f"wrote {args.out}", flush=True)
    return 0 if all(e.get("equal_to_kernel", True) for r in rows for e in r["impls"].values()) else 1


def write(path: str, copy_gbs: float, rows: list[dict[str, Any]]) -> None:
    out = {
        "device": torch.cuda.get_device_name(0),
        "driver": bench_ops.driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "copy_bandwidth_gbs": round(copy_gbs, 1),
        "copy_bandwidth_method": bench_ops.COPY_METHOD,
        "graph_timer": f"median of {bench_ops.GRAPH_REPLAYS} replays of a CUDA graph of back-to-back calls / calls; inputs rotate"
                       " over >= 4x L2 of sets; 'same': outputs discarded (one buffer), 'distinct': each call's"
                       " output kept (fresh memory per call)",
        "results": rows,
    }
    Path(path).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
