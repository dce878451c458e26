// rope.cu - launchers of LTX-Video's rotary embedding, alone and fused with norm_q/norm_k
// (diffusers 0.42.1 apply_rotary_emb; formulas and bytes per element: README.md).
//   out[2i]   = x[2i]   * cos[2i]   - x[2i+1] * sin[2i]
//   out[2i+1] = x[2i+1] * cos[2i+1] + x[2i]   * sin[2i+1]     in fp32, rounded to x's dtype
// The fused q/k kernel reads q, k, cos, sin once and writes q, k once (16 bytes per element
// position against eager's 32) and does not round the normalized value before the rotation
// (closer to exact than eager). It keeps rows in registers like rms_norm.cu, 16-byte path
// only (register counts and the chunk choice: rope_kernels.cuh, norm_rope_forward in
// ltx_ops.cpp); misaligned or odd-sized inputs take the scalar loop norm, then rope_kernel's
// scalar path, in fp32 with one rounding, like the fused kernel.

#include <c10/cuda/CUDAException.h>

#include <cstdio>
#include <cstdlib>

#include "ltx_launch.cuh"
#include "rope_kernels.cuh"

namespace ltx {

void launch_rope(DType dt, const RopeArgs& a, bool vec, const Stream& stream) {
  require_row_shape(a, __func__);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int rpb = rows_per_block(a.tpr);
    const dim3 grid(grid_for(a.rows, rpb));
    const dim3 block(static_cast<unsigned>(rpb * a.tpr));
    if (vec)
      launch_kernel(&rope_kernel<T, true>, grid, block, 0, stream, a);
    else
      launch_kernel(&rope_kernel<T, false>, grid, block, 0, stream, a);
  });
}

void launch_rope_flat(DType dt, const RopeArgs& a, int cpt, const Stream& stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int N = VecWidth<T>::value;
    constexpr int kBlock = 256;
    const int64_t chunks = a.rows * a.d / N;
    const dim3 grid(grid_for(chunks, kBlock * cpt));
    switch (cpt) {
      case 1:
        launch_kernel(&rope_flat_kernel<T, 1>, grid, kBlock, 0, stream, a, chunks);
        break;
      case 2:
        launch_kernel(&rope_flat_kernel<T, 2>, grid, kBlock, 0, stream, a, chunks);
        break;
      case 4:
        launch_kernel(&rope_flat_kernel<T, 4>, grid, kBlock, 0, stream, a, chunks);
        break;
      default:
        // The host validated cpt (kRopeFlatCpt); reaching here is a bug there.
        fprintf(stderr, "ltx rope: no flat kernel with %d chunks per thread\n", cpt);
        abort();
    }
  });
}

void launch_rope_narrow(DType dt, const RopeArgs& a, int elems, bool streaming, const Stream& stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kBlock = 256;
    const int64_t units = a.rows * a.d / elems;
    const dim3 grid(grid_for(units, kBlock));
    switch (elems) {
      case 2:
        if (streaming)
          launch_kernel(&rope_narrow_kernel<T, 2, true>, grid, kBlock, 0, stream, a, units);
        else
          launch_kernel(&rope_narrow_kernel<T, 2>, grid, kBlock, 0, stream, a, units);
        break;
      case 4:
        if (streaming)
          launch_kernel(&rope_narrow_kernel<T, 4, true>, grid, kBlock, 0, stream, a, units);
        else
          launch_kernel(&rope_narrow_kernel<T, 4>, grid, kBlock, 0, stream, a, units);
        break;
      default:
        // The host validated elems (kRopeNarrowElems); reaching here is a bug there.
        fprintf(stderr, "ltx rope: no narrow kernel with %d elements per thread\n", elems);
        abort();
    }
  });
}

void launch_rms_norm_rope(DType dt, const RopeArgs& a, int vpt, bool lean, bool hints, const Stream& stream,
                          int64_t prefetch_sms) {
  require_row_shape(a, __func__);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int rpb = rows_per_block(a.tpr);
    const dim3 grid(grid_for(a.rows, rpb));
    const dim3 block(static_cast<unsigned>(rpb * a.tpr));
    if (lean && prefetch_sms > 0) {
      // Persistent: as many blocks as fit at once, every block looping over about the same
      // number of row groups (groups / resident blocks rounded up, then the fewest blocks that
      // cover the groups at that count: no block takes more than one group above another).
      const int64_t per_block = ceil_div(grid.x, int64_t{kPrefetchRopeBlocks} * prefetch_sms);
      const dim3 pgrid(static_cast<unsigned>(ceil_div(grid.x, per_block)));
      if (hints)
        launch_kernel(&rms_norm_rope_prefetch_kernel<T, true>, pgrid, block, 0, stream, a);
      else
        launch_kernel(&rms_norm_rope_prefetch_kernel<T, false>, pgrid, block, 0, stream, a);
      return;
    }
    if (lean) {
      // the host checked vpt == 1, tpr <= kMaxLeanRopeBlock (so blocks of at most 256) and rows < 2^31
      if (hints)
        launch_kernel(&rms_norm_rope_kernel<T, 1, true, true, true>, grid, block, 0, stream, a);
      else
        launch_kernel(&rms_norm_rope_kernel<T, 1, true, true>, grid, block, 0, stream, a);
      return;
    }
    switch (vpt) {
      case 1:
        launch_kernel(&rms_norm_rope_kernel<T, 1, true>, grid, block, 0, stream, a);
        break;
      case 2:
        launch_kernel(&rms_norm_rope_kernel<T, 2, true>, grid, block, 0, stream, a);
        break;
      case 3:
        launch_kernel(&rms_norm_rope_kernel<T, 3, true>, grid, block, 0, stream, a);
        break;
      case 4:
        launch_kernel(&rms_norm_rope_kernel<T, 4, true>, grid, block, 0, stream, a);
        break;
      default:
        break;  // the host validated vpt (<= kMaxVptNormRope)
    }
  });
}

}  // namespace ltx
