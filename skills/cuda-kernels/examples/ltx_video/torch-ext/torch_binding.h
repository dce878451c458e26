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

// rms_norm with an explicit launch configuration (benchmark sweeps and tests of
// every code path); chunks_per_thread = 0 selects the looping kernel.
at::Tensor rms_norm_with_config(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps,
                                int64_t threads_per_row, int64_t chunks_per_thread);

// The AdaLN norms with an explicit launch configuration, for the opt-in sweep
// (benchmarks/bench_ops.py --sweep-adaln) and tests. rows_per_block 0: the default rows
// kernel forced to threads_per_row x chunks_per_thread (0 chunks = looping kernel); flags 0,
// or 4 = read scale/shift after the reduction (fewer registers; threads_per_row <= 256).
// rows_per_block >= 1: the column-stationary kernel - each group of
// threads_per_row threads keeps one batch's weight/scale/shift/gate chunks in registers
// and normalizes up to rows_per_block consecutive rows of that batch; flags bit 0 =
// streaming cache hints on x/residual/outputs, bit 1 = prefetch the next row's x.
// 16-byte path only (refused otherwise); per-token scale/shift fall back to the rows kernel.
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

// gelu_tanh at a forced launch configuration, for the GELU sweep (bench_ops.py --sweep-gelu)
// and tests: blocks of threads_per_block (64, 128, 256) threads, each moving `unroll` (1, 2, 4,
// 8) 16-byte chunks per grid-stride step. Outputs equal gelu_tanh's bit for bit.
at::Tensor gelu_tanh_with_config(const at::Tensor& x, int64_t threads_per_block, int64_t unroll);

// diffusers' LTX apply_rotary_emb: interleaved (real, imag) pairs, fp32 cos/sin
at::Tensor rope_interleaved(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// rope_interleaved with a forced kernel, for the RoPE sweep (bench_ops.py --sweep-rope) and
// tests: chunks_per_thread 0 = the per-row kernel, 1/2/4 = the flat kernel (x, cos, sin with
// rows back to back and 16-byte aligned; refused otherwise); elements_per_thread 2/4 with
// chunks_per_thread 1 = the narrow flat kernel (same checks), 0 = 16-byte chunks; flags 1
// (narrow kernel only) = its streaming-cache-hint variant.
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
// rms_norm_rope_qk at a forced launch configuration (threads per row x 16-byte chunks per
// thread, 1..4 chunks), for the q/k sweep (bench_ops.py --sweep-qk) and tests; 16-byte path
// only (other inputs are refused, not rerouted). flags 64: the lean one-chunk kernel (at
// most 48 registers; threads_per_row <= 256).
std::tuple<at::Tensor, at::Tensor> rms_norm_rope_qk_with_config(
    const at::Tensor& q, const at::Tensor& k, const std::optional<at::Tensor>& weight_q,
    const std::optional<at::Tensor>& weight_k, const at::Tensor& cos, const at::Tensor& sin, double eps,
    int64_t threads_per_row, int64_t chunks_per_thread, int64_t flags);

// Programmatic dependent launch for the ops' kernels on compute capability 9.0+ (on unless
// LTX_VIDEO_PDL=0 was set): switches it for the whole process and returns the previous
// setting. For benchmarks and tests; outputs are identical either way.
bool set_pdl(bool enable);

// The default ops' cache-hint rule (evict-first loads for calls within a share of the L2
// size; off unless LTX_VIDEO_CACHE_HINTS=1 was set): switches it for the whole process and
// returns the previous setting. For A/B timing in a model; outputs are identical either way.
bool set_cache_hints(bool enable);
