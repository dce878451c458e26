#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

// The op of the __NAME__ kernel, as registered in torch_binding.cpp. Returns a new
// contiguous tensor shaped like the input.
at::Tensor layer_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& scale,
                      const std::optional<at::Tensor>& shift, double epsilon);
