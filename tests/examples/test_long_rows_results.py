"""The long_rows example ships its H100 run as the repository tool made it: results.json is the
slimmed run JSON of evidence/long_rows/, and RESULTS.md is rendered from it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "skills" / "cuda-kernels" / "examples" / "long_rows"
RUN = REPO / "evidence" / "long_rows" / "benchmarks" / "h100_run2" / "bench.json"

_spec = importlib.util.spec_from_file_location("long_rows_make_results", REPO / "benchmarks" / "long_rows" / "make_results.py")
assert _spec and _spec.loader
make_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_results)


def test_the_shipped_json_is_the_slimmed_run() -> None:
    shipped = json.loads((EXAMPLE / "benchmarks" / "results.json").read_text())
    assert shipped == make_results.slim(json.loads(RUN.read_text()))
    assert not any(k.endswith("_gbps") and k != "copy_gbps" for r in shipped["results"] for k in r)


def test_results_md_is_rendered_from_the_shipped_json_and_rounds_as_the_full_run_does() -> None:
    shipped = json.loads((EXAMPLE / "benchmarks" / "results.json").read_text())
    assert (EXAMPLE / "RESULTS.md").read_text() == make_results.render(shipped, "results.json")
    assert make_results.render(json.loads(RUN.read_text()), "results.json") == make_results.render(shipped, "results.json")
