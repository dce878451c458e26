"""The long_rows example's RESULTS.md from its benchmark JSON (repository tool, not shipped):

    python benchmarks/long_rows/make_results.py results.json > skills/cuda-kernels/examples/long_rows/RESULTS.md
    python benchmarks/long_rows/make_results.py --slim RUN/bench.json skills/cuda-kernels/examples/long_rows/benchmarks/results.json

--slim writes the copy the skill ships: the measured times, the copy bandwidth and the fields
RESULTS.md reads, to 6 significant digits (the tables print fewer); the derived speedups and GB/s are left out (the
run's full JSON stays in evidence/long_rows/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DERIVED = ("_gbps", "_speedup_vs_eager", "_speedup_vs_compile", "_speedup_vs_triton")


def _round(v: object) -> object:
    return float(f"{v:.6g}") if isinstance(v, float) else v


def slim(data: dict) -> dict:
    rows = [{k: _round(v) for k, v in r.items() if k == "copy_gbps" or not k.endswith(DERIVED)} for r in data["results"]]
    return {**data, "results": rows}


def render(data: dict, name: str) -> str:
    out = [f"# long_rows benchmark: {data['device']}\n",
           f"torch {data['torch']}, triton {data['triton']}; timer: {data['timer']}; {data['date']}. "
           f"Target: {data['target']}. Generated from `{name}` by make_results.py.\n",
           "| dtype | rows x vocab | MB | copy GB/s | lse µs | % of copy | eager | compile | Triton | x best peer "
           "| CE µs | CE % of copy | CE x best peer |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["results"]:
        out.append(f"| {r['dtype']} | {r['rows']} x {r['vocab']} | {r['mbytes']:.1f} | {r['copy_gbps']:.0f} | "
                   f"{r['lse_ours_us']:.1f} | {r['lse_pct_copy']:.1f} | {r['lse_eager_us']:.1f} | {r['lse_compile_us']:.1f} | "
                   f"{r['lse_triton_us']:.1f} | {r['lse_vs_best_peer']:.2f} | {r['ce_ours_us']:.1f} | {r['ce_pct_copy']:.1f} | "
                   f"{r['ce_vs_best_peer']:.2f} |")
    misses = data.get("misses", [])
    out.append(f"\nTarget misses: {len(misses)}" + ("" if not misses else "\n\n" + "\n".join(f"- {m}" for m in misses)))
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--slim"] and len(args) == 3:
        Path(args[2]).write_text(json.dumps(slim(json.loads(Path(args[1]).read_text())), indent=1) + "\n")
        return 0
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(render(json.loads(Path(args[0]).read_text()), Path(args[0]).name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
