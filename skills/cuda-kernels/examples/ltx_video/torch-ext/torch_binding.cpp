// Registers the ltx-video-kernels ops under this build's unique namespace
// (TORCH_EXTENSION_NAME, set by kernel-builder / build_local.py). The schemas
// here are the contract that the fake (meta) kernels in
// ltx_video_kernels/__init__.py mirror. (c10::kCUDA is torch::kCUDA without
// the heavy torch/all.h include.)
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor x, Tensor? weight, float eps) -> Tensor");
  ops.impl("rms_norm", c10::kCUDA, &rms_norm);

  ops.def("rms_norm_modulate(Tensor x, Tensor? weight, Tensor scale, Tensor shift, float eps) -> Tensor");
  ops.impl("rms_norm_modulate", c10::kCUDA, &rms_norm_modulate);

  ops.def(
      "add_rms_norm_modulate(Tensor x, Tensor residual, Tensor? gate, Tensor? weight, Tensor? scale, "
      "Tensor? shift, float eps) -> (Tensor, Tensor)");
  ops.impl("add_rms_norm_modulate", c10::kCUDA, &add_rms_norm_modulate);

  ops.def(
      "rms_norm_with_config(Tensor x, Tensor? weight, float eps, int threads_per_row, int chunks_per_thread) "
      "-> Tensor");
  ops.impl("rms_norm_with_config", c10::kCUDA, &rms_norm_with_config);

  ops.def(
      "rms_norm_modulate_with_config(Tensor x, Tensor? weight, Tensor scale, Tensor shift, float eps, "
      "int threads_per_row, int chunks_per_thread, int rows_per_block, int flags) -> Tensor");
  ops.impl("rms_norm_modulate_with_config", c10::kCUDA, &rms_norm_modulate_with_config);

  ops.def(
      "add_rms_norm_modulate_with_config(Tensor x, Tensor residual, Tensor? gate, Tensor? weight, Tensor scale, "
      "Tensor shift, float eps, int threads_per_row, int chunks_per_thread, int rows_per_block, int flags) "
      "-> (Tensor, Tensor)");
  ops.impl("add_rms_norm_modulate_with_config", c10::kCUDA, &add_rms_norm_modulate_with_config);

  ops.def("gelu_tanh(Tensor x) -> Tensor");
  ops.impl("gelu_tanh", c10::kCUDA, &gelu_tanh);

  ops.def("gelu_tanh_with_config(Tensor x, int threads_per_block, int unroll) -> Tensor");
  ops.impl("gelu_tanh_with_config", c10::kCUDA, &gelu_tanh_with_config);

  ops.def("rope_interleaved(Tensor x, Tensor cos, Tensor sin) -> Tensor");
  ops.impl("rope_interleaved", c10::kCUDA, &rope_interleaved);

  ops.def(
      "rope_interleaved_with_config(Tensor x, Tensor cos, Tensor sin, int chunks_per_thread, "
      "int elements_per_thread=0, int flags=0) -> Tensor");
  ops.impl("rope_interleaved_with_config", c10::kCUDA, &rope_interleaved_with_config);

  ops.def("rms_norm_rope(Tensor x, Tensor? weight, Tensor cos, Tensor sin, float eps) -> Tensor");
  ops.impl("rms_norm_rope", c10::kCUDA, &rms_norm_rope);

  ops.def(
      "rms_norm_rope_qk(Tensor q, Tensor k, Tensor? weight_q, Tensor? weight_k, Tensor cos, Tensor sin, "
      "float eps) -> (Tensor, Tensor)");
  ops.impl("rms_norm_rope_qk", c10::kCUDA, &rms_norm_rope_qk);

  ops.def(
      "rms_norm_rope_qk_with_config(Tensor q, Tensor k, Tensor? weight_q, Tensor? weight_k, Tensor cos, "
      "Tensor sin, float eps, int threads_per_row, int chunks_per_thread, int flags=0) -> (Tensor, Tensor)");
  ops.impl("rms_norm_rope_qk_with_config", c10::kCUDA, &rms_norm_rope_qk_with_config);

  // No tensor arguments, so no backend to dispatch on: one kernel for every key.
  ops.def("set_pdl(bool enable) -> bool", &set_pdl);
  ops.def("set_cache_hints(bool enable) -> bool", &set_cache_hints);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
