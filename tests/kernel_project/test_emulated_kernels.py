"""The scaffolds' emulated CPU tests check the kernels, not only the reference: a bug planted
in a generated project's kernel_src makes tests/test_<op>_emulated.py fail.

Each generated project carries tests/test_<op>_emulated.py, which compiles kernel_src/*.cu
with g++ against the skill's CPU emulator and compares with float64 (the clean projects
pass it in test_generated_projects.py::test_generated_project_cpu_tests_pass). Here two
classic kernel bugs are planted in the shared device helpers (kernel_src/common.cuh) and
the same tests must catch them, in both warp schedules:
  - an off-by-one in the tail: split_row leaves the last element of a row's tail out;
  - a missing barrier: row_sum loses its leading __syncthreads(), so LayerNorm's second
    reduction (the variance) overwrites the shared buffer while other warps still read the
    first one (the mean);
  - an off-by-one in the wide-row path (VPT == 0: rows too wide for the register cache,
    over 16384 elements, re-read from memory): the store loop of rmsnorm.cu / layernorm.cu
    skips each row's last pack. Only an emulated width past that limit reaches it, so this
    case fails when the emulated widths stop covering every dispatch path;
  - a wrong address in the aligned instances (every operand on the 16-byte grid: one load
    per pack, no shift): load_raw<true> reads the next pack. Only rows that launch an aligned
    instance reach it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_project_helpers import sync_scaffold

pytestmark = pytest.mark.slow

# name: (file in kernel_src/, the scaffold's text, the planted text, what the failure says)
BUGS = {
    "tail_off_by_one": (
        "common.cuh",
        "return {head, packs, static_cast<int>(n - head - packs * N)};",
        "return {head, packs, static_cast<int>(n - head - packs * N) - 1};",
        "non-finite values in the output",
    ),
    "missing_leading_barrier": (
        "common.cuh",
        "  __syncthreads();  // the leading barrier: the last reduction's reads of scratch are done\n",
        "\n",
        "relative error",
    ),
    "rms_wide_row_off_by_one": (  # rmsnorm.cu's VPT == 0 store loop
        "rmsnorm.cu",
        "    for (int64_t j = t; j < sp.packs; j += lanes) {\n      const int64_t e",
        "    for (int64_t j = t; j < sp.packs - 1; j += lanes) {\n      const int64_t e",
        "non-finite values in the output",
    ),
    "ln_wide_row_off_by_one": (  # layernorm.cu's VPT == 0 store loop
        "layernorm.cu",
        "for (int64_t j = t; j < sp.packs; j += lanes) store(",
        "for (int64_t j = t; j < sp.packs - 1; j += lanes) store(",
        "non-finite values in the output",
    ),
    "aligned_load_reads_next_pack": (
        "common.cuh",
        "if constexpr (kAligned) return {*reinterpret_cast<const uint4*>(p), make_uint4(0u, 0u, 0u, 0u)};",
        "if constexpr (kAligned) return {reinterpret_cast<const uint4*>(p)[1], make_uint4(0u, 0u, 0u, 0u)};",
        "non-finite values in the output",
    ),
}


# float32 and one row layout (rope: one variant, its layouts are inside the test): the smallest
# slice that reaches every bug, in both schedules.
SLICE = {"rope": "float32 and rotate_half"}


def run_emulated(project: Path, op: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", f"tests/test_{op}_emulated.py", "-p", "no:cacheprovider", "-q",
         "-k", SLICE.get(op, "float32 and contiguous")],
        cwd=project, env={**os.environ, "CUDA_EMU_QUIET": "1"}, capture_output=True, text=True, timeout=1200,
        check=False,
    )


# rmsnorm reduces once per row, so only layernorm (two reductions) needs the leading barrier.
CASES = [("rmsnorm", "tail_off_by_one"), ("layernorm", "tail_off_by_one"), ("layernorm", "missing_leading_barrier"),
         ("rmsnorm", "rms_wide_row_off_by_one"), ("layernorm", "ln_wide_row_off_by_one"),
         *[(op, "aligned_load_reads_next_pack") for op in ("rmsnorm", "layernorm", "glu", "elementwise", "rope")]]


@pytest.mark.parametrize(("op", "bug"), CASES)
def test_a_planted_bug_fails_the_emulated_cpu_tests(tmp_path: Path, op: str, bug: str) -> None:
    project = sync_scaffold(f"planted-{op}", op, tmp_path)
    file, good, bad, symptom = BUGS[bug]
    source = project / "kernel_src" / file
    text = source.read_text()
    assert text.count(good) == 1, f"the scaffold's {source.name} changed: update BUGS[{bug!r}]"
    # The clean project passes these tests (test_generated_projects.py runs them all), so only
    # the planted build runs here: one g++ build of the kernels (~11 s) per case, not two.
    source.write_text(text.replace(good, bad))
    planted = run_emulated(project, op)
    if " failed" not in planted.stdout and "skipped" in planted.stdout:
        pytest.skip("the emulated tests skip here (no g++ or CUDA headers): " + planted.stdout[-300:])
    assert planted.returncode == 1, planted.stdout[-3000:] + planted.stderr[-2000:]
    assert "2 failed" in planted.stdout, planted.stdout[-3000:]  # forward and reverse schedules
    assert symptom in planted.stdout, planted.stdout[-3000:]
