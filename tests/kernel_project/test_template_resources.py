"""Every scaffold kernel fits its launch: launch bounds declared, registers within an SM, no spills.

A kernel launched with more threads x registers than the SM's 65536 registers fails with
"too many resources requested for launch" (an H200 refused the old LayerNorm template's
1024-thread blocks at 80 registers). ptxas decides registers per arch, so each op's
kernel_src/*.cu is compiled here for sm_80 and sm_90 with -Xptxas -v, and the PTX (kept
with --keep) gives each kernel's __launch_bounds__ (.maxntid). The launchers never launch
more threads than that bound, so bound x registers <= 65536 is the launch check. Spills to
local memory (spill stores/loads > 0) fail too: they turn a register cache into DRAM
traffic. CPU only (nvcc), marked slow.

The check is the generated project's own tests/test_kernel_resources.py (common/project.md),
so an agent who edits a scaffold's kernel has it too; this file loads that module from a
fresh scaffold and runs it for every op (test_generated_projects.py runs the project's copy
through pytest for one op only).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from kernel_project_helpers import CI_ARCHS, sync_scaffold

import new_kernel_project  # importable once kernel_project_helpers put scripts/ on sys.path

OPS = sorted(new_kernel_project.OPS)


def resources_module(project: Path) -> ModuleType:
    """The scaffold's tests/test_kernel_resources.py, imported."""
    path = project / "tests" / "test_kernel_resources.py"
    spec = importlib.util.spec_from_file_location(f"kernel_resources_{project.name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("arch", CI_ARCHS)
@pytest.mark.parametrize("op", OPS)
def test_every_kernel_fits_its_launch_without_spills(op: str, arch: str, tmp_path: Path) -> None:
    project = sync_scaffold("res", op, tmp_path)
    res = resources_module(project)
    nvcc = res.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    assert res.project_archs() == list(CI_ARCHS)  # a scaffold without --capabilities checks what CI builds
    kernels, ptx = res.ptxas_report(nvcc, project / "kernel_src" / f"{op}.cu", arch, tmp_path / "keep")
    assert kernels, f"ptxas reported no kernel for {op}.cu"
    problems = res.resource_problems(kernels, res.launch_bounds(ptx))
    problems += [f"{k}: no 16-byte store" for k in res.narrow_store_kernels(ptx)]
    assert not problems, f"{op} sm_{arch.replace('.', '')}:\n" + "\n".join(problems)


def test_the_parsers_read_real_tool_output(tmp_path: Path) -> None:
    # The regexes are what makes the check able to fail: pin them to real output.
    res = resources_module(sync_scaffold("parse", "rmsnorm", tmp_path))
    stderr = ("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
              "ptxas info    : Function properties for _Z1kv\n"
              "    16 bytes stack frame, 28 bytes spill stores, 16 bytes spill loads\n"
              "ptxas info    : Used 64 registers, used 1 barriers, 16 bytes cumulative stack size\n")
    (m,) = res.PTXAS_FUNC_RE.finditer(stderr)
    assert (m.group(1), m.group(3), m.group(4), m.group(5)) == ("_Z1kv", "28", "16", "64")
    ptx = (".visible .entry _Z1kv(\n\t.param .u64 a\n)\n\t.maxntid 1024, 1, 1\n{\n ret;\n}\n"
           ".visible .entry _Z1jv(\n)\n{\n ret;\n}\n")
    bounds = res.launch_bounds(ptx)
    assert bounds == {"_Z1kv": 1024, "_Z1jv": 0}
    kernels = {"_Z1kv": {"registers": 72, "spill_stores": 28, "spill_loads": 16},
               "_Z1jv": {"registers": 8, "spill_stores": 0, "spill_loads": 0}}
    assert res.resource_problems(kernels, bounds) == [
        "_Z1jv: no __launch_bounds__", "_Z1kv: 1024 threads x 72 registers > 65536",
        "_Z1kv: spills (28 B stored, 16 B loaded)"]
    assert res.resource_problems({}, bounds)[0].startswith("ptxas reported []")
    # A 16-byte store in any cache form counts; 2- and 4-byte pieces do not.
    pieces = (".visible .entry _Z1pv(\n)\n{\n st.global.v2.u16 [%rd1], {%rs1, %rs2};\n st.global.f32 [%rd2], %f1;\n}\n"
              ".visible .entry _Z1wv(\n)\n{\n st.global.wb.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};\n}\n"
              ".visible .entry _Z1fv(\n)\n{\n st.global.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};\n}\n")
    assert res.narrow_store_kernels(pieces) == ["_Z1pv"]


def test_the_checked_architectures_follow_build_toml(tmp_path: Path) -> None:
    res = resources_module(sync_scaffold("archs", "rmsnorm", tmp_path))
    toml = tmp_path / "build.toml"
    toml.write_text('[kernel.a]\ncuda-capabilities = ["9.0a", "8.0",\n  "12.1+PTX"]\n[kernel.b]\n'
                    'cuda-capabilities = ["10.0"]\n')
    assert res.project_archs(toml) == ["8.0", "9.0a", "10.0", "12.1"]
    toml.write_text("[kernel.a]\n# cuda-capabilities = [\"9.0a\"] for wgmma code.\n")
    assert res.project_archs(toml) == list(CI_ARCHS)
