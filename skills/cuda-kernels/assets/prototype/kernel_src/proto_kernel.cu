// proto_kernel.cu - the prototype's kernel and launcher: CUDA headers only, no torch, so
// nvcc compiles it in seconds and scripts/emulate_kernel.py can run it on a CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "proto.h"

namespace proto {
namespace {

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

// A grid-stride loop: correct for any n with any grid. Start here; vectorize once it is right.
template <typename T>
__global__ void __launch_bounds__(256) swish_kernel(T* __restrict__ out, const T* __restrict__ x, int64_t n,
                                                     float beta) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = to_float(x[i]);
    out[i] = from_float<T>(v / (1.f + __expf(-beta * v)));
  }
}

template <typename T>
cudaError_t launch(void* out, const void* x, int64_t n, float beta, cudaStream_t stream) {
  const int64_t blocks = (n + 255) / 256;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  swish_kernel<T><<<grid, 256, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(x), n, beta);
  return cudaGetLastError();
}

}  // namespace

cudaError_t swish(DType dtype, void* out, const void* x, int64_t n, float beta, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;  // a grid of zero blocks is a launch error
  switch (dtype) {
    case DType::kFloat32:
      return launch<float>(out, x, n, beta, stream);
    case DType::kFloat16:
      return launch<__half>(out, x, n, beta, stream);
    case DType::kBFloat16:
      return launch<__nv_bfloat16>(out, x, n, beta, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace proto
