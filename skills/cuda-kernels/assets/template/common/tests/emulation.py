"""Runs this project's CUDA kernels on the CPU: kernel_src/*.cu is compiled with g++ against
the skill's emulator (assets/emulator/cuda_emu.h, see references/cpu-emulator.md) and the
launcher is called through ctypes on CPU tensors. No GPU and no nvcc needed: g++ and the
CUDA headers (the nvidia wheels torch installs ship them).

What these tests prove that the other CPU tests do not: the kernels' indexing, head/tail
handling, reductions and barriers, on every dtype and row layout, against float64. They do
not prove speed, register or launch-resource limits, or the memory model (the `gpu` tests
and compute-sanitizer do).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest
import torch

PROJECT = Path(__file__).resolve().parents[1]
# Where the skill's scripts were when this project was generated; KERNEL_SKILLS_SCRIPTS
# overrides it (the project moved, or the skill was installed elsewhere).
SKILL_SCRIPTS = Path(os.environ.get("KERNEL_SKILLS_SCRIPTS", "__SKILL_SCRIPTS__"))
SCHEDULES = {"forward": 0, "reverse": 1}
CTYPE = {"ptr": ctypes.c_void_p, "i64": ctypes.c_int64, "i32": ctypes.c_int, "f32": ctypes.c_float,
         "bool": ctypes.c_bool}
DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


def _emulate_kernel() -> ModuleType:
    script = SKILL_SCRIPTS / "emulate_kernel.py"
    if not script.is_file():
        pytest.skip(f"{script} not found: set KERNEL_SKILLS_SCRIPTS to the skill's scripts/ folder")
    spec = importlib.util.spec_from_file_location("emulate_kernel", script)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# The launcher as C functions for ctypes (cuda_emu.h is force-included by the build):
#   emu_launch(&args, schedule)  run it on the CPU (0 forward, 1 reverse warp order)
#   emu_args_size()              sizeof the launch struct: the ctypes mirror must match it
#   emu_failure()                why the last launch failed (deadlock, divergent barrier, ...)
SHIM = """#include <cstddef>
#include <string>
#include "launchers.h"
extern "C" int emu_launch(const {args}* args, int schedule) {{
  emu::set_schedule(static_cast<emu::Schedule>(schedule), 17);
  return static_cast<int>({launcher}(*args, nullptr));
}}
extern "C" size_t emu_args_size() {{ return sizeof({args}); }}
extern "C" const char* emu_failure() {{
  static std::string text;
  text = emu::last_failure();
  return text.c_str();
}}
"""


def build(out_dir: Path, args_type: str, launcher: str) -> ctypes.CDLL:
    """kernel_src/*.cu and a shim calling `launcher` (which takes a const `args_type`&) as a
    shared library on the emulator; skips when g++ or the CUDA headers are missing."""
    ek = _emulate_kernel()
    if ek.compiler() is None or ek.cuda_include() is None:
        pytest.skip("the CPU emulation needs g++ and the CUDA headers (cuda_runtime.h, cuda_fp16.h, cuda_bf16.h)")
    lib_path = out_dir / "libkernels_emulated.so"
    shim = out_dir / "emu_shim.cpp"
    shim.write_text(SHIM.format(args=args_type, launcher=launcher))
    sources = sorted((PROJECT / "kernel_src").glob("*.cu")) + [shim]
    proc = ek.build(sources, lib_path, shared=True, includes=[PROJECT / "kernel_src"])
    assert proc.returncode == 0, "building the emulated kernels failed:\n" + proc.stderr[-6000:]
    os.environ.setdefault("CUDA_EMU_QUIET", "1")
    lib = ctypes.CDLL(str(lib_path))
    lib.emu_launch.restype = ctypes.c_int
    lib.emu_launch.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.emu_args_size.restype = ctypes.c_size_t
    lib.emu_failure.restype = ctypes.c_char_p
    return lib


def args_struct(fields: list[tuple[str, str]]) -> type[ctypes.Structure]:
    """A ctypes mirror of the launch struct in kernel_src/launchers.h (same order and types:
    enums are i32). Keep it in step with the header; launch() checks the size."""
    return type("LaunchArgs", (ctypes.Structure,), {"_fields_": [(n, CTYPE[t]) for n, t in fields]})


def launch(lib: ctypes.CDLL, args: ctypes.Structure, schedule: str) -> None:
    assert ctypes.sizeof(args) == lib.emu_args_size(), (
        "the ctypes mirror of the launch struct does not match kernel_src/launchers.h: update the test's fields"
    )
    err = lib.emu_launch(ctypes.byref(args), SCHEDULES[schedule])
    assert err == 0, f"launch failed (cudaError_t {err}): {lib.emu_failure().decode()}"


def ptr(t: torch.Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


GUARD = 16


def poisoned_out(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, out): out is a contiguous NaN-filled tensor inside a buffer with GUARD
    sentinel elements on each side; check_guards(buffer) fails on a write outside out."""
    n = 1
    for s in shape:
        n *= s
    buf = torch.full((n + 2 * GUARD,), 7.0, dtype=dtype)
    buf[GUARD : GUARD + n] = float("nan")
    return buf, buf[GUARD : GUARD + n].view(shape)


def check_guards(buf: torch.Tensor) -> None:
    assert (buf[:GUARD] == 7.0).all() and (buf[-GUARD:] == 7.0).all(), "the kernel wrote outside its output"


def guarded_input(lead: tuple[int, ...], width: int, dtype: torch.dtype, layout: str, seed: int,
                  scale: float = 1.0) -> torch.Tensor:
    """Random [*lead, width] values in `layout` (contiguous, misaligned: x[..., 1:] of a wider
    row, strided: rows 24 elements apart more than the width), inside a NaN-filled buffer:
    a read past a row's end or before its start turns the result into NaN."""
    rows = 1
    for s in lead:
        rows *= s
    gen = torch.Generator().manual_seed(seed)
    values = (torch.randn(rows, width, generator=gen, dtype=torch.float64) * scale + 0.25 * scale).to(dtype)
    pad = {"contiguous": 0, "misaligned": 1, "strided": 24}[layout]
    stride = width + pad
    buf = torch.full((rows * stride + 2 * GUARD,), float("nan"), dtype=dtype)
    start = GUARD + (1 if layout == "misaligned" else 0)
    view = buf[start : start + rows * stride].view(rows, stride)[:, :width] if rows else buf[:0].view(0, width)
    view.copy_(values)
    return torch.as_strided(view, (*lead, width), (*_lead_strides(lead, stride), 1), view.storage_offset())


def _lead_strides(lead: tuple[int, ...], row_stride: int) -> tuple[int, ...]:
    strides, acc = [], row_stride
    for s in reversed(lead):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))
