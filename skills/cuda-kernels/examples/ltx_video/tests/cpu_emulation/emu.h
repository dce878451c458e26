// emu.h - this example's entry to the skill's CPU emulator (assets/emulator/cuda_emu.h):
// the emulator itself, plus the three names the example's kernels and test were written
// against before it moved there (emu_launch, emu_dynamic_smem, emu_check_align).
// Include this first, then the kernel headers, compiled with -DLTX_CPU_EMULATION.
#pragma once

#include "../../../../assets/emulator/cuda_emu.h"

// The most dynamic shared memory an sm_90 block may opt into; every emu_launch gets it.
inline constexpr size_t kEmuDynamicSmemBytes = 227 * 1024;
#define emu_dynamic_smem (::emu::dynamic_smem<unsigned char>())

inline void emu_check_align(const void* p, uintptr_t bytes = 16) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0) {
    std::fprintf(stderr, "misaligned %u-byte access at %p\n", static_cast<unsigned>(bytes), p);
    std::abort();
  }
}

// Runs kernel() as every thread of a grid of `grid` blocks of `block` threads; aborts on a
// launch failure (the test's exit status reports it).
template <typename F>
void emu_launch(unsigned grid, unsigned block, F kernel) {
  static const char key = 0;  // the launch's identity for the shared-memory opt-in
  cudaFuncSetAttribute(&key, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kEmuDynamicSmemBytes));
  emu::LaunchShape s;
  s.grid = dim3(grid);
  s.block = dim3(block);
  s.smem = kEmuDynamicSmemBytes;
  const std::function<void()> body = kernel;
  if (emu::launch(s, &key, body) != cudaSuccess) {
    std::fprintf(stderr, "launch failed: %s\n", emu::last_failure().c_str());
    std::abort();
  }
}
