// Tensor-level entry points of the qwen3_8b kernels (registered as torch ops in
// torch_binding.cpp). Each validates its inputs, allocates outputs, sets the device and
// stream, and hands raw pointers and strides to the launchers in kernel_src/.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

at::Tensor rms_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps);

std::tuple<at::Tensor, at::Tensor> fused_add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                                      const std::optional<at::Tensor>& weight, double eps);

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

void rope_(at::Tensor& q, at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin);

std::tuple<at::Tensor, at::Tensor> rope(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                        const at::Tensor& sin);

// q_norm + k_norm (RMSNorm over head_dim, each with its weight) then rotate-half RoPE, in
// place on q [B, S, Hq, D] and k [B, S, Hk, D] (any strides); cos/sin [B or 1, S, D].
void qk_norm_rope_(at::Tensor& q, at::Tensor& k, const at::Tensor& q_weight, const at::Tensor& k_weight,
                   const at::Tensor& cos, const at::Tensor& sin, double eps);

// rms_norm / fused_add_rms_norm with the launch configuration forced (0 / -1 = default);
// used by benchmarks/ to compare configurations in one run. The second output is the sum
// (fused add) or an empty tensor.
std::tuple<at::Tensor, at::Tensor> rms_norm_tuned(const at::Tensor& x, const std::optional<at::Tensor>& residual,
                                                  const std::optional<at::Tensor>& weight, double eps, int64_t threads,
                                                  int64_t rows_per_group, int64_t persistent, int64_t hint);

// swiglu / rope_ with the launch configuration forced (0 = default), for the sweep.
at::Tensor swiglu_tuned(const at::Tensor& gate, const at::Tensor& up, int64_t threads, int64_t vpt, int64_t exact,
                        int64_t width, int64_t flat);

void rope_tuned_(at::Tensor& q, at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin, int64_t tokens_per_block,
                 int64_t tokens_per_thread, int64_t reg_cap, int64_t heads_per_thread,
                 int64_t variant);
