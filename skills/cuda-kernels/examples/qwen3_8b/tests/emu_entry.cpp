// emu_entry.cpp - the launchers of kernel_src/ as C functions for the CPU emulator:
// test_kernels_emulated.py builds kernel_src/*.cu + this file with scripts/emulate_kernel.py
// --shared and calls them through ctypes (strides in elements; rope and qk_norm_rope in place).
#include <exception>
#include <string>

#include "../kernel_src/qwen3_kernels.h"

namespace {
std::string last_error;

// Runs one launch; 0, or 1 with last_error saying why (a failed check or an emulator fault).
template <typename F>
int run(int schedule, F&& launch) {
  emu::set_schedule(static_cast<emu::Schedule>(schedule), 7);
  try {
    launch();
  } catch (const std::exception& e) {
    last_error = e.what();
    return 1;
  }
  last_error = emu::last_failure();
  return last_error.empty() ? 0 : 1;
}
}  // namespace

extern "C" {

// schedule: 0 forward, 1 reverse warp order. Each returns 0, or 1 with q3_failure() saying why.
int q3_rms_norm(int dtype, void* out, int64_t out_rs, void* sum_out, int64_t sum_rs, const void* x, int64_t x_rs,
                const void* residual, int64_t residual_rs, const void* weight, int64_t rows, int64_t hidden, float eps,
                int schedule) {
  qwen3_kernels::RmsNormParams p{};
  p.dtype = static_cast<qwen3_kernels::DType>(dtype);
  p.out = out;
  p.out_row_stride = out_rs;
  p.sum_out = sum_out;
  p.sum_row_stride = sum_rs;
  p.x = x;
  p.x_row_stride = x_rs;
  p.residual = residual;
  p.residual_row_stride = residual_rs;
  p.weight = weight;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = eps;
  return run(schedule, [&] { qwen3_kernels::launch_rms_norm(p, qwen3_kernels::RmsNormTuning{}, nullptr); });
}

int q3_swiglu(int dtype, void* out, int64_t out_rs, const void* gate, int64_t gate_rs, const void* up, int64_t up_rs,
              int64_t rows, int64_t cols, int schedule) {
  qwen3_kernels::SwiGluParams p{};
  p.dtype = static_cast<qwen3_kernels::DType>(dtype);
  p.out = out;
  p.out_row_stride = out_rs;
  p.gate = gate;
  p.gate_row_stride = gate_rs;
  p.up = up;
  p.up_row_stride = up_rs;
  p.rows = rows;
  p.cols = cols;
  return run(schedule, [&] { qwen3_kernels::launch_swiglu(p, qwen3_kernels::SwiGluTuning{}, nullptr); });
}

// q [B, Hq, S, D] and k [B, Hk, S, D] strides (b, h, s, d); cos/sin strides (b or 0, s, d).
int q3_rope(int dtype, int64_t batch, int64_t seq, int64_t q_heads, int64_t k_heads, int64_t head_dim, void* q,
            const int64_t* q_stride, void* k, const int64_t* k_stride, const void* cos, const void* sin,
            const int64_t* cs_stride, int schedule) {
  qwen3_kernels::RopeParams p{};
  p.dtype = static_cast<qwen3_kernels::DType>(dtype);
  p.batch = batch;
  p.seq = seq;
  p.q_heads = q_heads;
  p.k_heads = k_heads;
  p.head_dim = head_dim;
  p.q_in = q;
  p.q_out = q;
  p.k_in = k;
  p.k_out = k;
  p.cos = cos;
  p.sin = sin;
  for (int i = 0; i < 4; ++i) {
    p.q_in_stride[i] = p.q_out_stride[i] = q_stride[i];
    p.k_in_stride[i] = p.k_out_stride[i] = k_stride[i];
  }
  for (int i = 0; i < 3; ++i) p.cos_stride[i] = p.sin_stride[i] = cs_stride[i];
  return run(schedule, [&] { qwen3_kernels::launch_rope(p, qwen3_kernels::RopeTuning{}, nullptr); });
}

// q [B, S, Hq, D] and k [B, S, Hk, D] strides (b, s, h, d); cos/sin strides (b or 0, s, d).
int q3_qk_norm_rope(int dtype, int64_t batch, int64_t seq, int64_t q_heads, int64_t k_heads, int64_t head_dim,
                    void* q, const int64_t* q_stride, void* k, const int64_t* k_stride, const void* q_weight,
                    const void* k_weight, const void* cos, const void* sin, const int64_t* cs_stride, float eps,
                    int schedule) {
  qwen3_kernels::QkNormRopeParams p{};
  p.dtype = static_cast<qwen3_kernels::DType>(dtype);
  p.batch = batch;
  p.seq = seq;
  p.q_heads = q_heads;
  p.k_heads = k_heads;
  p.head_dim = head_dim;
  p.q = q;
  p.k = k;
  p.q_weight = q_weight;
  p.k_weight = k_weight;
  p.cos = cos;
  p.sin = sin;
  for (int i = 0; i < 4; ++i) {
    p.q_stride[i] = q_stride[i];
    p.k_stride[i] = k_stride[i];
  }
  for (int i = 0; i < 3; ++i) p.cos_stride[i] = p.sin_stride[i] = cs_stride[i];
  p.eps = eps;
  return run(schedule, [&] { qwen3_kernels::launch_qk_norm_rope(p, nullptr); });
}

const char* q3_failure() { return last_error.c_str(); }
}
