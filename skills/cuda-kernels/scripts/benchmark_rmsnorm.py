#!/usr/bin/env python3
"""Isolated RMSNorm micro-benchmark: the qwen3_8b example's CUDA RMSNorm against eager
PyTorch (transformers' Qwen3RMSNorm), F.rms_norm, torch.compile (dynamo reset per shape)
and a plain Triton kernel, on the shapes that matter for Qwen3-8B.

    python scripts/benchmark_rmsnorm.py                        # build the example, run on the GPU
    python scripts/benchmark_rmsnorm.py --package-path DIR     # use an already built qwen3_8b_kernels
    python scripts/benchmark_rmsnorm.py --shapes 1x8192x4096,131072x128 --out rmsnorm.json
    python scripts/benchmark_rmsnorm.py --device cpu           # harness check on tiny CPU shapes

Reports, per shape, the median time (CUDA-graph replays of back-to-back calls, inputs
rotated past the L2 cache), GB/s, % of the device-to-device copy bandwidth measured in the
same run, and the kernel's speedup over each peer. The default shapes are the hidden-4096
ones ([1x128 ... 16x8192] x 4096) and the q/k norm (tokens x heads x 128). Building needs
nvcc and ninja (scripts/build_local.py, about a minute); --package-path skips it.
--device cpu times the package's CPU path (the PyTorch reference) against F.rms_norm and
torch.compile with wall-clock timing: a check that everything runs, not a measurement.

Exit codes: 0 success, 1 a failure while building or measuring, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

SKILL = Path(__file__).resolve().parents[1]
EXAMPLE = SKILL / "examples" / "qwen3_8b"


def _parse_shapes(text: str) -> list[tuple[int, ...]]:
    shapes = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            dims = tuple(int(d) for d in item.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad shape {item!r}: use dims joined by 'x', e.g. 1x8192x4096") from None
        if not dims or any(d <= 0 for d in dims):
            raise argparse.ArgumentTypeError(f"bad shape {item!r}: every dimension must be a positive integer")
        shapes.append(dims)
    if not shapes:
        raise argparse.ArgumentTypeError("no shapes given")
    return shapes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmark_rmsnorm.py",
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--package-path", metavar="DIR", help="directory holding a built qwen3_8b_kernels "
                        "(what build_local.py prints); default: import it, else build the example")
    parser.add_argument("--arch", help="CUDA architecture to build for, e.g. 9.0 (default: the visible GPU's; on cpu, 9.0 only: a CPU check compiles and imports the build, it never runs it)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--shapes", type=_parse_shapes, metavar="AxBxH,...",
                        help="RMSNorm shapes, normalized dim last (default: the Qwen3-8B set plus q/k norm)")
    parser.add_argument("--quick", action="store_true", help="three hidden-size shapes and one q/k norm shape")
    parser.add_argument("--skip-compile", action="store_true", help="leave out the torch.compile peer (saves time)")
    parser.add_argument("--out", metavar="JSON", help="also write the results as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # --help and usage errors never import torch
    try:
        import torch
    except ImportError:
        print("benchmark_rmsnorm: torch is not installed (pip install torch)", file=sys.stderr)
        return 1
    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmark_rmsnorm: no CUDA device visible; run with --device cpu for the CPU check", file=sys.stderr)
        return 2
    sys.path.insert(0, str(EXAMPLE / "benchmarks"))
    import bench_ops
    import make_results

    try:
        pkg = bench_ops.load_package(args.package_path, args.arch or ("9.0" if args.device == "cpu" else None))
    except Exception as exc:  # noqa: BLE001 - build or import failure: one line, exit 1
        print(f"benchmark_rmsnorm: could not load qwen3_8b_kernels: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    meta = bench_ops.environment(args.device)
    meta["eager_source"] = bench_ops.make_eager_peers()["source"]
    copy_gbps = None
    if args.device == "cuda":
        copy_gbps = bench_ops.copy_bandwidth_gbps()
        log(f"{meta['device']}: copy bandwidth {copy_gbps:.0f} GB/s (2 GiB device-to-device copy_, events, no graph)")
    meta["copy_bandwidth_GBps"] = round(copy_gbps, 1) if copy_gbps else None
    meta["copy_bandwidth_method"] = bench_ops.COPY_METHOD if copy_gbps else None
    meta["timing"] = ("median of CUDA-graph replays / calls, inputs rotated past L2, every call writing its own"
                      " output buffer" if args.device == "cuda"
                      else "wall clock, CPU (harness check only)")
    ops = ["rms_norm"] if args.shapes else ["rms_norm", "qk_norm"]
    cases = bench_ops.build_cases(pkg, args.device, ops, args.quick, rms_shapes=args.shapes)
    results, errors = bench_ops.run_cases(cases, args.device, copy_gbps, int(meta.get("l2_bytes") or 0), log,
                                          args.skip_compile)
    data = {"meta": meta, "results": results, "tuning": [], "errors": errors}
    print()
    print(make_results.summary_table(data))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n")
        log(f"wrote {out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
