// Tensor-level entry points of the long-row kernels (registered in torch_binding.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

// lse over the last dimension, float32, shape logits.shape[:-1]. path: 0 auto, 1 one block
// per row, 2 a thread-block cluster per row, 3 two passes (tests and benchmarks force one).
at::Tensor logsumexp(const at::Tensor& logits, int64_t path);

// (loss, lse) per row: loss = lse - logits[target] (0 where target == ignore_index).
std::tuple<at::Tensor, at::Tensor> cross_entropy(const at::Tensor& logits, const at::Tensor& target,
                                                 int64_t ignore_index, int64_t path);
