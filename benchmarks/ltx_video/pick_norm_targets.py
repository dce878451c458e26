#!/usr/bin/env python3
"""Pick the RMSNorm-family chunk targets (ltx_ops.cpp: norm_target_vpt) from benchmark runs.

    python pick_norm_targets.py v0=bench_v0.json v1=bench_v1.json v2=bench_v2.json

Each vN=FILE is a bench_ops.py JSON of a build whose norm_target_vpt returned the
(plain, modulate, add) targets listed in VARIANTS. For each op the variant with the least
summed kernel time (graph timer) over the shapes of >= 20 MB wins (the LTX shapes at 2688
tokens and everything larger: where the step's time goes); only variants that timed the same
number of such shapes as v0 compete. Prints the C++ line to put into ltx_ops.cpp; the sums go
to stderr. sweep_norm_targets.sh runs the whole loop on a GPU machine.
"""

from __future__ import annotations

import json
import sys

VARIANTS: dict[str, tuple[int, int, int]] = {"v0": (6, 4, 2), "v1": (4, 2, 1), "v2": (4, 1, 2)}
OPS = ("rms_norm", "rms_norm_modulate", "add_rms_norm_modulate")
MIN_BYTES = 20e6


def sums(path: str) -> dict[str, tuple[float, int]]:
    out: dict[str, tuple[float, int]] = {}
    for row in json.load(open(path, encoding="utf-8"))["results"]:
        us = (row["impls"].get("kernel") or {}).get("graph_us")
        if row["op"] in OPS and row["bytes"] >= MIN_BYTES and us:
            total, n = out.get(row["op"], (0.0, 0))
            out[row["op"]] = (total + us, n + 1)
    return out


def main(argv: list[str]) -> int:
    runs: dict[str, dict[str, tuple[float, int]]] = {}
    for arg in argv:
        name, _, path = arg.partition("=")
        if name not in VARIANTS or not path:
            print(f"usage: {sys.argv[0]} v0=FILE [v1=FILE v2=FILE] (variants: {VARIANTS})", file=sys.stderr)
            return 2
        try:
            runs[name] = sums(path)
        except (OSError, ValueError, KeyError) as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
    if "v0" not in runs:
        print("error: v0 (the current default) is required", file=sys.stderr)
        return 1
    picked = []
    for i, op in enumerate(OPS):
        n = runs["v0"][op][1]
        cands = {v: s[op][0] for v, s in runs.items() if op in s and s[op][1] == n}
        best = min(cands, key=cands.get)
        print(op, {v: round(t, 1) for v, t in cands.items()}, "->", best, file=sys.stderr)
        picked.append(VARIANTS[best][i])
    plain, mod, add = picked
    print(f"int norm_target_vpt(bool mod, bool add) {{ return add ? {add} : mod ? {mod} : {plain}; }}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
