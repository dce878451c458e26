"""What troubleshooting.md and kernel-templates.md say the CUDA runtime does, run on a GPU.

A small standalone CUDA program (no torch) makes each launch the documents describe and
prints what the runtime answered: the error of a launch with 0 blocks, with 1025 threads,
with a grid `y` of 65536, with more than 48 KB of dynamic shared memory without and with
the opt-in attribute and beyond the GPU's opt-in maximum, and the SiLU template's formula
(`v / (1 + __expf(-v))`) where `exp(-v)` leaves fp32's range. Without a GPU the program is
only compiled (CI has nvcc), so the GPU run cannot fail on a typo.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

import skilldocs

TROUBLESHOOTING = skilldocs.SKILL / "references" / "troubleshooting.md"
TEMPLATES = skilldocs.SKILL / "references" / "kernel-templates.md"

PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>

__global__ void empty_kernel() {}
__global__ void smem_kernel(char* sink) {
  extern __shared__ char buffer[];
  buffer[threadIdx.x] = static_cast<char>(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) sink[0] = buffer[31];
}
// The template's silu_f (kernel-templates.md), compiled the same way.
__device__ __forceinline__ float silu_f(float v) { return __fdividef(v, 1.f + __expf(-v)); }
__global__ void silu_kernel(const float* in, float* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = silu_f(in[i]);
}

static const char* launch_error() {
  cudaError_t launched = cudaGetLastError();
  cudaError_t synced = cudaDeviceSynchronize();
  return cudaGetErrorName(launched != cudaSuccess ? launched : synced);
}

int main() {
  int device = 0, optin = 0;
  cudaSetDevice(device);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  char* sink = nullptr;
  cudaMalloc(&sink, 1);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  printf("{\n  \"runtime_version\": %d,\n  \"optin_max_bytes\": %d,\n", runtime, optin);

  empty_kernel<<<0, 32>>>();
  printf("  \"zero_blocks\": \"%s\",\n", launch_error());
  empty_kernel<<<1, 1025>>>();
  printf("  \"threads_1025\": \"%s\",\n", launch_error());
  empty_kernel<<<dim3(1, 65536), 1>>>();
  printf("  \"grid_y_65536\": \"%s\",\n", launch_error());

  smem_kernel<<<1, 32, 64 * 1024>>>(sink);
  printf("  \"smem_64k_without_optin\": \"%s\",\n", launch_error());
  cudaError_t set = cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
  smem_kernel<<<1, 32, 64 * 1024>>>(sink);
  printf("  \"set_optin_64k\": \"%s\",\n  \"smem_64k_with_optin\": \"%s\",\n", cudaGetErrorName(set), launch_error());
  set = cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1024);
  cudaGetLastError();  // the refused attribute call set the last error: clear it so the launch reports its own
  smem_kernel<<<1, 32, optin + 1024>>>(sink);
  printf("  \"set_optin_beyond_max\": \"%s\",\n  \"smem_beyond_max\": \"%s\",\n", cudaGetErrorName(set), launch_error());

  const int n = 6;
  float host_in[n] = {-90.f, -87.5f, -87.f, -50.f, 50.f, 100.f}, host_out[n] = {};
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, sizeof(host_in));
  cudaMalloc(&out, sizeof(host_out));
  cudaMemcpy(in, host_in, sizeof(host_in), cudaMemcpyHostToDevice);
  silu_kernel<<<1, 32>>>(in, out, n);
  cudaMemcpy(host_out, out, sizeof(host_out), cudaMemcpyDeviceToHost);
  printf("  \"silu\": {");
  for (int i = 0; i < n; ++i) printf("%s\"%g\": %.9g", i ? ", " : "", host_in[i], host_out[i]);
  printf("},\n  \"silu_minus_90_sign_bit\": %d\n}\n", static_cast<int>(signbit(host_out[0]) != 0));
  return 0;
}
"""


def _build(tmp_path: Path, arch: str) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    source = tmp_path / "cuda_error_facts.cu"
    source.write_text(PROGRAM, encoding="utf-8")
    binary = tmp_path / "cuda_error_facts"
    digits = arch.replace(".", "")
    cmd = [nvcc, str(source), "-o", str(binary), f"-gencode=arch=compute_{digits},code=sm_{digits}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    return binary


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


@pytest.mark.slow  # a CUDA compile
def test_the_program_compiles(tmp_path: Path) -> None:
    assert _build(tmp_path, "9.0").is_file()


@pytest.mark.gpu
def test_the_runtime_answers_what_the_documents_say(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    arch = "%d.%d" % torch.cuda.get_device_capability()
    proc = subprocess.run([str(_build(tmp_path, arch))], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)

    # One row for every launch the runtime refuses: 0 blocks, > 1024 threads, grid y/z >
    # 65535, > 48 KB of dynamic shared memory without the opt-in attribute or beyond the GPU's
    # opt-in maximum. CUDA 13 reports all of them as invalid argument (measured on the H200,
    # driver 580); older releases report the first three as invalid configuration argument.
    row = next(line for line in TROUBLESHOOTING.read_text(encoding="utf-8").splitlines() if "A launch with 0 blocks" in line)
    assert row.startswith("| `CUDA error: invalid argument` at a launch (CUDA 13; older releases name the first three")
    assert "`invalid configuration argument`" in row and "`cudaErrorInvalidValue` on the H200 with CUDA 13.0" in row
    config = "cudaErrorInvalidValue" if facts["runtime_version"] >= 13000 else "cudaErrorInvalidConfiguration"
    for case in ("zero_blocks", "threads_1025", "grid_y_65536"):
        assert facts[case] == config, (case, facts)
    assert facts["smem_64k_without_optin"] == "cudaErrorInvalidValue", facts
    assert facts["set_optin_64k"] == "cudaSuccess" and facts["smem_64k_with_optin"] == "cudaSuccess", facts
    assert facts["set_optin_beyond_max"] == "cudaErrorInvalidValue", facts
    assert facts["smem_beyond_max"] == "cudaErrorInvalidValue", facts
    # The row's per-GPU maximum for this GPU (H100 and H200: 227 KB).
    if torch.cuda.get_device_name().startswith(("NVIDIA H100", "NVIDIA H200")):
        assert facts["optin_max_bytes"] == 227 * 1024 and "227 KB H100/H200" in row

    # kernel-templates.md: past 88, SiLU with __expf returns x; below about -87.3 (the divisor
    # past 2^126, where __fdividef returns 0) it returns -0.
    assert "for x below about -87.3 it passes 2^126, where `__fdividef` returns 0, and SiLU returns -0" in _flat(TEMPLATES)
    silu = facts["silu"]
    assert silu["100"] == 100.0 and silu["50"] == pytest.approx(50.0, rel=1e-6)
    assert silu["-90"] == 0.0 and facts["silu_minus_90_sign_bit"] == 1
    assert silu["-87.5"] == 0.0  # the true value, -8.8e-37, is a normal float
    assert silu["-87"] == pytest.approx(-87.0 * math.exp(-87.0), rel=1e-3)
    assert silu["-50"] == pytest.approx(-50.0 * 1.9287498e-22, rel=1e-3)
