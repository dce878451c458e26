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
    "glu": {"eager": True, "compile": True, "triton": True},
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
    assert data["main"] == 1 and "needs a CUDA GPU" in result.stderr
