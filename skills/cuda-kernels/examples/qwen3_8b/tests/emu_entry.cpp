// emu_entry.cpp - launch_rms_norm as a C function for the CPU emulator:
// test_rms_norm_emulated.py builds kernel_src/rms_norm.cu + fused_add_rms_norm.cu + this file
// with scripts/emulate_kernel.py --shared and calls q3_rms_norm through ctypes.
#include <exception>
#include <string>

#include "../kernel_src/qwen3_kernels.h"

namespace {
std::string last_error;
}

extern "C" {

// schedule: 0 forward, 1 reverse warp order. Returns 0, or 1 with q3_failure() saying why.
int q3_rms_norm(int dtype, void* out, int64_t out_rs, void* sum_out, int64_t sum_rs, const void* x, int64_t x_rs,
                const void* residual, int64_t residual_rs, const void* weight, int64_t rows, int64_t hidden, float eps,
                int schedule) {
  emu::set_schedule(static_cast<emu::Schedule>(schedule), 7);
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
  try {
    qwen3_kernels::launch_rms_norm(p, qwen3_kernels::RmsNormTuning{}, nullptr);
  } catch (const std::exception& e) {
    last_error = e.what();
    return 1;
  }
  last_error = emu::last_failure();
  return last_error.empty() ? 0 : 1;
}

const char* q3_failure() { return last_error.c_str(); }
}
