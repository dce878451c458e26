// emu_entry.cpp - the launcher of kernel_src/ as a C function, for the CPU emulator.
// tests/test_long_rows_cpu.py builds kernel_src/*.cu + this file with
// scripts/emulate_kernel.py --shared and calls lr_logsumexp through ctypes: the same
// kernels nvcc compiles run on the CPU against a float64 reference.
#include <string>
#include <vector>

#include "../kernel_src/long_rows.h"

namespace {
std::string last_error;
}

extern "C" {

// schedule: 0 forward, 1 reverse, 2 random; max_active_clusters < 0 leaves the default.
// Returns the cudaError_t of the launch; lr_failure() says why a launch failed.
int lr_logsumexp(int dtype, const void* logits, int64_t row_stride, int64_t rows, int64_t vocab, float* lse,
                 const int64_t* target, float* loss, int64_t ignore_index, int path, int cluster_size,
                 int schedule, int sm_count, int max_active_clusters, int* path_taken) {
  emu::set_schedule(static_cast<emu::Schedule>(schedule), 7);
  emu::config().sm_count = sm_count;
  emu::set_max_active_clusters(max_active_clusters);
  long_rows::forget_device_queries();  // this call may emulate another device
  long_rows::LseArgs a{};
  a.dtype = static_cast<long_rows::DType>(dtype);
  a.logits = logits;
  a.row_stride = row_stride;
  a.rows = rows;
  a.vocab = vocab;
  a.lse = lse;
  a.target = target;
  a.loss = loss;
  a.ignore_index = ignore_index;
  a.path = static_cast<long_rows::Path>(path);
  a.cluster_size = cluster_size;
  *path_taken = static_cast<int>(long_rows::lse_plan(a));
  std::vector<unsigned char> ws(long_rows::lse_workspace_bytes(a) + 16, 0xff);
  a.workspace = ws.data() + (8 - reinterpret_cast<uintptr_t>(ws.data()) % 8) % 8;
  const cudaError_t e = long_rows::logsumexp(a, nullptr);
  last_error = emu::last_failure();
  return static_cast<int>(e);
}

const char* lr_failure() { return last_error.c_str(); }
}
