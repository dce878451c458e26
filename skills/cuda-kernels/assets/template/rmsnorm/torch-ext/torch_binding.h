#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

// Defined in kernel_src/rmsnorm.cu. Expects the checks in torch_binding.cpp to have
// passed: CUDA input with at least one dimension, float32/float16/bfloat16, and an
// optional contiguous 1-D weight of size input.size(-1) with the input's dtype and device.
// Returns a new contiguous tensor shaped like input.
at::Tensor rms_norm_cuda(const at::Tensor& input, const std::optional<at::Tensor>& weight, double epsilon);
