"""The scaffolds' GPU numbers the skill quotes are the committed runs' (evidence/scaffolds/)."""

from __future__ import annotations

import json

import skilldocs

RUNS = skilldocs.REPO / "evidence" / "scaffolds"
BIG = 64 * 2**20


def _rows(run: str, op: str) -> list[dict]:
    data = json.loads((RUNS / run / "scaffold_results.json").read_text())
    return data["ops"][op]["bench"]["data"]["results"]


def _row(run: str, op: str, rows: int, width: int, layout: str = "aligned") -> dict:
    return next(r for r in _rows(run, op) if r["rows"] == rows and r["width"] == width and r["layout"] == layout)


def test_lessons_quote_the_h100_run_of_every_scaffold() -> None:
    text = (skilldocs.SKILL / "references" / "lessons.md").read_text()
    ranges, speedups = {}, []
    for op in ("elementwise", "rmsnorm", "layernorm", "glu", "rope"):
        big = [r for r in _rows("h100_run1", op) if r["bytes"] >= BIG and r["width"] >= 1024]
        pct = [r["pct_of_copy_bandwidth"] for r in big]
        ranges[op] = f"{op} {min(pct):.0f}-{max(pct):.0f} %"
        speedups += [r["speedup_vs_best"] for r in big]
    behind = sorted(s for s in speedups if s < 1)
    quoted = (f"elementwise {ranges['elementwise'].split(' ', 1)[1]} of copy, " + ", ".join(
        ranges[op] for op in ("rmsnorm", "layernorm", "glu", "rope")))
    assert quoted in text
    assert f"{behind[0]:.2f}-{behind[-1]:.2f}x the best of `torch.compile` and Triton on {len(behind)} of {len(speedups)} rows" in text


def test_the_templates_page_quotes_the_same_machine_comparison() -> None:
    page = " ".join((skilldocs.SKILL / "references" / "kernel-templates.md").read_text().split())
    new = _row("h100_run3/head", "elementwise", 8192, 4096)
    old = _row("h100_run3/ad738e8", "elementwise", 8192, 4096)
    assert f"from {old['pct_of_copy_bandwidth']:.1f} % to {new['pct_of_copy_bandwidth']:.1f} % of copy bandwidth" in page
