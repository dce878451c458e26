// Torch op registration and input checking for the qwen3_8b kernels.
//
// The binding only checks and dispatches: every op verifies device, dtype and shapes with
// a one-line TORCH_CHECK message, addresses non-contiguous inputs through their strides
// where the kernels can (row-strided views, transposed q/k), allocates outputs, and calls
// the launchers in kernel_src/ on the current CUDA stream of the input's device.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../kernel_src/qwen3_kernels.h"
#include "registration.h"
#include "torch_binding.h"

namespace {

using qwen3_kernels::DType;

DType to_dtype(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    default:
      break;
  }
  // After the switch, with a return behind it: every path of a value-returning function
  // ends in a return (falling off the end is undefined behaviour), whether or not the
  // compiler sees that the throw inside TORCH_CHECK never returns.
  TORCH_CHECK(false, op, ": unsupported dtype ", t.scalar_type(), " (expected float32, float16 or bfloat16)");
  return DType::kFloat32;
}

void check_cuda(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.is_cuda(), op, ": ", name, " must be a CUDA tensor, got device ", t.device());
}

void check_same(const at::Tensor& a, const at::Tensor& b, const char* op, const char* name_a, const char* name_b) {
  TORCH_CHECK(a.device() == b.device(), op, ": ", name_a, " and ", name_b, " are on different devices (",
              a.device(), " vs ", b.device(), ")");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op, ": ", name_a, " and ", name_b, " have different dtypes (",
              a.scalar_type(), " vs ", b.scalar_type(), ")");
}

// The row stride of `t` viewed as [numel / size(-1), size(-1)] rows, or -1 when that
// needs a copy (last dim not contiguous, or leading dims that do not collapse into one
// stride). Row-sliced views such as gate_up[..., :I] collapse without a copy.
int64_t collapsed_row_stride(const at::Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t cols = t.size(nd - 1);
  if (cols > 1 && t.stride(nd - 1) != 1) return -1;
  int64_t row_stride = cols;
  int64_t expected = -1;
  for (int64_t d = nd - 2; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (expected < 0) {
      row_stride = t.stride(d);
      expected = row_stride * t.size(d);
    } else {
      if (t.stride(d) != expected) return -1;
      expected *= t.size(d);
    }
  }
  return row_stride;
}

// `t` itself when it can be addressed as rows, else a contiguous copy; stride in `rs`.
at::Tensor as_rows(const at::Tensor& t, int64_t& rs) {
  rs = collapsed_row_stride(t);
  if (rs >= 0) return t;
  at::Tensor c = t.contiguous();
  rs = c.size(-1);
  return c;
}

std::tuple<at::Tensor, at::Tensor> norm_impl(const at::Tensor& x_in, const std::optional<at::Tensor>& residual_in,
                                             const std::optional<at::Tensor>& weight_in, double eps,
                                             const qwen3_kernels::RmsNormTuning& tuning, const char* op) {
  check_cuda(x_in, op, "x");
  TORCH_CHECK(x_in.dim() >= 1, op, ": x must have at least one dimension");
  const DType dtype = to_dtype(x_in, op);
  const int64_t hidden = x_in.size(-1);
  TORCH_CHECK(eps >= 0.0, op, ": eps must be >= 0, got ", eps);
  at::Tensor weight;
  if (weight_in.has_value() && weight_in->defined()) {
    weight = *weight_in;
    check_same(x_in, weight, op, "x", "weight");
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden, op, ": weight must have shape [", hidden, "], got ",
                weight.sizes());
    weight = weight.contiguous();
  }
  const bool add = residual_in.has_value() && residual_in->defined();
  if (add) {
    check_same(x_in, *residual_in, op, "x", "residual");
    TORCH_CHECK(residual_in->sizes() == x_in.sizes(), op, ": residual shape ", residual_in->sizes(),
                " differs from x shape ", x_in.sizes());
  }
  const c10::cuda::OptionalCUDAGuard guard(x_in.device());
  at::Tensor out = at::empty(x_in.sizes(), x_in.options());
  at::Tensor sum = add ? at::empty(x_in.sizes(), x_in.options()) : at::empty({0}, x_in.options());
  if (x_in.numel() == 0) return {out, sum};

  qwen3_kernels::RmsNormParams p{};
  p.dtype = dtype;
  p.rows = x_in.numel() / hidden;
  p.hidden = hidden;
  p.eps = static_cast<float>(eps);
  int64_t x_rs = 0, r_rs = 0;
  at::Tensor x = as_rows(x_in, x_rs);
  at::Tensor residual;
  if (add) residual = as_rows(*residual_in, r_rs);
  p.x = x.data_ptr();
  p.x_row_stride = x_rs;
  p.out = out.data_ptr();
  p.out_row_stride = hidden;
  p.weight = weight.defined() ? weight.data_ptr() : nullptr;
  if (add) {
    p.residual = residual.data_ptr();
    p.residual_row_stride = r_rs;
    p.sum_out = sum.data_ptr();
    p.sum_row_stride = hidden;
  }
  qwen3_kernels::launch_rms_norm(p, tuning, c10::cuda::getCurrentCUDAStream(x_in.device().index()).stream());
  return {out, sum};
}

void fill_strides4(const at::Tensor& t, int64_t* st) {
  for (int i = 0; i < 4; ++i) st[i] = t.stride(i);
}

void fill_strides3(const at::Tensor& t, int64_t* st) {
  // A cos/sin batch of 1 broadcasts over q's batch (transformers builds it from
  // position_ids of shape [1, S] in the common case).
  st[0] = t.size(0) == 1 ? 0 : t.stride(0);
  st[1] = t.stride(1);
  st[2] = t.stride(2);
}

struct QkShape {
  DType dtype;
  int64_t batch, seq, head_dim;
};

// The checks rope_ and qk_norm_rope_ share. The sequence axis is dim 2 for rope_
// ([batch, heads, seq, head_dim], what transformers' apply_rotary_pos_emb sees) and dim 1
// for qk_norm_rope_ ([batch, seq, heads, head_dim], the projection output before its
// transpose), so each op takes its caller's layout without a copy.
QkShape check_q_k_cos_sin(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin,
                          int64_t seq_dim, const char* op) {
  check_cuda(q, op, "q");
  const DType dtype = to_dtype(q, op);
  check_same(q, k, op, "q", "k");
  check_same(q, cos, op, "q", "cos");
  check_same(q, sin, op, "q", "sin");
  const char* layout = seq_dim == 2 ? "[batch, heads, seq, head_dim]" : "[batch, seq, heads, head_dim]";
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4, op, ": q and k must be ", layout, ", got ", q.sizes(), " and ",
              k.sizes());
  const int64_t batch = q.size(0), seq = q.size(seq_dim), head_dim = q.size(3);
  TORCH_CHECK(k.size(0) == batch && k.size(seq_dim) == seq && k.size(3) == head_dim, op,
              ": k must match q in batch, seq and head_dim, got q ", q.sizes(), " and k ", k.sizes());
  TORCH_CHECK(head_dim % 2 == 0, op, ": head_dim must be even for the rotate-half form, got ", head_dim);
  TORCH_CHECK(cos.dim() == 3 && cos.sizes() == sin.sizes(), op, ": cos and sin must both be [batch, seq, head_dim], got ",
              cos.sizes(), " and ", sin.sizes());
  TORCH_CHECK((cos.size(0) == batch || cos.size(0) == 1) && cos.size(1) == seq && cos.size(2) == head_dim, op,
              ": cos/sin shape ", cos.sizes(), " does not match q ", q.sizes(), " (expected [", batch, " or 1, ", seq,
              ", ", head_dim, "])");
  return {dtype, batch, seq, head_dim};
}

void rope_impl(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin,
               const at::Tensor& q_out, const at::Tensor& k_out, const qwen3_kernels::RopeTuning& tuning,
               const char* op) {
  const QkShape s = check_q_k_cos_sin(q, k, cos, sin, /*seq_dim=*/2, op);
  const DType dtype = s.dtype;
  const int64_t batch = s.batch, seq = s.seq, head_dim = s.head_dim;
  const c10::cuda::OptionalCUDAGuard guard(q.device());
  if (q.numel() == 0 && k.numel() == 0) return;
  qwen3_kernels::RopeParams p{};
  p.dtype = dtype;
  p.batch = batch;
  p.seq = seq;
  p.q_heads = q.size(1);
  p.k_heads = k.size(1);
  p.head_dim = head_dim;
  p.q_in = q.data_ptr();
  p.k_in = k.data_ptr();
  p.q_out = q_out.data_ptr();
  p.k_out = k_out.data_ptr();
  p.cos = cos.data_ptr();
  p.sin = sin.data_ptr();
  fill_strides4(q, p.q_in_stride);
  fill_strides4(k, p.k_in_stride);
  fill_strides4(q_out, p.q_out_stride);
  fill_strides4(k_out, p.k_out_stride);
  fill_strides3(cos, p.cos_stride);
  fill_strides3(sin, p.sin_stride);
  qwen3_kernels::launch_rope(p, tuning, c10::cuda::getCurrentCUDAStream(q.device().index()).stream());
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps) {
  return std::get<0>(norm_impl(x, std::nullopt, weight, eps, {}, "rms_norm"));
}

std::tuple<at::Tensor, at::Tensor> fused_add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                                      const std::optional<at::Tensor>& weight, double eps) {
  return norm_impl(x, residual, weight, eps, {}, "fused_add_rms_norm");
}

std::tuple<at::Tensor, at::Tensor> rms_norm_tuned(const at::Tensor& x, const std::optional<at::Tensor>& residual,
                                                  const std::optional<at::Tensor>& weight, double eps, int64_t threads,
                                                  int64_t rows_per_group, int64_t persistent, int64_t hint) {
  qwen3_kernels::RmsNormTuning tuning;
  tuning.threads = static_cast<int>(threads);
  tuning.rows_per_group = static_cast<int>(rows_per_group);
  tuning.persistent = static_cast<int>(persistent);
  TORCH_CHECK((hint >= 0 && hint <= 7) || hint == 8, "rms_norm_tuned: hint must be 0-7 (bit 0 streaming loads, bit 1 "
              "weight after the reduction, bit 2 the generic row kernel also for full rows) or 8 (the two-pass "
              "kernel), got ", hint);
  tuning.hint = static_cast<int>(hint);
  return norm_impl(x, residual, weight, eps, tuning, "rms_norm_tuned");
}

namespace {

at::Tensor swiglu_impl(const at::Tensor& gate_in, const at::Tensor& up_in, const qwen3_kernels::SwiGluTuning& tuning,
                       const char* op) {
  check_cuda(gate_in, op, "gate");
  const DType dtype = to_dtype(gate_in, op);
  check_same(gate_in, up_in, op, "gate", "up");
  TORCH_CHECK(gate_in.sizes() == up_in.sizes(), op, ": gate shape ", gate_in.sizes(), " differs from up shape ",
              up_in.sizes());
  TORCH_CHECK(gate_in.dim() >= 1, op, ": gate must have at least one dimension");
  const c10::cuda::OptionalCUDAGuard guard(gate_in.device());
  at::Tensor out = at::empty(gate_in.sizes(), gate_in.options());
  if (gate_in.numel() == 0) return out;
  int64_t g_rs = 0, u_rs = 0;
  at::Tensor gate = as_rows(gate_in, g_rs);
  at::Tensor up = as_rows(up_in, u_rs);
  qwen3_kernels::SwiGluParams p{};
  p.dtype = dtype;
  p.cols = gate_in.size(-1);
  p.rows = gate_in.numel() / p.cols;
  p.out = out.data_ptr();
  p.out_row_stride = p.cols;
  p.gate = gate.data_ptr();
  p.gate_row_stride = g_rs;
  p.up = up.data_ptr();
  p.up_row_stride = u_rs;
  qwen3_kernels::launch_swiglu(p, tuning, c10::cuda::getCurrentCUDAStream(gate_in.device().index()).stream());
  return out;
}

}  // namespace

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) { return swiglu_impl(gate, up, {}, "swiglu"); }

at::Tensor swiglu_tuned(const at::Tensor& gate, const at::Tensor& up, int64_t threads, int64_t vpt, int64_t exact,
                        int64_t width, int64_t flat) {
  qwen3_kernels::SwiGluTuning tuning;
  tuning.threads = static_cast<int>(threads);
  tuning.vpt = static_cast<int>(vpt);
  tuning.exact = static_cast<int>(exact);
  tuning.width = static_cast<int>(width);
  tuning.flat = static_cast<int>(flat);
  return swiglu_impl(gate, up, tuning, "swiglu_tuned");
}

void rope_(at::Tensor& q, at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin) {
  rope_impl(q, k, cos, sin, q, k, {}, "rope_");
}

void rope_tuned_(at::Tensor& q, at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin, int64_t tokens_per_block,
                 int64_t tokens_per_thread, int64_t reg_cap, int64_t heads_per_thread, int64_t variant) {
  qwen3_kernels::RopeTuning tuning;
  tuning.variant = static_cast<int>(variant);
  tuning.heads_per_thread = static_cast<int>(heads_per_thread);
  tuning.tokens_per_block = static_cast<int>(tokens_per_block);
  tuning.tokens_per_thread = static_cast<int>(tokens_per_thread);
  tuning.reg_cap = static_cast<int>(reg_cap);
  rope_impl(q, k, cos, sin, q, k, tuning, "rope_tuned_");
}

std::tuple<at::Tensor, at::Tensor> rope(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                        const at::Tensor& sin) {
  // empty_like keeps q's strides when q is dense (a transposed view stays transposed),
  // exactly what eager's elementwise ops return and what the fake kernel predicts.
  at::Tensor q_out = at::empty_like(q);
  at::Tensor k_out = at::empty_like(k);
  rope_impl(q, k, cos, sin, q_out, k_out, {}, "rope");
  return {q_out, k_out};
}

void qk_norm_rope_(at::Tensor& q, at::Tensor& k, const at::Tensor& q_weight, const at::Tensor& k_weight,
                   const at::Tensor& cos, const at::Tensor& sin, double eps) {
  const char* op = "qk_norm_rope_";
  const QkShape s = check_q_k_cos_sin(q, k, cos, sin, /*seq_dim=*/1, op);
  const DType dtype = s.dtype;
  const int64_t batch = s.batch, seq = s.seq, head_dim = s.head_dim;
  check_same(q, q_weight, op, "q", "q_weight");
  check_same(q, k_weight, op, "q", "k_weight");
  TORCH_CHECK(q_weight.dim() == 1 && q_weight.size(0) == head_dim && k_weight.dim() == 1 &&
                  k_weight.size(0) == head_dim,
              op, ": q_weight and k_weight must have shape [", head_dim, "], got ", q_weight.sizes(), " and ",
              k_weight.sizes());
  TORCH_CHECK(eps >= 0.0, op, ": eps must be >= 0, got ", eps);
  // In place: a row that aliases another row (expanded views) or q overlapping k would be
  // read after another thread wrote it.
  at::assert_no_internal_overlap(q);
  at::assert_no_internal_overlap(k);
  at::assert_no_overlap(q, k);
  const c10::cuda::OptionalCUDAGuard guard(q.device());
  if (q.numel() == 0 && k.numel() == 0) return;
  const at::Tensor qw = q_weight.contiguous();
  const at::Tensor kw = k_weight.contiguous();
  qwen3_kernels::QkNormRopeParams p{};
  p.dtype = dtype;
  p.batch = batch;
  p.seq = seq;
  p.q_heads = q.size(2);
  p.k_heads = k.size(2);
  p.head_dim = head_dim;
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.q_weight = qw.data_ptr();
  p.k_weight = kw.data_ptr();
  p.cos = cos.data_ptr();
  p.sin = sin.data_ptr();
  fill_strides4(q, p.q_stride);
  fill_strides4(k, p.k_stride);
  fill_strides3(cos, p.cos_stride);
  fill_strides3(sin, p.sin_stride);
  p.eps = static_cast<float>(eps);
  qwen3_kernels::launch_qk_norm_rope(p, c10::cuda::getCurrentCUDAStream(q.device().index()).stream());
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor x, Tensor? weight, float eps) -> Tensor");
  ops.impl("rms_norm", c10::kCUDA, &rms_norm);
  ops.def("fused_add_rms_norm(Tensor x, Tensor residual, Tensor? weight, float eps) -> (Tensor, Tensor)");
  ops.impl("fused_add_rms_norm", c10::kCUDA, &fused_add_rms_norm);
  ops.def("swiglu(Tensor gate, Tensor up) -> Tensor");
  ops.impl("swiglu", c10::kCUDA, &swiglu);
  ops.def("rope_(Tensor(a!) q, Tensor(b!) k, Tensor cos, Tensor sin) -> ()");
  ops.impl("rope_", c10::kCUDA, &rope_);
  ops.def("rope(Tensor q, Tensor k, Tensor cos, Tensor sin) -> (Tensor, Tensor)");
  ops.impl("rope", c10::kCUDA, &rope);
  ops.def(
      "qk_norm_rope_(Tensor(a!) q, Tensor(b!) k, Tensor q_weight, Tensor k_weight, Tensor cos, Tensor sin, "
      "float eps) -> ()");
  ops.impl("qk_norm_rope_", c10::kCUDA, &qk_norm_rope_);
  ops.def(
      "rms_norm_tuned(Tensor x, Tensor? residual, Tensor? weight, float eps, int threads, int rows_per_group, "
      "int persistent, int hint=0) -> (Tensor, Tensor)");
  ops.impl("rms_norm_tuned", c10::kCUDA, &rms_norm_tuned);
  ops.def("swiglu_tuned(Tensor gate, Tensor up, int threads, int vpt, int exact, int width=0, int flat=-1) -> Tensor");
  ops.impl("swiglu_tuned", c10::kCUDA, &swiglu_tuned);
  ops.def(
      "rope_tuned_(Tensor(a!) q, Tensor(b!) k, Tensor cos, Tensor sin, int tokens_per_block, int tokens_per_thread, "
      "int reg_cap, int heads_per_thread=0, int variant=0) -> ()");
  ops.impl("rope_tuned_", c10::kCUDA, &rope_tuned_);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
