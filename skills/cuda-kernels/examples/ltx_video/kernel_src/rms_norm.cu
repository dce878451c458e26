// rms_norm.cu - launchers of RMSNorm, plain, AdaLN-modulated and fused with the (gated)
// residual add before it (formulas: README.md "The kernels"). fp32 math, one rounding per
// output. The kernels (rms_norm_kernels.cuh): rows (a row in registers, one read and one
// write of x), loop (rows too long for registers: two reads, the second mostly from L2),
// pipe (the default modulate op's cp.async pipeline), colstat (opt-in sweep knob). VEC =
// the 16-byte path (alignment checked in ltx_ops.cpp); otherwise the loop kernel runs
// element by element with bounds checks. Tests: tests/test_ltx_kernels_gpu.py; timings:
// benchmarks/bench_ops.py.

#include <c10/cuda/CUDAException.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "ltx_launch.cuh"
#include "rms_norm_kernels.cuh"

namespace ltx {
namespace {

template <typename T, int VPT, bool HAS_W, bool MOD, bool ADD>
void launch_rows(const NormArgs& a, const RowsVariant& v, const Stream& stream) {
  const int rpb = norm_rows_per_block(a.tpr);
  const dim3 grid(grid_for(a.rows, rpb));
  const dim3 block(static_cast<unsigned>(rpb * a.tpr));
  if constexpr (MOD && VPT <= kMaxVptLean) {
    // the lean variants: the host checked rows < 2^31 (RowIndex::lean)
    if (v.reload) {
      launch_kernel(&rms_norm_rows_kernel<T, VPT, HAS_W, MOD, ADD, false, true, true>, grid, block, 0, stream, a);
      return;
    }
    if (v.lean && v.hints) {
      launch_kernel(&rms_norm_rows_kernel<T, VPT, HAS_W, MOD, ADD, false, true, false, true>, grid, block, 0, stream, a);
      return;
    }
    if (v.lean) {
      launch_kernel(&rms_norm_rows_kernel<T, VPT, HAS_W, MOD, ADD, false, true>, grid, block, 0, stream, a);
      return;
    }
  }
  if constexpr (MOD) {
    if (v.late) {
      // launch_bounds(256): the host allows LATE only for threads_per_row <= kMaxLateBlock
      launch_kernel(&rms_norm_rows_kernel<T, VPT, HAS_W, MOD, ADD, true>, grid, block, 0, stream, a);
      return;
    }
  }
  launch_kernel(&rms_norm_rows_kernel<T, VPT, HAS_W, MOD, ADD>, grid, block, 0, stream, a);
}

// Instantiates only the chunk counts each operand set may use (ltx_kernels.h): the plain
// norm all of kVptChoices (rms_norm_with_config sweeps them), the modulated and fused-add
// kernels, which hold three to six operand rows, at most kMaxVptMod / kMaxVptAdd.
template <typename T, bool HAS_W, bool MOD, bool ADD>
void launch_rows_vpt(const NormArgs& a, int vpt, const RowsVariant& v, const Stream& stream) {
  constexpr bool kPlain = !MOD && !ADD;
  switch (vpt) {
    case 1:
      return launch_rows<T, 1, HAS_W, MOD, ADD>(a, v, stream);
    case 2:
      return launch_rows<T, 2, HAS_W, MOD, ADD>(a, v, stream);
    case 3:
      return launch_rows<T, 3, HAS_W, MOD, ADD>(a, v, stream);
    case 4:
      return launch_rows<T, 4, HAS_W, MOD, ADD>(a, v, stream);
    case 6:
      if constexpr (kPlain) return launch_rows<T, 6, HAS_W, MOD, ADD>(a, v, stream);
      break;
    case 8:
      if constexpr (kPlain) return launch_rows<T, 8, HAS_W, MOD, ADD>(a, v, stream);
      break;
    case 12:
      if constexpr (kPlain) return launch_rows<T, 12, HAS_W, MOD, ADD>(a, v, stream);
      break;
    case 16:
      if constexpr (kPlain) return launch_rows<T, 16, HAS_W, MOD, ADD>(a, v, stream);
      break;
    default:
      break;
  }
  // The host validated vpt against max_rows_vpt(); reaching here is a bug there.
  fprintf(stderr, "ltx rms_norm: no rows kernel with %d chunks per thread for this operand set\n", vpt);
  abort();
}

template <typename T, bool HAS_W>
void launch_rows_ops(const NormArgs& a, int vpt, const RowsVariant& v, const Stream& stream) {
  const bool mod = a.scale != nullptr;
  if (a.residual != nullptr) {
    if (mod)
      launch_rows_vpt<T, HAS_W, true, true>(a, vpt, v, stream);
    else
      launch_rows_vpt<T, HAS_W, false, true>(a, vpt, v, stream);
  } else if (mod) {
    launch_rows_vpt<T, HAS_W, true, false>(a, vpt, v, stream);
  } else {
    launch_rows_vpt<T, HAS_W, false, false>(a, vpt, v, stream);
  }
}

// Column-stationary kernel: every (chunks, weight, add, stream, prefetch) combination,
// 4 x 2 x 2 x 2 x 2 = 64 kernels per dtype, all reachable from the *_with_config ops.
template <typename T, int VPT, bool HAS_W, bool ADD>
void launch_colstat_flags(const NormArgs& a, int strip_rows, int flags, const Stream& stream) {
  const int slots = norm_rows_per_block(a.tpr);
  const int64_t strips = (a.rows / a.xi.inner) * ceil_div(a.xi.inner, strip_rows);
  const dim3 grid(grid_for(strips, slots));
  const dim3 block(static_cast<unsigned>(slots * a.tpr));
  switch (flags) {
    case 0:
      launch_kernel(&rms_norm_mod_colstat_kernel<T, VPT, HAS_W, ADD, false, false>, grid, block, 0, stream, a, strip_rows);
      break;
    case kColstatStream:
      launch_kernel(&rms_norm_mod_colstat_kernel<T, VPT, HAS_W, ADD, true, false>, grid, block, 0, stream, a, strip_rows);
      break;
    case kColstatPrefetch:
      launch_kernel(&rms_norm_mod_colstat_kernel<T, VPT, HAS_W, ADD, false, true>, grid, block, 0, stream, a, strip_rows);
      break;
    default:
      launch_kernel(&rms_norm_mod_colstat_kernel<T, VPT, HAS_W, ADD, true, true>, grid, block, 0, stream, a, strip_rows);
      break;
  }
}

template <typename T, bool HAS_W, bool ADD>
void launch_colstat_vpt(const NormArgs& a, int vpt, int strip_rows, int flags, const Stream& stream) {
  switch (vpt) {
    case 1:
      return launch_colstat_flags<T, 1, HAS_W, ADD>(a, strip_rows, flags, stream);
    case 2:
      return launch_colstat_flags<T, 2, HAS_W, ADD>(a, strip_rows, flags, stream);
    case 3:
      return launch_colstat_flags<T, 3, HAS_W, ADD>(a, strip_rows, flags, stream);
    case 4:
      return launch_colstat_flags<T, 4, HAS_W, ADD>(a, strip_rows, flags, stream);
    default:
      break;
  }
  fprintf(stderr, "ltx rms_norm: no column-stationary kernel with %d chunks per thread\n", vpt);
  abort();
}

// Resident blocks per SM (0: the shared memory does not fit) and SM count for a persistent
// launch, cached per (kernel, device, block, shared memory): a 5-20 us kernel cannot afford
// the queries per call. Above 48 KB of shared memory a kernel must opt in
// (cudaFuncSetAttribute) before it may launch or be queried.
struct PersistentFit {
  int per_sm;
  int sms;
};

PersistentFit persistent_fit(const void* kernel, int block, size_t smem) {
  struct Entry {
    const void* kernel;
    int device, block;
    size_t smem;
    PersistentFit fit;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : cache)
    if (e.kernel == kernel && e.device == device && e.block == block && e.smem == smem) return e.fit;
  PersistentFit fit{0, 0};
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&fit.sms, cudaDevAttrMultiProcessorCount, device));
  int limit = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  // the kernel's own 128-byte reduction buffer shares the block's allowance
  if (smem + 32 * sizeof(float) > static_cast<size_t>(limit)) {
    const PersistentFit none{0, 0};  // does not fit (and was never opted in: sms 0)
    cache.push_back({kernel, device, block, smem, none});
    return none;
  }
  // Opt in at every size: the 48 KB default counts static shared memory too (a 48 KB stage set
  // failed without it, H200). The allowance is per kernel and only grows (the largest size
  // cached so far): lowering it for a smaller configuration made a later launch of a cached
  // larger one fail with "invalid argument".
  size_t allowed = 0;  // smem > 0 always (at least 2 stages of one 16-byte chunk)
  for (const Entry& e : cache)
    if (e.kernel == kernel && e.device == device && e.fit.sms > 0 && e.smem > allowed) allowed = e.smem;
  if (allowed < smem)
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit.per_sm, kernel, block, smem));
  cache.push_back({kernel, device, block, smem, fit});
  return fit;
}

template <typename T, int VPT, bool HAS_W, bool ADD, int STAGES>
size_t launch_pipe(const NormArgs& a, const Stream& stream) {
  const int rpb = norm_rows_per_block(a.tpr);
  const int block = rpb * a.tpr;
  const size_t smem = rms_norm_pipe_smem(a.tpr, a.d, sizeof(T), ADD, STAGES);
  const void* kernel = reinterpret_cast<const void*>(&rms_norm_mod_pipe_kernel<T, VPT, HAS_W, ADD, STAGES>);
  const PersistentFit fit = persistent_fit(kernel, block, smem);
  if (fit.per_sm < 1) return smem;
  const int64_t groups = ceil_div(a.rows, rpb);
  const int64_t resident = static_cast<int64_t>(fit.per_sm) * fit.sms;
  const dim3 grid(static_cast<unsigned>(groups < resident ? groups : resident));
  launch_kernel(&rms_norm_mod_pipe_kernel<T, VPT, HAS_W, ADD, STAGES>, grid, dim3(static_cast<unsigned>(block)), smem, stream, a);
  return 0;
}

template <typename T, int VPT, bool HAS_W, bool ADD>
size_t launch_pipe_stages(const NormArgs& a, int stages, const Stream& stream) {
  if (stages == 3) return launch_pipe<T, VPT, HAS_W, ADD, 3>(a, stream);
  return launch_pipe<T, VPT, HAS_W, ADD, 2>(a, stream);
}

template <typename T, bool HAS_W, bool ADD>
size_t launch_pipe_vpt(const NormArgs& a, int vpt, int stages, const Stream& stream) {
  switch (vpt) {
    case 1:
      return launch_pipe_stages<T, 1, HAS_W, ADD>(a, stages, stream);
    case 2:
      return launch_pipe_stages<T, 2, HAS_W, ADD>(a, stages, stream);
    case 3:
      return launch_pipe_stages<T, 3, HAS_W, ADD>(a, stages, stream);
    case 4:
      return launch_pipe_stages<T, 4, HAS_W, ADD>(a, stages, stream);
    default:
      break;
  }
  fprintf(stderr, "ltx rms_norm: no pipelined kernel with %d chunks per thread\n", vpt);
  abort();
}

}  // namespace

void launch_rms_norm_rows(DType dt, const NormArgs& a, int vpt, const RowsVariant& v, const Stream& stream) {
  require_row_shape(a, __func__);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (a.weight != nullptr)
      launch_rows_ops<T, true>(a, vpt, v, stream);
    else
      launch_rows_ops<T, false>(a, vpt, v, stream);
  });
}

void launch_rms_norm_loop(DType dt, const NormArgs& a, int block, bool vec, const Stream& stream) {
  require_row_shape(a, __func__);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const dim3 grid(grid_for(a.rows, 1));
    if (vec)
      launch_kernel(&rms_norm_loop_kernel<T, true>, grid, dim3(static_cast<unsigned>(block)), 0, stream, a);
    else
      launch_kernel(&rms_norm_loop_kernel<T, false>, grid, dim3(static_cast<unsigned>(block)), 0, stream, a);
  });
}

void launch_rms_norm_colstat(DType dt, const NormArgs& a, int vpt, int strip_rows, int flags, const Stream& stream) {
  require_row_shape(a, __func__);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool add = a.residual != nullptr;
    if (a.weight != nullptr) {
      if (add)
        launch_colstat_vpt<T, true, true>(a, vpt, strip_rows, flags, stream);
      else
        launch_colstat_vpt<T, true, false>(a, vpt, strip_rows, flags, stream);
    } else if (add) {
      launch_colstat_vpt<T, false, true>(a, vpt, strip_rows, flags, stream);
    } else {
      launch_colstat_vpt<T, false, false>(a, vpt, strip_rows, flags, stream);
    }
  });
}

size_t launch_rms_norm_pipe(DType dt, const NormArgs& a, int vpt, int stages, const Stream& stream) {
  require_row_shape(a, __func__);
  size_t status = 0;
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool add = a.residual != nullptr;
    if (a.weight != nullptr)
      status = add ? launch_pipe_vpt<T, true, true>(a, vpt, stages, stream)
                   : launch_pipe_vpt<T, true, false>(a, vpt, stages, stream);
    else
      status = add ? launch_pipe_vpt<T, false, true>(a, vpt, stages, stream)
                   : launch_pipe_vpt<T, false, false>(a, vpt, stages, stream);
  });
  return status;
}

}  // namespace ltx
