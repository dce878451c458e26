// proto.h - torch-free launch API of the prototype op (rename freely).
// Same style as the scaffolds and references/kernel-templates.md: device pointers, sizes in
// elements, one launcher per op that dispatches the dtype and returns cudaGetLastError().
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace proto {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// out[i] = x[i] * sigmoid(beta * x[i]) (Swish; beta = 1 is SiLU), n elements, fp32 math.
cudaError_t swish(DType dtype, void* out, const void* x, int64_t n, float beta, cudaStream_t stream);

}  // namespace proto
