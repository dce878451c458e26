// Registers the ops of the __NAME__ kernel under this build's unique namespace.
// kernel-builder (and build_local.py) generate registration.h and define
// TORCH_EXTENSION_NAME; the Python package reaches the ops through its generated _ops.py.
// The binding only validates arguments and hands over to the CUDA launcher.

#include <torch/library.h>

#include <string>

#include "registration.h"
#include "torch_binding.h"

namespace {

int64_t activation_code(const std::string& activation) {
  if (activation == "silu") return 0;
  if (activation == "gelu") return 1;
  if (activation == "gelu_tanh") return 2;
  TORCH_CHECK(false, "glu: activation must be 'silu', 'gelu' or 'gelu_tanh', got '", activation, "'");
  return -1;  // not reached: TORCH_CHECK(false) throws
}

at::Tensor glu(const at::Tensor& input, std::string activation, bool gate_first) {
  TORCH_CHECK(input.is_cuda(), "glu: input must be a CUDA tensor, got device ", input.device());
  TORCH_CHECK(input.dim() >= 1, "glu: input must have at least one dimension");
  TORCH_CHECK(input.size(-1) % 2 == 0, "glu: the last dimension must be even (gate and up halves), got ",
              input.size(-1));
  const auto dtype = input.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
              "glu: input dtype must be float32, float16 or bfloat16, got ", dtype);
  return glu_cuda(input, activation_code(activation), gate_first);
}

}  // namespace

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("glu(Tensor input, str activation, bool gate_first) -> Tensor");
  ops.impl("glu", c10::kCUDA, &glu);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
