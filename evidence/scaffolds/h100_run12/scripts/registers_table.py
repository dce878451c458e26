#!/usr/bin/env python3
"""Registers per thread (spill-store bytes) of two trees side by side, as a markdown table.

    python registers_table.py A_TREE B_TREE --labels A V --ops glu elementwise ... > ../registers_sm90.md

Runs ../../ptxas_unpack/ptxas_regs.py (ptxas -v, no GPU) on each tree and joins the rows
by op and kernel instance; an instance one tree lacks is left blank.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REGS = Path(__file__).resolve().parents[2] / "ptxas_unpack" / "ptxas_regs.py"


def table(tree: Path, label: str, ops: list[str], arch: str) -> dict[tuple[str, str], str]:
    out = subprocess.run([sys.executable, str(REGS), str(tree), label, "--ops", *ops, "--arch", arch],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        _, op, regs, spill, name = line.split("\t")
        rows[(op, name)] = regs if spill == "0" else f"{regs} ({spill})"
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", type=Path, nargs=2)
    ap.add_argument("--labels", nargs=2, default=["A", "V"])
    ap.add_argument("--ops", nargs="+", default=["rmsnorm", "layernorm", "glu", "elementwise"])
    ap.add_argument("--arch", default="90")
    args = ap.parse_args()
    cols = [table(t, lab, args.ops, args.arch) for t, lab in zip(args.trees, args.labels)]
    keys = sorted(set(cols[0]) | set(cols[1]), key=lambda k: (args.ops.index(k[0]), k[1]))
    print(f"| op | instance | {args.labels[0]} | {args.labels[1]} |\n|---|---|---:|---:|")
    for op, name in keys:
        print(f"| {op} | `{name}` | {cols[0].get((op, name), '')} | {cols[1].get((op, name), '')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
