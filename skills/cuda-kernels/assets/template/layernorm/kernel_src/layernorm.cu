// LayerNorm with AdaLN scale/shift modulation over the last dimension, for the __NAME__
// kernel project (DiT blocks: LTX-Video, PixArt, Flux normalize and then modulate with
// per-sample vectors computed from the timestep).
//
//   n = (x - mean) * rsqrt(var + eps);  y = (n * weight + bias) * (1 + scale) + shift
//
// Why it is shaped like this
// - Memory-bound: the floor is (x + y + the [hidden] operands) / copy bandwidth. Each
//   element of x is read from DRAM once: a lane caches its share of the row in registers.
// - Two reductions over one shared buffer: the mean, then the variance as the mean of
//   (x - mean)^2 over the cached values. Two-pass, not E[x^2] - mean^2, which cancels
//   catastrophically when |mean| >> std. The second row_sum reuses the first one's
//   buffer; its leading barrier (common.cuh) is what makes that safe.
// - Every width and alignment takes one path (split_row in common.cuh): a scalar head up
//   to the output row's first 16-byte boundary, 16-byte packs, a scalar tail; inputs of
//   another phase are read with two aligned 16-byte loads and a register shift.
// - Same-phase instances (Layout::kSamePhase, as rmsnorm.cu): x at the output's phase in
//   every row (contiguous rows of 4100 bf16) reads one load per pack; the [hidden] operands
//   and the modulation rows are still shifted.
// - Shifted instances (Layout::kShifted): x[..., 1:] views into a fresh output, with every
//   operand on the output's grid: x is shifted, each operand pack is one load, and the four
//   go out together. Misaligned bf16 rows from 52.9 to 59.0 % of copy at 8192x4096, 61.6 ->
//   72.6 at 32768x1024, 57.6 -> 65.8 at 4096x8192 (one H100, same call; the kernel-skills
//   repository's evidence/scaffolds/h100_run12). x's word offset, the same for every pack
//   of a row, is then switched on once per row (for_each_window in common.cuh), which
//   leaves four funnel shifts per pack: 8192x4096 58.8 -> 65.8 %, 16384x2048 59.4 -> 67.2
//   (h100_run13).
// - Aligned instances (Layout::kAligned): when every pointer is 16-byte aligned and every row
//   stride a whole number of packs, each pack is one load and no shift, so the four
//   operand loads of a pack go out together.
// - Lanes per row grow with the width (8..32 lanes, then whole warps up to the instance's
//   bound); narrow rows share a 256-thread block. Rows wider than the register cache
//   re-read x from L2.
// - __launch_bounds__(threads, blocks) per packs-per-lane (max_threads/min_blocks below):
//   threads x registers fit an SM's 65536 registers (tests/test_kernel_resources.py checks it).
// - Packs become floats from their 32-bit words (unpack in common.cuh), which keeps every
//   bf16 instance within its bound (40-64 registers) without spilling.
#include "common.cuh"
#include "launchers.h"

namespace ks {
namespace {

constexpr int kMaxLanes = 1024;
constexpr int kBlockThreads = 256;

struct Affine {
  const void* weight;
  const void* bias;
  const void* scale;  // this row's modulation row, or nullptr
  const void* shift;
};

template <typename T>
__device__ __forceinline__ float affine(float n, const T* w, const T* b, const T* sc, const T* sh, int64_t i) {
  if (w != nullptr) n *= to_float(w[i]);
  if (b != nullptr) n += to_float(b[i]);
  if (sc != nullptr) n *= 1.f + to_float(sc[i]);
  if (sh != nullptr) n += to_float(sh[i]);
  return n;
}

// Launch bounds per instance, as in rmsnorm.cu: (most threads per block, blocks that must stay
// resident) caps registers at 65536 / (threads x blocks). VPT 2: 256 x 5 (51 regs); VPT 1 and
// 4: 512 x 2 (64); VPT 0: 1024 x 1 (64). bf16 used 48 at VPT 2 and 62-64 at VPT 4, no spills
// (ptxas -v, sm_80 and sm_90), because packs become floats from their 32-bit words (unpack);
// converted element by element, VPT 2 spilled 82-116 bytes under the same cap.
template <int VPT>
constexpr int max_threads() {
  if constexpr (VPT == 0) return 1024;
  return VPT == 2 ? 256 : 512;
}
template <int VPT>
constexpr int min_blocks() {
  if constexpr (VPT == 0) return 1;
  return VPT == 2 ? 5 : 2;
}

// Shifted rows at VPT 4 read the operands as kAny does on sm_80, where one load each spilled
// 8 bytes (ptxas -v); none on sm_90.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr bool kShiftedOps4 = false;
#else
constexpr bool kShiftedOps4 = true;
#endif

template <typename T, int VPT, Layout L>
__global__ void __launch_bounds__(max_threads<VPT>(), min_blocks<VPT>())
    layer_norm_rows(LayerNormArgs a) {
  constexpr int N = kPack<T>;
  constexpr bool kRows = kRowsOnGrid<L>;  // x: one load per pack
  // The operands (weight, bias, modulation rows): one load per pack.
  constexpr bool kOps = kSharedOnGrid<L> && (L != Layout::kShifted || VPT != 4 || kShiftedOps4);
  // x's word offset switched on once per row (for_each_window), except for kAny rows at VPT 2,
  // where the loop's four copies spilled 4 bytes (16-bit types, sm_80 and sm_90). Rows under
  // 32 lanes share a warp: at different phases (a row stride off the pack grid) their cases
  // run one after another (untimed; every benchmarked row has a warp or more).
  constexpr bool kSwitch = L != Layout::kAny || VPT != 2;
  __shared__ float scratch[kMaxLanes / 32];
  const int lanes = blockDim.x;
  const int t = threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < a.rows;  // the last block may hang past the end; it still joins the reductions
  const int64_t r = active ? row : 0;
  const T* x = static_cast<const T*>(a.x) + r * a.x_stride;
  T* y = static_cast<T*>(a.out) + r * a.out_stride;
  const int64_t mod_row = (r / a.rows_per_mod) * a.mod_stride;
  const T* w = static_cast<const T*>(a.weight);
  const T* b = static_cast<const T*>(a.bias);
  const T* sc = a.scale != nullptr ? static_cast<const T*>(a.scale) + mod_row : nullptr;
  const T* sh = a.shift != nullptr ? static_cast<const T*>(a.shift) + mod_row : nullptr;
  const RowSplit sp = split_row(y, a.hidden);
  const int64_t tail0 = sp.head + sp.packs * N;
  const float inv_n = 1.f / static_cast<float>(a.hidden);

  // Pass 1: load and sum.
  float head_v = 0.f, tail_v = 0.f;
  Pack<T> cache[VPT > 0 ? VPT : 1];
  float sum = 0.f;
  if (active) {
    if (t < sp.head) head_v = to_float(x[t]);
    if (t < sp.tail) tail_v = to_float(x[tail0 + t]);
    sum = head_v + tail_v;
    if constexpr (VPT > 0) {
      RawPack raw[VPT];  // every load of the lane in flight before the first is used
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * lanes;
        if (j < sp.packs) raw[k] = load_raw<kRows>(x + sp.head + j * N);
      }
      for_each_window<kRows, T, kSwitch>(raw, phase_of(x + sp.head), [&](int k, auto pack) {
        const int64_t j = t + static_cast<int64_t>(k) * lanes;
        if (j < sp.packs) {
          cache[k] = pack();
          float f[N];
          unpack(cache[k], f);
#pragma unroll
          for (int i = 0; i < N; ++i) sum += f[i];
        }
      });
    } else {
      for (int64_t j = t; j < sp.packs; j += lanes) {
        const Pack<T> p = load_any<kRows>(x + sp.head + j * N);
#pragma unroll
        for (int i = 0; i < N; ++i) sum += to_float(p.v[i]);
      }
    }
  }
  const float mean = row_sum(sum, lanes, scratch) * inv_n;

  // Pass 2: the variance around the mean, from the same values.
  float sq = 0.f;
  if (active) {
    if (t < sp.head) sq += (head_v - mean) * (head_v - mean);
    if (t < sp.tail) sq += (tail_v - mean) * (tail_v - mean);
    auto add = [&](const Pack<T>& p) {
      float f[N];
      unpack(p, f);
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float d = f[i] - mean;
        sq += d * d;
      }
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (t + static_cast<int64_t>(k) * lanes < sp.packs) add(cache[k]);
      }
    } else {
      for (int64_t j = t; j < sp.packs; j += lanes) add(load_any<kRows>(x + sp.head + j * N));
    }
  }
  // The second reduction reuses `scratch`: safe because row_sum starts with a barrier.
  const float var = row_sum(sq, lanes, scratch) * inv_n;
  if (!active) return;  // after the barriers
  const float rstd = rsqrtf(var + a.eps);

  // Pass 3: normalize, apply the affine and the modulation, store.
  if (t < sp.head) y[t] = from_float<T>(affine((head_v - mean) * rstd, w, b, sc, sh, t));
  if (t < sp.tail) y[tail0 + t] = from_float<T>(affine((tail_v - mean) * rstd, w, b, sc, sh, tail0 + t));
  auto store = [&](int64_t j, const Pack<T>& p) {
    const int64_t e = sp.head + j * N;
    float v[N];
    unpack(p, v);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = (v[i] - mean) * rstd;
    // The operand packs' loads go out before their first use: all four when on the grid (one
    // word each), two at a time otherwise (all four spilled at 64 registers: ptxas -v).
    const RawPack rw = w != nullptr ? load_raw<kOps>(w + e) : RawPack{};
    const RawPack rb = b != nullptr ? load_raw<kOps>(b + e) : RawPack{};
    RawPack rsc{}, rsh{};
    if constexpr (kOps) {
      if (sc != nullptr) rsc = load_raw<true>(sc + e);
      if (sh != nullptr) rsh = load_raw<true>(sh + e);
    }
    if (w != nullptr) {
      float q[N];
      unpack(window<kOps>(rw, w + e), q);
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] *= q[i];
    }
    if (b != nullptr) {
      float q[N];
      unpack(window<kOps>(rb, b + e), q);
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] += q[i];
    }
    if constexpr (!kOps) {
      if (sc != nullptr) rsc = load_raw(sc + e);
      if (sh != nullptr) rsh = load_raw(sh + e);
    }
    if (sc != nullptr) {
      float q[N];
      unpack(window<kOps>(rsc, sc + e), q);
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] *= 1.f + q[i];
    }
    if (sh != nullptr) {
      float q[N];
      unpack(window<kOps>(rsh, sh + e), q);
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] += q[i];
    }
    Pack<T> o;
#pragma unroll
    for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(v[i]);
    store_pack(y + e, o);
  };
  if constexpr (VPT > 0) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * lanes;
      if (j < sp.packs) store(j, cache[k]);
    }
  } else {
    for (int64_t j = t; j < sp.packs; j += lanes) store(j, load_any<kRows>(x + sp.head + j * N));
  }
}

template <typename T, int VPT, Layout L>
cudaError_t launch(const LayerNormArgs& a, int lanes, cudaStream_t stream) {
  const int rows_per_block = lanes >= kBlockThreads ? 1 : kBlockThreads / lanes;
  const int64_t blocks = (a.rows + rows_per_block - 1) / rows_per_block;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  layer_norm_rows<T, VPT, L><<<static_cast<unsigned>(blocks), dim3(lanes, rows_per_block), 0, stream>>>(a);
  return cudaGetLastError();
}

// Rows not aligned (L: kAny, kShifted or kSamePhase): rows of <= 128 packs at 4 packs per
// lane (one warp per row of 1024 bf16), else the fewest packs per lane, 2 then 4, whose lanes
// fit the instance's bound; the re-read row (VPT 0) only past that. One H100, same call, bf16:
// 32768x1024 from 50.3 to 62.2 % of copy, 4096x8192 (VPT 4, not the re-read row) from 43.2 to
// 57.5 %. One pack per lane on more lanes ran slower (8192x4096: 35 against 51 % of copy).
// Shifted rows take 4 per lane first at every width (operands one load each, fewer lanes):
// x[..., 1:] 16384x2048 66.4 -> 68.7 %, 8192x4096 66.6 -> 68.3 (one H100, same call).
template <typename T, Layout L>
cudaError_t launch_any(const LayerNormArgs& a, int64_t packs, cudaStream_t stream) {
  int lanes = lanes_for_row(packs, 2);
  if (lanes >= packs) return launch<T, 1, L>(a, lanes, stream);
  if ((packs <= 128 || L == Layout::kShifted) && lanes_cover(packs, 4, max_threads<4>(), &lanes)) {
    return launch<T, 4, L>(a, lanes, stream);
  }
  if (lanes_cover(packs, 2, max_threads<2>(), &lanes)) return launch<T, 2, L>(a, lanes, stream);
  if (lanes_cover(packs, 4, max_threads<4>(), &lanes)) return launch<T, 4, L>(a, lanes, stream);
  return launch<T, 0, L>(a, lanes_for_row(packs, 2), stream);
}

// Aligned: VPT 2 (from `first`), else 4, when the lanes fit the instance's thread bound; rows
// that fit neither take the same-phase instances (aligned rows are in phase).
template <typename T>
cudaError_t launch_aligned(const LayerNormArgs& a, int64_t packs, int first, cudaStream_t stream) {
  int lanes = 0;
  constexpr Layout A = Layout::kAligned;
  if (first <= 2 && lanes_cover(packs, 2, max_threads<2>(), &lanes)) return launch<T, 2, A>(a, lanes, stream);
  if (lanes_cover(packs, 4, max_threads<4>(), &lanes)) return launch<T, 4, A>(a, lanes, stream);
  return launch_any<T, Layout::kSamePhase>(a, packs, stream);
}

}  // namespace

cudaError_t layer_norm(const LayerNormArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.hidden == 0) return cudaSuccess;
  if (a.rows_per_mod < 1) return cudaErrorInvalidValue;
  return dispatch_dtype(a.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    constexpr int N = kPack<T>;
    const int64_t packs = a.hidden / N;
    // Every pack of every row 16-byte aligned: the base pointers, and row strides in whole packs.
    const bool aligned = aligned16(a.x) && aligned16(a.out) && aligned16(a.weight) && aligned16(a.bias) &&
                         aligned16(a.scale) && aligned16(a.shift) && a.x_stride % N == 0 && a.out_stride % N == 0 &&
                         a.mod_stride % N == 0;
    if (!aligned) {
      if (same_phase(a.x, a.x_stride, a.out, a.out_stride, static_cast<int>(sizeof(T)))) {
        return launch_any<T, Layout::kSamePhase>(a, packs, stream);
      }
      // x[..., 1:] into a fresh output: the operands' packs are still one load each.
      const bool shifted = aligned16(a.out) && a.out_stride % N == 0 && aligned16(a.weight) && aligned16(a.bias) &&
                           aligned16(a.scale) && aligned16(a.shift) && a.mod_stride % N == 0;
      if (shifted) return launch_any<T, Layout::kShifted>(a, packs, stream);
      return launch_any<T, Layout::kAny>(a, packs, stream);
    }
    // Many rows of >= 256 packs, and rows of <= 128: few threads with 4 packs each (as
    // rmsnorm.cu; 32768x1024 bf16 from 57.4 to 78.1 % of copy against 2 per lane, one H100, same
    // call); otherwise 2 per lane.
    return launch_aligned<T>(a, packs, (a.rows > 1024 && packs >= 256) || packs <= 128 ? 4 : 2, stream);
  });
}

}  // namespace ks
