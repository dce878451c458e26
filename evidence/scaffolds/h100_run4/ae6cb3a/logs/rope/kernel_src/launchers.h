// Host-side launch API of the sg-rope kernels. Free of torch types: kernel_src/ includes
// only CUDA headers, and torch-ext/torch_binding.cpp fills these structs from tensors.
// Conventions: device pointers; sizes and strides in elements; the last dimension is
// always contiguous.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "dtype.h"

namespace ks {

// Rotary embedding of x viewed as [batch, heads, seq, dim] (any strides x_sb, x_sh, x_ss),
// with cos/sin tables [batch or 1, seq, dim] (cs_sb = 0 broadcasts one table):
//   rotate-half (Llama, Qwen):  pairs (i, i + dim/2)
//     out[i] = x[i] cos[i] - x[i + dim/2] sin[i],  out[i + dim/2] = x[i + dim/2] cos[i + dim/2] + x[i] sin[i + dim/2]
//   interleaved (LTX-Video, GPT-J): pairs (2k, 2k + 1)
//     out[2k] = x[2k] cos[2k] - x[2k+1] sin[2k],    out[2k+1] = x[2k+1] cos[2k+1] + x[2k] sin[2k+1]
// out is contiguous [batch, heads, seq, dim]; dim is even.
struct RopeArgs {
  DType dtype;
  bool interleaved;
  void* out;
  const void* x;
  int64_t batch, heads, seq, dim;
  int64_t x_sb, x_sh, x_ss;
  const void* cos;
  const void* sin;
  int64_t cs_sb, cs_ss;
};

// Launches on `stream`; returns the launch's error (cudaSuccess when there is no element).
cudaError_t rope(const RopeArgs& args, cudaStream_t stream);

}  // namespace ks
