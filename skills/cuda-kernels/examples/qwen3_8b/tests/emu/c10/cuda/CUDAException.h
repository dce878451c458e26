// Stand-in for c10's CUDA error macros when kernel_src/ runs on the CPU emulator
// (test_kernels_emulated.py puts this folder first on the include path): a failed check
// throws, and emu_entry.cpp turns the exception into an error code.
#pragma once

#include <stdexcept>

#define C10_CUDA_CHECK(expr)                                                   \
  do {                                                                         \
    if ((expr) != cudaSuccess) throw std::runtime_error("CUDA call failed: " #expr); \
  } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#define TORCH_CHECK(cond, ...)                                    \
  do {                                                            \
    if (!(cond)) throw std::runtime_error("check failed: " #cond); \
  } while (0)
