#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

// The ops of the __NAME__ kernel, as registered in torch_binding.cpp. Each returns new
// contiguous tensors shaped like the input.
at::Tensor rms_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight, double epsilon);
std::tuple<at::Tensor, at::Tensor> fused_add_rms_norm(const at::Tensor& input, const at::Tensor& residual,
                                                      const std::optional<at::Tensor>& weight, double epsilon);
