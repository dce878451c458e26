// Host-side launch API of the sg-glu kernels. Free of torch types: kernel_src/ includes
// only CUDA headers, and torch-ext/torch_binding.cpp fills these structs from tensors.
// Conventions: device pointers; sizes and strides in elements; strides are between rows
// (the last dimension is always contiguous).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "dtype.h"

namespace ks {

enum class GluActivation : int { kSilu = 0, kGelu = 1, kGeluTanh = 2 };

// out[r, :d] = act(gate[r, :d]) * up[r, :d]; gate and up rows are x_stride apart (for a
// fused gate/up projection they are the two halves of one row: up = gate + d or gate - d).
// out is [rows, d] with rows d apart.
struct GluArgs {
  DType dtype;
  GluActivation act;
  void* out;
  const void* gate;
  const void* up;
  int64_t x_stride;
  int64_t rows;
  int64_t d;
};

// Launches on `stream`; returns the launch's error (cudaSuccess when rows or d is 0).
cudaError_t glu(const GluArgs& args, cudaStream_t stream);

}  // namespace ks
