// Torch op registration and input checks for the long-row kernels. The binding only checks
// and dispatches: the launchers in kernel_src/ take raw pointers and a row stride, so any
// view whose leading dimensions collapse to one row stride (x[:, 1:], x[..., :V]) runs
// without a copy, at any alignment.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../kernel_src/long_rows.h"
#include "registration.h"
#include "torch_binding.h"

namespace {

long_rows::DType to_dtype(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return long_rows::DType::kFloat32;
    case at::kHalf:
      return long_rows::DType::kFloat16;
    case at::kBFloat16:
      return long_rows::DType::kBFloat16;
    default:
      break;
  }
  TORCH_CHECK(false, op, ": unsupported dtype ", t.scalar_type(), " (expected float32, float16 or bfloat16)");
  return long_rows::DType::kFloat32;
}

// `t` viewed as [rows, vocab] with one row stride, or a contiguous copy when the leading
// dimensions do not collapse (or the last dimension is strided).
at::Tensor as_rows(const at::Tensor& t, int64_t& row_stride) {
  const int64_t nd = t.dim();
  const int64_t cols = t.size(nd - 1);
  bool ok = cols <= 1 || t.stride(nd - 1) == 1;
  int64_t rs = cols, expected = -1;
  for (int64_t d = nd - 2; ok && d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (expected < 0) {
      rs = t.stride(d);
      expected = rs * t.size(d);
    } else if (t.stride(d) != expected) {
      ok = false;
    } else {
      expected *= t.size(d);
    }
  }
  if (ok) {
    row_stride = rs;
    return t;
  }
  row_stride = cols;
  return t.contiguous();
}

void run(const at::Tensor& logits, const at::Tensor* target, int64_t ignore_index, int64_t path, at::Tensor& lse,
         at::Tensor* loss, const char* op) {
  TORCH_CHECK(logits.is_cuda(), op, ": logits must be a CUDA tensor, got device ", logits.device());
  TORCH_CHECK(logits.dim() >= 1, op, ": logits must have at least one dimension");
  TORCH_CHECK(path >= 0 && path <= 3, op, ": path must be 0 (auto), 1 (row), 2 (cluster) or 3 (multi-pass)");
  const long_rows::DType dt = to_dtype(logits, op);
  const c10::cuda::CUDAGuard guard(logits.device());
  const int64_t vocab = logits.size(-1);
  if (lse.numel() == 0) return;
  if (vocab == 0) {  // log(0) = -inf; PyTorch's loss of an empty row is NaN
    lse.fill_(-std::numeric_limits<float>::infinity());
    if (loss) loss->fill_(std::numeric_limits<float>::quiet_NaN());
    return;
  }
  int64_t row_stride = 0;
  const at::Tensor x = as_rows(logits, row_stride);
  long_rows::LseArgs a{};
  a.dtype = dt;
  a.logits = x.data_ptr();
  a.row_stride = row_stride;
  a.rows = lse.numel();
  a.vocab = vocab;
  a.lse = lse.data_ptr<float>();
  a.path = static_cast<long_rows::Path>(path);
  at::Tensor t;
  if (target) {
    t = target->contiguous();
    a.target = t.data_ptr<int64_t>();
    a.loss = loss->data_ptr<float>();
    a.ignore_index = ignore_index;
  }
  at::Tensor workspace;
  if (const size_t bytes = long_rows::lse_workspace_bytes(a); bytes > 0) {
    workspace = at::empty({static_cast<int64_t>(bytes)}, logits.options().dtype(at::kByte));
    a.workspace = workspace.data_ptr();
  }
  const cudaError_t err = long_rows::logsumexp(a, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, op, ": kernel launch failed: ", cudaGetErrorString(err));
}

}  // namespace

at::Tensor logsumexp(const at::Tensor& logits, int64_t path) {
  at::Tensor lse = at::empty(logits.sizes().slice(0, logits.dim() - 1), logits.options().dtype(at::kFloat));
  run(logits, nullptr, 0, path, lse, nullptr, "logsumexp");
  return lse;
}

std::tuple<at::Tensor, at::Tensor> cross_entropy(const at::Tensor& logits, const at::Tensor& target,
                                                 int64_t ignore_index, int64_t path) {
  TORCH_CHECK(target.scalar_type() == at::kLong, "cross_entropy: target must be int64, got ", target.scalar_type());
  TORCH_CHECK(target.device() == logits.device(), "cross_entropy: target and logits are on different devices");
  TORCH_CHECK(logits.dim() >= 1 && target.sizes() == logits.sizes().slice(0, logits.dim() - 1),
              "cross_entropy: target must have logits' shape without the last dimension, got ", target.sizes(),
              " for logits ", logits.sizes());
  auto shape = logits.sizes().slice(0, logits.dim() - 1);
  at::Tensor lse = at::empty(shape, logits.options().dtype(at::kFloat));
  at::Tensor loss = at::empty(shape, logits.options().dtype(at::kFloat));
  run(logits, &target, ignore_index, path, lse, &loss, "cross_entropy");
  return {loss, lse};
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("logsumexp(Tensor logits, int path=0) -> Tensor");
  ops.impl("logsumexp", c10::kCUDA, &logsumexp);
  ops.def("cross_entropy(Tensor logits, Tensor target, int ignore_index=-100, int path=0) -> (Tensor, Tensor)");
  ops.impl("cross_entropy", c10::kCUDA, &cross_entropy);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
