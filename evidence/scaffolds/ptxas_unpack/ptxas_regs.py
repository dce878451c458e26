#!/usr/bin/env python3
"""Registers and spills of every kernel instance of scaffolded ops, from ptxas -v (no GPU).

    python ptxas_regs.py TREE LABEL [--ops rmsnorm layernorm ...] [--arch 90]

TREE is a checkout of this repository (its skills/cuda-kernels/scripts/new_kernel_project.py
scaffolds each op into a temporary folder); prints one line per kernel instance:
LABEL, op, registers, spill-store bytes, the demangled instance.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def instances(cu: Path, arch: str) -> list[tuple[str, int, int]]:
    out = subprocess.run(
        ["nvcc", "-std=c++17", "-O3", f"-arch=sm_{arch}", "-Xptxas", "-v", "-c", str(cu), "-o", "/dev/null", f"-I{cu.parent}"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    rows, name, spill = [], None, 0
    for line in out.splitlines():
        if m := re.search(r"Compiling entry function '(\S+)'", line):
            name = subprocess.run(["c++filt", m.group(1)], capture_output=True, text=True).stdout.strip()
            name = re.sub(r"ks::\(anonymous namespace\)::|\(ks::\w+Args.*$|, long\)$", "", name).replace("void ", "")
            spill = 0
        elif m := re.search(r"(\d+) bytes spill stores", line):
            spill = int(m.group(1))
        elif m := re.search(r"Used (\d+) registers", line):
            rows.append((name or "?", int(m.group(1)), spill))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("label")
    ap.add_argument("--ops", nargs="+", default=["rmsnorm", "layernorm", "glu", "elementwise", "rope"])
    ap.add_argument("--arch", default="90")
    args = ap.parse_args()
    script = args.tree / "skills" / "cuda-kernels" / "scripts" / "new_kernel_project.py"
    with tempfile.TemporaryDirectory() as tmp:
        for op in args.ops:
            subprocess.run([sys.executable, str(script), "--op", op, "--out", tmp, f"p{op}"], check=True, capture_output=True)
            for name, regs, spill in sorted(instances(Path(tmp) / f"p{op}" / "kernel_src" / f"{op}.cu", args.arch)):
                print(f"{args.label}\t{op}\t{regs}\t{spill}\t{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
