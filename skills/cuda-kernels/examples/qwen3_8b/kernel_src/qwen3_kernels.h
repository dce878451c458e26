// Host-side launch API of the qwen3_8b kernels.
//
// The torch binding (torch-ext/torch_binding.cpp) validates tensors, allocates outputs and
// fills these plain structs; the .cu files pick a kernel configuration and launch. Keeping
// torch types out of this header keeps the .cu translation units small (they include only
// c10's CUDA error macros), so nvcc compiles each in seconds.
//
// Conventions for every struct: pointers are device pointers; strides and sizes are in
// elements (not bytes); every index is 64-bit; `dtype` applies to all tensors of the call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qwen3_kernels {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// y = x * rsqrt(mean(x^2) + eps) * weight over rows of `hidden` elements.
// With residual != nullptr (fused add): s = round_to_dtype(x + residual) is written to
// sum_out and normalized instead of x.
struct RmsNormParams {
  DType dtype;
  void* out;
  int64_t out_row_stride;
  void* sum_out;  // fused add only
  int64_t sum_row_stride;
  const void* x;
  int64_t x_row_stride;
  const void* residual;  // nullptr: plain RMSNorm
  int64_t residual_row_stride;
  const void* weight;  // nullptr: no weight (multiply by 1)
  int64_t rows;
  int64_t hidden;
  float eps;
};

// Overrides for the benchmark's tuning sweep; 0 / -1 mean "use the built-in heuristic".
struct RmsNormTuning {
  int threads = 0;         // block size of the row kernels
  int rows_per_group = 0;  // packed small-row kernel: rows each lane group handles
  int persistent = -1;     // 1 = grid of (SMs x occupancy) blocks looping over rows (row kernel; packed
                           // kernel: the pipelined variant that prefetches the next row); 0/-1 = one pass
  int hint = 0;            // row kernel, bit 0: activations loaded with ld.global.nc.L1::no_allocate;
                           // bit 1: weight loaded after the reduction instead of together with x;
                           // bit 2: the generic instance even for rows it specializes (kFullRowNvec);
                           // bit 3 (alone): the two-pass kernel (torch.compile's loop: s is stored,
                           // then read back after the reduction instead of held in registers)
};

void launch_rms_norm(const RmsNormParams& p, const RmsNormTuning& tuning, cudaStream_t stream);

// out = silu(gate) * up over a [rows, cols] grid; each operand has its own row stride and a
// contiguous last dimension.
struct SwiGluParams {
  DType dtype;
  void* out;
  int64_t out_row_stride;
  const void* gate;
  int64_t gate_row_stride;
  const void* up;
  int64_t up_row_stride;
  int64_t rows;
  int64_t cols;
};

// Overrides for the benchmark's sweep; 0 = built-in choice.
struct SwiGluTuning {
  int threads = 0;  // block size (multiple of 32, <= 512)
  int vpt = 0;      // 16-byte packs of each operand per thread: 1, 2 or 4
  int exact = 0;    // 1 = expf and IEEE division (the first version) instead of ex2.approx + rcp.approx
  int width = 0;    // bytes per access of the flat kernel: 4, 8 or 16 (0 = built-in)
  int flat = -1;    // contiguous operands: 1 = flat kernel (one access per thread), 0 = grid-stride kernel
};

void launch_swiglu(const SwiGluParams& p, const SwiGluTuning& tuning, cudaStream_t stream);

// Rotate-half RoPE on q [B, Hq, S, D] and k [B, Hk, S, D] with cos/sin [B or 1, S, D].
// Strides are given per dimension (last-dimension stride must be 1 for the vector path;
// the scalar path takes any). In-place: the *_out pointers and strides equal the *_in ones.
struct RopeParams {
  DType dtype;
  int64_t batch, seq, q_heads, k_heads, head_dim;
  const void* q_in;
  void* q_out;
  const void* k_in;
  void* k_out;
  const void* cos;
  const void* sin;
  int64_t q_in_stride[4];   // b, h, s, d
  int64_t q_out_stride[4];  // b, h, s, d
  int64_t k_in_stride[4];
  int64_t k_out_stride[4];
  int64_t cos_stride[3];  // b (0 when broadcast), s, d
  int64_t sin_stride[3];
};

// Overrides for the benchmark's sweep; 0 = built-in choice.
struct RopeTuning {
  int tokens_per_block = 0;  // tokens (block rows) per block of the vector kernel: 1, 2, 4 or 8
  int tokens_per_thread = 0;  // tokens each thread rotates with all loads in flight: 1 or 2
  int reg_cap = 0;            // 1 = cap registers at 48 (more resident blocks, small spill); TPT 1 only
  int heads_per_thread = 0;   // 2 = one thread rotates two heads of a token (shared cos/sin); 1 = one
  // Kernel: 1 = the token-loop kernels the three knobs above choose from (token / seq
  // divided per thread); 2 = two heads per thread with the batch as a grid dimension (the
  // default when batch <= 65535; takes only tokens_per_block).
  int variant = 0;
};

void launch_rope(const RopeParams& p, const RopeTuning& tuning, cudaStream_t stream);

// Qwen3 attention's q_norm / k_norm (RMSNorm over each head row of head_dim) followed by
// rotate-half RoPE, in place on q [B, S, Hq, D] and k [B, S, Hk, D] (the projections viewed
// as heads, before the transpose). Strides per dimension (b, s, h, d): the vector path needs
// d stride 1 and 16-byte aligned rows; the scalar path takes any. cos/sin: [B or 1, S, D]
// (b stride 0 when broadcast). Weights: contiguous [D].
struct QkNormRopeParams {
  DType dtype;
  int64_t batch, seq, q_heads, k_heads, head_dim;
  void* q;
  void* k;
  const void* q_weight;
  const void* k_weight;
  const void* cos;
  const void* sin;
  int64_t q_stride[4];  // b, s, h, d
  int64_t k_stride[4];
  int64_t cos_stride[3];  // b (0 when broadcast), s, d
  int64_t sin_stride[3];
  float eps;
};

void launch_qk_norm_rope(const QkNormRopeParams& p, cudaStream_t stream);

}  // namespace qwen3_kernels
