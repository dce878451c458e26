"""benchmarks/scaffold_gpu_run.py judges the GPU run by issue 32's targets; this pins how.

The GPU run itself needs a GPU; what it writes (RESULTS.md, summary.txt) is computed from
its JSON by pure functions, checked here on hand-made rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import scaffold_gpu_run as run  # noqa: E402

MB64 = 64 * 1024 * 1024


def row(width: int, nbytes: int, pct: float, vs_best: float | None, layout: str = "aligned") -> dict:
    return {"rows": nbytes // (4 * width), "width": width, "dtype": "bfloat16", "layout": layout, "variant": "v",
            "bytes": nbytes, "kernel_us": 10.0, "kernel_GBps": 3000.0, "pct_of_copy_bandwidth": pct,
            "peers_us": {"eager": 30.0, "compile": 10.5}, "peers_skipped": {}, "speedup": {},
            "best_peer": "compile" if vs_best else None, "speedup_vs_best": vs_best}


def test_targets_apply_to_large_wide_rows_only() -> None:
    assert run.verdict(row(1024, 2 * MB64, 86.0, 1.0)) == (True, True)
    assert run.verdict(row(4100, 2 * MB64, 84.9, 1.0)) == (False, True)
    assert run.verdict(row(4096, 2 * MB64, 90.0, 0.98)) == (True, True)  # within 2 %: a tie
    assert run.verdict(row(4096, 2 * MB64, 90.0, 0.979)) == (True, False)
    assert run.verdict(row(4096, 1000, 10.0, 0.5)) == (None, None)  # small shapes are reported, not judged
    assert run.verdict(row(128, 2 * MB64, 10.0, 0.5)) == (None, None)  # narrower than 1024


def test_results_md_counts_and_names_misses() -> None:
    results = {"started_utc": "t", "commit": "c", "environment": {"device": "H100", "capability": "9.0"},
               "ops": {"rmsnorm": {"build": {"ok": True}, "tests": {"ok": True, "summary": "81 passed"},
                                   "bench": {"ok": True, "data": {"timer": "do_bench", "copy_bandwidth_GBps": 3000.0,
                                                                  "results": [row(1024, 2 * MB64, 90.0, 1.1),
                                                                              row(4100, 2 * MB64, 80.0, 1.1, "misaligned")]}}}}}
    text = run.render_markdown(results)
    assert "| rmsnorm | ok | 81 passed | - | 1 of 2 |" in text
    assert "MISSED % copy" in text and "| met |" in text
    assert run.summary(results) == "rmsnorm: build=ok; tests=ok (81 passed); bench=ok\n"


def test_the_callers_commit_wins_over_the_checkouts(monkeypatch) -> None:
    # The device's copy of the tree carried an older commit's git metadata: trust the caller.
    monkeypatch.setenv("SOURCE_COMMIT", "1692281f3667b6621d5f1aa3dff689c467ebb4ae")
    assert run.source_commit() == "1692281f3667b6621d5f1aa3dff689c467ebb4ae"
    monkeypatch.delenv("SOURCE_COMMIT")
    head = run.source_commit()
    assert head is None or (len(head) == 40 and int(head, 16) >= 0)
