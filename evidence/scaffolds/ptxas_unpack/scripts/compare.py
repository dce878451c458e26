"""Side-by-side % of copy (and us) of scaffold runs: compare.py OP DIR... (each DIR holds scaffold_results.json)."""

import json
import sys
from pathlib import Path

op, dirs = sys.argv[1], sys.argv[2:]
tabs = []
for d in dirs:
    p = Path(d) / "scaffold_results.json"
    if not p.is_file():
        print(f"{d}: no results")
        continue
    b = json.loads(p.read_text())["ops"].get(op, {}).get("bench", {}).get("data")
    if not b:
        print(f"{d}: no bench data")
        continue
    tabs.append((Path(d).name, b["copy_bandwidth_GBps"], {(r["rows"], r["width"], r["layout"], r["variant"]): r for r in b["results"]}))
print("copy GB/s: " + ", ".join(f"{n} {c:.0f}" for n, c, _ in tabs))
keys = list(tabs[0][2]) if tabs else []
print(f"{'shape':<28}" + "".join(f"{n:>18}" for n, _, _ in tabs) + "   best peer us")
for k in keys:
    cells = []
    for _, _, t in tabs:
        r = t.get(k)
        cells.append(f"{r['kernel_us']:7.1f} {r['pct_of_copy_bandwidth']:5.1f}%  " if r else " " * 18)
    r0 = tabs[0][2][k]
    best = min(v for v in r0["peers_us"].values() if v)
    print(f"{k[0]:>6}x{k[1]:<6}{k[2]:<11}{k[3]:<5}" + "".join(f"{c:>18}" for c in cells) + f"   {best:6.1f} ({r0['best_peer']})")
