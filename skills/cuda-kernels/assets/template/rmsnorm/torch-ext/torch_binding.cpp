// Registers the ops of the __NAME__ kernel under this build's unique namespace.
// kernel-builder (and build_local.py) generate registration.h and define
// TORCH_EXTENSION_NAME; the Python package reaches the ops through its generated _ops.py.
// The binding only validates arguments and hands over to the CUDA launcher.

#include <torch/library.h>

#include <cmath>

#include "registration.h"
#include "torch_binding.h"

namespace {

at::Tensor rms_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight, double epsilon) {
  TORCH_CHECK(input.is_cuda(), "rms_norm: input must be a CUDA tensor, got device ", input.device());
  TORCH_CHECK(input.dim() >= 1, "rms_norm: input must have at least one dimension");
  const auto dtype = input.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
              "rms_norm: input dtype must be float32, float16 or bfloat16, got ", dtype);
  TORCH_CHECK(std::isfinite(epsilon) && epsilon >= 0.0, "rms_norm: epsilon must be finite and >= 0, got ", epsilon);
  if (weight.has_value()) {
    const at::Tensor& w = *weight;
    TORCH_CHECK(w.device() == input.device(), "rms_norm: weight is on ", w.device(), ", input on ", input.device());
    TORCH_CHECK(w.scalar_type() == dtype, "rms_norm: weight dtype ", w.scalar_type(), " != input dtype ", dtype);
    TORCH_CHECK(w.dim() == 1 && w.size(0) == input.size(-1), "rms_norm: weight must have shape [", input.size(-1),
                "], got ", w.sizes());
    TORCH_CHECK(w.is_contiguous(), "rms_norm: weight must be contiguous");
  }
  return rms_norm_cuda(input, weight, epsilon);
}

}  // namespace

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor");
  ops.impl("rms_norm", c10::kCUDA, &rms_norm);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
