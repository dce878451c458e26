// Tensor-level entry points of the prototype (registered in torch_binding.cpp).
#pragma once

#include <ATen/core/Tensor.h>

at::Tensor swish(const at::Tensor& x, double beta);
