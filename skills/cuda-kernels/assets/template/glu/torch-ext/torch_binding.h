#pragma once

#include <ATen/core/Tensor.h>

#include <string>

// The op of the __NAME__ kernel, as registered in torch_binding.cpp. Returns a new
// contiguous tensor shaped like the input with the last dimension halved.
at::Tensor glu(const at::Tensor& input, std::string activation, bool gate_first);
