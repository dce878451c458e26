// Registers the ops of the __NAME__ kernel under this build's unique namespace.
// kernel-builder (and build_local.py) generate registration.h and define
// TORCH_EXTENSION_NAME; the Python package reaches the ops through its generated _ops.py.
// The binding checks arguments, turns tensors into the torch-free launch structs of
// kernel_src/launchers.h and launches on the current stream; it never touches data.

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

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
      TORCH_CHECK(false, "rope: input dtype must be float32, float16 or bfloat16, got ", t);
  }
  return ks::DType::kFloat32;  // not reached: TORCH_CHECK(false) throws
}

// cos/sin as [batch or 1, seq, dim] with a contiguous last dimension.
at::Tensor as_table(const at::Tensor& t, const at::Tensor& x4, const char* name) {
  TORCH_CHECK(t.device() == x4.device(), "rope: ", name, " is on ", t.device(), ", input on ", x4.device());
  TORCH_CHECK(t.scalar_type() == x4.scalar_type(), "rope: ", name, " dtype ", t.scalar_type(), " != input dtype ",
              x4.scalar_type());
  at::Tensor t3 = t.dim() == 2 ? t.unsqueeze(0) : t;
  TORCH_CHECK(t3.dim() == 3 && t3.size(1) == x4.size(2) && t3.size(2) == x4.size(3) &&
                  (t3.size(0) == 1 || t3.size(0) == x4.size(0)),
              "rope: ", name, " must be [seq, dim] or [batch, seq, dim] = [", x4.size(0), ", ", x4.size(2), ", ",
              x4.size(3), "], got ", t.sizes());
  if (t3.stride(2) != 1) t3 = t3.contiguous();
  return t3;
}

}  // namespace

at::Tensor rope(const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin, bool interleaved) {
  TORCH_CHECK(input.is_cuda(), "rope: input must be a CUDA tensor, got device ", input.device());
  TORCH_CHECK(input.dim() == 3 || input.dim() == 4, "rope: input must be [batch, seq, dim] or [batch, heads, seq, dim], got ",
              input.sizes());
  TORCH_CHECK(input.size(-1) % 2 == 0, "rope: the last dimension must be even, got ", input.size(-1));
  const ks::DType dtype = ks_dtype(input.scalar_type());
  at::Tensor x4 = input.dim() == 3 ? input.unsqueeze(1) : input;
  if (x4.size(3) > 1 && x4.stride(3) != 1) x4 = x4.contiguous();
  const at::Tensor c = as_table(cos, x4, "cos");
  const at::Tensor s = as_table(sin, x4, "sin");
  TORCH_CHECK(c.strides() == s.strides(), "rope: cos and sin must have the same strides");
  const c10::cuda::CUDAGuard device_guard(input.device());
  at::Tensor out = at::empty(input.sizes(), input.options());  // contiguous, like the fake kernel
  if (input.numel() == 0) return out;

  ks::RopeArgs a{};
  a.dtype = dtype;
  a.interleaved = interleaved;
  a.out = out.data_ptr();
  a.x = x4.const_data_ptr();
  a.batch = x4.size(0);
  a.heads = x4.size(1);
  a.seq = x4.size(2);
  a.dim = x4.size(3);
  a.x_sb = x4.stride(0);
  a.x_sh = x4.stride(1);
  a.x_ss = x4.stride(2);
  a.cos = c.const_data_ptr();
  a.sin = s.const_data_ptr();
  a.cs_sb = c.size(0) == 1 ? 0 : c.stride(0);
  a.cs_ss = c.stride(1);
  const cudaError_t err = ks::rope(a, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "rope: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rope(Tensor input, Tensor cos, Tensor sin, bool interleaved) -> Tensor");
  ops.impl("rope", c10::kCUDA, &rope);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
