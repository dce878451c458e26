"""What ships is what an agent reads: design notes of bounded length, measured tables generated
from the committed JSON (never typed), and every bandwidth table naming its timer."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import skilldocs

EXAMPLES = skilldocs.SKILL / "examples"
EXAMPLE_READMES = sorted(EXAMPLES.glob("*/README.md"))
TABLES_SCRIPT = skilldocs.REPO / "benchmarks" / "results_tables.py"
BOTH_TIMERS = EXAMPLES / "qwen3_8b" / "benchmarks" / "both_timers.py"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tables = _load(TABLES_SCRIPT, "results_tables")
GENERATED = [(doc, kind, path) for doc in sorted(skilldocs.SKILL.rglob("*.md"))
             for kind, path, _ in tables.blocks(doc)]


def test_every_example_readme_is_a_design_note_of_at_most_300_lines() -> None:
    assert {p.parent.name for p in EXAMPLE_READMES} >= {"qwen3_8b", "ltx_video"}
    for readme in EXAMPLE_READMES:
        lines = len(readme.read_text(encoding="utf-8").splitlines())
        assert lines <= 300, f"{readme.relative_to(skilldocs.SKILL)}: {lines} lines (the history goes to evidence/)"


def test_each_example_readme_has_a_generated_results_table() -> None:
    # An example with no GPU run yet (long_rows) has no results JSON to generate a table from;
    # once one is committed under its benchmarks/, its README needs the generated table too.
    for readme in EXAMPLE_READMES:
        if not any((readme.parent / "benchmarks").glob("*.json")):
            continue
        kinds = {kind for doc, kind, _ in GENERATED if doc == readme}
        assert kinds & {"qwen3-kernels", "ltx-kernels", "long-rows"}, f"{readme}: no generated measured table"


@pytest.mark.parametrize("doc,kind,path", GENERATED,
                         ids=[f"{d.relative_to(skilldocs.SKILL)}:{k}" for d, k, _ in GENERATED])
def test_generated_table_is_what_the_generator_makes_of_the_committed_json(doc: Path, kind: str, path: Path) -> None:
    body = next(b for k, p, b in tables.blocks(doc) if (k, p) == (kind, path))
    assert body == tables.render(kind, path), \
        f"{doc.name}: the {kind} table is stale; run python benchmarks/results_tables.py {doc.relative_to(skilldocs.REPO)}"
    if not path.is_file():
        pytest.skip(f"{path.relative_to(skilldocs.REPO)} is not committed yet (a GPU run of "
                    f"{tables.KINDS[kind][1]}); the table says so")


def test_every_generated_table_names_its_timer_and_copy_reference() -> None:
    for doc, kind, path in GENERATED:
        if path.is_file():
            text = tables.render(kind, path)
            assert ("CUDA graph" in text or "do_bench" in text) and "copy_" in text, (doc, kind)
            if kind != "qwen3-kernels":  # the one graph-only table; the others give do_bench
                assert "do_bench" in text, (doc, kind)


def test_the_generator_checks_and_refuses_cleanly(tmp_path: Path) -> None:
    readme = EXAMPLES / "qwen3_8b" / "README.md"
    ok = subprocess.run([sys.executable, str(TABLES_SCRIPT), "--check", str(readme)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    stale = tmp_path / "README.md"
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "results.json").write_bytes((EXAMPLES / "qwen3_8b/benchmarks/results.json").read_bytes())
    stale.write_text("x\n<!-- generated: qwen3-kernels benchmarks/results.json -->\nold\n<!-- end generated -->\n")
    check = subprocess.run([sys.executable, str(TABLES_SCRIPT), "--check", str(stale)], capture_output=True, text=True, check=False)
    assert check.returncode == 1 and "differs" in check.stdout
    fix = subprocess.run([sys.executable, str(TABLES_SCRIPT), str(stale)], capture_output=True, text=True, check=False)
    assert fix.returncode == 0 and "| rms_norm | 1x8192x4096 |" in stale.read_text()
    none = tmp_path / "plain.md"
    none.write_text("no tables\n")
    refused = subprocess.run([sys.executable, str(TABLES_SCRIPT), str(none)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "no <!-- generated" in refused.stderr


# --- both timers ------------------------------------------------------------------------------

def _run_without_gpu_modules(script: Path, *args: str) -> subprocess.CompletedProcess:
    code = ("import runpy, sys\n"
            "for name in ('torch', 'triton'):\n"
            "    sys.modules[name] = None\n"
            f"sys.argv = [{str(script)!r}, *{list(args)!r}]\n"
            f"runpy.run_path({str(script)!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)


def test_both_timers_help_and_plan_need_no_torch() -> None:
    helped = _run_without_gpu_modules(BOTH_TIMERS, "--help")
    assert helped.returncode == 0 and "usage" in helped.stdout and "do_bench" in helped.stdout, helped.stderr
    listed = _run_without_gpu_modules(BOTH_TIMERS, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "1x8192x4096" in listed.stdout and "providers: kernel, triton, compile" in listed.stdout
    bad = _run_without_gpu_modules(BOTH_TIMERS, "--providers", "kernel,nope", "--list")
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_both_timers_times_shapes_the_published_results_have() -> None:
    both = _load(BOTH_TIMERS, "both_timers")
    published = json.loads((EXAMPLES / "qwen3_8b/benchmarks/results.json").read_text())
    labels = {(r["op"], r["shape"]) for r in published["results"]}
    assert ("rms_norm", "1x8192x4096") in both.HEADLINE
    assert set(both.HEADLINE) <= labels, set(both.HEADLINE) - labels


def test_both_timers_table_renders_a_run(tmp_path: Path) -> None:
    run = {"meta": {"copy_bandwidth_GBps": 4200.0, "device": "NVIDIA H200", "source": "commit abc1234",
                    "date": "2026-12-06T00:00:00+00:00"},
           "results": [{"op": "rms_norm", "shape": "1x8192x4096", "bytes": 134_250_496, "providers": {
               "kernel": {"graph_us": 34.1, "graph_pct_copy": 93.7, "do_bench_us": 38.9, "do_bench_pct_copy": 82.1},
               "triton": {"graph_us": 35.0, "graph_pct_copy": 91.3, "do_bench_us": 39.5, "do_bench_pct_copy": 80.9}}}],
           "errors": []}
    path = tmp_path / "both_timers.json"
    path.write_text(json.dumps(run))
    full = tables.render("both-timers", path)
    assert "| rms_norm | 1x8192x4096 | 134.3 | ours | 34.10 | 93.7 | 38.90 | 82.1 | 1.14 |" in full
    assert "| triton |" in full and "4200 GB/s" in full
    kernel_only = tables.render("both-timers-kernel", path)
    assert "| rms_norm | 1x8192x4096 | 134.3 | 34.10 | 93.7 | 38.90 | 82.1 | 1.14 |" in kernel_only
    assert "triton" not in kernel_only.split("\n", 2)[2]
    missing = tables.render("both-timers", tmp_path / "absent.json")
    assert missing.startswith("Not measured yet") and "both_timers.py" in missing


# --- no run diaries in what ships -----------------------------------------------------------------

# A diary reference names a run instead of a result: "run 16", "runs 5-7", "H200 run 9",
# "(run 42)", "h200_run11/". Code spans and code blocks are left out (a repository path such
# as `evidence/x/benchmarks/h200_run2/bench.json` is a citation, not a diary), and so are
# counts and versions ("tests run 2^31 + 4096 elements", "CI runs 5.17.0").
DIARY = re.compile(r"\b(?:[HABLT]\d{2,3} )?[Rr]uns? \d+(?![\d.^])|\b[a-z]\d{3}_run\d+\b")


def _prose(text: str) -> str:
    return re.sub(r"`[^`\n]*`", "", skilldocs.strip_code(text))


def test_the_diary_pattern_catches_run_references_and_spares_counts() -> None:
    for diary in ("in run 16 it", "runs 5-7 showed", "H200 run 9 measured", "(run 42)", "see h200_run11/ logs"):
        assert DIARY.search(_prose(diary)), diary
    for fine in ("the GPU tests run 2^31 + 4096", "CI runs 5.17.0", "`evidence/x/h200_run2/bench.json`",
                 "a run of the benchmark", "runs on the current stream"):
        assert not DIARY.search(_prose(fine)), fine


def test_shipped_markdown_tells_results_not_run_diaries() -> None:
    found = []
    for doc in sorted(skilldocs.SKILL.rglob("*.md")):
        for n, line in enumerate(_prose(doc.read_text(encoding="utf-8")).splitlines(), 1):
            if DIARY.search(line):
                found.append(f"{doc.relative_to(skilldocs.SKILL)}: {line.strip()[:120]}")
    assert not found, "run diaries belong in evidence/<example>/HISTORY.md:\n" + "\n".join(found[:20])


def test_skill_md_is_at_most_180_lines() -> None:
    lines = len((skilldocs.SKILL / "SKILL.md").read_text(encoding="utf-8").splitlines())
    assert lines <= 180, f"SKILL.md has {lines} lines: the workflow and the hard rules; anecdotes go to lessons.md"


def test_lessons_are_one_line_each_with_a_number_and_a_source() -> None:
    text = (skilldocs.SKILL / "references" / "lessons.md").read_text(encoding="utf-8")
    text = re.sub(r"<!-- generated:.*?<!-- end generated -->", "", text, flags=re.DOTALL)  # measured tables
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith(("| Rule", "|---"))]
    rows = [r for r in rows if r.count(" | ") >= 2 and not r.startswith("| op ")]
    assert len(rows) >= 10
    for row in rows:
        rule, number, source = (c.strip() for c in row.strip("| ").split(" | ")[:3])
        assert rule.endswith((".", ":")) and re.search(r"\d", number), row
        assert ".json" in source or "no JSON" in source, row
