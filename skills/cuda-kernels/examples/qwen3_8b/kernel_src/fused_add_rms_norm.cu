// Fused residual add + RMSNorm: one pass that reads x and residual and writes both the new
// residual s = round(x + residual) and rms_norm(s). Unfused, transformers reads x and the
// residual, writes s, then reads s again and writes the norm: 5 tensor passes instead of 4.
//
// Host entry: launch_rms_norm (rms_norm.cu) with RmsNormParams::residual set.
#include "rms_norm_kernels.cuh"

namespace qwen3_kernels {

void launch_fused_add_rms_norm(const RmsNormParams& p, const RmsNormTuning& tuning, cudaStream_t stream) {
  launch_norm<true>(p, tuning, stream);
}

}  // namespace qwen3_kernels
