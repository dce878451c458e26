"""Every op the scaffold offers builds with build_local.py --check, imports, and passes its own tests.

CI (no GPU) compiles each generated project for sm_80 and sm_90 and runs the project's
CPU-side tests (reference path, fake kernel, op schema). On a GPU machine the `gpu` test
builds for the visible GPU, runs the project's whole test suite and its benchmark, and
writes the logs and the benchmark JSON to $KERNEL_SKILLS_GPU_OUT (default: a temp dir).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernel_project_helpers import BUILD_LOCAL, CI_ARCHS, needs_toolchain, run_script, sync_scaffold

import build_local
import new_kernel_project

OPS = sorted(new_kernel_project.OPS)
# What each scaffold's benchmark times the kernel against (SKILL.md rule 10).
PEERS = {op: {"eager", "compile", "triton"} for op in OPS} | {"rmsnorm": {"eager", "F.rms_norm", "compile", "triton"}}


@dataclasses.dataclass
class Built:
    project: Path
    build_dir: Path
    seconds: float
    stderr: str


_BUILDS: dict[tuple[str, tuple[str, ...]], Built] = {}


def snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def build(root: Path, op: str, archs: tuple[str, ...]) -> Built:
    """Scaffold `op` and build it with `build_local.py --check`, once per session."""
    key = (op, archs)
    if key not in _BUILDS:
        needs_toolchain()
        project = sync_scaffold(f"ci-{op}", op, root / "projects")
        build_dir = root / "builds" / f"{op}-{'-'.join('sm' + a.replace('.', '') for a in archs)}"
        before = snapshot(project)
        args = [project, "--build-dir", build_dir, "--check"]
        for arch in archs:
            args += ["--arch", arch]
        start = time.monotonic()
        result = run_script(BUILD_LOCAL, *args)  # honours $MAX_JOBS
        seconds = time.monotonic() - start
        assert result.returncode == 0, f"build_local failed for {op}:\n{result.stderr}"
        assert result.stdout.strip().splitlines()[-1] == str(build_dir)
        assert "check passed" in result.stderr
        assert snapshot(project) == before, "build_local wrote into the project"
        _BUILDS[key] = Built(project, build_dir, seconds, result.stderr)
    return _BUILDS[key]


def run_project_tests(built: Built, *extra: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(built.build_dir))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "-q", *extra],
        cwd=built.project, env=env, capture_output=True, text=True, timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_generated_project_builds_for_sm80_and_sm90_and_checks(kernel_project_root: Path, op: str) -> None:
    built = build(kernel_project_root, op, CI_ARCHS)
    package = f"ci_{op}"
    (extension,) = (built.build_dir / package).glob(f"_{package}_*.so")
    assert (built.build_dir / package / "_ops.py").is_file()
    assert (built.build_dir / package / "__init__.py").is_file()
    print(f"{op}: built and checked in {built.seconds:.0f} s -> {extension.name}")


# The project's tests/test_kernel_resources.py (nvcc -Xptxas -v for sm_80 and sm_90, about
# 10 s) runs through the project's pytest for this op only: test_template_resources.py runs
# the same module's code for every op, so the other ops leave it out here.
RESOURCES_OP = "rmsnorm"


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_generated_project_cpu_tests_pass(kernel_project_root: Path, op: str) -> None:
    built = build(kernel_project_root, op, CI_ARCHS)
    # -rA: the summary names every passed test (run_project_tests passes -q, which -v would only cancel).
    extra = ["-rA"] if op == RESOURCES_OP else ["-rs", "--ignore", "tests/test_kernel_resources.py"]
    result = run_project_tests(built, "-m", "not gpu", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "error" not in result.stdout.lower()
    # The kernels ran on the emulator (g++ is here: nvcc needs it); test_emulated_kernels.py
    # relies on this clean pass when it plants its bugs.
    assert not [line for line in result.stdout.splitlines() if line.startswith("SKIPPED") and "_emulated" in line], \
        result.stdout[-3000:]
    if op == RESOURCES_OP:  # build() found nvcc, so the resource check ran rather than skipped
        for arch in CI_ARCHS:
            assert f"PASSED tests/test_kernel_resources.py::test_every_kernel_fits_its_launch_without_spills[{arch}]" in \
                result.stdout, result.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_rebuild_without_changes_compiles_nothing(kernel_project_root: Path, op: str) -> None:
    built = build(kernel_project_root, op, CI_ARCHS)
    messages: list[str] = []
    start = time.monotonic()
    result = build_local.build_project(built.project, archs=list(CI_ARCHS), build_dir=built.build_dir, log=messages.append)
    assert result.recompiled is False, messages
    assert result.path == built.build_dir and result.package == f"ci_{op}"
    assert time.monotonic() - start < 60


_LOAD_BOTH = r"""
import importlib, pathlib, sys, torch, kernels
package = importlib.import_module(sys.argv[1])               # the build, from PYTHONPATH
hub = kernels.get_local_kernel(pathlib.Path(sys.argv[2]))   # the same build through the Hub loader
x = torch.randn(3, 16)
fn = {"ci_rmsnorm": lambda m: m.rms_norm(x, None), "ci_glu": lambda m: m.glu(x, "silu", True),
      "ci_layernorm": lambda m: m.layer_norm(x), "ci_elementwise": lambda m: m.elementwise(x, "silu"),
      "ci_rope": lambda m: m.rope(x.view(1, 3, 16), x, x)}[sys.argv[1]]
torch.testing.assert_close(fn(hub), fn(package))
if sys.argv[1] == "ci_rmsnorm":  # the Hub layer kernelize looks up as <package>.layers.RMSNorm
    layer = hub.layers.RMSNorm()
    layer.weight, layer.variance_epsilon = torch.nn.Parameter(torch.rand(16) + 0.5), 1e-6
    with torch.no_grad():
        torch.testing.assert_close(layer(x), package.rms_norm(x, layer.weight, 1e-6))
print(hub.__name__, hub.ops is package.ops or str(hub.ops) == str(package.ops))
"""


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_hub_layout_loads_through_kernels_beside_the_direct_import(kernel_project_root: Path, op: str,
                                                                   tmp_path: Path) -> None:
    # --hub-layout links the build into build/<variant>/ with metadata.json, so the Hub
    # loader imports the very library the direct import loaded: both work in one process
    # (a copied build would register its op namespace twice and abort).
    pytest.importorskip("kernels")
    built = build(kernel_project_root, op, CI_ARCHS)
    repo = tmp_path / "repo"
    args = [built.project, "--build-dir", built.build_dir, "--hub-layout", repo]
    for arch in CI_ARCHS:
        args += ["--arch", arch]
    result = run_script(BUILD_LOCAL, *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(built.build_dir)  # stdout stays the PYTHONPATH entry
    (variant,) = (repo / "build").iterdir()
    assert (variant / f"ci_{op}").is_symlink() and json.loads((variant / "metadata.json").read_text())["name"] == f"ci-{op}"
    env = dict(os.environ, PYTHONPATH=str(built.build_dir), HF_HUB_OFFLINE="1")
    loaded = subprocess.run([sys.executable, "-c", _LOAD_BOTH, f"ci_{op}", str(repo)], capture_output=True, text=True,
                            env=env, timeout=300, check=False)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.split()[0].startswith(f"_ci_{op}_")
    assert run_script(BUILD_LOCAL, *args).returncode == 0  # again: idempotent


_CHECK_SCRIPT = r"""
import dataclasses, sys
sys.path.insert(0, sys.argv[1])
import build_local
result = build_local.build_project(sys.argv[2], archs=sys.argv[4].split(","), build_dir=sys.argv[3], log=lambda m: None)
decl = result.ops[0]
case = sys.argv[5]
if case == "mismatch":
    ops = (dataclasses.replace(decl, schema=decl.schema.replace("float epsilon", "float eps")),)
elif case == "missing":
    ops = (build_local.OpDecl("not_there", "not_there(Tensor x) -> Tensor", "torch-ext/torch_binding.cpp"),)
else:
    ops = ()
try:
    build_local.check_build(dataclasses.replace(result, ops=ops))
except build_local.BuildError as exc:
    print(exc)
    sys.exit(1)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "message"),
    [("mismatch", "but declared as"), ("missing", "not_there: declared in"), ("none", "no ops.def")],
)
def test_check_reports_what_does_not_match(kernel_project_root: Path, case: str, message: str) -> None:
    built = build(kernel_project_root, "rmsnorm", CI_ARCHS)
    result = subprocess.run(
        [sys.executable, "-c", _CHECK_SCRIPT, str(BUILD_LOCAL.parent), str(built.project), str(built.build_dir),
         ",".join(CI_ARCHS), case],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stdout


@pytest.mark.slow
def test_compiler_errors_come_through_with_the_failing_file(tmp_path: Path) -> None:
    needs_toolchain()
    project = sync_scaffold("broken", "rmsnorm", tmp_path)
    cu = project / "kernel_src" / "rmsnorm.cu"
    cu.write_text("#error deliberately broken for the test\n" + cu.read_text())
    before = snapshot(project)
    result = run_script(BUILD_LOCAL, project, "--arch", "8.0", "--build-dir", tmp_path / "build")
    assert result.returncode == 1
    assert "build_local: error: compiling kernel_src/rmsnorm.cu failed:" in result.stderr
    assert "deliberately broken for the test" in result.stderr
    assert result.stdout == ""
    assert snapshot(project) == before


@pytest.mark.gpu
@pytest.mark.parametrize("op", OPS)
def test_generated_project_on_gpu(kernel_project_root: Path, op: str) -> None:
    import torch

    major, minor = torch.cuda.get_device_capability()
    built = build(kernel_project_root, op, (f"{major}.{minor}",))
    out_dir = Path(os.environ.get("KERNEL_SKILLS_GPU_OUT") or kernel_project_root / "gpu-results")
    out_dir.mkdir(parents=True, exist_ok=True)

    tests = run_project_tests(built, "-v", "-rs")
    (out_dir / f"{op}-tests.log").write_text(tests.stdout + tests.stderr)
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " skipped" not in tests.stdout.splitlines()[-1], "GPU tests were skipped on a GPU machine"

    bench_json = out_dir / f"benchmark_{op}.json"
    env = dict(os.environ, PYTHONPATH=str(built.build_dir))
    bench = subprocess.run(
        [sys.executable, str(built.project / "benchmarks" / f"benchmark_{op}.py"), "--out", str(bench_json)],
        cwd=built.project, env=env, capture_output=True, text=True, timeout=1500,
    )
    (out_dir / f"benchmark_{op}.txt").write_text(bench.stdout + bench.stderr)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    data = json.loads(bench_json.read_text())
    assert data["copy_bandwidth_GBps"] > 0 and data["results"]
    assert data["peers_not_available"] == []
    for row in data["results"]:
        assert row["kernel_us"] > 0 and 0 < row["pct_of_copy_bandwidth"]
        assert set(row["peers_us"]) == PEERS[op]
        assert all(us > 0 for us in row["peers_us"].values()), row["peers_skipped"]
        assert row["speedup_vs_best"] == min(row["speedup"].values())
    shutil.copytree(built.project / "kernel_src", out_dir / f"{op}_kernel_src", dirs_exist_ok=True)  # what was measured
