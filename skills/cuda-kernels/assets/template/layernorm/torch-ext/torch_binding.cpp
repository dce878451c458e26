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
      TORCH_CHECK(false, "layer_norm: input dtype must be float32, float16 or bfloat16, got ", t);
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

void check_operand(const at::Tensor& input, const std::optional<at::Tensor>& t, const char* name) {
  if (!t.has_value()) return;
  TORCH_CHECK(t->device() == input.device(), "layer_norm: ", name, " is on ", t->device(), ", input on ",
              input.device());
  TORCH_CHECK(t->scalar_type() == input.scalar_type(), "layer_norm: ", name, " dtype ", t->scalar_type(),
              " != input dtype ", input.scalar_type());
}

}  // namespace

at::Tensor layer_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& scale,
                      const std::optional<at::Tensor>& shift, double epsilon) {
  TORCH_CHECK(input.is_cuda(), "layer_norm: input must be a CUDA tensor, got device ", input.device());
  TORCH_CHECK(input.dim() >= 1, "layer_norm: input must have at least one dimension");
  const ks::DType dtype = ks_dtype(input.scalar_type());
  TORCH_CHECK(std::isfinite(epsilon) && epsilon >= 0.0, "layer_norm: epsilon must be finite and >= 0, got ", epsilon);
  const int64_t hidden = input.size(-1);
  for (const auto& [t, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    check_operand(input, *t, name);
    if (t->has_value()) {
      TORCH_CHECK((*t)->dim() == 1 && (*t)->size(0) == hidden, "layer_norm: ", name, " must have shape [", hidden,
                  "], got ", (*t)->sizes());
      TORCH_CHECK((*t)->is_contiguous(), "layer_norm: ", name, " must be contiguous");
    }
  }
  check_operand(input, scale, "scale");
  check_operand(input, shift, "shift");
  const c10::cuda::CUDAGuard device_guard(input.device());
  at::Tensor out = at::empty(input.sizes(), input.options());  // contiguous, like the fake kernel
  const at::Tensor x = as_rows(input);
  const int64_t rows = x.size(0);

  // scale/shift: M rows of [hidden] (e.g. [B, C] or [B, 1, C] for x = [B, T, C]); x's rows
  // split into M equal consecutive groups, group g modulated by row g.
  int64_t mod_rows = 1;
  at::Tensor sc, sh;
  for (const auto& [t, dst, name] : {std::tuple{&scale, &sc, "scale"}, std::tuple{&shift, &sh, "shift"}}) {
    if (!t->has_value()) continue;
    TORCH_CHECK((*t)->dim() >= 1 && (*t)->size(-1) == hidden, "layer_norm: ", name, " must end in ", hidden,
                ", got ", (*t)->sizes());
    *dst = as_rows(**t).contiguous();
    mod_rows = dst->size(0);
    TORCH_CHECK(mod_rows >= 1 && rows % mod_rows == 0, "layer_norm: ", name, " has ", mod_rows,
                " rows, which do not divide the input's ", rows, " rows");
  }
  TORCH_CHECK(!sc.defined() || !sh.defined() || sc.size(0) == sh.size(0), "layer_norm: scale has ", sc.size(0),
              " rows but shift has ", sh.defined() ? sh.size(0) : 0);
  if (input.numel() == 0) return out;

  ks::LayerNormArgs a{};
  a.dtype = dtype;
  a.out = out.data_ptr();
  a.out_stride = hidden;
  a.x = x.const_data_ptr();
  a.x_stride = row_stride(x);
  a.weight = weight.has_value() ? weight->const_data_ptr() : nullptr;
  a.bias = bias.has_value() ? bias->const_data_ptr() : nullptr;
  a.scale = sc.defined() ? sc.const_data_ptr() : nullptr;
  a.shift = sh.defined() ? sh.const_data_ptr() : nullptr;
  a.mod_stride = hidden;
  a.rows_per_mod = rows / mod_rows;
  a.rows = rows;
  a.hidden = hidden;
  a.eps = static_cast<float>(epsilon);
  const cudaError_t err = ks::layer_norm(a, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "layer_norm: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("layer_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? scale, Tensor? shift, float epsilon) -> Tensor");
  ops.impl("layer_norm", c10::kCUDA, &layer_norm);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
