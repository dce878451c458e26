"""The scaffolded project's benchmark measures the kernel against every peer the skill's rule 10
names: eager, F.rms_norm, torch.compile and a plain Triton kernel.

The Triton peer is checked on CPU with Triton's interpreter (TRITON_INTERPRET=1), against a
float64 reference, on the awkward inputs the kernel's own tests use: a width that is not a
power of two, strided rows, no weight, one row, zero rows. The GPU run of the benchmark is
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

CHECK_PEER = textwrap.dedent("""
    import json, sys
    import torch
    import triton_peer

    def ref(x, w, eps):
        xd = x.double()
        y = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps)
        return y * w.double() if w is not None else y

    gen = torch.Generator().manual_seed(7)
    cases = {}
    for name, dtype, shape, strided, weighted in [
        ("bf16 5x1000", torch.bfloat16, (5, 1000), False, True),
        ("fp32 3x4100 strided rows", torch.float32, (3, 4100), True, True),
        ("fp16 2x3x96 no weight", torch.float16, (2, 3, 96), False, False),
        ("fp32 one row", torch.float32, (1, 7), False, True),
    ]:
        base = torch.randn(*shape[:-1], shape[-1] * (2 if strided else 1), generator=gen, dtype=torch.float64) + 0.25
        x = base[..., : shape[-1]].to(dtype) if not strided else base.to(dtype)[..., : shape[-1]]  # row stride 2*hidden
        w = (torch.randn(shape[-1], generator=gen, dtype=torch.float64) + 1).to(dtype) if weighted else None
        y = triton_peer.rms_norm(x, w, 1e-6)
        r = ref(x, w, 1e-6)
        cases[name] = {"shape": list(y.shape), "dtype": str(y.dtype), "rel": ((y.double() - r).abs().max() / r.abs().max()).item(),
                       "x_contiguous": x.is_contiguous()}
    empty = triton_peer.rms_norm(torch.empty(0, 64), torch.ones(64), 1e-6)
    cases["empty"] = {"shape": list(empty.shape)}
    print(json.dumps(cases))
""")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sync_scaffold("bench-check", "rmsnorm", tmp_path_factory.mktemp("scaffold"))


def test_triton_peer_is_correct_on_awkward_inputs_under_the_interpreter(project: Path) -> None:
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(project / "benchmarks"))
    result = subprocess.run([sys.executable, "-c", CHECK_PEER], capture_output=True, text=True, env=env,
                            timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    cases = json.loads(result.stdout.strip().splitlines()[-1])
    bound = {"torch.bfloat16": 8e-3, "torch.float16": 1e-3, "torch.float32": 2e-5}
    for name, case in cases.items():
        if name == "empty":
            assert case["shape"] == [0, 64]
            continue
        assert case["rel"] <= bound[case["dtype"]], (name, case)
    assert not cases["fp32 3x4100 strided rows"]["x_contiguous"], "the strided case must really be strided"
    assert cases["fp16 2x3x96 no weight"]["shape"] == [2, 3, 96]


PEERS = textwrap.dedent("""
    import json, sys
    import benchmark_rmsnorm as bench
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
    result = subprocess.run([sys.executable, "-c", PEERS], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["peers"] == {"eager": True, "F.rms_norm": True, "compile": True, "triton": True}
    assert data["compile_off"]
    assert data["main"] == 1 and "needs a CUDA GPU" in result.stderr
