#pragma once

#include <ATen/core/Tensor.h>

// The op of the __NAME__ kernel, as registered in torch_binding.cpp. Returns a new
// contiguous tensor shaped like the input.
at::Tensor rope(const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin, bool interleaved);
