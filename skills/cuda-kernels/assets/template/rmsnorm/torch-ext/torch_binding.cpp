// Registers the ops of the __NAME__ kernel under this build's unique namespace.
// kernel-builder (and build_local.py) generate registration.h and define
// TORCH_EXTENSION_NAME; the Python package reaches the ops through its generated _ops.py.
// The binding checks arguments, turns tensors into the torch-free launch structs of
// kernel_src/launchers.h and launches on the current stream; it never touches data.

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cmath>

#include "../kernel_src/launchers.h"
#include "registration.h"
#include "torch_binding.h"

namespace {

ks::DType ks_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return ks::DType::kFloat32;
    case at::kHalf:
      return ks::DType::kFloat16;
    case at::kBFloat16:
      return ks::DType::kBFloat16;
    default:
      TORCH_CHECK(false, "rms_norm: input dtype must be float32, float16 or bfloat16, got ", t);
  }
  return ks::DType::kFloat32;  // not reached: TORCH_CHECK(false) throws
}

// [rows, hidden]: a view when the leading dimensions collapse to one row stride
// (contiguous tensors, x[..., 1:], column slices), otherwise reshape copies.
at::Tensor as_rows(const at::Tensor& t) {
  int64_t lead = 1;  // not reshape({-1, n}): ambiguous, so an error, when n is 0
  for (int64_t d = 0; d + 1 < t.dim(); ++d) lead *= t.size(d);
  at::Tensor rows = t.reshape({lead, t.size(-1)});
  if (rows.size(1) > 1 && rows.stride(1) != 1) rows = rows.contiguous();
  return rows;
}

int64_t row_stride(const at::Tensor& rows) { return rows.size(0) > 1 ? rows.stride(0) : rows.size(1); }

void check_input(const at::Tensor& input, const std::optional<at::Tensor>& weight, double epsilon) {
  TORCH_CHECK(input.is_cuda(), "rms_norm: input must be a CUDA tensor, got device ", input.device());
  TORCH_CHECK(input.dim() >= 1, "rms_norm: input must have at least one dimension");
  ks_dtype(input.scalar_type());
  TORCH_CHECK(std::isfinite(epsilon) && epsilon >= 0.0, "rms_norm: epsilon must be finite and >= 0, got ", epsilon);
  if (weight.has_value()) {
    const at::Tensor& w = *weight;
    TORCH_CHECK(w.device() == input.device(), "rms_norm: weight is on ", w.device(), ", input on ", input.device());
    TORCH_CHECK(w.scalar_type() == input.scalar_type(), "rms_norm: weight dtype ", w.scalar_type(),
                " != input dtype ", input.scalar_type());
    TORCH_CHECK(w.dim() == 1 && w.size(0) == input.size(-1), "rms_norm: weight must have shape [", input.size(-1),
                "], got ", w.sizes());
    TORCH_CHECK(w.is_contiguous(), "rms_norm: weight must be contiguous");
  }
}

void launch(const ks::RmsNormArgs& args) {
  const cudaError_t err = ks::rms_norm(args, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "rms_norm: kernel launch failed: ", cudaGetErrorString(err));
}

ks::RmsNormArgs base_args(const at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                          double epsilon) {
  ks::RmsNormArgs a{};
  a.dtype = ks_dtype(x.scalar_type());
  a.out = out.data_ptr();
  a.out_stride = x.size(1);
  a.x = x.const_data_ptr();
  a.x_stride = row_stride(x);
  a.weight = weight.has_value() ? weight->const_data_ptr() : nullptr;
  a.rows = x.size(0);
  a.hidden = x.size(1);
  a.eps = static_cast<float>(epsilon);
  return a;
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight, double epsilon) {
  check_input(input, weight, epsilon);
  const c10::cuda::CUDAGuard device_guard(input.device());
  at::Tensor out = at::empty(input.sizes(), input.options());  // contiguous, like the fake kernel
  if (input.numel() == 0) return out;
  launch(base_args(out, as_rows(input), weight, epsilon));
  return out;
}

std::tuple<at::Tensor, at::Tensor> fused_add_rms_norm(const at::Tensor& input, const at::Tensor& residual,
                                                      const std::optional<at::Tensor>& weight, double epsilon) {
  check_input(input, weight, epsilon);
  TORCH_CHECK(residual.device() == input.device(), "rms_norm: residual is on ", residual.device(), ", input on ",
              input.device());
  TORCH_CHECK(residual.scalar_type() == input.scalar_type(), "rms_norm: residual dtype ", residual.scalar_type(),
              " != input dtype ", input.scalar_type());
  TORCH_CHECK(residual.sizes() == input.sizes(), "rms_norm: residual must have the input's shape ", input.sizes(),
              ", got ", residual.sizes());
  const c10::cuda::CUDAGuard device_guard(input.device());
  at::Tensor out = at::empty(input.sizes(), input.options());
  at::Tensor sum = at::empty(input.sizes(), input.options());
  if (input.numel() == 0) return {out, sum};
  const at::Tensor x = as_rows(input);
  const at::Tensor r = as_rows(residual);
  ks::RmsNormArgs a = base_args(out, x, weight, epsilon);
  a.residual = r.const_data_ptr();
  a.residual_stride = row_stride(r);
  a.sum_out = sum.data_ptr();
  a.sum_stride = x.size(1);
  launch(a);
  return {out, sum};
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor");
  ops.impl("rms_norm", c10::kCUDA, &rms_norm);
  ops.def("fused_add_rms_norm(Tensor input, Tensor residual, Tensor? weight, float epsilon) -> (Tensor, Tensor)");
  ops.impl("fused_add_rms_norm", c10::kCUDA, &fused_add_rms_norm);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
