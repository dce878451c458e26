// gelu_kernels.cuh - the GELU-tanh kernel (notes in gelu.cu).
// Header-only so that tests/kernels_emulated.cpp can run them on a CPU.
#pragma once

#include "ltx_common.cuh"

namespace ltx {
namespace {

__device__ __forceinline__ float gelu_tanh_f(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  const float u = kSqrt2OverPi * fmaf(kCubic * x * x, x, x);
  return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

// UNROLL: 16-byte chunks (elements on the scalar path) each thread loads before any math,
// one of kGeluUnrollChoices; blocks of kGeluThreadChoices threads (ltx_kernels.h).
template <typename T, bool VEC, int UNROLL>
__global__ void __launch_bounds__(kGeluMaxThreads) gelu_tanh_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                                    int64_t n) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  constexpr int N = VEC ? VecWidth<T>::value : 1;
  using P = Pack<T, N>;
  const int64_t chunks = n / N;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * UNROLL;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * UNROLL + threadIdx.x; base < chunks;
       base += stride) {
    P v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t c = base + static_cast<int64_t>(u) * blockDim.x;
      if (c < chunks) load_pack<VEC>(v[u], x + c * N, N);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t c = base + static_cast<int64_t>(u) * blockDim.x;
      if (c < chunks) {
#pragma unroll
        for (int i = 0; i < N; ++i) v[u].e[i] = from_float<T>(gelu_tanh_f(to_float(v[u].e[i])));
        store_pack<VEC>(y + c * N, v[u], N);
      }
    }
  }
  if constexpr (VEC) {
    const int64_t done = chunks * N;  // fewer than N elements remain
    if (blockIdx.x == 0 && threadIdx.x < n - done) {
      const int64_t i = done + threadIdx.x;
      y[i] = from_float<T>(gelu_tanh_f(to_float(x[i])));
    }
  }
}

}  // namespace
}  // namespace ltx
