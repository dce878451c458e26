"""The CUDA kernels themselves, run on a CPU: their logic is checked on machines without a GPU.

cpu_emulation/kernels_emulated.cpp includes kernel_src/*_kernels.cuh as they are, with
cpu_emulation/emu.h standing in for the CUDA runtime (threads, barriers, warp shuffles,
__shared__), and compares every launch configuration, layout and dtype with float64 math.
It catches indexing, masking, reduction and pairing mistakes in CI; it cannot catch what
only hardware shows (speed, real warp scheduling), which the `gpu` tests cover.
LTX_EMULATION_FULL=1 runs every configuration instead of a representative half.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
KERNEL_SRC = HERE.parent / "kernel_src"
SOURCE = HERE / "cpu_emulation" / "kernels_emulated.cpp"


def _cuda_include() -> Path | None:
    """A directory with cuda_fp16.h / cuda_bf16.h / cuda_runtime.h (host-side use only)."""
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for entry in sys.path:  # the CUDA wheels torch depends on ship the same headers
        candidates += sorted(Path(entry).glob("nvidia/cu*/include")) + sorted(Path(entry).glob("nvidia/cuda_runtime/include"))
    for c in candidates:
        if (c / "cuda_fp16.h").is_file() and (c / "cuda_bf16.h").is_file() and (c / "cuda_runtime.h").is_file():
            return c
    return None


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler on PATH")
    include = _cuda_include()
    if include is None:
        pytest.skip("CUDA headers (cuda_fp16.h, cuda_bf16.h, cuda_runtime.h) not found")
    exe = tmp_path_factory.mktemp("emulation") / "kernels_emulated"
    cmd = [cxx, "-std=c++20", "-O1", "-w", "-DLTX_CPU_EMULATION", f"-I{KERNEL_SRC}", f"-I{include}",
           str(SOURCE), "-o", str(exe), "-lpthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-4000:]}"
    return exe


def test_kernels_match_float64_on_the_cpu_emulator(emulator: Path) -> None:
    args = ["full"] if os.environ.get("LTX_EMULATION_FULL") == "1" else []
    proc = subprocess.run([str(emulator), *args], capture_output=True, text=True, timeout=1800)
    report = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    assert "failures: 0" in proc.stdout, report
    assert "FAIL" not in proc.stdout, report
