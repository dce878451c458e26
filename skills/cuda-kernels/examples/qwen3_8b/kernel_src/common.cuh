// Shared device helpers for the qwen3_8b kernels: dtype conversion, 16-byte packs,
// warp/block reductions and the host-side checks that gate the vector paths.
//
// Conversions use the explicit intrinsics (__bfloat162float, __float2bfloat16_rn, ...)
// rather than operators, so the code compiles both with kernel-builder's flags and with
// torch.utils.cpp_extension's default -D__CUDA_NO_HALF_OPERATORS__ / _CONVERSIONS__.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <c10/cuda/CUDAException.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "qwen3_kernels.h"

namespace qwen3_kernels {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// W consecutive elements moved as one access: W = 16 / sizeof(T) gives one 128-bit
// LDG/STG per pack; W = 1 is the scalar path for unaligned or odd-sized data.
template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

template <typename T>
constexpr int kVecElems = 16 / static_cast<int>(sizeof(T));

// 16-byte packs move through a uint4, kept as four 32-bit registers of two 16-bit values:
// unpacked per element, bf16 kernels took up to twice the registers and spilled.
template <typename T, int W>
__device__ __forceinline__ Pack<T, W> load_pack(const T* p) {
  Pack<T, W> r;
  if constexpr (sizeof(T) * W == 16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    memcpy(&r, &raw, 16);
  } else {
    r = *reinterpret_cast<const Pack<T, W>*>(p);
  }
  return r;
}

// Streaming load (ld.global.nc.L1::no_allocate) of a pack read once, so single-use
// activations do not evict what is reused from L1 (norm weight, cos/sin). Only for data no
// thread of the kernel writes; other pack sizes take the plain load.
template <typename T, int W>
__device__ __forceinline__ Pack<T, W> load_pack_stream(const T* p) {
  if constexpr (sizeof(T) * W == 16) {
    uint4 raw;
#if defined(__CUDA_ARCH__)
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
        : "l"(p));
#else  // the CPU emulator (tests/test_kernels_emulated.py): no PTX there
    raw = *reinterpret_cast<const uint4*>(p);
#endif
    Pack<T, W> r;
    memcpy(&r, &raw, 16);
    return r;
  } else {
    return load_pack<T, W>(p);
  }
}

template <typename T, int W, bool STREAM>
__device__ __forceinline__ Pack<T, W> load_pack_hint(const T* p) {
  if constexpr (STREAM) {
    return load_pack_stream<T, W>(p);
  } else {
    return load_pack<T, W>(p);
  }
}

// 16-byte stores use st.global.v4.b32 explicitly: as a uint4 assignment nvcc split every
// pack but the first into four 32-bit STGs (SwiGLU, 2-4 packs per thread). The "memory"
// clobber keeps other accesses from moving across the store.
template <typename T, int W>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, W>& v) {
  if constexpr (sizeof(T) * W == 16) {
    uint4 raw;
    memcpy(&raw, &v, 16);
#if defined(__CUDA_ARCH__)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(raw.x), "r"(raw.y), "r"(raw.z),
                 "r"(raw.w)
                 : "memory");
#else
    *reinterpret_cast<uint4*>(p) = raw;
#endif
  } else {
    *reinterpret_cast<Pack<T, W>*>(p) = v;
  }
}

// ------------------------------------------------- rows at any width, alignment and stride
// A row is cut at its output's 16-byte boundaries: a scalar head (< W elements), whole
// packs, a scalar tail. An input whose phase (offset from the 16-byte grid) equals the
// output's reads each pack with one aligned load; one whose phase differs reads the two
// aligned packs that overlap it and shifts the elements into place in registers (the
// rmsnorm scaffold's load_raw / window: assets/template/common/kernel_src/common.cuh).
template <typename T>
__host__ __device__ __forceinline__ int phase_of(const T* p) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(p) % 16 / sizeof(T));
}

struct RowSplit {
  int head;
  int64_t packs;
  int tail;
};

template <typename T>
__device__ __forceinline__ RowSplit split_row(const T* out, int64_t n) {
  constexpr int W = kVecElems<T>;
  const int phase = phase_of(out);
  int head = phase == 0 ? 0 : W - phase;
  if (head > n) head = static_cast<int>(n);
  const int64_t packs = (n - head) / W;
  return {head, packs, static_cast<int>(n - head - packs * W)};
}

struct RawPack {
  uint4 a, b;
};

// kOnGrid: the caller knows p is 16-byte aligned (one load; b stays unused).
template <bool kOnGrid, typename T>
__device__ __forceinline__ RawPack load_raw(const T* p) {
  RawPack r;
  r.b = make_uint4(0u, 0u, 0u, 0u);
  if constexpr (kOnGrid) {
    r.a = *reinterpret_cast<const uint4*>(p);
  } else {
    const int s = phase_of(p);
    const uint4* base = reinterpret_cast<const uint4*>(p - s);
    r.a = base[0];
    if (s != 0) r.b = base[1];  // predicated, not a branch that waits for r.a
  }
  return r;
}

template <bool kOnGrid, typename T>
__device__ __forceinline__ Pack<T, kVecElems<T>> window(const RawPack& r, const T* p) {
  Pack<T, kVecElems<T>> v;
  if constexpr (kOnGrid) {
    memcpy(&v, &r.a, 16);
  } else {
    const int off = phase_of(p) * static_cast<int>(sizeof(T));  // bytes, 0..15
    const int q = off >> 2;
    const int shift = (off & 3) * 8;
    const uint32_t w[8] = {r.a.x, r.a.y, r.a.z, r.a.w, r.b.x, r.b.y, r.b.z, r.b.w};
    // w[i + q] by selects: a runtime index into a register array would go to local memory.
    auto pick = [&](int i) -> uint64_t {
      uint32_t x = w[i];
      x = q == 1 ? w[i + 1] : x;
      x = q == 2 ? w[i + 2] : x;
      x = q == 3 ? w[i + 3] : x;
      return x;
    };
    auto word = [&](int i) { return static_cast<uint32_t>(((pick(i + 1) << 32) | pick(i)) >> shift); };
    const uint4 out = make_uint4(word(0), word(1), word(2), word(3));
    memcpy(&v, &out, 16);
  }
  return v;
}

// Pack <-> float conversion, 16-bit types two at a time (cvt.rn.bf16x2.f32 and friends):
// element by element, each value took its own register and several bf16 kernels spilled.
// bf16 -> fp32 is bit placement (low element: word << 16; high: word & 0xffff0000), one ALU
// op at each use. Through __bfloat1622float2 nvcc kept every high half live in its own
// register from load to store: 8 registers per pack instead of 4, past the register caps.
template <typename T, int W>
__device__ __forceinline__ void unpack(const Pack<T, W>& p, float (&f)[W]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && W % 2 == 0) {
#pragma unroll
    for (int i = 0; i < W / 2; ++i) {
      uint32_t two;
      memcpy(&two, &p.v[2 * i], 4);
      f[2 * i] = __uint_as_float(two << 16);
      f[2 * i + 1] = __uint_as_float(two & 0xffff0000u);
    }
  } else if constexpr (std::is_same_v<T, __half> && W % 2 == 0) {
#pragma unroll
    for (int i = 0; i < W / 2; ++i) {
      __half2 two;
      memcpy(&two, &p.v[2 * i], 4);
      const float2 ff = __half22float2(two);
      f[2 * i] = ff.x;
      f[2 * i + 1] = ff.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < W; ++i) f[i] = to_float(p.v[i]);
  }
}

template <typename T, int W>
__device__ __forceinline__ Pack<T, W> pack_floats(const float (&f)[W]) {
  Pack<T, W> p;
  if constexpr (std::is_same_v<T, __nv_bfloat16> && W % 2 == 0) {
#pragma unroll
    for (int i = 0; i < W / 2; ++i) {
      const __nv_bfloat162 two = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
      memcpy(&p.v[2 * i], &two, 4);
    }
  } else if constexpr (std::is_same_v<T, __half> && W % 2 == 0) {
#pragma unroll
    for (int i = 0; i < W / 2; ++i) {
      const __half2 two = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
      memcpy(&p.v[2 * i], &two, 4);
    }
  } else {
#pragma unroll
    for (int i = 0; i < W; ++i) p.v[i] = from_float<T>(f[i]);
  }
  return p;
}

// Sum over the `width` lanes of an aligned lane group (width a power of two <= 32).
// Every lane of the warp must call it (full mask), also lanes with no data.
template <int WIDTH>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset, WIDTH);
  }
  return v;
}

// Block-wide sum, returned to every thread. `smem` (one float per warp) must not be reused
// until every thread has read it: callers alternate two buffers, made safe by the barrier
// inside (a warp reaches a buffer again only after all passed the call in between).
__device__ __forceinline__ float block_sum(float v, float* smem) {
  v = group_sum<32>(v);
  const int warps = static_cast<int>(blockDim.x) >> 5;
  if (warps == 1) return v;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  float t = lane < warps ? smem[lane] : 0.0f;
  return group_sum<32>(t);
}

// ------------------------------------------------------------------------- host helpers

inline bool aligned_to(const void* p, int bytes) { return (reinterpret_cast<uintptr_t>(p) % bytes) == 0; }
inline bool aligned16(const void* p) { return aligned_to(p, 16); }

inline int element_size(DType t) { return t == DType::kFloat32 ? 4 : 2; }

inline int vec_elems(DType t) { return 16 / element_size(t); }

// SM count of the current device, cached per device (the launchers run on every call).
inline int sm_count() {
  static int cached[64] = {0};
  int dev = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) {
    int n = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }
  if (cached[dev] == 0) {
    int n = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    cached[dev] = n;
  }
  return cached[dev];
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dispatch `f` with a typed null pointer of the CUDA element type for `dtype`.
template <typename F>
inline auto dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat16:
      return f(static_cast<__half*>(nullptr));
    case DType::kBFloat16:
      return f(static_cast<__nv_bfloat16*>(nullptr));
    case DType::kFloat32:
    default:
      return f(static_cast<float*>(nullptr));
  }
}

}  // namespace qwen3_kernels
