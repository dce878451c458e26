// long_rows.h - torch-free launch API of the long-row reductions: logsumexp over rows far
// wider than a block handles comfortably (a vocabulary of logits: 151,936 for Qwen3), and
// the per-row cross-entropy loss that comes with it.
// Conventions: device pointers; sizes and strides in elements; the last dimension is
// contiguous and rows are row_stride apart; nullptr marks an absent operand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace long_rows {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// How a row is split. kAuto picks: one block per row when rows fill the GPU; a
// thread-block cluster per row (partial (max, sum) exchanged through distributed shared
// memory) when rows are few and wide and clusters can be scheduled; two passes through a
// workspace otherwise. The others force a path (tests, benchmarks).
enum class Path : int { kAuto = 0, kRow = 1, kCluster = 2, kMultiPass = 3 };

// lse[r] = log(sum_j exp(logits[r, j])), fp32 math; an all -inf row gives -inf, a +inf
// entry gives +inf. With target != nullptr also
//   loss[r] = lse[r] - logits[r, target[r]]   (0 where target[r] == ignore_index; NaN where
//   target[r] is outside [0, vocab) or the row is all -inf, as PyTorch's cross_entropy)
struct LseArgs {
  DType dtype;
  const void* logits;
  int64_t row_stride;
  int64_t rows;
  int64_t vocab;
  float* lse;
  const int64_t* target;
  float* loss;
  int64_t ignore_index;
  Path path;
  int cluster_size;     // blocks per row on the cluster path; 0 picks
  void* workspace;      // kMultiPass: lse_workspace_bytes(args) bytes, 8-byte aligned
};

// The launcher asks each device once for its SM count, compute capability and whether a
// cluster shape can be scheduled; this drops those answers (after MPS or MIG changes what a
// process may use, and in tests that emulate several devices).
void forget_device_queries();

// The path kAuto (or the forced path) takes for these arguments on the current device.
Path lse_plan(const LseArgs& args);
// Bytes of workspace logsumexp() needs (0 unless the plan is kMultiPass).
size_t lse_workspace_bytes(const LseArgs& args);
cudaError_t logsumexp(const LseArgs& args, cudaStream_t stream);

}  // namespace long_rows
