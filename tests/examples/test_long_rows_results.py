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


_probe_spec = importlib.util.spec_from_file_location(
    "long_rows_intercept_probe", REPO / "evidence" / "long_rows" / "benchmarks" / "h100_intercept" / "intercept_probe.py")
assert _probe_spec and _probe_spec.loader
intercept_probe = importlib.util.module_from_spec(_probe_spec)
_probe_spec.loader.exec_module(intercept_probe)  # torch and triton are imported by its main() only


def _fit_from_points(points: list[dict], name: str, timer: str) -> tuple[float, float]:
    """The probe's own least squares over its points (copy's bytes twice): (intercept us, GB/s)."""
    assert len(points) >= 4
    scale = 2.0 if name == "copy" else 1.0
    f = intercept_probe.fit([(scale * p["mbytes"], p[timer][name]) for p in points])
    return f["intercept_us"], f["gbps"]


def test_the_intercept_fits_are_the_points_and_the_skill_quotes_them() -> None:
    """The read-only stream's fixed cost, as lessons.md and the example README quote it, is what
    intercept_probe.json's points fit to; 85 % of copy needs the bytes quoted."""
    probe = json.loads((REPO / "evidence" / "long_rows" / "benchmarks" / "h100_intercept" / "intercept_probe.json").read_text())
    bf16 = next(s for s in probe["series"] if s["dtype"] == "bfloat16" and s["vocab"] == 151936)
    fit = {}
    for name in ("copy", "lse", "triton_lse", "amax", "sum"):
        for timer in ("clean_us", "do_bench_us"):
            a, gbps = _fit_from_points(bf16["points"], name, timer)
            stored = bf16["fits"][f"{name}_{timer}"]
            assert abs(a - stored["intercept_us"]) < 1e-6 and abs(gbps - stored["gbps"]) < 1e-3
            fit[name, timer] = (a, gbps)
    # every read-only reduction pays more than 8 us that copy does not
    assert all(fit[n, "clean_us"][0] > 8 for n in ("lse", "triton_lse", "amax", "sum")) and fit["copy", "clean_us"][0] < 1
    a, gbps = fit["lse", "do_bench_us"]
    target = 0.85 * fit["copy", "do_bench_us"][1] / 1e3  # MB/us of reads at 85 % of copy
    need_mb = target * a / (1 - target / (gbps / 1e3))
    lessons = " ".join((REPO / "skills" / "cuda-kernels" / "references" / "lessons.md").read_text().split())
    def us(name: str, timer: str) -> str:
        return f"{fit[name, timer][0]:.1f}"
    assert (f"logsumexp {us('lse', 'clean_us')} µs ({us('lse', 'do_bench_us')}), `torch.sum` {us('sum', 'clean_us')} "
            f"({us('sum', 'do_bench_us')}), `torch.amax` {us('amax', 'clean_us')} ({us('amax', 'do_bench_us')}), copy "
            f"{us('copy', 'clean_us')} ({us('copy', 'do_bench_us')}); at logsumexp's do_bench fit 85 % of copy needs "
            f"about {need_mb:.0f} MB") in lessons
    readme = " ".join((EXAMPLE / "README.md").read_text().split())
    assert (f"logsumexp pays {us('lse', 'do_bench_us')} µs + bytes / {gbps:.0f} GB/s, `torch.sum` "
            f"{us('sum', 'do_bench_us')} µs and `torch.amax` {us('amax', 'do_bench_us')} µs at about the same "
            f"bandwidth; at that intercept 85 % of copy needs about {need_mb:.0f} MB") in readme
