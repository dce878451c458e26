// torch_binding.cpp - checks, dispatch and op registration of the prototype. The same file
// builds two ways, unchanged:
// - prototype.py: torch.utils.cpp_extension.load(..., is_python_module=False) defines
//   TORCH_EXTENSION_NAME (the name given to load) and no registration.h exists, so the
//   fallback below registers the ops with plain TORCH_LIBRARY: torch.ops.<name>.swish.
// - a kernel-builder project (prototype.py promote, build_local.py, Nix): registration.h
//   is generated, TORCH_LIBRARY_EXPAND gives each build its own namespace and
//   REGISTER_EXTENSION the module the Hub loader imports.
// No pybind11 and no torch/extension.h in either (hard rule 3).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../kernel_src/proto.h"
#include "torch_binding.h"

#if __has_include("registration.h")
#include "registration.h"
#else
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define REGISTER_EXTENSION(NAME)
#endif

namespace {

proto::DType to_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return proto::DType::kFloat32;
    case at::kHalf:
      return proto::DType::kFloat16;
    case at::kBFloat16:
      return proto::DType::kBFloat16;
    default:
      break;
  }
  TORCH_CHECK(false, "swish: unsupported dtype ", t.scalar_type(), " (expected float32, float16 or bfloat16)");
  return proto::DType::kFloat32;
}

}  // namespace

at::Tensor swish(const at::Tensor& x, double beta) {
  TORCH_CHECK(x.is_cuda(), "swish: x must be a CUDA tensor, got device ", x.device());
  const proto::DType dt = to_dtype(x);
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in);
  const cudaError_t err = proto::swish(dt, out.data_ptr(), in.data_ptr(), in.numel(), static_cast<float>(beta),
                                       c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "swish: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("swish(Tensor x, float beta=1.0) -> Tensor");
  ops.impl("swish", c10::kCUDA, &swish);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
