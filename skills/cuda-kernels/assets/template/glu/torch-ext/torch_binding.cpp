// Registers the ops of the __NAME__ kernel under this build's unique namespace.
// kernel-builder (and build_local.py) generate registration.h and define
// TORCH_EXTENSION_NAME; the Python package reaches the ops through its generated _ops.py.
// The binding checks arguments, turns tensors into the torch-free launch structs of
// kernel_src/launchers.h and launches on the current stream; it never touches data.

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <string>
#include <vector>

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
      TORCH_CHECK(false, "glu: input dtype must be float32, float16 or bfloat16, got ", t);
  }
  return ks::DType::kFloat32;  // not reached: TORCH_CHECK(false) throws
}

ks::GluActivation activation_code(const std::string& activation) {
  if (activation == "silu") return ks::GluActivation::kSilu;
  if (activation == "gelu") return ks::GluActivation::kGelu;
  if (activation == "gelu_tanh") return ks::GluActivation::kGeluTanh;
  TORCH_CHECK(false, "glu: activation must be 'silu', 'gelu' or 'gelu_tanh', got '", activation, "'");
  return ks::GluActivation::kSilu;  // not reached: TORCH_CHECK(false) throws
}

}  // namespace

at::Tensor glu(const at::Tensor& input, std::string activation, bool gate_first) {
  TORCH_CHECK(input.is_cuda(), "glu: input must be a CUDA tensor, got device ", input.device());
  TORCH_CHECK(input.dim() >= 1, "glu: input must have at least one dimension");
  TORCH_CHECK(input.size(-1) % 2 == 0, "glu: the last dimension must be even (gate and up halves), got ",
              input.size(-1));
  const ks::DType dtype = ks_dtype(input.scalar_type());
  const ks::GluActivation act = activation_code(activation);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int64_t d = input.size(-1) / 2;
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.back() = d;
  at::Tensor out = at::empty(shape, input.options());  // contiguous, like the fake kernel
  if (out.numel() == 0) return out;

  // [rows, 2d]: a view when the leading dimensions collapse to one row stride, else a copy.
  at::Tensor x = input.reshape({-1, 2 * d});
  if (x.stride(1) != 1) x = x.contiguous();
  const char* base = static_cast<const char*>(x.const_data_ptr());
  const int64_t half_bytes = d * static_cast<int64_t>(x.element_size());
  ks::GluArgs a{};
  a.dtype = dtype;
  a.act = act;
  a.out = out.data_ptr();
  a.gate = gate_first ? base : base + half_bytes;
  a.up = gate_first ? base + half_bytes : base;
  a.x_stride = x.size(0) > 1 ? x.stride(0) : 2 * d;
  a.rows = x.size(0);
  a.d = d;
  const cudaError_t err = ks::glu(a, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "glu: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("glu(Tensor input, str activation, bool gate_first) -> Tensor");
  ops.impl("glu", c10::kCUDA, &glu);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
