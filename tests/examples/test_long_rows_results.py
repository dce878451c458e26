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


def test_lessons_quote_the_flush_probe() -> None:
    """What a clean L2 takes off each kernel, as lessons.md quotes it, is flush_probe.json's."""
    probe = json.loads((REPO / "evidence" / "long_rows" / "benchmarks" / "h100_flush" / "flush_probe.json").read_text())
    small = [s for s in probe["shapes"] if s["mbytes"] < 400]  # near the L2: the 1.2 GB row is the control

    def span(kernel: str) -> str:
        gain = sorted(s["us"][kernel]["do_bench"] - s["us"][kernel]["clean"] for s in small)
        return f"{gain[0]:.1f}-{gain[-1]:.1f} us"

    mbs = sorted(s["mbytes"] for s in small)
    lessons = " ".join((REPO / "skills" / "cuda-kernels" / "references" / "lessons.md").read_text().split())
    assert (f"a clean L2 took {span('copy')} off copy, {span('lse')} off a read-only logsumexp and "
            f"{span('triton_lse')} off its Triton peer at {mbs[0]:.0f}-{mbs[-1]:.0f} MB (one H100), enough to "
            "reorder the two at fp32 512x32000") in lessons
    fp32 = next(s for s in small if s["rows"] == 512 and s["vocab"] == 32000 and s["dtype"] == "float32")
    order = {m: fp32["us"]["lse"][m] < fp32["us"]["triton_lse"][m] for m in ("do_bench", "clean")}
    assert order == {"do_bench": True, "clean": False}  # ours first with the dirty flush, Triton's with a clean L2
