// RMSNorm and fused residual-add + RMSNorm kernels (templates; instantiated by rms_norm.cu
// with ADD=false and by fused_add_rms_norm.cu with ADD=true so the two build in parallel).
//
//   y = x * rsqrt(mean(x^2) + eps) * w          (fp32 math, one rounding at the end)
//   ADD: s = round(x + r) is stored and normalized in place of x, like transformers'
//        `hidden_states = residual + hidden_states` followed by the next RMSNorm.
//
// Kernels, chosen on the host (the why of each: README.md, Design):
//  * row kernel (hidden > 32 packs of 16 bytes, e.g. 4096): one row per block. Each thread
//    issues all its loads of x (and r), then of the weight, before any math: loaded between
//    the stores, the compiler cannot hoist a weight load over a store it cannot prove does not
//    alias (SASS: LDG w0, STG y0, LDG w1, ...), about 1 us per call on small shapes.
//  * packed kernel (hidden <= 32 packs, e.g. q/k norm over head_dim 128): LPR lanes share a
//    row, one pack each, reduced with __shfl_xor_sync in the lane group. One 32-thread block
//    per 256-byte row reached about 19% of copy bandwidth on an H200.
//  * split kernel: any hidden size, alignment or row stride (hidden 4100, x[..., 1:] views,
//    rows longer than the row kernel holds): a scalar head and tail around 16-byte packs.
#pragma once

#include "common.cuh"

namespace qwen3_kernels {

template <typename T>
struct NormArgs {
  T* out;
  int64_t out_rs;
  T* sum_out;
  int64_t sum_rs;
  const T* x;
  int64_t x_rs;
  const T* res;
  int64_t res_rs;
  const T* w;
  int64_t rows;
  int64_t hidden;
  int nvec;  // packs per row (vector kernels)
  bool full_rows;  // the row kernel may use its full-row instance (RmsNormTuning::hint bit 2 clears it)
  int rows_per_group;
  float eps;
  float inv_hidden;  // 1 / hidden, computed on the host (no IEEE division in the kernel)
};

// Loads one row's packs of x (and r), stores the rounded sum when ADD, and returns the partial
// sum of squares. WV > 0: also loads the weight packs into wv right after, in flight together.
template <typename T, int W, int N, bool ADD, bool STREAM = false, int WV = 0>
__device__ __forceinline__ float load_row_packs(Pack<T, W> (&xv)[N], const NormArgs<T>& a, int64_t row,
                                                const bool (&active)[N], const int (&idx)[N],
                                                Pack<T, W> (*wv)[N] = nullptr) {
  const T* xr = a.x + row * a.x_rs;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (active[j]) xv[j] = load_pack_hint<T, W, STREAM>(xr + static_cast<int64_t>(idx[j]) * W);
  }
  Pack<T, W> rv[N];
  if constexpr (ADD) {
    const T* rr = a.res + row * a.res_rs;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (active[j]) rv[j] = load_pack_hint<T, W, STREAM>(rr + static_cast<int64_t>(idx[j]) * W);
    }
  }
  if constexpr (WV > 0) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (active[j]) (*wv)[j] = load_pack<T, W>(a.w + static_cast<int64_t>(idx[j]) * W);
    }
  }
  if constexpr (ADD) {
    T* sr = a.sum_out + row * a.sum_rs;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (active[j]) {
        float xf[W], rf[W];
        unpack<T, W>(xv[j], xf);
        unpack<T, W>(rv[j], rf);
#pragma unroll
        for (int e = 0; e < W; ++e) xf[e] += rf[e];
        xv[j] = pack_floats<T, W>(xf);  // rounded to T: the residual stream transformers keeps
        store_pack<T, W>(sr + static_cast<int64_t>(idx[j]) * W, xv[j]);
      }
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (active[j]) {
      float xf[W];
      unpack<T, W>(xv[j], xf);
#pragma unroll
      for (int e = 0; e < W; ++e) ss = fmaf(xf[e], xf[e], ss);
    }
  }
  return ss;
}

// Scales and stores one row's packs; the weight comes from registers (CACHED_W) or is loaded here.
template <typename T, int W, int N, bool HAS_W, bool CACHED_W>
__device__ __forceinline__ void store_normed_packs(const Pack<T, W> (&xv)[N], const Pack<T, W> (&wv)[N], const T* w,
                                                   float inv, T* orow, const bool (&active)[N], const int (&idx)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (active[j]) {
      Pack<T, W> wj;
      if constexpr (HAS_W) {
        if constexpr (CACHED_W) {
          wj = wv[j];
        } else {
          wj = load_pack<T, W>(w + static_cast<int64_t>(idx[j]) * W);
        }
      }
      float y[W];
      unpack<T, W>(xv[j], y);
#pragma unroll
      for (int e = 0; e < W; ++e) y[e] *= inv;
      if constexpr (HAS_W) {
        float wf[W];
        unpack<T, W>(wj, wf);
#pragma unroll
        for (int e = 0; e < W; ++e) y[e] *= wf[e];
      }
      store_pack<T, W>(orow + static_cast<int64_t>(idx[j]) * W, pack_floats<T, W>(y));
    }
  }
}

// Register budget: bytes in flight per SM = resident threads x bytes each loads before use,
// and registers cap resident threads (at 55 registers, 2 bf16 packs uncapped, 4 blocks of 256
// fit: 32 KB in flight; Triton's 32-register kernel fits 8, 64 KB). So each VPT gets a block
// limit and a minimum of resident blocks, capping registers at 65536 / (limit x blocks):
//   plain: VPT 1: 1024 x 2 (32 regs)  VPT 2: 256 x 8 (32)  VPT 4: 256 x 3 (80)  VPT 8: 512 x 1 (128)
//   fused: VPT 1:  512 x 4 (32)       VPT 2: 512 x 2 (64)  VPT 4: 512 x 1 (128)
// ptxas -v (sm_90, bf16 with weight): 32 / 32 / 72 / 126 plain (VPT 2 spills one 64-bit
// address, 8 bytes), 32 / 60 / 116 fused. VPT 2 as 512 x 2 got 50 registers and 1024 rows of
// 4096 took two waves on 132 SMs: 7.05 against Triton's 5.73 us. Fused VPT 1 at 4 blocks:
// 6.20 us against 6.39 at 3 on 512 rows. The 8-block minimum holds on 2048-thread SMs
// (sm_80/90/100); on 1536-thread SMs (sm_86/89/120) ptxas ignores it (VPT 2: 34-40 regs).
template <int VPT, bool ADD>
__host__ __device__ constexpr int row_kernel_max_threads() {
  if constexpr (ADD) return 512;
  return VPT == 1 ? 1024 : VPT == 4 ? 256 : VPT == 2 ? 256 : 512;
}

template <int VPT, bool ADD>
__host__ __device__ constexpr int row_kernel_min_blocks() {
  if constexpr (ADD) return VPT == 1 ? 4 : VPT == 2 ? 2 : 1;
  return VPT == 1 ? 2 : VPT == 2 ? 8 : VPT == 8 ? 1 : 3;
}

template <bool ADD>
constexpr int kRowMaxVpt = ADD ? 4 : 8;

// MODE bit 0 (kStreamLoads): x and the residual are read with ld.global.nc.L1::no_allocate.
// MODE bit 1 (kEarlyWeight): the weight is loaded right after x, before the reduction (one
// memory latency less per row); without it, all at once after the reduction and before any
// store, as Triton does.
constexpr int kStreamLoads = 1;
constexpr int kEarlyWeight = 2;

// FULL_NVEC > 0: the full-row instance, launched only when a row is exactly FULL_NVEC packs
// and the block has FULL_NVEC / VPT threads: no bounds predicates, and each pack's offset is a
// compile-time immediate instead of 64-bit address math (ncu: the generic kernel ran 26 % more
// warp instructions than Triton's at 1024 rows of 4096).
template <typename T, int VPT, bool HAS_W, bool ADD, int MODE, int FULL_NVEC = 0>
__global__ void __launch_bounds__(row_kernel_max_threads<VPT, ADD>(), row_kernel_min_blocks<VPT, ADD>())
    rms_norm_row_kernel(const NormArgs<T> a) {
  constexpr int W = kVecElems<T>;
  constexpr bool kStream = (MODE & kStreamLoads) != 0;
  constexpr bool kEarly = HAS_W && (MODE & kEarlyWeight) != 0;
  constexpr bool kFull = FULL_NVEC > 0;
  static_assert(!kFull || FULL_NVEC % VPT == 0, "a full row splits evenly over the threads");
  __shared__ float red[2][32];
  int idx[VPT];
  bool active[VPT];
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    idx[j] = static_cast<int>(threadIdx.x) + j * (kFull ? FULL_NVEC / VPT : static_cast<int>(blockDim.x));
    active[j] = kFull || idx[j] < a.nvec;
  }
  int buf = 0;
  // Uniform loop bound: block_sum's barrier is reached by every thread.
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    Pack<T, W> xv[VPT];
    Pack<T, W> wv[VPT];
    float ss = load_row_packs<T, W, VPT, ADD, kStream, kEarly ? VPT : 0>(xv, a, row, active, idx, &wv);
    ss = block_sum(ss, red[buf]);
    buf ^= 1;
    if constexpr (HAS_W && !kEarly) {
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        if (active[j]) wv[j] = load_pack<T, W>(a.w + static_cast<int64_t>(idx[j]) * W);
      }
    }
    const float inv = rsqrtf(ss * a.inv_hidden + a.eps);
    store_normed_packs<T, W, VPT, HAS_W, true>(xv, wv, a.w, inv, a.out + row * a.out_rs, active, idx);
  }
}

// Two-pass kernel (hint 8), the shape of torch.compile's fused add + RMSNorm (looped
// reduction, 512 threads, 28 registers): pass one stores s = round(x + r) and sums squares,
// pass two re-reads s (this thread's own stores) with the weight. Nothing is held across the
// reduction, so registers stay low.
template <typename T, bool HAS_W, bool ADD>
__global__ void __launch_bounds__(512) rms_norm_twopass_kernel(const NormArgs<T> a) {
  constexpr int W = 8 / static_cast<int>(sizeof(T));
  __shared__ float red[32];
  const int64_t row = blockIdx.x;
  const int64_t packs = a.hidden / W;
  const T* xr = a.x + row * a.x_rs;
  const T* src = xr;
  float ss = 0.0f;
  if constexpr (ADD) {
    const T* rr = a.res + row * a.res_rs;
    T* sr = a.sum_out + row * a.sum_rs;
    src = sr;
    for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      float xf[W], rf[W];
      unpack<T, W>(load_pack<T, W>(xr + i * W), xf);
      unpack<T, W>(load_pack<T, W>(rr + i * W), rf);
#pragma unroll
      for (int e = 0; e < W; ++e) xf[e] += rf[e];
      const Pack<T, W> s = pack_floats<T, W>(xf);
      store_pack<T, W>(sr + i * W, s);
      unpack<T, W>(s, xf);  // the rounded value is what gets normalized
#pragma unroll
      for (int e = 0; e < W; ++e) ss = fmaf(xf[e], xf[e], ss);
    }
  } else {
    for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      float xf[W];
      unpack<T, W>(load_pack<T, W>(xr + i * W), xf);
#pragma unroll
      for (int e = 0; e < W; ++e) ss = fmaf(xf[e], xf[e], ss);
    }
  }
  ss = block_sum(ss, red);
  const float inv = rsqrtf(ss * a.inv_hidden + a.eps);
  T* orow = a.out + row * a.out_rs;
  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
    float y[W];
    unpack<T, W>(load_pack<T, W>(src + i * W), y);
    if constexpr (HAS_W) {
      float wf[W];
      unpack<T, W>(load_pack<T, W>(a.w + i * W), wf);
#pragma unroll
      for (int e = 0; e < W; ++e) y[e] = y[e] * inv * wf[e];
    } else {
#pragma unroll
      for (int e = 0; e < W; ++e) y[e] *= inv;
    }
    store_pack<T, W>(orow + i * W, pack_floats<T, W>(y));
  }
}

template <typename T, int LPR, int R, bool HAS_W, bool ADD>
__global__ void __launch_bounds__(1024) rms_norm_packed_kernel(const NormArgs<T> a) {
  constexpr int W = kVecElems<T>;
  const int lane = static_cast<int>(threadIdx.x) & (LPR - 1);
  const int group = static_cast<int>(threadIdx.x) / LPR;
  const int groups = static_cast<int>(blockDim.x) / LPR;
  const bool has_pack = lane < a.nvec;
  Pack<T, W> wv[1];
  if constexpr (HAS_W) {
    if (has_pack) wv[0] = load_pack<T, W>(a.w + static_cast<int64_t>(lane) * W);
  }
  // Rows of one iteration r are consecutive across the groups (coalesced).
  const int64_t block_first = static_cast<int64_t>(blockIdx.x) * groups * R;
  const int idx[1] = {lane};
  Pack<T, W> xv[R][1];
  float ss[R];
  bool active[R][1];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = block_first + static_cast<int64_t>(r) * groups + group;
    active[r][0] = has_pack && row < a.rows;
    ss[r] = load_row_packs<T, W, 1, ADD>(xv[r], a, row, active[r], idx);
  }
  // Every lane shuffles, also lanes without data (they add 0).
#pragma unroll
  for (int r = 0; r < R; ++r) ss[r] = group_sum<LPR>(ss[r]);
  const float inv_hidden = a.inv_hidden;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = block_first + static_cast<int64_t>(r) * groups + group;
    const float inv = rsqrtf(ss[r] * inv_hidden + a.eps);
    store_normed_packs<T, W, 1, HAS_W, true>(xv[r], wv, a.w, inv, a.out + row * a.out_rs, active[r], idx);
  }
}

// Persistent packed kernel (plain RMSNorm only): each lane loads its pack of the next row
// before reducing the current one. Every warp runs the same iteration count (rows past the
// end still shuffle), as full-mask shuffles require.
template <typename T, int LPR, bool HAS_W>
__global__ void __launch_bounds__(1024) rms_norm_packed_pipe_kernel(const NormArgs<T> a) {
  constexpr int W = kVecElems<T>;
  const int lane = static_cast<int>(threadIdx.x) & (LPR - 1);
  const int group = static_cast<int>(threadIdx.x) / LPR;
  const int64_t groups = static_cast<int64_t>(blockDim.x) / LPR;
  const bool has_pack = lane < a.nvec;
  Pack<T, W> wv[1];
  if constexpr (HAS_W) {
    if (has_pack) wv[0] = load_pack<T, W>(a.w + static_cast<int64_t>(lane) * W);
  }
  const int idx[1] = {lane};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * groups;
  int64_t base = static_cast<int64_t>(blockIdx.x) * groups;
  Pack<T, W> next;
  bool next_active = has_pack && base + group < a.rows;
  if (next_active) next = load_pack<T, W>(a.x + (base + group) * a.x_rs + static_cast<int64_t>(lane) * W);
  for (; base < a.rows; base += stride) {
    const int64_t row = base + group;
    Pack<T, W> xv[1] = {next};
    const bool active[1] = {next_active};
    const int64_t nrow = row + stride;
    next_active = has_pack && nrow < a.rows;
    if (next_active) next = load_pack<T, W>(a.x + nrow * a.x_rs + static_cast<int64_t>(lane) * W);
    float ss = 0.0f;
    if (active[0]) {
      float xf[W];
      unpack<T, W>(xv[0], xf);
#pragma unroll
      for (int e = 0; e < W; ++e) ss = fmaf(xf[e], xf[e], ss);
    }
    ss = group_sum<LPR>(ss);
    const float inv = rsqrtf(ss * a.inv_hidden + a.eps);
    store_normed_packs<T, W, 1, HAS_W, true>(xv, wv, a.w, inv, a.out + row * a.out_rs, active, idx);
  }
}

// Split kernel: any width, alignment and row stride (a 1-element-offset view, hidden 4100).
// One block per row; the row is cut at the output's 16-byte boundaries (split_row): a
// scalar head and tail, 16-byte packs between. kSamePhase: x (and the residual and sum_out)
// sit at the output's phase in every row, so each of their packs is one aligned load and
// store; otherwise two aligned loads and a shift per pack. The weight is always shifted
// (its phase follows the row's head) and read pack by pack in pass 2, each an L1/L2 hit:
// holding all of a thread's weight packs in flight took 98 registers at 4 packs (bf16, sm_90)
// against 59, and half the resident blocks (H100: 4096x4100 bf16 79 -> 86 % of copy,
// 4096x12290 64 -> 89 %; repo evidence/qwen3_8b/benchmarks/h100_run5). VPT packs per thread
// are held in registers; VPT 0 (rows too wide for that) re-reads the row in pass 2, from L2.
// Launch bounds: 1024 threads (64 registers), 512 (128) for the same phase's 4 packs per
// thread. Tighter caps spilled with the weight's shifted loads in flight (ptxas -v, sm_90:
// 28 bytes at 1 pack and 32 registers, at 4 packs and 80).
template <int VPT, bool kSamePhase, bool ADD>
__host__ __device__ constexpr int split_max_threads() {
  return kSamePhase && !ADD && VPT == 4 ? 512 : 1024;
}

template <typename T>
__device__ __forceinline__ float sum_squares(const Pack<T, kVecElems<T>>& p, float ss) {
  float f[kVecElems<T>];
  unpack<T, kVecElems<T>>(p, f);
#pragma unroll
  for (int e = 0; e < kVecElems<T>; ++e) ss = fmaf(f[e], f[e], ss);
  return ss;
}

template <typename T, int VPT, bool HAS_W, bool ADD, bool kSamePhase>
__global__ void __launch_bounds__(split_max_threads<VPT, kSamePhase, ADD>())
    rms_norm_split_kernel(const NormArgs<T> a) {
  constexpr int W = kVecElems<T>;
  using P = Pack<T, W>;
  __shared__ float red[2][32];
  int buf = 0;
  const int t = static_cast<int>(threadIdx.x);
  const int lanes = static_cast<int>(blockDim.x);
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = a.x + row * a.x_rs;
    const T* rr = ADD ? a.res + row * a.res_rs : nullptr;
    T* sr = ADD ? a.sum_out + row * a.sum_rs : nullptr;
    T* orow = a.out + row * a.out_rs;
    const RowSplit sp = split_row(orow, a.hidden);
    const int64_t tail0 = sp.head + sp.packs * W;
    // Pass 1: the scalar ends, then every pack load in flight before the first is used.
    float head_v = 0.0f, tail_v = 0.0f;
    auto scalar_in = [&](int64_t i) {
      float v = to_float(xr[i]);
      if constexpr (ADD) {
        const T s = from_float<T>(v + to_float(rr[i]));
        sr[i] = s;
        v = to_float(s);
      }
      return v;
    };
    if (t < sp.head) head_v = scalar_in(t);
    if (t < sp.tail) tail_v = scalar_in(tail0 + t);
    float ss = head_v * head_v + tail_v * tail_v;
    auto combine = [&](int64_t e, const RawPack& rx, const RawPack& rres) {
      P p = window<kSamePhase>(rx, xr + e);
      if constexpr (ADD) {
        float xf[W], rf[W];
        unpack<T, W>(p, xf);
        unpack<T, W>(window<kSamePhase>(rres, rr + e), rf);
#pragma unroll
        for (int i = 0; i < W; ++i) xf[i] += rf[i];
        p = pack_floats<T, W>(xf);  // rounded to T: the residual stream transformers keeps
        if (kSamePhase || phase_of(sr + e) == 0) {
          store_pack<T, W>(sr + e, p);
        } else {
#pragma unroll
          for (int i = 0; i < W; ++i) sr[e + i] = p.v[i];
        }
      }
      return p;
    };
    P xv[VPT > 0 ? VPT : 1];
    if constexpr (VPT > 0) {
      RawPack rx[VPT], rres[VPT];
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t e = sp.head + (t + static_cast<int64_t>(k) * lanes) * W;
        if (e < tail0) {
          rx[k] = load_raw<kSamePhase>(xr + e);
          if constexpr (ADD) rres[k] = load_raw<kSamePhase>(rr + e);
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t e = sp.head + (t + static_cast<int64_t>(k) * lanes) * W;
        if (e < tail0) {
          xv[k] = combine(e, rx[k], rres[k]);
          ss = sum_squares<T>(xv[k], ss);
        }
      }
    } else {
      for (int64_t e = sp.head + static_cast<int64_t>(t) * W; e < tail0; e += static_cast<int64_t>(lanes) * W) {
        RawPack rres{};
        const RawPack rx = load_raw<kSamePhase>(xr + e);
        if constexpr (ADD) rres = load_raw<kSamePhase>(rr + e);
        ss = sum_squares<T>(combine(e, rx, rres), ss);
      }
    }
    ss = block_sum(ss, red[buf]);
    buf ^= 1;
    const float inv = rsqrtf(ss * a.inv_hidden + a.eps);
    // Pass 2: scale and store; the output's packs are on the 16-byte grid by construction.
    auto scalar_out = [&](int64_t i, float v) {
      float y = v * inv;
      if constexpr (HAS_W) y *= to_float(a.w[i]);
      orow[i] = from_float<T>(y);
    };
    if (t < sp.head) scalar_out(t, head_v);
    if (t < sp.tail) scalar_out(tail0 + t, tail_v);
    auto store = [&](int64_t e, const P& p, const RawPack& rw) {
      float y[W];
      unpack<T, W>(p, y);
      if constexpr (HAS_W) {
        float wf[W];
        unpack<T, W>(window<false>(rw, a.w + e), wf);
#pragma unroll
        for (int i = 0; i < W; ++i) y[i] = y[i] * inv * wf[i];
      } else {
#pragma unroll
        for (int i = 0; i < W; ++i) y[i] *= inv;
      }
      store_pack<T, W>(orow + e, pack_floats<T, W>(y));
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t e = sp.head + (t + static_cast<int64_t>(k) * lanes) * W;
        if (e < tail0) store(e, xv[k], HAS_W ? load_raw<false>(a.w + e) : RawPack{});
      }
    } else {
      // Each thread re-reads only what it wrote (sum_out when ADD): no barrier needed.
      const T* src = ADD ? sr : xr;
      for (int64_t e = sp.head + static_cast<int64_t>(t) * W; e < tail0; e += static_cast<int64_t>(lanes) * W) {
        const RawPack rv = load_raw<kSamePhase>(src + e);
        RawPack rw{};
        if constexpr (HAS_W) rw = load_raw<false>(a.w + e);
        store(e, window<kSamePhase>(rv, src + e), rw);
      }
    }
  }
}

inline int next_pow2(int64_t v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

inline int round_up32(int64_t v) { return static_cast<int>(ceil_div(v, 32) * 32); }

template <typename T>
NormArgs<T> make_norm_args(const RmsNormParams& p) {
  NormArgs<T> a;
  a.out = static_cast<T*>(p.out);
  a.out_rs = p.out_row_stride;
  a.sum_out = static_cast<T*>(p.sum_out);
  a.sum_rs = p.sum_row_stride;
  a.x = static_cast<const T*>(p.x);
  a.x_rs = p.x_row_stride;
  a.res = static_cast<const T*>(p.residual);
  a.res_rs = p.residual_row_stride;
  a.w = static_cast<const T*>(p.weight);
  a.rows = p.rows;
  a.hidden = p.hidden;
  a.nvec = 0;
  a.full_rows = true;
  a.rows_per_group = 1;
  a.eps = p.eps;
  a.inv_hidden = 1.0f / static_cast<float>(p.hidden);
  return a;
}

inline bool vector_path_ok(const RmsNormParams& p, bool add) {
  const int w = vec_elems(p.dtype);
  if (p.hidden % w != 0) return false;
  if (!aligned16(p.x) || !aligned16(p.out)) return false;
  if (p.x_row_stride % w != 0 || p.out_row_stride % w != 0) return false;
  if (p.weight != nullptr && !aligned16(p.weight)) return false;
  if (add) {
    if (!aligned16(p.residual) || !aligned16(p.sum_out)) return false;
    if (p.residual_row_stride % w != 0 || p.sum_row_stride % w != 0) return false;
  }
  return true;
}

// Resident blocks per SM, cached per call site.
template <typename Kernel>
int blocks_per_sm(Kernel kernel, int threads, int* cache) {
  const int slot = threads / 32;
  if (cache[slot] == 0) {
    int n = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0));
    cache[slot] = n > 0 ? n : 1;
  }
  return cache[slot];
}

template <typename T, int VPT, bool HAS_W, bool ADD, int MODE, int FULL_NVEC = 0>
void launch_row(NormArgs<T> a, int threads, bool persistent, cudaStream_t stream) {
  static int occupancy_cache[33] = {0};
  auto kernel = rms_norm_row_kernel<T, VPT, HAS_W, ADD, MODE, FULL_NVEC>;
  int64_t grid = a.rows;
  if (persistent) {
    const int64_t resident = static_cast<int64_t>(blocks_per_sm(kernel, threads, occupancy_cache)) * sm_count();
    grid = grid < resident ? grid : resident;
  }
  grid = grid < 0x7fffffff ? grid : 0x7fffffff;
  kernel<<<static_cast<unsigned>(grid), threads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Rows of this many packs (4096 bf16/fp16, 2048 fp32) get the full-row instance, in the
// default mode and at 1 or 2 packs per thread only: at 2 packs, 1024 rows of 4096 bf16 ran
// 1,703,936 warp instructions against 2,097,152 generic (Triton: 1,622,016), 6.11 against
// 7.01 us. At 4 packs it took 77 registers against 72 and lost 7-8 %.
constexpr int kFullRowNvec = 512;

template <typename T, int VPT, bool HAS_W, bool ADD>
void launch_row_mode(NormArgs<T> a, int mode, int threads, bool persistent, cudaStream_t stream) {
  if constexpr (VPT <= 2) {
    if (mode == kEarlyWeight && a.nvec == kFullRowNvec && threads * VPT == kFullRowNvec && a.full_rows) {
      return launch_row<T, VPT, HAS_W, ADD, kEarlyWeight, kFullRowNvec>(a, threads, persistent, stream);
    }
  }
  switch (mode & 3) {
    case 0:
      return launch_row<T, VPT, HAS_W, ADD, 0>(a, threads, persistent, stream);
    case 1:
      return launch_row<T, VPT, HAS_W, ADD, 1>(a, threads, persistent, stream);
    case 2:
      return launch_row<T, VPT, HAS_W, ADD, 2>(a, threads, persistent, stream);
    default:
      return launch_row<T, VPT, HAS_W, ADD, 3>(a, threads, persistent, stream);
  }
}

template <typename T, bool HAS_W, bool ADD>
void launch_row_vpt(NormArgs<T> a, int vpt, int mode, int threads, bool persistent, cudaStream_t stream) {
  switch (vpt) {
    case 1:
      return launch_row_mode<T, 1, HAS_W, ADD>(a, mode, threads, persistent, stream);
    case 2:
      return launch_row_mode<T, 2, HAS_W, ADD>(a, mode, threads, persistent, stream);
    case 4:
      return launch_row_mode<T, 4, HAS_W, ADD>(a, mode, threads, persistent, stream);
    default:
      // Eight weight packs next to eight x packs exceed 128 registers: never early.
      if constexpr (!ADD) return launch_row_mode<T, 8, HAS_W, ADD>(a, mode & kStreamLoads, threads, persistent, stream);
  }
}

template <typename T, int LPR, bool HAS_W>
void launch_packed_pipe(NormArgs<T> a, int threads, cudaStream_t stream) {
  static int occupancy_cache[33] = {0};
  auto kernel = rms_norm_packed_pipe_kernel<T, LPR, HAS_W>;
  const int64_t groups = threads / LPR;
  const int64_t resident = static_cast<int64_t>(blocks_per_sm(kernel, threads, occupancy_cache)) * sm_count();
  int64_t grid = ceil_div(a.rows, groups);
  grid = grid < resident ? grid : resident;
  kernel<<<static_cast<unsigned>(grid), threads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int LPR, int R, bool HAS_W, bool ADD>
void launch_packed(NormArgs<T> a, int threads, cudaStream_t stream) {
  const int64_t rows_per_block = static_cast<int64_t>(threads / LPR) * R;
  const int64_t grid = ceil_div(a.rows, rows_per_block);
  TORCH_CHECK(grid <= 0x7fffffff, "rms_norm: too many rows (", a.rows, ") for one launch");
  rms_norm_packed_kernel<T, LPR, R, HAS_W, ADD><<<static_cast<unsigned>(grid), threads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int LPR, bool HAS_W, bool ADD>
void launch_packed_rows(NormArgs<T> a, int threads, cudaStream_t stream) {
  switch (a.rows_per_group) {
    case 1:
      return launch_packed<T, LPR, 1, HAS_W, ADD>(a, threads, stream);
    case 4:
      return launch_packed<T, LPR, 4, HAS_W, ADD>(a, threads, stream);
    default:
      return launch_packed<T, LPR, 2, HAS_W, ADD>(a, threads, stream);
  }
}

template <typename T, bool HAS_W, bool ADD>
void launch_packed_lpr(NormArgs<T> a, int lpr, int threads, bool pipe, cudaStream_t stream) {
  if constexpr (!ADD) {
    if (pipe) {
      switch (lpr) {
        case 4:
          return launch_packed_pipe<T, 4, HAS_W>(a, threads, stream);
        case 8:
          return launch_packed_pipe<T, 8, HAS_W>(a, threads, stream);
        case 16:
          return launch_packed_pipe<T, 16, HAS_W>(a, threads, stream);
        default:
          return launch_packed_pipe<T, 32, HAS_W>(a, threads, stream);
      }
    }
  }
  switch (lpr) {
    case 4:
      return launch_packed_rows<T, 4, HAS_W, ADD>(a, threads, stream);
    case 8:
      return launch_packed_rows<T, 8, HAS_W, ADD>(a, threads, stream);
    case 16:
      return launch_packed_rows<T, 16, HAS_W, ADD>(a, threads, stream);
    default:
      return launch_packed_rows<T, 32, HAS_W, ADD>(a, threads, stream);
  }
}

template <bool ADD>
int row_max_threads(int vpt) {
  switch (vpt) {
    case 1:
      return row_kernel_max_threads<1, ADD>();
    case 2:
      return row_kernel_max_threads<2, ADD>();
    case 4:
      return row_kernel_max_threads<4, ADD>();
    default:
      return row_kernel_max_threads<8, ADD>();
  }
}

// Default row-kernel configuration, a table over (row length, rows) from the H200 sweep
// (README.md): many rows want few threads with several packs each (4096 bf16 -> 128 x 4); a
// few hundred rows cannot fill the GPU, so more threads per row. The plain norm keeps one pack
// per thread while one block per row fits one wave (rows <= 4 x SMs): 512 rows of 4096, 4.25
// against 4.57 us at 256 x 2. Longer rows and the fused kernel switch at 264 rows (fused, 512
// rows: 2 packs 6.14 against 6.20 us).
template <bool ADD>
int base_row_vpt(int64_t rows, int64_t nvec, int sms) {
  const int64_t one_pack_rows = (!ADD && nvec <= 512) ? int64_t{4} * sms : 264;
  return rows > 1024 ? (ADD ? 2 : 4) : rows > one_pack_rows ? 2 : 1;
}

// base_row_vpt, grown until the row fits the row kernel's thread bound.
template <bool ADD>
int default_row_vpt(int64_t rows, int64_t nvec, int sms) {
  int vpt = base_row_vpt<ADD>(rows, nvec, sms);
  while (vpt < kRowMaxVpt<ADD> && ceil_div(nvec, vpt) > row_max_threads<ADD>(vpt)) vpt *= 2;
  return vpt;
}

template <typename T, int VPT, bool HAS_W, bool ADD, bool kSamePhase>
void launch_split_vpt(const NormArgs<T>& a, int threads, cudaStream_t stream) {
  const int64_t grid = a.rows < 0x7fffffff ? a.rows : 0x7fffffff;
  rms_norm_split_kernel<T, VPT, HAS_W, ADD, kSamePhase><<<static_cast<unsigned>(grid), threads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Every row of p (row stride p_rs elements) starts at the phase of q's row.
inline bool same_phase(const void* p, int64_t p_rs, const void* q, int64_t q_rs, int elem_bytes) {
  return reinterpret_cast<uintptr_t>(p) % 16 == reinterpret_cast<uintptr_t>(q) % 16 &&
         (p_rs - q_rs) % (16 / elem_bytes) == 0;
}

// Packs per thread. The same phase, plain norm: the row kernel's table (base_row_vpt), at
// most 4. Otherwise 2 (1 when a row needs one warp only; always 1 for a residual at another
// phase). VPT 0 for rows that do not fit the instance's thread bound.
template <typename T, bool HAS_W, bool ADD, bool kSamePhase>
void launch_split_packs(const NormArgs<T>& a, int64_t packs, cudaStream_t stream) {
  // Rows past 4 x 1024 packs fit no cached instance (and keep threads_for's int in range).
  if (packs > int64_t{4} * 1024) return launch_split_vpt<T, 0, HAS_W, ADD, kSamePhase>(a, 1024, stream);
  auto threads_for = [&](int vpt) { return round_up32(ceil_div(packs > 0 ? packs : 1, vpt)); };
  int vpt = 2;
  if constexpr (kSamePhase && !ADD) {
    // The row kernel's table before its growth to the row kernel's bounds: the loop below
    // grows it to this kernel's (512 threads at 4 packs where the row kernel has 256;
    // default_row_vpt answered 8 for 1536-pack rows, and this kernel has no 8).
    vpt = base_row_vpt<false>(a.rows, packs, sm_count());
  } else if (ADD && !kSamePhase) {
    vpt = 1;  // at 2 packs, x and residual windows spilled at 64 registers (ptxas -v, sm_90)
  } else {
    if (threads_for(1) <= 32) vpt = 1;
  }
  auto fits = [&](int v) {
    switch (v) {
      case 1:
        return threads_for(1) <= split_max_threads<1, kSamePhase, ADD>();
      case 2:
        return !(ADD && !kSamePhase) && threads_for(2) <= split_max_threads<2, kSamePhase, ADD>();
      default:
        return kSamePhase && !ADD && threads_for(4) <= split_max_threads<4, kSamePhase, ADD>();
    }
  };
  while (vpt <= 4 && !fits(vpt)) vpt *= 2;
  if (vpt == 1) return launch_split_vpt<T, 1, HAS_W, ADD, kSamePhase>(a, threads_for(1), stream);
  if constexpr (!ADD || kSamePhase) {
    if (vpt == 2) return launch_split_vpt<T, 2, HAS_W, ADD, kSamePhase>(a, threads_for(2), stream);
  }
  if constexpr (kSamePhase && !ADD) {
    if (vpt == 4) return launch_split_vpt<T, 4, HAS_W, ADD, kSamePhase>(a, threads_for(4), stream);
  }
  launch_split_vpt<T, 0, HAS_W, ADD, kSamePhase>(a, 1024, stream);
}

template <typename T, bool HAS_W, bool ADD>
void launch_split(const NormArgs<T>& a, const RmsNormParams& p, cudaStream_t stream) {
  constexpr int es = static_cast<int>(sizeof(T));
  bool same = same_phase(p.x, p.x_row_stride, p.out, p.out_row_stride, es);
  if (ADD) {
    same = same && same_phase(p.residual, p.residual_row_stride, p.out, p.out_row_stride, es) &&
           same_phase(p.sum_out, p.sum_row_stride, p.out, p.out_row_stride, es);
  }
  const int64_t packs = p.hidden / kVecElems<T>;
  if (same) return launch_split_packs<T, HAS_W, ADD, true>(a, packs, stream);
  launch_split_packs<T, HAS_W, ADD, false>(a, packs, stream);
}

template <typename T, bool HAS_W, bool ADD>
void launch_norm_typed(const RmsNormParams& p, const RmsNormTuning& t, cudaStream_t stream) {
  NormArgs<T> a = make_norm_args<T>(p);
  if (t.hint == 8 && vector_path_ok(p, ADD)) {
    const int threads = t.threads > 0 ? t.threads : 512;
    TORCH_CHECK(threads % 32 == 0 && threads <= 512, "rms_norm: the two-pass kernel takes up to 512 threads, got ",
                threads);
    TORCH_CHECK(p.rows <= 0x7fffffff, "rms_norm: too many rows (", p.rows, ") for one launch");
    rms_norm_twopass_kernel<T, HAS_W, ADD><<<static_cast<unsigned>(p.rows), threads, 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  if (vector_path_ok(p, ADD)) {
    const int w = kVecElems<T>;
    const int64_t nvec = p.hidden / w;
    if (nvec <= 32) {
      a.nvec = static_cast<int>(nvec);
      const int lpr = nvec <= 4 ? 4 : next_pow2(nvec);
      // H200 sweep (131072 and 524288 rows of 128): 128 threads, one row per lane group.
      const int threads = t.threads > 0 ? t.threads : 128;
      a.rows_per_group = t.rows_per_group > 0 ? t.rows_per_group : 1;
      TORCH_CHECK(threads % 32 == 0 && threads <= 1024 && threads >= lpr,
                  "rms_norm: threads must be a multiple of 32 up to 1024");
      TORCH_CHECK(a.rows_per_group == 1 || a.rows_per_group == 2 || a.rows_per_group == 4,
                  "rms_norm: rows_per_group must be 1, 2 or 4");
      return launch_packed_lpr<T, HAS_W, ADD>(a, lpr, threads, t.persistent == 1, stream);
    }
    int vpt;
    int threads;
    if (t.threads > 0) {
      TORCH_CHECK(t.threads % 32 == 0 && t.threads <= 1024, "rms_norm: threads must be a multiple of 32 up to 1024");
      threads = t.threads;
      vpt = next_pow2(ceil_div(nvec, threads));
      TORCH_CHECK(vpt <= kRowMaxVpt<ADD> && threads <= row_max_threads<ADD>(vpt), "rms_norm: ", threads,
                  " threads cannot hold a row of ", nvec, " packs (see row_kernel_max_threads)");
    } else {
      vpt = default_row_vpt<ADD>(p.rows, nvec, sm_count());
      threads = round_up32(ceil_div(nvec, vpt));
    }
    if (vpt <= kRowMaxVpt<ADD> && threads <= row_max_threads<ADD>(vpt)) {
      a.nvec = static_cast<int>(nvec);
      const bool persistent = t.persistent == 1;  // default (-1): one block per row
      // Early weight by default: no extra registers at 1/2/4 packs (ptxas 32 / 32 / 72) and one
      // latency less per row; hint bit 1 flips it. VPT 8 is always late.
      int mode = (t.hint & kStreamLoads) | kEarlyWeight;
      if (t.hint & 2) mode ^= kEarlyWeight;
      a.full_rows = (t.hint & 4) == 0;
      return launch_row_vpt<T, HAS_W, ADD>(a, vpt, mode, threads, persistent, stream);
    }
  }
  launch_split<T, HAS_W, ADD>(a, p, stream);
}

template <bool ADD>
void launch_norm(const RmsNormParams& p, const RmsNormTuning& t, cudaStream_t stream) {
  dispatch_dtype(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (p.weight != nullptr) {
      launch_norm_typed<T, true, ADD>(p, t, stream);
    } else {
      launch_norm_typed<T, false, ADD>(p, t, stream);
    }
  });
}

// Defined in fused_add_rms_norm.cu.
void launch_fused_add_rms_norm(const RmsNormParams& p, const RmsNormTuning& t, cudaStream_t stream);

}  // namespace qwen3_kernels
