#!/usr/bin/env python3
"""Call one scaffolded kernel a few times on one benchmark case, for ncu to profile.

    PYTHONPATH=BUILD_DIR python ncu_probe.py PROJECT OP VARIANT ROWSxWIDTH LAYOUT [--reps 5]

Builds the case with the project's own benchmarks/benchmark_OP.py make_case (same tensors
as the timed rows), checks the output against its float64 reference, then calls the kernel
--reps times; ncu picks the launches with --kernel-name / --launch-skip.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("op")
    ap.add_argument("variant")
    ap.add_argument("shape")
    ap.add_argument("layout", choices=["aligned", "misaligned"])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(args.project / "benchmarks"))
    bench = importlib.import_module(f"benchmark_{args.op}")
    rows, width = (int(v) for v in args.shape.split("x"))
    case = bench.make_case(rows, width, torch.bfloat16, args.layout, args.variant)
    err = case.rel_err(case.kernel())
    for _ in range(args.reps):
        case.kernel()
    torch.cuda.synchronize()
    print(f"{args.op} {args.variant} {args.shape} {args.layout}: max rel err {err:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
