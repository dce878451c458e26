"""The qwen3_8b example builds the kernel-builder way and its CPU paths work (CI, no GPU).

Builds for sm_80 and sm_90 with build_local (once per session, shared with the
integration tests through the qwen3_kernels fixture), checks every declared op is
registered with its schema, runs the example's CPU tests (reference, fallback, fake
kernels, opcheck, torch.compile tracing), and runs both benchmark scripts' CPU paths.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

SKILL = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels"
SCRIPTS = SKILL / "scripts"
EXAMPLE = SKILL / "examples" / "qwen3_8b"
EVIDENCE = SKILL.parents[1] / "evidence" / "qwen3_8b"  # run logs and sweeps, kept in the repository, not shipped
TOOLS = SKILL.parents[1] / "benchmarks" / "qwen3_8b"  # the repository's run scripts and probes, not shipped
# The same architectures the qwen3_kernels fixture (tests/examples/conftest.py) builds for.
TEST_ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")


def _build_dir(qwen3_kernels: ModuleType) -> Path:
    # The fixture put the build directory (the parent of the package) on sys.path.
    return Path(qwen3_kernels.__file__).resolve().parents[1]


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, **env}, check=False)


def test_build_local_check_registers_every_op(qwen3_kernels: ModuleType) -> None:
    proc = _run([sys.executable, str(SCRIPTS / "build_local.py"), str(EXAMPLE), "--arch", ",".join(TEST_ARCHS),
                 "--build-dir", str(_build_dir(qwen3_kernels)), "--check"])
    assert proc.returncode == 0, proc.stderr
    for op in ("rms_norm", "fused_add_rms_norm", "swiglu", "rope_", "rope", "qk_norm_rope_", "rms_norm_tuned",
               "swiglu_tuned", "rope_tuned_"):
        assert op in proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(_build_dir(qwen3_kernels))


def test_public_api_runs_on_cpu(qwen3_kernels: ModuleType) -> None:
    import torch

    x = torch.randn(3, 4096, dtype=torch.bfloat16)
    w = torch.randn(4096, dtype=torch.bfloat16)
    torch.testing.assert_close(qwen3_kernels.rms_norm(x, w, 1e-6), qwen3_kernels.reference.rms_norm(x, w, 1e-6))
    out, s = qwen3_kernels.fused_add_rms_norm(x, x, w, 1e-6)
    assert out.shape == s.shape == x.shape


def test_example_cpu_tests_pass(qwen3_kernels: ModuleType) -> None:
    proc = _run([sys.executable, "-m", "pytest", str(EXAMPLE / "tests"), "-m", "not gpu", "-q", "-p", "no:cacheprovider"],
                QWEN3_8B_KERNELS_PATH=str(_build_dir(qwen3_kernels)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


def test_benchmark_rmsnorm_cpu_path_writes_json(qwen3_kernels: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "rmsnorm.json"
    proc = _run([sys.executable, str(SCRIPTS / "benchmark_rmsnorm.py"), "--device", "cpu", "--package-path",
                 str(_build_dir(qwen3_kernels)), "--out", str(out)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert {r["op"] for r in data["results"]} == {"rms_norm", "qk_norm"}
    for row in data["results"]:
        assert {"kernel", "eager", "F.rms_norm", "compile"} <= set(row["providers"])
        assert all(p["us"] > 0 for p in row["providers"].values())


def test_bench_ops_cpu_path_covers_every_op(qwen3_kernels: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "ops.json"
    bench = EXAMPLE / "benchmarks"
    proc = _run([sys.executable, str(bench / "bench_ops.py"), "--device", "cpu", "--skip-compile", "--package-path",
                 str(_build_dir(qwen3_kernels)), "--out", str(out)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert {r["op"] for r in data["results"]} == {
        "rms_norm", "qk_norm", "fused_add_rms_norm", "swiglu", "rope", "qk_norm_rope"
    }
    assert not data["errors"]
    md = tmp_path / "RESULTS.md"
    proc = _run([sys.executable, str(bench / "make_results.py"), str(out), "--md", str(md), "--summary"])
    assert proc.returncode == 0, proc.stderr
    assert "## SwiGLU" in md.read_text() and "rope" in proc.stdout


def test_benchmark_rmsnorm_help_needs_no_torch() -> None:
    # Block torch the way a machine without it behaves, then ask for --help.
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['benchmark_rmsnorm.py', '--help']; "
            f"runpy.run_path({str(SCRIPTS / 'benchmark_rmsnorm.py')!r}, run_name='__main__')")
    proc = _run([sys.executable, "-c", code])
    assert proc.returncode == 0, proc.stderr
    assert "--package-path" in proc.stdout and "--device" in proc.stdout


# ------------------------------------------------------ committed results and documents


def test_committed_results_md_is_make_results_output_of_the_committed_json(tmp_path: Path) -> None:
    # The rendered RESULTS.md is kept in the repository's evidence/, beside the runs.
    bench = EXAMPLE / "benchmarks"
    committed = (EVIDENCE / "benchmarks" / "RESULTS.md").read_text()
    measured = [line for line in committed.splitlines() if line.startswith("- Measured: ")]
    assert len(measured) == 1, "RESULTS.md must say which run and commit its JSON came from"
    out = tmp_path / "RESULTS.md"
    proc = _run([sys.executable, str(bench / "make_results.py"), str(bench / "results.json"), "--md", str(out),
                 "--source", measured[0].removeprefix("- Measured: ")])
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == committed
    data = json.loads((bench / "results.json").read_text())
    assert data["meta"]["device"] == "NVIDIA H200" and data["meta"]["copy_bandwidth_GBps"] > 4000
    assert not data["errors"]


def test_committed_qk_norm_rope_results_md_is_make_results_output_of_its_json(tmp_path: Path) -> None:
    bench, runs = EXAMPLE / "benchmarks", EVIDENCE / "benchmarks"
    committed = (runs / "RESULTS_qk_norm_rope.md").read_text()
    measured = [line for line in committed.splitlines() if line.startswith("- Measured: ")]
    assert len(measured) == 1, "RESULTS_qk_norm_rope.md must say which run and commit its JSON came from"
    out = tmp_path / "RESULTS_qk_norm_rope.md"
    proc = _run([sys.executable, str(bench / "make_results.py"), str(runs / "results_qk_norm_rope.json"),
                 "--md", str(out), "--source", measured[0].removeprefix("- Measured: ")])
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == committed
    data = json.loads((runs / "results_qk_norm_rope.json").read_text())
    assert data["meta"]["source"].removeprefix("commit ") in measured[0]
    assert {r["op"] for r in data["results"]} == {"qk_norm_rope"} and not data["errors"]


def test_compare_runs_estimates_from_the_committed_runs() -> None:
    bench = EXAMPLE / "benchmarks"
    runs = EVIDENCE / "benchmarks"
    proc = _run([sys.executable, str(TOOLS / "compare_runs.py"), str(runs / "h200_run1" / "results.json"),
                 str(runs / "h200_run3" / "results.json"), "--e2e",
                 str(EXAMPLE / "integration" / "results" / "e2e_h200.json")])
    assert proc.returncode == 0, proc.stderr
    assert "| swiglu | 4096x12288 (halves of gate_up [4096, 24576]) | 89.34 | 71.26 |" in proc.stdout
    assert "x 36 layers" in proc.stdout and "(estimate)" in proc.stdout
    bad = _run([sys.executable, str(TOOLS / "compare_runs.py"), "/nonexistent.json", str(bench / "results.json")])
    assert bad.returncode == 1 and "cannot read" in bad.stderr


def test_the_committed_results_are_the_newest_runs_json_and_describe_the_fresh_output_timer() -> None:
    # results.json is run 16's as slim_tuning.py publishes it (the full file stays in
    # evidence/), and every committed run since run 5 kept each call's output (the timer that
    # replaced the one-buffer timer of runs 1-4).
    bench = EXAMPLE / "benchmarks"
    runs = EVIDENCE / "benchmarks"
    shipped = json.loads((bench / "results.json").read_text())
    full = json.loads((runs / "h200_run16" / "results.json").read_text())
    sys.path.insert(0, str(TOOLS))
    import slim_tuning

    assert shipped == slim_tuning.slim(full)
    assert {k: v for k, v in shipped.items() if k not in ("results", "tuning", "tuning_scope", "published")} == \
        {k: v for k, v in full.items() if k not in ("results", "tuning")}
    for ours, theirs in zip(shipped["results"], full["results"], strict=True):
        for name, entry in ours["providers"].items():
            assert entry.items() <= theirs["providers"][name].items() and {"us", "pct_copy"} <= entry.keys()
    kept = shipped["tuning"]
    assert kept and all(row.items() <= next(f for f in full["tuning"] if f["op"] == row["op"] and f["shape"] == row["shape"]
                                             and f["config"] == row["config"]).items() for row in kept)
    assert len(kept) < len(full["tuning"])
    assert f"{len(kept)} of the sweep's {len(full['tuning'])} configurations" in shipped["tuning_scope"]
    for run in ("h200_run5", "h200_run6", "h200_run7", "h200_run10", "h200_run11", "h200_run14", "h200_run16"):
        meta = json.loads((runs / run / "results.json").read_text())["meta"]
        assert "own output buffer" in meta["timing"], run
    one_buffer = json.loads((runs / "h200_run3" / "results.json").read_text())["meta"]
    assert "own output buffer" not in one_buffer.get("timing", "")


def test_the_published_json_is_compact() -> None:
    # Every byte ships into every agent folder: the publishing scripts (slim_tuning.py,
    # benchmark_e2e.py, profile_e2e.py) write compact_json, one record per line, and the
    # skill scripts' runs (*_example_h200.json) are published rewritten with it.
    sys.path.insert(0, str(TOOLS))
    from slim_tuning import compact_json  # qwen3's benchmark_e2e, loaded by path (ltx has one too)

    for path in (EXAMPLE / "benchmarks" / "results.json", *sorted((EXAMPLE / "integration" / "results").glob("*.json"))):
        text = path.read_text()
        assert text == compact_json(json.loads(text)), f"{path.name}: rewrite it with compact_json"


def _relative_links(markdown: str) -> list[str]:
    import re

    targets = re.findall(r"\]\(([^)\s]+)\)", markdown)
    return [t.split("#", 1)[0] for t in targets if not t.startswith(("http://", "https://", "#", "mailto:"))]


def test_example_documents_link_only_to_files_that_exist() -> None:
    documents = [p for p in EXAMPLE.rglob("*.md") if "__pycache__" not in p.parts]
    assert EXAMPLE / "README.md" in documents
    for doc in documents:
        for target in _relative_links(doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.relative_to(EXAMPLE)} links to missing {target}"
