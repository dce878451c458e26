// RMSNorm and fused residual-add + RMSNorm over the last dimension, for the sg-rmsnorm
// kernel project.
//
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight      (weight optional)
//   fused:   s = round(x + residual) -> sum_out;  y = rms_norm(s) * weight
//
// Why it is shaped like this
// - Memory-bound (2 bytes in and out per bf16 element, ~4 FLOPs): the floor is bytes /
//   copy bandwidth. Each element is read from DRAM once: a thread loads its share of the
//   row into registers (all loads in flight together), the row's sum of squares is
//   reduced, and the cached values are scaled and stored.
// - Every width and alignment takes one path (split_row in common.cuh): a scalar head up
//   to the output row's first 16-byte boundary, 16-byte packs, a scalar tail. Inputs
//   whose phase differs from the output's (x[..., 1:] views, odd widths, the weight
//   against an odd row) are read with two aligned 16-byte loads and a register shift.
// - Lanes per row grow with the width (about 2 packs per lane, 8..1024 lanes). Narrow
//   rows share a 256-thread block, one group of lanes per row.
// - Rows too wide for the register cache (more than 2 packs per lane at 1024 lanes, 4 for
//   fp32: over 16384 elements) re-read the row in the second pass, from L2.
// - __launch_bounds__(1024): at most 64 registers per thread, so a 1024-thread block fits
//   an SM's 65536 registers (tests/test_kernel_resources.py checks it with ptxas -v).
// - Indices are int64 (rows * hidden can pass 2^31).
#include "common.cuh"
#include "launchers.h"

namespace ks {
namespace {

constexpr int kMaxLanes = 1024;
constexpr int kBlockThreads = 256;

template <typename T>
__device__ __forceinline__ Pack<T> add_round(const Pack<T>& a, const Pack<T>& b) {
  Pack<T> s;
#pragma unroll
  for (int i = 0; i < kPack<T>; ++i) s.v[i] = from_float<T>(to_float(a.v[i]) + to_float(b.v[i]));
  return s;
}

// VPT > 0: each lane caches VPT packs in registers. VPT == 0: rows too wide for that; the
// second pass reads the row again (from sum_out when fused: the lane's own writes).
template <typename T, int VPT>
__global__ void __launch_bounds__(kMaxLanes) rms_norm_rows(RmsNormArgs a) {
  constexpr int N = kPack<T>;
  __shared__ float scratch[kMaxLanes / 32];
  const int lanes = blockDim.x;
  const int t = threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < a.rows;  // the last block may hang past the end; it still joins the reduction
  const int64_t r = active ? row : 0;
  const T* x = static_cast<const T*>(a.x) + r * a.x_stride;
  const T* res = a.residual != nullptr ? static_cast<const T*>(a.residual) + r * a.residual_stride : nullptr;
  T* s = a.sum_out != nullptr ? static_cast<T*>(a.sum_out) + r * a.sum_stride : nullptr;
  T* y = static_cast<T*>(a.out) + r * a.out_stride;
  const T* w = static_cast<const T*>(a.weight);
  const RowSplit sp = split_row(y, a.hidden);
  const int64_t tail0 = sp.head + sp.packs * N;

  // Pass 1: load (and add the residual), sum the squares.
  float head_v = 0.f, tail_v = 0.f, sum_sq = 0.f;
  Pack<T> cache[VPT > 0 ? VPT : 1];
  if (active) {
    if (t < sp.head) {
      T v = x[t];
      if (res != nullptr) s[t] = v = from_float<T>(to_float(v) + to_float(res[t]));
      head_v = to_float(v);
    }
    if (t < sp.tail) {
      T v = x[tail0 + t];
      if (res != nullptr) s[tail0 + t] = v = from_float<T>(to_float(v) + to_float(res[tail0 + t]));
      tail_v = to_float(v);
    }
    sum_sq = head_v * head_v + tail_v * tail_v;
    auto load = [&](int64_t j) {
      const int64_t e = sp.head + j * N;
      Pack<T> p = load_any(x + e);
      if (res != nullptr) {
        p = add_round(p, load_any(res + e));
        store_any(s + e, p);
      }
#pragma unroll
      for (int i = 0; i < N; ++i) sum_sq += to_float(p.v[i]) * to_float(p.v[i]);
      return p;
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * lanes;
        if (j < sp.packs) cache[k] = load(j);
      }
    } else {
      for (int64_t j = t; j < sp.packs; j += lanes) load(j);
    }
  }
  sum_sq = row_sum(sum_sq, lanes, scratch);
  if (!active) return;  // after the barriers
  const float rstd = rsqrtf(sum_sq / static_cast<float>(a.hidden) + a.eps);

  // Pass 2: scale and store; the output's packs are 16-byte aligned by construction.
  if (t < sp.head) y[t] = from_float<T>(head_v * rstd * (w != nullptr ? to_float(w[t]) : 1.f));
  if (t < sp.tail) y[tail0 + t] = from_float<T>(tail_v * rstd * (w != nullptr ? to_float(w[tail0 + t]) : 1.f));
  auto store = [&](int64_t j, const Pack<T>& p) {
    const int64_t e = sp.head + j * N;
    Pack<T> o;
    if (w != nullptr) {
      const Pack<T> wv = load_any(w + e);
#pragma unroll
      for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(to_float(p.v[i]) * rstd * to_float(wv.v[i]));
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(to_float(p.v[i]) * rstd);
    }
    store_pack(y + e, o);
  };
  if constexpr (VPT > 0) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * lanes;
      if (j < sp.packs) store(j, cache[k]);
    }
  } else {
    for (int64_t j = t; j < sp.packs; j += lanes) {
      const int64_t e = sp.head + j * N;
      store(j, res != nullptr ? load_any<T>(s + e) : load_any(x + e));
    }
  }
}

template <typename T, int VPT>
cudaError_t launch(const RmsNormArgs& a, int lanes, cudaStream_t stream) {
  const int rows_per_block = lanes >= kBlockThreads ? 1 : kBlockThreads / lanes;
  const int64_t blocks = (a.rows + rows_per_block - 1) / rows_per_block;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  rms_norm_rows<T, VPT><<<static_cast<unsigned>(blocks), dim3(lanes, rows_per_block), 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

cudaError_t rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.hidden == 0) return cudaSuccess;
  return dispatch_dtype(a.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    const int64_t packs = a.hidden / kPack<T>;
    const int lanes = lanes_for_row(packs, 2);
    const int64_t per_lane = (packs + lanes - 1) / lanes;
    if (per_lane <= 1) return launch<T, 1>(a, lanes, stream);
    if (per_lane <= 2) return launch<T, 2>(a, lanes, stream);
    // 4 cached packs fit 64 registers for fp32 only (bf16/fp16 spill): measured by ptxas.
    if constexpr (sizeof(T) == 4) {
      if (per_lane <= 4) return launch<T, 4>(a, lanes, stream);
    }
    return launch<T, 0>(a, lanes, stream);
  });
}

}  // namespace ks
