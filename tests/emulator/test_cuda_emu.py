"""The CPU emulator (assets/emulator/cuda_emu.h) and its build script (scripts/emulate_kernel.py).

selftest.cu runs kernels that exercise each modeled feature - every shuffle mode at every
width, a reused reduction buffer with and without its leading barrier in both schedules,
divergent barriers, dynamic shared memory and its 48 KiB opt-in, a thread-block cluster
summing through distributed shared memory - and prints one "ok"/"FAIL" line per case.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "skills" / "cuda-kernels" / "scripts" / "emulate_kernel.py"
SELFTEST = Path(__file__).resolve().parent / "selftest.cu"


def _load_script():
    spec = importlib.util.spec_from_file_location("emulate_kernel", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


emulate_kernel = _load_script()


def test_rewrite_turns_chevrons_and_extern_shared_into_cpp_and_keeps_lines() -> None:
    src = (
        "k<float, 4><<<grid,\n block, smem, stream>>>(a, b);\n"
        "extern __shared__ __align__(16) unsigned char buf[];\n"
        "extern __shared__ float s[];\n"
    )
    out = emulate_kernel.rewrite(src)
    assert out.count("\n") == src.count("\n")
    assert "k<float, 4> | ::emu::chevron(grid,\n block, smem, stream) | ::emu::call(a, b);" in out
    assert "unsigned char* buf = ::emu::dynamic_smem<unsigned char>();" in out
    assert "float* s = ::emu::dynamic_smem<float>();" in out


def test_missing_source_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert emulate_kernel.main([str(tmp_path / "nope.cu"), "-o", str(tmp_path / "x")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_selftest_passes_every_case(tmp_path: Path) -> None:
    if emulate_kernel.compiler() is None or emulate_kernel.cuda_include() is None:
        pytest.skip("needs g++ and the CUDA headers")
    exe = tmp_path / "selftest"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(SELFTEST), "-o", str(exe), "--run"],
        check=False, capture_output=True, text=True, timeout=900, env={**os.environ, "CUDA_EMU_QUIET": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failures: 0" in proc.stdout
    assert proc.stdout.count("\nok ") + proc.stdout.startswith("ok ") >= 14, proc.stdout
