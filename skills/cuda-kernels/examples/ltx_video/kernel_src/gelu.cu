// gelu.cu - GELU with the tanh approximation, the activation of LTX-Video's
// FeedForward (diffusers GELU(dim, 4 * dim, approximate="tanh"), applied to
// the [B, S, 8192] output of its first projection).
//
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//
// Evaluated as x / (1 + exp(-2u)), which equals the formula above because
// 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)). That costs one MUFU exp and one
// reciprocal instead of tanhf's longer sequence, and it avoids the
// cancellation in 1 + tanh(u) for negative x. Relative error vs float64 is
// ~1e-6, far below bf16/fp16 rounding and inside the fp32 test bound.
//
// Elementwise and memory bound (2 + 2 bytes per bf16 element): each thread
// moves UNROLL 16-byte chunks, issuing all loads before any math. The vector
// path needs 16-byte aligned input and output; the < 8 tail elements are done
// by block 0 with scalar accesses. Misaligned input runs the scalar kernel
// (ltx_ops.cpp checks the pointers).

#include "ltx_common.cuh"

namespace ltx {
namespace {

__device__ __forceinline__ float gelu_tanh_f(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  const float u = kSqrt2OverPi * fmaf(kCubic * x * x, x, x);
  return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

constexpr int kGeluUnroll = 4;
constexpr int kGeluThreads = 256;

template <typename T, bool VEC>
__global__ void __launch_bounds__(kGeluThreads) gelu_tanh_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                                 int64_t n) {
  constexpr int N = VEC ? VecWidth<T>::value : 1;
  using P = Pack<T, N>;
  const int64_t chunks = n / N;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * kGeluUnroll;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * kGeluUnroll + threadIdx.x; base < chunks;
       base += stride) {
    P v[kGeluUnroll];
#pragma unroll
    for (int u = 0; u < kGeluUnroll; ++u) {
      const int64_t c = base + static_cast<int64_t>(u) * blockDim.x;
      if (c < chunks) load_pack<VEC>(v[u], x + c * N, N);
    }
#pragma unroll
    for (int u = 0; u < kGeluUnroll; ++u) {
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

void launch_gelu_tanh(DType dt, const void* x, void* y, int64_t n, bool vec, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t per_block = static_cast<int64_t>(kGeluThreads) * kGeluUnroll * (vec ? VecWidth<T>::value : 1);
    const dim3 grid(grid_for(n, static_cast<int>(per_block)));
    if (vec)
      gelu_tanh_kernel<T, true><<<grid, dim3(kGeluThreads), 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
    else
      gelu_tanh_kernel<T, false><<<grid, dim3(kGeluThreads), 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace ltx
