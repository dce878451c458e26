"""Slim a qwen3_8b results.json for the shipped skill and write it compact (one record
per line, no indentation).

The full file (387 sweep configurations in run 16) stays in the repository, next to the
run's logs (`evidence/qwen3_8b/benchmarks/h200_run<N>/results.json`); the skill ships the
sweep entries an agent needs: each op and shape's default and fastest configuration, every
q/k-norm entry (the example's README compares them), and every entry a document of the skill
quotes (tests/skill/test_measured_quotes.py names them). Every entry loses its GB/s (bytes /
us, so derivable) and, where it is the meta's CUDA-graph timer, its timing method. Run from
the repository root:

    python benchmarks/qwen3_8b/slim_tuning.py FULL.json SHIPPED.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: example_modules
from example_modules import load_example_module  # noqa: E402

# The example's writer of the compact form (its end-to-end JSON uses it too).
compact_json = load_example_module("qwen3_8b", "integration/benchmark_e2e.py").compact_json
SHIPPED = "examples/qwen3_8b/benchmarks/results.json"


def quoted_configs() -> list[tuple[str, str, dict[str, int] | None]]:
    """(op, shape, config) of every sweep entry a document quotes; config None = the default."""
    sys.path[:0] = [str(REPO / "tests" / "skill"), str(REPO / "src")]
    import test_measured_quotes as quotes

    found: list[tuple[str, str, dict[str, int] | None]] = []

    def record(op: str, shape: str, field: str, **config: int) -> Any:
        found.append((op, shape, config))
        return lambda data: 0.0

    def record_default(op: str, shape: str, field: str) -> Any:
        found.append((op, shape, None))
        return lambda data: 0.0

    for quote in quotes.QUOTES:
        if quote.file != SHIPPED:
            continue
        read = quote.read
        names = read.__code__.co_freevars
        if "op" in names and "shape" in names:  # built by _tuning / _tuning_default at import
            cells = dict(zip(names, (c.cell_contents for c in read.__closure__ or ()), strict=True))
            if read.__qualname__.startswith("_tuning."):
                found.append((cells["op"], cells["shape"], cells.get("config", {})))
            elif read.__qualname__.startswith("_tuning_default."):
                found.append((cells["op"], cells["shape"], None))
        else:  # a lambda that calls them when it reads
            quotes._tuning, quotes._tuning_default = record, record_default
            try:
                read({"tuning": [], "results": []})
            except (KeyError, ValueError, IndexError, ZeroDivisionError, TypeError):
                pass
    return found


def slim(data: dict[str, Any]) -> dict[str, Any]:
    rows = data["tuning"]
    keep: set[int] = set()
    best: dict[tuple[str, str], int] = {}
    for i, r in enumerate(rows):
        key = (r["op"], r["shape"])
        if key not in best or r["us"] < rows[best[key]]["us"]:
            best[key] = i
        if r.get("default") or r["op"] == "qk_norm":
            keep.add(i)
    keep |= set(best.values())
    for op, shape, config in quoted_configs():
        for i, r in enumerate(rows):
            if r["op"] != op or r["shape"] != shape:
                continue
            if (config is None and r.get("default")) or (
                config is not None and r["config"] and all(r["config"].get(k) == v for k, v in config.items())
            ):
                keep.add(i)
    out = dict(data)
    out["results"] = [{**r, "providers": {name: _lean(p) for name, p in r["providers"].items()}}
                      for r in data["results"]]
    out["published"] = ("slimmed by the kernel-skills repository's benchmarks/qwen3_8b/slim_tuning.py: no GBps "
                        "(bytes / us) and no method where it is cuda-graph (meta.timing); the full file is in its "
                        "evidence/qwen3_8b/benchmarks/")
    out["tuning_scope"] = (
        f"{len(keep)} of the sweep's {len(rows)} configurations: each op and shape's default and fastest, "
        "every q/k-norm entry, and every entry the skill's documents quote; the full sweep is kept in the "
        "kernel-skills repository (evidence/qwen3_8b/benchmarks/)"
    )
    out["tuning"] = [_lean(rows[i]) for i in sorted(keep)]
    return out


def _lean(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "GBps" and not (k == "method" and v == "cuda-graph")}


def main() -> None:
    full, shipped = (Path(a) for a in sys.argv[1:3])
    data = slim(json.loads(full.read_text(encoding="utf-8")))
    shipped.write_text(compact_json(data), encoding="utf-8")
    print(f"{shipped}: {len(data['tuning'])} sweep entries kept")


if __name__ == "__main__":
    main()
