// ltx_common.cuh - device helpers of the LTX-Video kernels: dtype dispatch, fp32
// conversion, 16-byte packs (vector path and bounds-checked scalar path), row reduction.
// CUDA headers only: no ATen (ltx_kernels.h says why), no c10 (tests/kernels_emulated.cpp
// compiles the kernels for a CPU).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "ltx_kernels.h"

namespace ltx {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T the CUDA element type of dt.
template <typename F>
inline void dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat32:
      f(TypeTag<float>{});
      break;
    case DType::kFloat16:
      f(TypeTag<__half>{});
      break;
    case DType::kBFloat16:
      f(TypeTag<__nv_bfloat16>{});
      break;
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `rows` rows at `rpb` rows per block; the kernels loop over rows,
// so capping the grid is always safe.
inline unsigned grid_for(int64_t rows, int rpb) {
  const int64_t g = ceil_div(rows, rpb);
  return static_cast<unsigned>(g < 0x7fffffffLL ? g : 0x7fffffffLL);
}

// The row-kernel launchers' guard (row_shape_set's note in ltx_kernels.h): args that skipped
// set_row_shape are a host-code bug, so it aborts like the launchers' other impossible cases.
template <typename Args>
inline void require_row_shape(const Args& a, const char* launcher) {
  if (!row_shape_set(a)) {
    fprintf(stderr, "ltx %s: row-kernel args built without set_row_shape\n", launcher);
    abort();
  }
}


// ---------------------------------------------------------------- programmatic dependent launch
// Every kernel calls pdl_wait() before its first global load or store: launched with the PDL
// attribute (ltx_launch.cuh) it may start while the kernel ahead still runs, and
// griddepcontrol.wait holds it until that kernel's writes are visible - safe for any
// producer, even one still reading a buffer this kernel overwrites. Without the attribute it
// returns at once. No kernel calls griddepcontrol.launch_dependents, so the next PDL kernel
// launches as this grid's last blocks exit. The trap: triggering first thing let the next
// grid take SM slots early and made the one-wave GELU grids slower and erratic (H200,
// 2x1024x2048: 7.34 us, 6 % spread, against 6.63 without PDL).
// An sm_90 instruction: a no-op on older GPUs and on the CPU.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// ---------------------------------------------------------------- conversions
template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_float<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// ---------------------------------------------------------------------- packs
// Elements of T moved by one 16-byte access: 8 for fp16/bf16, 4 for fp32.
template <typename T>
struct VecWidth {
  static constexpr int value = 16 / static_cast<int>(sizeof(T));
};

// N consecutive elements. When sizeof(T) * N is a multiple of 16 the vector
// path moves it with sizeof/16 128-bit accesses (e.g. the 8 fp32 cos values
// that go with 8 bf16 activations take two).
template <typename T, int N>
struct alignas(16) Pack {
  T e[N];
};

// Loads N elements starting at p. VEC: p is 16-byte aligned and all N
// elements exist (the host checked alignment and divisibility). Scalar path:
// only the first `valid` elements are read; the rest are set to zero so that
// they add nothing to a sum of squares.
template <bool VEC, typename T, int N>
__device__ __forceinline__ void load_pack(Pack<T, N>& dst, const T* __restrict__ p, int valid) {
  if constexpr (VEC) {
    static_assert(sizeof(Pack<T, N>) % 16 == 0, "vector packs are whole 16-byte words");
    constexpr int kWords = static_cast<int>(sizeof(Pack<T, N>) / 16);
    const uint4* src = reinterpret_cast<const uint4*>(p);
    uint4* out = reinterpret_cast<uint4*>(&dst);
#pragma unroll
    for (int w = 0; w < kWords; ++w) out[w] = __ldg(src + w);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst.e[i] = i < valid ? p[i] : from_float<T>(0.0f);
  }
}

template <bool VEC, typename T, int N>
__device__ __forceinline__ void store_pack(T* __restrict__ p, const Pack<T, N>& src, int valid) {
  if constexpr (VEC) {
    constexpr int kWords = static_cast<int>(sizeof(Pack<T, N>) / 16);
    uint4* dst = reinterpret_cast<uint4*>(p);
    const uint4* in = reinterpret_cast<const uint4*>(&src);
#pragma unroll
    for (int w = 0; w < kWords; ++w) dst[w] = in[w];
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (i < valid) p[i] = src.e[i];
  }
}

// Whole 16-byte packs (the vector path of the row-resident kernels) ---------------------
// bf16 is widened by bit placement on the packed 32-bit word (low element = word << 16,
// high element = word with the low half cleared), so a pack stays in four registers until
// each value is used; widening through the conversion intrinsics first tends to give every
// element its own register for the whole life of the row.
__device__ __forceinline__ float float_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

template <typename T, int N>
__device__ __forceinline__ void unpack(const Pack<T, N>& p, float (&f)[N]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      uint32_t two;
      memcpy(&two, &p.e[2 * i], 4);
      f[2 * i] = float_from_bits(two << 16);
      f[2 * i + 1] = float_from_bits(two & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = to_float(p.e[i]);
  }
}

// Rounds N floats to T (round to nearest even), two at a time for bf16.
template <typename T, int N>
__device__ __forceinline__ void pack_floats(Pack<T, N>& p, const float (&f)[N]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const __nv_bfloat162 two = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
      memcpy(&p.e[2 * i], &two, 4);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p.e[i] = from_float<T>(f[i]);
  }
}

#if !defined(__CUDA_ARCH__)
// The host build of the explicit global accesses below (the CPU emulation test runs the
// kernels on a CPU): a copy of `bytes` from src to dst, where `global` (the global-memory side)
// must be 16-byte aligned as on the GPU.
inline void host_access(void* dst, const void* src, size_t bytes, const void* global) {
#if defined(LTX_CPU_EMULATION)
  emu_check_align(global);
#else
  (void)global;
#endif
  memcpy(dst, src, bytes);
}
#endif

// One 16-byte store as a single st.global.v4: a uint4 assignment of a pack assembled
// element by element may be split into narrower stores by nvcc.
template <typename T, int N>
__device__ __forceinline__ void store_pack16(T* __restrict__ p, const Pack<T, N>& src) {
  static_assert(sizeof(Pack<T, N>) == 16, "one 16-byte word");
  uint4 raw;
  memcpy(&raw, &src, 16);
#if defined(__CUDA_ARCH__)
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(raw.x), "r"(raw.y), "r"(raw.z), "r"(raw.w)
               : "memory");
#else
  host_access(p, &raw, 16, p);
#endif
}

// One coherent 16-byte load (ld.global, not the read-only ld.global.nc of load_pack): for
// data this kernel itself stored earlier (the RELOAD rows kernel reads back residual_out).
template <typename T, int N>
__device__ __forceinline__ void load_pack16_coherent(Pack<T, N>& dst, const T* p) {
  static_assert(sizeof(Pack<T, N>) == 16, "one 16-byte word");
  uint4 raw;
#if defined(__CUDA_ARCH__)
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
               : "l"(p)
               : "memory");
#else
  host_access(&raw, p, 16, p);
#endif
  memcpy(&dst, &raw, 16);
}

// Cache-hinted 16-byte loads as torch.compile's Triton kernels issue them (evict_first /
// evict_last): L1 eviction priority plus an L2 createpolicy (sm_80+). FIRST for data read
// once (x, residual, q, k, cos, sin), so it leaves L2 before the written lines and the
// per-batch rows (weight, scale, shift, gate: !FIRST). Hints creates both policies once per thread.
struct Hints {
  uint64_t first = 0, last = 0;
};

__device__ __forceinline__ Hints make_hints() {
  Hints h;
#if defined(__CUDA_ARCH__)
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(h.first));
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(h.last));
#endif
  return h;
}

template <bool FIRST, typename T, int N>
__device__ __forceinline__ void load_pack16_hinted(Pack<T, N>& dst, const T* __restrict__ p, const Hints& h) {
  static_assert(sizeof(Pack<T, N>) % 16 == 0, "whole 16-byte words");
  constexpr int kWords = static_cast<int>(sizeof(Pack<T, N>) / 16);
  uint4 raw[kWords];
#if defined(__CUDA_ARCH__)
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const uint4* src = reinterpret_cast<const uint4*>(p) + w;
    if constexpr (FIRST)
      asm("ld.global.nc.L1::evict_first.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(raw[w].x), "=r"(raw[w].y), "=r"(raw[w].z), "=r"(raw[w].w)
          : "l"(src), "l"(h.first));
    else
      asm("ld.global.nc.L1::evict_last.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(raw[w].x), "=r"(raw[w].y), "=r"(raw[w].z), "=r"(raw[w].w)
          : "l"(src), "l"(h.last));
  }
#else
  (void)h;
  host_access(raw, p, sizeof(raw), p);
#endif
  memcpy(&dst, raw, sizeof(raw));
}

// load_pack (VEC: the 16-byte path; else the first `valid` elements), or with HINTED the
// hinted load above, which exists on the 16-byte path only.
template <bool HINTED, bool FIRST, bool VEC = true, typename T, int N>
__device__ __forceinline__ void load_vec(Pack<T, N>& dst, const T* __restrict__ p, const Hints& h, int valid = N) {
  static_assert(!HINTED || VEC, "cache hints only on the 16-byte path");
  if constexpr (HINTED)
    load_pack16_hinted<FIRST>(dst, p, h);
  else
    load_pack<VEC>(dst, p, valid);
}

// Streaming (evict-first) 16-byte accesses, ld.global.cs / st.global.cs: for data touched
// once (x, the residual, the outputs), so that it does not push the operands every row
// re-reads out of L1/L2. Used only by the opt-in column-stationary kernel (flag bit 0).
template <typename T, int N>
__device__ __forceinline__ void load_pack16_cs(Pack<T, N>& dst, const T* __restrict__ p) {
  static_assert(sizeof(Pack<T, N>) == 16, "one 16-byte word");
  uint4 raw;
#if defined(__CUDA_ARCH__)
  asm("ld.global.cs.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
               : "l"(p));
#else
  host_access(&raw, p, 16, p);
#endif
  memcpy(&dst, &raw, 16);
}

template <typename T, int N>
__device__ __forceinline__ void store_pack16_cs(T* __restrict__ p, const Pack<T, N>& src) {
  static_assert(sizeof(Pack<T, N>) == 16, "one 16-byte word");
  uint4 raw;
  memcpy(&raw, &src, 16);
#if defined(__CUDA_ARCH__)
  asm volatile("st.global.cs.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(raw.x), "r"(raw.y), "r"(raw.z),
               "r"(raw.w)
               : "memory");
#else
  host_access(p, &raw, 16, p);
#endif
}

// Asynchronous 16-byte global -> shared copies (cp.async.cg, skipping L1) for the pipelined
// AdaLN kernel: copies in flight hold no registers. A thread waits only for its own copies
// and reads back only what it copied, so no barrier orders the staging.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__)
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem_src) : "memory");
#else
#if defined(LTX_CPU_EMULATION)
  emu_check_align(gmem_src);
  emu_check_align(smem_dst);
#endif
  memcpy(smem_dst, gmem_src, 16);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until at most `Pending` of this thread's committed copy groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
#endif
}

// One 16-byte shared-memory read into a pack.
template <typename T, int N>
__device__ __forceinline__ void load_shared16(Pack<T, N>& dst, const T* p) {
  static_assert(sizeof(Pack<T, N>) == 16, "one 16-byte word");
#if defined(LTX_CPU_EMULATION)
  emu_check_align(p);
#endif
  const uint4 raw = *reinterpret_cast<const uint4*>(p);  // one LDS.128 (a memcpy may be split)
  memcpy(&dst, &raw, 16);
}

// ------------------------------------------------------------------ reduction
// A row's offset in an operand: RowIndex::lean in the lean kernels (the host checked
// rows < 2^31), the general evaluation otherwise.
template <bool LEAN>
__device__ __forceinline__ int64_t row_at(const RowIndex& ri, int64_t row) {
  if constexpr (LEAN)
    return ri.lean(row);
  else
    return ri(row);
}

// Sums v[0..K) over the `tpr` threads that share a row. Rows occupy
// consecutive threads: tpr is a power of two <= 32 (rows inside a warp) or a
// multiple of 32 (rows of whole warps). Every thread of the block must call
// this, active or not: it shuffles with a full mask and may __syncthreads.
// `slot` is the caller's threadIdx.x / tpr; `red` is shared memory for 32 * K floats.
template <int K>
__device__ __forceinline__ void row_sum(float (&v)[K], int tpr, int slot, float* red) {
  const int width = tpr < 32 ? tpr : 32;
  for (int offset = width >> 1; offset > 0; offset >>= 1) {
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] += __shfl_xor_sync(0xffffffffu, v[k], offset);
  }
  if (tpr > 32) {
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int warps_per_row = tpr >> 5;
    __syncthreads();  // the previous row group's readers of `red` are done
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) red[warp * K + k] = v[k];
    }
    __syncthreads();
    const int first = slot * warps_per_row;  // warp / warps_per_row == slot: tpr is a multiple of 32
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = 0.0f;
      for (int w = 0; w < warps_per_row; ++w) s += red[(first + w) * K + k];
      v[k] = s;
    }
  }
}

}  // namespace ltx
