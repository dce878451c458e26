"""Each scaffold's benchmark measures the kernel against every peer the skill's rule 10
names that exists for its op: eager, F.rms_norm (RMSNorm), torch.compile and a plain Triton
kernel.

Each Triton peer is checked by the project's own tests/test_triton_peer.py on CPU (Triton's
interpreter), against float64, on awkward inputs. The GPU run of the benchmarks is
test_generated_projects.py::test_generated_project_on_gpu.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kernel_project_helpers import sync_scaffold

# Each scaffold's peers (SKILL.md rule 10: the best PyTorch-side replacement is the bar).
EXPECTED_PEERS = {
    "rmsnorm": {"eager": True, "F.rms_norm": True, "compile": True, "triton": True},
    "layernorm": {"eager": True, "compile": True, "triton": True},
    "glu": {"eager": True, "compile": True, "triton": True},
    "elementwise": {"eager": True, "compile": True, "triton": True},
    "rope": {"eager": True, "compile": True, "triton": True},
}


@pytest.fixture(scope="module", params=sorted(EXPECTED_PEERS))
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sync_scaffold("bench-check", request.param, tmp_path_factory.mktemp(f"scaffold-{request.param}"))


def test_the_projects_own_triton_peer_test_passes_without_a_gpu(project: Path) -> None:
    # The scaffold ships tests/test_triton_peer.py (Triton's interpreter, CPU tensors); it
    # needs no build of the kernel, so it runs here as it runs in the user's project.
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_triton_peer.py"],
                            cwd=project, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout


PEERS = textwrap.dedent("""
    import json, sys, importlib
    bench = importlib.import_module(sys.argv[1])
    peers = bench.make_peers(compile_too=True)
    without_compile = bench.make_peers(compile_too=False)
    print(json.dumps({"peers": {k: v is not None for k, v in peers.items()},
                      "compile_off": without_compile["compile"] is None,
                      "shapes": bench.default_shapes(__import__("torch").bfloat16),
                      "main": bench.main([])}))
""")


def test_benchmark_times_every_peer_of_rule_10(project: Path, tmp_path: Path) -> None:
    # The benchmark needs the built package only for `reference`, `ops` and `__file__`; a
    # stand-in package (the real reference.py, no ops) lets it import on a machine without
    # a GPU build, so the peer table and the no-GPU exit can be checked here.
    pytest.importorskip("triton")
    package = tmp_path / "bench_check"
    package.mkdir()
    (package / "__init__.py").write_text("from . import reference\n", encoding="utf-8")
    (package / "_ops.py").write_text("ops = None\n", encoding="utf-8")
    (package / "reference.py").write_bytes((project / "torch-ext" / "bench_check" / "reference.py").read_bytes())
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.pathsep.join([str(project / "benchmarks"), str(tmp_path)]))
    (benchmark,) = (project / "benchmarks").glob("benchmark_*.py")
    op = benchmark.stem.removeprefix("benchmark_")
    result = subprocess.run([sys.executable, "-c", PEERS, benchmark.stem], capture_output=True, text=True, env=env,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["peers"] == EXPECTED_PEERS[op]
    assert data["compile_off"]
    per_row = 2 * (2 if op == "glu" else 1)  # bf16 bytes of input per unit of width (glu reads [rows, 2d])
    for width in (1024, 2048, 4096, 4100, 5120, 8192):  # issue 32's table: >= 64 MB of input at each width
        assert any(w == width and rows * w * per_row >= 64 * 2**20 for rows, w in data["shapes"]), (width, data["shapes"])
    assert data["main"] == 1 and "needs a CUDA GPU" in result.stderr


PEER_LOOP = textwrap.dedent("""
    import json, torch, benchmarking
    x = torch.randn(4, 8)
    peers = {"eager": lambda t: t * 2, "wrong": lambda t: t * 3, "raises": lambda t: t[99], "absent": None}
    timer = lambda call: 0.004  # ms: every timed call "takes" 4 us
    rel = lambda out: ((out - x * 2).abs().max() / (x * 2).abs().max()).item()
    peer_us, skipped = benchmarking.time_peers(peers, lambda fn: fn(x), rel, 1e-6, timer)
    r = benchmarking.result(0.002, 2_000_000, 1000.0, peer_us, skipped)
    print(json.dumps({"peer_us": peer_us, "skipped": sorted(skipped), "wrong": skipped["wrong"], "r": r}))
""")


def test_the_shared_peer_loop_validates_times_and_ranks_the_peers(project: Path) -> None:
    # benchmarking.py (common to every scaffold): a wrong or failing peer is left out with the
    # reason, an absent one is None, and the speedups are against what was timed.
    env = dict(os.environ, PYTHONPATH=str(project / "benchmarks"))
    result = subprocess.run([sys.executable, "-c", PEER_LOOP], capture_output=True, text=True, env=env, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["peer_us"] == {"eager": 4.0, "wrong": None, "raises": None, "absent": None}
    assert data["skipped"] == ["raises", "wrong"] and data["wrong"].startswith("wrong result (relative error 0.5")
    r = data["r"]
    assert r["kernel_us"] == 2.0 and r["kernel_GBps"] == 1000.0 and r["pct_of_copy_bandwidth"] == 100.0
    assert r["best_peer"] == "eager" and r["speedup"] == {"eager": 2.0} and r["speedup_vs_best"] == 2.0


def test_benchmark_help_works_before_the_package_is_built_and_a_run_says_how_to_build_it(project: Path) -> None:
    (benchmark,) = (project / "benchmarks").glob("benchmark_*.py")
    env = dict(os.environ, PYTHONPATH="")  # no build of the package on the path
    helped = subprocess.run([sys.executable, str(benchmark), "--help"], capture_output=True, text=True, env=env,
                            timeout=300, check=False)
    assert helped.returncode == 0 and "usage:" in helped.stdout, helped.stderr[-2000:]
    ran = subprocess.run([sys.executable, str(benchmark)], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert ran.returncode == 1
    assert ran.stderr.startswith(f"{benchmark.stem}: cannot import bench_check (ModuleNotFoundError")
    assert "build_local.py .) python benchmarks/" in ran.stderr and "Traceback" not in ran.stderr
