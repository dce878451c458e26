// RMSNorm and fused residual-add + RMSNorm over the last dimension, for the __NAME__
// kernel project.
//
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight      (weight optional)
//   fused:   s = round(x + residual) -> sum_out;  y = rms_norm(s) * weight
//
// Why it is shaped like this (the numbers and their runs: references/lessons.md)
// - Memory-bound (2 bytes in and out per bf16 element, ~4 FLOPs): the floor is bytes /
//   copy bandwidth. Each element is read from DRAM once: a lane caches its share of the row
//   in registers (all loads in flight together), the sum of squares is reduced, and the
//   cached values are scaled and stored.
// - Every width and alignment takes one path (split_row in common.cuh): a scalar head to the
//   output row's first 16-byte boundary, 16-byte packs, a scalar tail. An input at another
//   phase than the output is read with two aligned 16-byte loads and a shift.
// - The launcher picks the instance its checks allow (Layout in common.cuh):
//   kAligned: one load per pack and no shift, so tighter launch bounds; many rows take 4
//     packs per lane.
//   kSamePhase (contiguous rows of 4100 bf16): x, the residual and the sum at the output's
//     phase, one load per pack; the shifted weight is read pack by pack in the second pass
//     (held in flight it took the qwen3_8b split kernel from 59 to 98 registers). Rows of
//     256 packs or more take 4 per lane under the aligned 4-pack bound.
//   kShifted (x[..., 1:] into a fresh output): the weight is on the grid, its packs fetched
//     together (a shifted weight's load waits for the stores before it). Without a residual,
//     rows whose lanes are whole warps take 4 packs per lane in warp runs (run_pack,
//     with_run_next in common.cuh: one chunk load per pack, 32 packs per warp), x's word
//     offset switched once per row: bf16 x[..., 1:] 8192x4096 from 78.0 to 87.1 % of copy,
//     4096x8192 70.0 -> 86.9, 32768x1024 78.2 -> 87.7, at 55 registers (one H100, same call).
//     The 31-pack shuffled warps lost here: 512-lane rows became 544 (one block per SM) and
//     4096x8192 fell to 39.3 %.
//   kAny: x, the residual and the weight all shifted.
// - Lanes per row grow with the width (8..32 lanes, then whole warps up to the instance's
//   bound); narrow rows share a 256-thread block. Rows too wide for the register cache (over
//   2 packs per lane at 1024 lanes: 16384 bf16, 8192 fp32; aligned rows go to 8 per lane,
//   shifted rows without a residual to 4) re-read the row in the second pass, from L2.
// - __launch_bounds__(threads, blocks) per instance (max_threads/min_blocks below): threads
//   x registers fit an SM's 65536 registers (tests/test_kernel_resources.py checks it).
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
  float fa[kPack<T>], fb[kPack<T>];
  unpack(a, fa);
  unpack(b, fb);
#pragma unroll
  for (int i = 0; i < kPack<T>; ++i) s.v[i] = from_float<T>(fa[i] + fb[i]);
  return s;
}

// Launch bounds per instance: the most threads a block of it may have, and the blocks that
// must stay resident, which caps registers at 65536 / (threads x blocks). Without a minimum
// ptxas fills the 64 registers that 1024 threads leave (62 for bf16 at VPT 2: 4 blocks of
// 256 per SM). Aligned instances load one pack per pack, so they fit tighter caps:
//   aligned: VPT 1: 512 x 3 (40 regs)  VPT 4: 256 x 4 (64; 256 x 3 on sm_80)  VPT 8: 512 x 1
//   (128); 32 registers at VPT 1 spilled 4-28 bytes (ptxas -v, sm_80/90).
//   any alignment: 1024 x 1 (64), VPT 1 and 2; VPT 0 (the re-read row) 1024 x 1.
//   same phase: as any alignment, and VPT 4 as aligned. Shifted: as any alignment (VPT 4 in
//   warp runs too: 55-56 registers under the 64 cap).
template <int VPT, Layout L>
constexpr int max_threads() {
  if constexpr (VPT == 4 && kRowsOnGrid<L>) return 256;
  if constexpr (L != Layout::kAligned || VPT == 0) return 1024;
  return VPT == 1 || VPT == 8 ? 512 : 256;
}
// VPT 4 at 256 x 4 (64 registers) spilled 4 bytes on sm_80 (bf16), none on sm_90.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr int kVpt4Blocks = 3;
#else
constexpr int kVpt4Blocks = 4;
#endif
template <int VPT, Layout L>
constexpr int min_blocks() {
  if constexpr (VPT == 4 && kRowsOnGrid<L>) return kVpt4Blocks;
  if constexpr (L != Layout::kAligned || VPT == 0) return 1;
  return VPT == 1 ? 3 : 1;
}

// VPT > 0: each lane caches VPT packs in registers. VPT == 0: rows too wide for that; the
// second pass reads the row again (from sum_out when fused: the lane's own writes).
// kResidual false: no residual (launched only then), and shifted rows read in warp runs.
template <typename T, int VPT, Layout L, bool kResidual = true>
__global__ void __launch_bounds__(max_threads<VPT, L>(), min_blocks<VPT, L>())
    rms_norm_rows(RmsNormArgs a) {
  constexpr int N = kPack<T>;
  constexpr bool kRows = kRowsOnGrid<L>;  // x, residual, sum_out: one load per pack
  constexpr bool kWeight = kSharedOnGrid<L>;  // the weight too
  // x's packs in warp runs (run_pack, with_run_next in common.cuh): one chunk per pack.
  constexpr bool kRuns = L == Layout::kShifted && !kResidual && VPT > 0;
  __shared__ float scratch[kMaxLanes / 32];
  const int lanes = blockDim.x;
  const int t = threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < a.rows;  // the last block may hang past the end; it still joins the reduction
  const int64_t r = active ? row : 0;
  const T* x = static_cast<const T*>(a.x) + r * a.x_stride;
  const T* res = kResidual && a.residual != nullptr ? static_cast<const T*>(a.residual) + r * a.residual_stride : nullptr;
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
    // Every load of the lane is issued before the first is used (load_raw, then window).
    auto use = [&](int64_t j, const RawPack& rx, const RawPack& rr) {
      const int64_t e = sp.head + j * N;
      Pack<T> p = window<kRows>(rx, x + e);
      if (res != nullptr) {
        p = add_round(p, window<kRows>(rr, res + e));
        store_any(s + e, p);
      }
      float f[N];
      unpack(p, f);
#pragma unroll
      for (int i = 0; i < N; ++i) sum_sq += f[i] * f[i];
      return p;
    };
    if constexpr (kRuns) {
      const int ph = phase_of(x + sp.head);  // every x pack of the row is at this phase
      uint4 c[VPT + 1];                      // c[VPT]: lane 0's chunk after the warp's run
      load_run<VPT>(x + sp.head, sp.packs, ph, c);
      with_word_offset<T>(ph, [&](auto q, int shift) {  // once per row: window_q's four shifts a pack
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const RawPack rx = with_run_next(c[k], c[k + 1]);  // every lane: a shuffle
          if (run_pack<VPT>(t, k) < sp.packs) {
            cache[k] = window_q<decltype(q)::value, T>(rx, shift);
            float f[N];
            unpack(cache[k], f);
#pragma unroll
            for (int i = 0; i < N; ++i) sum_sq += f[i] * f[i];
          }
        }
      });
    } else if constexpr (VPT > 0) {
      RawPack rx[VPT], rr[VPT];
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * lanes;
        if (j < sp.packs) {
          rx[k] = load_raw<kRows>(x + sp.head + j * N);
          if (res != nullptr) rr[k] = load_raw<kRows>(res + sp.head + j * N);
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * lanes;
        if (j < sp.packs) cache[k] = use(j, rx[k], rr[k]);
      }
    } else {
      for (int64_t j = t; j < sp.packs; j += lanes) {
        const int64_t e = sp.head + j * N;
        use(j, load_raw<kRows>(x + e), res != nullptr ? load_raw<kRows>(res + e) : RawPack{});
      }
    }
  }
  sum_sq = row_sum(sum_sq, lanes, scratch);
  if (!active) return;  // after the barriers
  const float rstd = rsqrtf(sum_sq / static_cast<float>(a.hidden) + a.eps);

  // Pass 2: scale and store; the output's packs are 16-byte aligned by construction.
  if (t < sp.head) y[t] = from_float<T>(head_v * rstd * (w != nullptr ? to_float(w[t]) : 1.f));
  if (t < sp.tail) y[tail0 + t] = from_float<T>(tail_v * rstd * (w != nullptr ? to_float(w[tail0 + t]) : 1.f));
  auto store = [&](int64_t j, const Pack<T>& p, const RawPack& rw) {
    const int64_t e = sp.head + j * N;
    Pack<T> o;
    float f[N];
    unpack(p, f);
    if (w != nullptr) {
      float wf[N];
      unpack(window<kWeight>(rw, w + e), wf);
#pragma unroll
      for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(f[i] * rstd * wf[i]);
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(f[i] * rstd);
    }
    store_pack(y + e, o);
  };
  if constexpr (VPT > 0 && kWeight) {
    RawPack rw[VPT];  // the lane's aligned weight packs, all in flight together
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t j = kRuns ? run_pack<VPT>(t, k) : t + static_cast<int64_t>(k) * lanes;
      if (w != nullptr && j < sp.packs) rw[k] = load_raw<true>(w + sp.head + j * N);
    }
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t j = kRuns ? run_pack<VPT>(t, k) : t + static_cast<int64_t>(k) * lanes;
      if (j < sp.packs) store(j, cache[k], rw[k]);
    }
  } else if constexpr (VPT > 0) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {  // a shifted weight: pack by pack (see the top of the file)
      const int64_t j = t + static_cast<int64_t>(k) * lanes;
      if (j < sp.packs) store(j, cache[k], w != nullptr ? load_raw(w + sp.head + j * N) : RawPack{});
    }
  } else {
    for (int64_t j = t; j < sp.packs; j += lanes) {
      const int64_t e = sp.head + j * N;
      const T* src = res != nullptr ? s : x;
      const RawPack rv = load_raw<kRows>(src + e);
      const RawPack rw = w != nullptr ? load_raw<kWeight>(w + e) : RawPack{};
      store(j, window<kRows>(rv, src + e), rw);
    }
  }
}

template <typename T, int VPT, Layout L, bool kResidual = true>
cudaError_t launch(const RmsNormArgs& a, int lanes, cudaStream_t stream) {
  const int rows_per_block = lanes >= kBlockThreads ? 1 : kBlockThreads / lanes;
  const int64_t blocks = (a.rows + rows_per_block - 1) / rows_per_block;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  rms_norm_rows<T, VPT, L, kResidual><<<static_cast<unsigned>(blocks), dim3(lanes, rows_per_block), 0, stream>>>(a);
  return cudaGetLastError();
}

// Rows not aligned (L: kAny, kShifted or kSamePhase): about 2 packs per lane
// (lanes_for_row(packs, 2)), then the VPT that covers the row; one pack per lane on more
// lanes ran slower (8192x4096 bf16: 48 against 72 % of copy). 4 packs per lane first for
// same-phase rows of 256 packs or more (one load a pack, as aligned), and for shifted rows
// without a residual whose lanes are whole warps (warp runs: 65 to 4096 packs). The fused
// add keeps 2: its shifted residual would be a second set of chunks.
template <typename T, Layout L>
cudaError_t launch_any(const RmsNormArgs& a, int64_t packs, cudaStream_t stream) {
  if constexpr (L == Layout::kSamePhase) {  // 4 packs per lane where 256 lanes hold the row
    int l4 = 0;
    if (packs >= 256 && lanes_cover(packs, 4, max_threads<4, L>(), &l4)) return launch<T, 4, L>(a, l4, stream);
  }
  if constexpr (L == Layout::kShifted) {  // no residual: 4 packs per lane in warp runs (whole warps)
    int l4 = 0;
    if (a.residual == nullptr && lanes_cover(packs, 4, max_threads<4, L>(), &l4) && l4 % 32 == 0) {
      return launch<T, 4, L, false>(a, l4, stream);
    }
  }
  const int lanes = lanes_for_row(packs, 2);
  const int64_t per_lane = (packs + lanes - 1) / lanes;
  if (per_lane <= 1) return launch<T, 1, L>(a, lanes, stream);
  if (per_lane <= 2) return launch<T, 2, L>(a, lanes, stream);
  // No other VPT 4 for rows of any phase: with load_raw's two chunks of x and of the
  // residual per cached pack in flight it spills at 64 registers in every dtype (ptxas -v;
  // fp32 spilled 172 bytes on sm_90).
  return launch<T, 0, L>(a, lanes, stream);
}

// Aligned: the smallest cached VPT (from `first`) whose lanes fit the instance's thread bound.
template <typename T>
cudaError_t launch_aligned(const RmsNormArgs& a, int64_t packs, int first, cudaStream_t stream) {
  int lanes = 0;
  // No aligned VPT 2: VPT 1 at 512 lanes already covers every row it could take.
  constexpr Layout A = Layout::kAligned;
  if (first <= 1 && lanes_cover(packs, 1, max_threads<1, A>(), &lanes)) return launch<T, 1, A>(a, lanes, stream);
  if (lanes_cover(packs, 4, max_threads<4, A>(), &lanes)) return launch<T, 4, A>(a, lanes, stream);
  if (lanes_cover(packs, 8, max_threads<8, A>(), &lanes)) return launch<T, 8, A>(a, lanes, stream);
  return launch_any<T, Layout::kSamePhase>(a, packs, stream);
}

}  // namespace

cudaError_t rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.hidden == 0) return cudaSuccess;
  return dispatch_dtype(a.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    constexpr int N = kPack<T>;
    const int64_t packs = a.hidden / N;
    // Every pack of every row 16-byte aligned: the base pointers, and row strides in whole packs
    // (the output's rows then start on the grid, so no row has a head).
    const bool aligned = aligned16(a.x) && aligned16(a.out) && aligned16(a.weight) && aligned16(a.residual) &&
                         aligned16(a.sum_out) && a.x_stride % N == 0 && a.out_stride % N == 0 &&
                         a.residual_stride % N == 0 && a.sum_stride % N == 0;
    if (!aligned) {
      const int es = static_cast<int>(sizeof(T));
      const bool same = same_phase(a.x, a.x_stride, a.out, a.out_stride, es) &&
                        same_phase(a.residual, a.residual_stride, a.out, a.out_stride, es) &&
                        same_phase(a.sum_out, a.sum_stride, a.out, a.out_stride, es);
      if (same) return launch_any<T, Layout::kSamePhase>(a, packs, stream);
      // x[..., 1:] into a fresh output: the weight's packs are still one load each.
      const bool shifted = aligned16(a.out) && a.out_stride % N == 0 && aligned16(a.weight);
      if (shifted) return launch_any<T, Layout::kShifted>(a, packs, stream);
      return launch_any<T, Layout::kAny>(a, packs, stream);
    }
    // Many rows: few threads with several packs each (the qwen3_8b example's H200 sweep: 4096
    // bf16 wide as 128 x 4). Rows over 64 packs too: 32768x1024 bf16 as 32 lanes of 4 read
    // 85.2 % of copy where 128 lanes of 1 read 77.9 (one H100, same call). A few rows: more
    // threads per row, to fill the SMs.
    return launch_aligned<T>(a, packs, a.rows > 1024 && packs > 64 ? 4 : 1, stream);
  });
}

}  // namespace ks
