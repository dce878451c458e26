// Host-side launch API of the sg-layernorm kernels. Free of torch types: kernel_src/ includes
// only CUDA headers, and torch-ext/torch_binding.cpp fills these structs from tensors.
// Conventions: device pointers; sizes and strides in elements; strides are between rows
// (the last dimension is always contiguous); nullptr marks an absent optional operand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "dtype.h"

namespace ks {

// LayerNorm with AdaLN modulation, per row of `hidden` elements:
//   n = (x - mean) * rsqrt(var + eps)            (biased variance, like torch)
//   y = (n * weight + bias) * (1 + scale) + shift
// weight, bias: [hidden]; scale, shift: rows of [hidden], row r using modulation row
// r / rows_per_mod (mod_stride elements apart; 0 broadcasts one row). Any of the four may
// be nullptr (skipped).
struct LayerNormArgs {
  DType dtype;
  void* out;
  int64_t out_stride;
  const void* x;
  int64_t x_stride;
  const void* weight;
  const void* bias;
  const void* scale;
  const void* shift;
  int64_t mod_stride;
  int64_t rows_per_mod;
  int64_t rows;
  int64_t hidden;
  float eps;
};

// Launches on `stream`; returns the launch's error (cudaSuccess when rows or hidden is 0).
cudaError_t layer_norm(const LayerNormArgs& args, cudaStream_t stream);

}  // namespace ks
