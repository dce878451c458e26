// rms_norm.cu - RMSNorm for LTX-Video, plain, AdaLN-modulated, and fused with
// the (gated) residual add that precedes it.
//
//   rms_norm(x, w?, eps)                       y = x * rsqrt(mean(x^2) + eps) [* w]
//   rms_norm_modulate(x, w?, scale, shift, eps) y = rms_norm(x, w) * (1 + scale) + shift
//   add_rms_norm_modulate(x, residual, gate?, w?, scale?, shift?, eps)
//       h = residual + x [* gate]  (rounded to the input dtype, as eager stores it)
//       returns (rms_norm(h, w) [* (1 + scale) + shift], h)
//
// All math in fp32, one rounding per output. Design (see README.md):
//  * rows_kernel: a row lives in registers. `tpr` consecutive threads own a row
//    (a power of two <= 32, or whole warps), each holding VPT 16-byte chunks:
//    all loads are issued before the first use, the sum of squares is reduced
//    with warp shuffles (plus shared memory across the warps of a row), and the
//    output is written from registers - one read and one write of x.
//  * loop_kernel: rows too long for registers (> 512 threads x 16 chunks) are
//    read twice by one block, the second read mostly from L2.
//  * VEC = 16-byte accesses, used only when every pointer and row offset is
//    16-byte aligned and D is a multiple of the chunk width (checked in
//    ltx_ops.cpp). Otherwise the loop kernel runs element by element with
//    bounds checks (the scalar path) - misaligned views and odd sizes.
//
// Build: kernel-builder (build.toml) or scripts/build_local.py; tests in
// tests/test_ltx_kernels_gpu.py, timings in benchmarks/bench_ops.py.

#include <c10/cuda/CUDAException.h>

#include "rms_norm_kernels.cuh"

namespace ltx {
namespace {

template <typename T, bool ADD>
void launch_rows_t(const NormArgs& a, int vpt, cudaStream_t stream) {
  const int rpb = rows_per_block(a.tpr);
  const dim3 grid(grid_for(a.rows, rpb));
  const dim3 block(static_cast<unsigned>(rpb * a.tpr));
  switch (vpt) {
    case 1:
      rms_norm_rows_kernel<T, 1, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 2:
      rms_norm_rows_kernel<T, 2, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 3:
      rms_norm_rows_kernel<T, 3, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 4:
      rms_norm_rows_kernel<T, 4, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 6:
      rms_norm_rows_kernel<T, 6, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 8:
      if constexpr (!ADD) rms_norm_rows_kernel<T, 8, true, false><<<grid, block, 0, stream>>>(a);
      break;
    case 12:
      if constexpr (!ADD) rms_norm_rows_kernel<T, 12, true, false><<<grid, block, 0, stream>>>(a);
      break;
    case 16:
      if constexpr (!ADD) rms_norm_rows_kernel<T, 16, true, false><<<grid, block, 0, stream>>>(a);
      break;
    default:
      break;  // the host validated vpt against kVptChoices / kMaxVptAdd
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

void launch_rms_norm_rows(DType dt, const NormArgs& a, int vpt, bool add, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (add)
      launch_rows_t<T, true>(a, vpt, stream);
    else
      launch_rows_t<T, false>(a, vpt, stream);
  });
}

void launch_rms_norm_loop(DType dt, const NormArgs& a, int block, bool vec, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const dim3 grid(grid_for(a.rows, 1));
    if (vec)
      rms_norm_loop_kernel<T, true><<<grid, dim3(static_cast<unsigned>(block)), 0, stream>>>(a);
    else
      rms_norm_loop_kernel<T, false><<<grid, dim3(static_cast<unsigned>(block)), 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace ltx
