"""The ltx_video example builds the kernel-builder way and passes its CPU-side tests.

CI (no GPU): `build_local.py --check` compiles the project for sm_80 and sm_90 (or
$KERNEL_SKILLS_TEST_ARCHS), imports it and verifies every declared op schema; then the
example's own tests run against that build - the reference is diffusers bit for bit, the
fake kernels give the CUDA ops' output metadata, CPU tensors take the PyTorch path. Its
`gpu` tests are skipped there and run on the GPU machine (benchmarks/ltx_video/run_gpu.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "cuda-kernels" / "scripts"
EXAMPLE = REPO / "skills" / "cuda-kernels" / "examples" / "ltx_video"
MAKE_RESULTS = REPO / "benchmarks" / "ltx_video" / "make_results.py"
# The same architectures as tests/examples/conftest.py's fixtures, so they share the build.
TEST_ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")

pytestmark = pytest.mark.slow

# ltx_build (tests/examples/conftest.py): build_local.py --check of the example, for TEST_ARCHS.


def test_every_kernel_source_is_compiled_for_each_architecture(ltx_build: Path) -> None:
    ninja = (ltx_build / ".build" / "build.ninja").read_text()  # build_local.py's ninja file
    blocks = [b for b in ninja.split("\nbuild ") if ": nvcc " in b.splitlines()[0]]
    compiled = {Path(b.splitlines()[0].split(": nvcc ")[1]).name for b in blocks}
    assert compiled == {"rms_norm.cu", "rope.cu", "gelu.cu"}
    for block in blocks:
        for arch in TEST_ARCHS:
            code = arch.replace(".", "")
            assert f"code=sm_{code}" in block, f"{block.splitlines()[0]} is not compiled for sm_{code}"
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:  # where the toolkit has it, also read the architectures back from the library
        lib = next(ltx_build.glob("ltx_video_kernels/_ltx_video_kernels_*.so"))
        listing = subprocess.run([cuobjdump, "--list-elf", str(lib)], capture_output=True, text=True).stdout
        for arch in TEST_ARCHS:
            assert f"sm_{arch.replace('.', '')}" in listing


def test_example_cpu_tests_pass_against_the_build(ltx_build: Path) -> None:
    env = dict(os.environ, LTX_VIDEO_KERNELS_PATH=str(ltx_build))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not gpu", str(EXAMPLE / "tests")],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


# ------------------------------------------------------------ committed results


def _load_by_path(path: Path, name: str):
    # qwen3_8b ships modules of the same file names: import by path under a unique name
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def test_committed_results_md_is_make_results_output_of_the_committed_json() -> None:
    make_results = _load_by_path(MAKE_RESULTS, "ltx_make_results")
    data = json.loads((EXAMPLE / "benchmarks" / "bench.json").read_text())
    assert data["device"] == "NVIDIA H200" and data["copy_bandwidth_gbs"] > 4000
    assert (EXAMPLE / "RESULTS.md").read_text() == make_results.render(data, "benchmarks/bench.json", headline=True)


def test_the_published_json_is_the_runs_json_less_the_dropped_fields() -> None:
    # The skill ships the published form (make_results.py --publish) of the run whose full JSON
    # and full RESULTS.md stay in evidence/; both reports agree on every headline number.
    make_results = _load_by_path(MAKE_RESULTS, "ltx_make_results")
    run = REPO / "evidence" / "ltx_video" / "benchmarks" / "h200_run42"
    full = json.loads((run / "bench.json").read_text())
    shipped = (EXAMPLE / "benchmarks" / "bench.json").read_text(encoding="utf-8")
    assert shipped == make_results.dumps_records(make_results.published(full))
    assert (run / "RESULTS.md").read_text() == make_results.render(full, "bench.json")
    slim = json.loads(shipped)
    assert make_results.render(slim, "x") == make_results.render(full, "x")  # nothing the report reads was dropped


def test_every_percentage_comes_from_raw_times_and_one_copy_reference() -> None:
    make_results = _load_by_path(MAKE_RESULTS, "ltx_make_results")
    # 100 MB in 125 us (do_bench) and 100 us (graph) against a 1000 GB/s copy: 80 % and 100 %.
    # The stale %-fields and the graph-captured copy figure must not leak into any number.
    raw = {
        "op": "gelu_tanh", "variant": "synthetic", "shape": [1, 10, 20], "bytes": 100_000_000,
        "impls": {
            "kernel": {"us": 125.0, "graph_us": 100.0, "pct_copy": 1.0, "graph_pct_copy": 999.0},
            "eager": {"us": 250.0, "graph_us": 150.0},
            "compile": {"skipped": "time budget"},
        },
    }
    row = make_results.derive(raw, 1000.0)
    assert row.timed["do_bench"]["kernel"].pct == pytest.approx(80.0)
    assert row.timed["graph"]["kernel"].pct == pytest.approx(100.0)
    assert row.speedup["do_bench"]["eager"] == pytest.approx(2.0)
    assert row.speedup["graph"]["eager"] == pytest.approx(1.5)
    assert row.unmeasured_peers["graph"] == ["compile"]
    assert make_results.bw_verdict(row, "do_bench") == "yes (80.0 vs 80)"
    assert make_results.peer_verdict(row, "graph") == "yes (eager x1.50); compile not measured"
    data = {"device": "GPU", "torch": "t", "cuda": "c", "date": "d", "copy_bandwidth_gbs": 1000.0,
            "copy_bandwidth_graph_gbs": 500.0, "results": [raw]}
    text = make_results.render(data, "bench.json")
    assert "| 80.0 / 100.0 |" in text  # the kernel's % of copy, both timers
    assert "200.0" not in text and "999" not in text
