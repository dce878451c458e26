// RMSNorm over the last dimension: the host entry point for both the plain and the fused
// residual-add variants (the kernels are in rms_norm_kernels.cuh; the ADD=true
// instantiations are compiled in fused_add_rms_norm.cu).
//
// Build: part of the qwen3-8b-kernels project (build.toml); locally with
//   python skills/cuda-kernels/scripts/build_local.py skills/cuda-kernels/examples/qwen3_8b --arch 9.0
#include "rms_norm_kernels.cuh"

namespace qwen3_kernels {

void launch_rms_norm(const RmsNormParams& p, const RmsNormTuning& tuning, cudaStream_t stream) {
  // Empty guard: a grid of zero blocks is a launch error, and there is nothing to do.
  if (p.rows <= 0 || p.hidden <= 0) return;
  if (p.residual != nullptr) {
    launch_fused_add_rms_norm(p, tuning, stream);
  } else {
    launch_norm<false>(p, tuning, stream);
  }
}

}  // namespace qwen3_kernels
