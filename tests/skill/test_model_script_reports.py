"""The two model-integration scripts report what every benchmark here reports, in one run:
median time of the unpatched model eager, under torch.compile and patched (or kernelized),
the speedups computed from those medians, the copy bandwidth of the same run (null on CPU,
with the reason) and each variant's weight traffic as GB/s. Their CPU paths run here with
torch.compile on the "aot_eager" backend, and --no-compile reports the peer as skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import skilldocs

SCRIPTS = skilldocs.SKILL / "scripts"
INJECTION = SCRIPTS / "transformers_injection_example.py"
HUB = SCRIPTS / "huggingface_kernels_example.py"


def run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def assert_performance(perf: dict[str, Any], subject: str, compiled: bool) -> None:
    variants = perf["variants"]
    assert set(variants) == {"eager", subject, "compile"}
    # CPU: no copy bandwidth (a CPU copy says nothing about the GPU), and the report says so.
    assert perf["copy_bandwidth_gbps"] is None and "CUDA only" in perf["copy_bandwidth_note"]
    assert perf["weight_bytes"] > 0 and "lower bound" in perf["weight_bytes_note"]
    assert "matmul-bound" in perf["roofline_note"] and perf["timer"].startswith("wall clock")
    timed = [subject, "eager"] + (["compile"] if compiled else [])
    for name in timed:
        entry = variants[name]
        assert entry["status"] == "ok" and entry["median_ms"] > 0
        assert entry["weight_gbps"] == pytest.approx(perf["weight_bytes"] / (entry["median_ms"] * 1e-3) / 1e9)
        assert entry["weight_pct_of_copy_bw"] is None
    eager_ms, subject_ms = variants["eager"]["median_ms"], variants[subject]["median_ms"]
    assert perf[f"speedup_{subject}_vs_eager"] == pytest.approx(eager_ms / subject_ms)
    if compiled:
        compile_entry = variants["compile"]
        assert compile_entry["backend"] == "aot_eager" and compile_entry["dynamic"] is False
        assert compile_entry["first_call_s"] >= 0
        assert perf[f"speedup_{subject}_vs_compile"] == pytest.approx(compile_entry["median_ms"] / subject_ms)
        assert perf["speedup_compile_vs_eager"] == pytest.approx(eager_ms / compile_entry["median_ms"])
    else:
        assert variants["compile"] == {"status": "skipped", "reason": "--no-compile"}
        assert perf[f"speedup_{subject}_vs_compile"] is None and perf["speedup_compile_vs_eager"] is None


@pytest.fixture(scope="module")
def qwen3_package() -> Path:
    """A directory on which `import qwen3_8b_kernels` works (CPU tensors use its PyTorch fallback)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot build the qwen3_8b example's extension")
    pytest.importorskip("torch")
    sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project  # noqa: PLC0415 - needs SCRIPTS on sys.path

    # The same build directory as tests/examples when KERNEL_SKILLS_BUILD_ROOT is set.
    archs = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")
    root = os.environ.get("KERNEL_SKILLS_BUILD_ROOT")
    result = build_project(skilldocs.SKILL / "examples" / "qwen3_8b", archs=archs,
                           build_dir=Path(root) / "qwen3_8b" if root else None)
    return result.path


@pytest.mark.slow  # builds the qwen3_8b example's CUDA extension (once per module)
@pytest.mark.parametrize("compiled", [True, False], ids=["compile", "no-compile"])
def test_injection_example_reports_eager_patched_and_compile(qwen3_package: Path, tmp_path: Path,
                                                             compiled: bool) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "inj.json"
    proc = run([INJECTION, "--device", "cpu", "--package-path", qwen3_package, "--out", out]
               + ([] if compiled else ["--no-compile"]))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    # The checks the script always made still hold next to the new timing.
    assert report["ok"] and report["restored_bitwise"] and report["patch"]["rms_norm"] == 13
    perf = report["performance"]
    assert_performance(perf, "patched", compiled)
    assert report["unpatched_ms"] == perf["variants"]["eager"]["median_ms"]
    assert report["patched_ms"] == perf["variants"]["patched"]["median_ms"]
    assert "attention_mask={'full_attention': None}" in perf["forward"]
    if compiled:
        # fp32 on CPU: the compiled unpatched model computes the same logits.
        assert perf["variants"]["compile"]["logits_vs_unpatched"]["rel_l2"] < 1e-5
        assert "speedup patched vs eager" in proc.stdout and "vs torch.compile" in proc.stdout
    else:
        assert "compile : skipped (--no-compile)" in proc.stdout


@pytest.mark.slow  # a CPU torch.compile (aot_eager) of a tiny model: a few seconds
@pytest.mark.parametrize("compiled", [True, False], ids=["compile", "no-compile"])
def test_hub_example_reports_eager_kernelized_and_compile(tmp_path: Path, compiled: bool) -> None:
    pytest.importorskip("kernels")
    pytest.importorskip("transformers")
    out = tmp_path / "hub.json"
    proc = run([HUB, "--check", "--out", out] + ([] if compiled else ["--no-compile"]))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    # Compiling first and timing several forwards leaves the per-forward call count exact.
    assert report["patched"] == report["rmsnorm_modules"] == report["kernel_calls_per_forward"] == 9
    assert report["logits_rel_err"] <= report["tolerance"]
    perf = report["performance"]
    assert_performance(perf, "kernelized", compiled)
    assert report["forward_ms_unpatched"] == perf["variants"]["eager"]["median_ms"]
    assert report["forward_ms_kernelized"] == perf["variants"]["kernelized"]["median_ms"]
    assert report["forward_ms_compile"] == perf["variants"]["compile"].get("median_ms")
    if compiled:
        assert perf["variants"]["compile"]["logits_rel_err_vs_unpatched"] < 1e-5


@pytest.mark.parametrize("script", [INJECTION, HUB], ids=lambda p: p.name)
def test_help_names_no_compile_and_needs_no_torch(script: Path) -> None:
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.modules['transformers'] = None; "
            f"sys.modules['kernels'] = None; sys.argv = [{str(script)!r}, '--help']; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--no-compile" in proc.stdout
