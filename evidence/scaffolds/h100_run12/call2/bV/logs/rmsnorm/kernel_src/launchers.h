// Host-side launch API of the sg-rmsnorm kernels. Free of torch types: kernel_src/ includes
// only CUDA headers, and torch-ext/torch_binding.cpp fills these structs from tensors.
// Conventions: device pointers; sizes and strides in elements; strides are between rows
// (the last dimension is always contiguous); nullptr marks an absent optional operand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "dtype.h"

namespace ks {

// out = x * rsqrt(mean(x^2) + eps) * weight, per row of `hidden` elements.
// With residual != nullptr: s = x + residual is rounded to the dtype, written to sum_out,
// and normalized instead of x (what transformers does in bf16). sum_out may alias x or
// residual (each element is read before it is written, by the thread that writes it).
struct RmsNormArgs {
  DType dtype;
  void* out;
  int64_t out_stride;
  const void* x;
  int64_t x_stride;
  const void* residual;
  int64_t residual_stride;
  void* sum_out;
  int64_t sum_stride;
  const void* weight;
  int64_t rows;
  int64_t hidden;
  float eps;
};

// Launches on `stream`; returns the launch's error (cudaSuccess when rows or hidden is 0).
cudaError_t rms_norm(const RmsNormArgs& args, cudaStream_t stream);

}  // namespace ks
