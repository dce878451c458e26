// Host-side launch API of the sg-elementwise kernels. Free of torch types: kernel_src/ includes
// only CUDA headers, and torch-ext/torch_binding.cpp fills these structs from tensors.
// Conventions: device pointers; sizes and strides in elements; strides are between rows
// (the last dimension is always contiguous).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "dtype.h"

namespace ks {

// The formulas of elementwise.cu's apply<>; add one here and there.
enum class Activation : int { kGeluTanh = 0, kSilu = 1 };

// out[r, :n] = f(x[r, :n]); x rows are x_stride apart, out is [rows, n] with rows n apart.
// A contiguous tensor is one row of numel elements.
struct ElementwiseArgs {
  DType dtype;
  Activation act;
  void* out;
  const void* x;
  int64_t x_stride;
  int64_t rows;
  int64_t n;
};

// Launches on `stream`; returns the launch's error (cudaSuccess when there is no element).
cudaError_t elementwise(const ElementwiseArgs& args, cudaStream_t stream);

}  // namespace ks
