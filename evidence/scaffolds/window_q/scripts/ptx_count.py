#!/usr/bin/env python3
"""Static PTX instruction counts of one scaffolded op's kernel instances (nvcc -ptx, sm_90; no GPU).

    python ptx_count.py TREE OP INSTANCE_REGEX

TREE is a checkout of this repository; its new_kernel_project.py scaffolds OP into a temporary
folder. Prints, per instance whose demangled name matches INSTANCE_REGEX, the instruction total
and the selects, shifts and shuffles (static counts: a switch's four cases count four times).
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = ("selp", "shl", "shr", "or", "ld", "shfl", "bra", "setp")


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    tree, op, pattern = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        script = tree / "skills" / "cuda-kernels" / "scripts" / "new_kernel_project.py"
        subprocess.run([sys.executable, str(script), "--op", op, "--out", tmp, "p"], check=True, capture_output=True)
        src = Path(tmp) / "p" / "kernel_src"
        ptx = Path(tmp) / "k.ptx"
        subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-ptx", "-o", str(ptx), str(src / f"{op}.cu"),
                        f"-I{src}"], check=True)
        for m in re.finditer(r"\.entry (\S+)\(.*?\n\}\n", ptx.read_text(), re.S):
            name = subprocess.run(["c++filt", m.group(1)], capture_output=True, text=True).stdout.strip()
            name = re.sub(r"ks::\(anonymous namespace\)::|\(ks::\w+Args.*$|^void ", "", name)
            if not re.search(pattern, name):
                continue
            ops = collections.Counter(re.findall(r"^\s+(?:@%p\d+\s+)?([a-z][a-z0-9]*)[.\s]", m.group(0), re.M))
            counts = " ".join(f"{k} {ops[k]}" for k in KINDS)
            print(f"{name}\ttotal {sum(ops.values())}\t{counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
