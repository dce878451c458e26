// emu.h - just enough of the CUDA execution model to run this example's kernels on a CPU.
//
// Each thread of a block is an OS thread; a block's threads loop over the grid's blocks
// together. __syncthreads is a barrier of the block; __shfl_xor_sync exchanges through an
// array between two barriers, so it needs every thread of the block to reach it - true of
// row_sum, which the kernels call unconditionally. __shared__ variables become statics:
// one block runs at a time. 16-byte vector accesses abort on a misaligned address, which a
// CPU would otherwise forgive. Fast-math intrinsics map to their exact libm counterparts.
//
// Include this first, then the kernel headers, compiled with -DLTX_CPU_EMULATION.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct EmuDim {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local EmuDim emu_thread_idx, emu_block_idx;
inline EmuDim emu_block_dim, emu_grid_dim;
#define threadIdx emu_thread_idx
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim

inline std::barrier<>* emu_barrier = nullptr;
// A block's dynamic shared memory (extern __shared__): one block runs at a time.
alignas(16) inline unsigned char emu_dynamic_smem[228 * 1024];
inline float emu_exchange[1024];

inline void __syncthreads() { emu_barrier->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
  const unsigned t = threadIdx.x;
  emu_exchange[t] = v;
  emu_barrier->arrive_and_wait();
  const float other = emu_exchange[t ^ static_cast<unsigned>(lane_mask)];
  emu_barrier->arrive_and_wait();
  return other;
}

inline void emu_check_align(const void* p, uintptr_t bytes = 16) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0) {
    std::fprintf(stderr, "misaligned %u-byte access at %p\n", static_cast<unsigned>(bytes), p);
    std::abort();
  }
}
inline uint4 __ldg(const uint4* p) {
  emu_check_align(p);
  return *p;
}
inline uint2 __ldg(const uint2* p) {
  emu_check_align(p, 8);
  return *p;
}
inline unsigned int __ldg(const unsigned int* p) {
  emu_check_align(p, 4);
  return *p;
}
// The streaming (evict-first) loads and stores: plain aligned accesses here.
template <typename W>
W __ldcs(const W* p) {
  emu_check_align(p, sizeof(W));
  return *p;
}
template <typename W>
void __stcs(W* p, W v) {
  emu_check_align(p, sizeof(W));
  *p = v;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}

// Runs kernel() for every thread of a grid of `grid` blocks of `block` threads.
template <typename F>
void emu_launch(unsigned grid, unsigned block, F kernel) {
  if (grid == 0 || block == 0 || block > 1024) {
    std::fprintf(stderr, "invalid launch: grid %u, block %u\n", grid, block);
    std::abort();
  }
  emu_block_dim = EmuDim{block, 1, 1};
  emu_grid_dim = EmuDim{grid, 1, 1};
  std::barrier<> bar(block);
  emu_barrier = &bar;
  std::vector<std::thread> threads;
  threads.reserve(block);
  for (unsigned t = 0; t < block; ++t) {
    threads.emplace_back([&, t] {
      emu_thread_idx = EmuDim{t, 0, 0};
      for (unsigned b = 0; b < grid; ++b) {
        emu_block_idx = EmuDim{b, 0, 0};
        kernel();
        bar.arrive_and_wait();  // the block is done before the next one reuses __shared__
      }
    });
  }
  for (auto& th : threads) th.join();
}
