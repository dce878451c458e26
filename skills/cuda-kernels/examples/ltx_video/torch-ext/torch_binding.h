// Host entry points of ltx-video-kernels; defined in kernel_src/*.cu and
// registered as torch ops in torch_binding.cpp. CUDA tensors only: the Python
// package routes CPU tensors (and unsupported dtype mixes) to reference.py.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

// y = x * rsqrt(mean(x^2, -1) + eps) [* weight]
at::Tensor rms_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps);

// y = rms_norm(x, weight, eps) * (1 + scale) + shift; scale/shift broadcast to x
at::Tensor rms_norm_modulate(const at::Tensor& x, const std::optional<at::Tensor>& weight, const at::Tensor& scale,
                             const at::Tensor& shift, double eps);

// h = residual + x [* gate]; returns (rms_norm(h, weight, eps) [* (1 + scale) + shift], h)
std::tuple<at::Tensor, at::Tensor> add_rms_norm_modulate(const at::Tensor& x, const at::Tensor& residual,
                                                         const std::optional<at::Tensor>& gate,
                                                         const std::optional<at::Tensor>& weight,
                                                         const std::optional<at::Tensor>& scale,
                                                         const std::optional<at::Tensor>& shift, double eps);

// rms_norm at a forced launch configuration; chunks_per_thread 0 = the looping kernel.
// The *_with_config ops serve the launch sweeps and tests; their knobs are documented once,
// in ltx_video_kernels/__init__.py.
at::Tensor rms_norm_with_config(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps,
                                int64_t threads_per_row, int64_t chunks_per_thread);

// The AdaLN norms at a forced configuration: rows_per_block 0 = the rows kernel (flags
// ADALN_*), >= 1 = the column-stationary kernel. 16-byte path only where the kernel needs it.
at::Tensor rms_norm_modulate_with_config(const at::Tensor& x, const std::optional<at::Tensor>& weight,
                                         const at::Tensor& scale, const at::Tensor& shift, double eps,
                                         int64_t threads_per_row, int64_t chunks_per_thread, int64_t rows_per_block,
                                         int64_t flags);
std::tuple<at::Tensor, at::Tensor> add_rms_norm_modulate_with_config(
    const at::Tensor& x, const at::Tensor& residual, const std::optional<at::Tensor>& gate,
    const std::optional<at::Tensor>& weight, const at::Tensor& scale, const at::Tensor& shift, double eps,
    int64_t threads_per_row, int64_t chunks_per_thread, int64_t rows_per_block, int64_t flags);

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
at::Tensor gelu_tanh(const at::Tensor& x);

// gelu_tanh at a forced launch configuration; the same bits as gelu_tanh.
at::Tensor gelu_tanh_with_config(const at::Tensor& x, int64_t threads_per_block, int64_t unroll);

// diffusers' LTX apply_rotary_emb: interleaved (real, imag) pairs, fp32 cos/sin
at::Tensor rope_interleaved(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// rope_interleaved with a forced kernel (per-row, flat, narrow; refused where it cannot run).
at::Tensor rope_interleaved_with_config(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                        int64_t chunks_per_thread, int64_t elements_per_thread, int64_t flags);

// rope_interleaved(rms_norm(x, weight, eps), cos, sin) in one pass
at::Tensor rms_norm_rope(const at::Tensor& x, const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                         const at::Tensor& sin, double eps);

// the same for q and k together, reading cos/sin once
std::tuple<at::Tensor, at::Tensor> rms_norm_rope_qk(const at::Tensor& q, const at::Tensor& k,
                                                    const std::optional<at::Tensor>& weight_q,
                                                    const std::optional<at::Tensor>& weight_k, const at::Tensor& cos,
                                                    const at::Tensor& sin, double eps);
// rms_norm_rope_qk at a forced configuration; 16-byte path only (refused, not rerouted).
std::tuple<at::Tensor, at::Tensor> rms_norm_rope_qk_with_config(
    const at::Tensor& q, const at::Tensor& k, const std::optional<at::Tensor>& weight_q,
    const std::optional<at::Tensor>& weight_k, const at::Tensor& cos, const at::Tensor& sin, double eps,
    int64_t threads_per_row, int64_t chunks_per_thread, int64_t flags);

// Programmatic dependent launch on cc 9.0+ (on unless LTX_VIDEO_PDL=0), process-wide;
// returns the previous setting. Outputs identical either way.
bool set_pdl(bool enable);

// The default ops' cache-hint rule (off unless LTX_VIDEO_CACHE_HINTS=1), process-wide;
// returns the previous setting. Outputs identical either way.
bool set_cache_hints(bool enable);
