#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

// Defined in kernel_src/glu.cu. Expects the checks in torch_binding.cpp to have passed:
// CUDA input with at least one dimension and an even last dimension, float32/float16/
// bfloat16; activation 0 = silu, 1 = gelu (erf), 2 = gelu_tanh; gate_first: whether the
// first half of the last dimension is the gate. Returns a new contiguous tensor shaped like
// input with the last dimension halved.
at::Tensor glu_cuda(const at::Tensor& input, int64_t activation, bool gate_first);
