"""The long_rows example's RESULTS.md from its benchmark JSON (repository tool, not shipped):

    python benchmarks/long_rows/make_results.py results.json > skills/cuda-kernels/examples/long_rows/RESULTS.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    data = json.loads(Path(sys.argv[1]).read_text())
    print(f"# long_rows benchmark: {data['device']}\n")
    print(f"torch {data['torch']}, triton {data['triton']}; timer: {data['timer']}; {data['date']}. "
          f"Target: {data['target']}. Generated from `{Path(sys.argv[1]).name}` by make_results.py.\n")
    print("| dtype | rows x vocab | MB | copy GB/s | lse µs | % of copy | eager | compile | Triton | x best peer "
          "| CE µs | CE % of copy | CE x best peer |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in data["results"]:
        print(f"| {r['dtype']} | {r['rows']} x {r['vocab']} | {r['mbytes']:.1f} | {r['copy_gbps']:.0f} | "
              f"{r['lse_ours_us']:.1f} | {r['lse_pct_copy']:.1f} | {r['lse_eager_us']:.1f} | {r['lse_compile_us']:.1f} | "
              f"{r['lse_triton_us']:.1f} | {r['lse_vs_best_peer']:.2f} | {r['ce_ours_us']:.1f} | {r['ce_pct_copy']:.1f} | "
              f"{r['ce_vs_best_peer']:.2f} |")
    misses = data.get("misses", [])
    print(f"\nTarget misses: {len(misses)}" + ("" if not misses else "\n\n" + "\n".join(f"- {m}" for m in misses)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
