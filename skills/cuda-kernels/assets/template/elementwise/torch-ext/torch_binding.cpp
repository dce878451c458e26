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
      TORCH_CHECK(false, "elementwise: input dtype must be float32, float16 or bfloat16, got ", t);
  }
  return ks::DType::kFloat32;  // not reached: TORCH_CHECK(false) throws
}

ks::Activation activation_code(const std::string& activation) {
  if (activation == "gelu_tanh") return ks::Activation::kGeluTanh;
  if (activation == "silu") return ks::Activation::kSilu;
  TORCH_CHECK(false, "elementwise: activation must be 'gelu_tanh' or 'silu', got '", activation, "'");
  return ks::Activation::kGeluTanh;  // not reached: TORCH_CHECK(false) throws
}

}  // namespace

at::Tensor elementwise(const at::Tensor& input, std::string activation) {
  TORCH_CHECK(input.is_cuda(), "elementwise: input must be a CUDA tensor, got device ", input.device());
  const ks::DType dtype = ks_dtype(input.scalar_type());
  const ks::Activation act = activation_code(activation);
  const c10::cuda::CUDAGuard device_guard(input.device());
  at::Tensor out = at::empty(input.sizes(), input.options());  // contiguous, like the fake kernel
  if (input.numel() == 0) return out;

  // A contiguous tensor (at any alignment) is one row of numel elements; otherwise rows
  // of the last dimension when the leading dimensions collapse to one row stride, else a copy.
  at::Tensor x;
  if (input.is_contiguous()) {
    x = input.reshape({1, input.numel()});
  } else {
    x = input.reshape({-1, input.dim() > 0 ? input.size(-1) : 1});
    if (x.size(1) > 1 && x.stride(1) != 1) x = x.contiguous();
  }
  ks::ElementwiseArgs a{};
  a.dtype = dtype;
  a.act = act;
  a.out = out.data_ptr();
  a.x = x.const_data_ptr();
  a.x_stride = x.size(0) > 1 ? x.stride(0) : x.size(1);
  a.rows = x.size(0);
  a.n = x.size(1);
  const cudaError_t err = ks::elementwise(a, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "elementwise: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("elementwise(Tensor input, str activation) -> Tensor");
  ops.impl("elementwise", c10::kCUDA, &elementwise);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
