"""Every scaffold kernel fits its launch: launch bounds declared, registers within an SM, no spills.

A kernel launched with more threads x registers than the SM's 65536 registers fails with
"too many resources requested for launch" (an H200 refused the old LayerNorm template's
1024-thread blocks at 80 registers). ptxas decides registers per arch, so each op's
kernel_src/<op>.cu is compiled here for sm_80 and sm_90 with -Xptxas -v, and the PTX
(kept with --keep) gives each kernel's __launch_bounds__ (.maxntid). The launchers never
launch more threads than that bound, so bound x registers <= 65536 is the launch check.
Spills to local memory (spill stores/loads > 0) fail too: they turn a register cache into
DRAM traffic. CPU only (nvcc), marked slow.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_project_helpers import sync_scaffold

import new_kernel_project  # importable once kernel_project_helpers put scripts/ on sys.path

OPS = sorted(new_kernel_project.OPS)
ARCHS = ("80", "90")
REGISTERS_PER_SM = 65536

ENTRY_RE = re.compile(r"\.entry\s+(\w+)\s*\((.*?)\{", re.DOTALL)
MAXNTID_RE = re.compile(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)")
PTXAS_FUNC_RE = re.compile(
    r"Compiling entry function '(\w+)' for 'sm_\d+'\s*\n.*?(\d+) bytes stack frame, (\d+) bytes spill stores, "
    r"(\d+) bytes spill loads\s*\n.*?Used (\d+) registers", re.DOTALL)


def ptxas_report(cu: Path, arch: str, keep: Path) -> tuple[dict[str, dict[str, int]], str]:
    """{kernel: {registers, spill_stores, spill_loads}} from ptxas -v, and the PTX text."""
    keep.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["nvcc", "-std=c++17", "-O3", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas", "-v", "--keep",
         "--keep-dir", str(keep), "-c", str(cu), "-o", str(keep / "out.o")],
        capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    kernels = {m.group(1): {"registers": int(m.group(5)), "spill_stores": int(m.group(3)),
                            "spill_loads": int(m.group(4))} for m in PTXAS_FUNC_RE.finditer(proc.stderr)}
    (ptx,) = keep.glob("*.ptx")
    return kernels, ptx.read_text()


def launch_bounds(ptx: str) -> dict[str, int]:
    bounds = {}
    for m in ENTRY_RE.finditer(ptx):
        ntid = MAXNTID_RE.search(m.group(2))
        bounds[m.group(1)] = int(ntid.group(1)) * int(ntid.group(2)) * int(ntid.group(3)) if ntid else 0
    return bounds


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", OPS)
def test_every_kernel_fits_its_launch_without_spills(op: str, arch: str, tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    project = sync_scaffold("res", op, tmp_path)
    kernels, ptx = ptxas_report(project / "kernel_src" / f"{op}.cu", arch, tmp_path / "keep")
    bounds = launch_bounds(ptx)
    assert kernels and set(kernels) == set(bounds), (sorted(kernels), sorted(bounds))
    problems = []
    for name, r in sorted(kernels.items()):
        if bounds[name] == 0:
            problems.append(f"{name}: no __launch_bounds__")
        elif bounds[name] * r["registers"] > REGISTERS_PER_SM:
            problems.append(f"{name}: {bounds[name]} threads x {r['registers']} registers > {REGISTERS_PER_SM}")
        if r["spill_stores"] or r["spill_loads"]:
            problems.append(f"{name}: spills ({r['spill_stores']} B stored, {r['spill_loads']} B loaded)")
    assert not problems, f"{op} sm_{arch}:\n" + "\n".join(problems)


def test_the_parsers_read_real_tool_output() -> None:
    # The regexes above are what makes the slow test able to fail: pin them to real output.
    stderr = ("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\n"
              "ptxas info    : Function properties for _Z1kv\n"
              "    16 bytes stack frame, 28 bytes spill stores, 16 bytes spill loads\n"
              "ptxas info    : Used 64 registers, used 1 barriers, 16 bytes cumulative stack size\n")
    (m,) = PTXAS_FUNC_RE.finditer(stderr)
    assert (m.group(1), m.group(3), m.group(4), m.group(5)) == ("_Z1kv", "28", "16", "64")
    ptx = (".visible .entry _Z1kv(\n\t.param .u64 a\n)\n\t.maxntid 1024, 1, 1\n{\n ret;\n}\n"
           ".visible .entry _Z1jv(\n)\n{\n ret;\n}\n")
    assert launch_bounds(ptx) == {"_Z1kv": 1024, "_Z1jv": 0}
