// Rotary position embedding, rotate-half (LLMs) and interleaved (LTX-Video 3D), for the
// __NAME__ kernel project. Math in fp32, each output rounded once.
//
// Why it is shaped like this
// - Memory-bound: x and out once each plus the cos/sin tables (which L2 serves after the
//   first head reads them): the floor is about 2 * numel * element size / copy bandwidth.
// - One row = one (batch, head, position) vector of `dim` elements. Every width and
//   alignment takes one path (split_row in common.cuh): the output row's 16-byte packs
//   with a scalar head and tail; x, cos and sin at another 16-byte phase (a strided q/k
//   view, an odd dim) are read with two aligned 16-byte loads and a register shift.
// - Rotate-half: a lane owns a pack of the first half and the matching pack of the second
//   half, so each x element is loaded once. Interleaved: pairs sit inside one pack (the
//   output row starts at an even element, so the head, packs and tail all hold whole pairs).
// - Aligned instances (kAligned): when every pointer, stride and the half are whole packs,
//   each pack is one load and no shift: aligned bf16 rows 73-77 -> 83-86 % of copy bandwidth
//   on an H100 (rows of 64: 46 -> 70 %; the kernel-skills repository's evidence/scaffolds).
//   Shifted instances (kShifted: x[..., 1:] against aligned tables and output): x's word
//   offset switched once per row, the tables one load per pack: bf16 8192x4096 from 76.1 to
//   80.9 % of copy, dims 1024-8192 72.6-76.3 -> 78.3-80.9 %, dim 64 45.1 -> 61.3 % (one H100,
//   same call; 58 registers against the kAny instance's 64).
// - Lanes per row: about one pack each, 8..512 (wider rows loop); narrow rows (dim
//   64-256) share a 256-thread block. __launch_bounds__(512): the rotate-half body needs
//   more than the 64 registers that 1024 threads would leave. int64 indices.
#include "common.cuh"
#include "launchers.h"

namespace ks {
namespace {

constexpr int kMaxLanes = 512;  // 1024 would cap registers at 64: rotate-half spills there
constexpr int kBlockThreads = 256;

// Runs packs(xwin) with xwin(raw, p) making x's pack at p: kShifted switches on the word offset
// of x0 (the row's first pack; every x pack of the row shares its phase) once, outside the loop.
template <typename T, Layout L, typename F>
__device__ __forceinline__ void with_x_window(const T* x0, F&& packs) {
  if constexpr (L == Layout::kShifted) {
    with_word_offset<T>(phase_of(x0), [&](auto q, int shift) {
      packs([&](const RawPack& r, const T*) { return window_q<decltype(q)::value, T>(r, shift); });
    });
  } else {
    packs([](const RawPack& r, const T* p) { return window<L == Layout::kAligned>(r, p); });
  }
}

// What the launcher checked (Layout in common.cuh):
//   kAligned: every pack of x, cos, sin and out on the 16-byte grid (base pointers, strides and
//             the half in whole packs): one load per pack, no shift.
//   kShifted: the same for cos, sin and out, but x's rows at another phase (x[..., 1:] views):
//             cos and sin one load per pack; x's packs share the row's phase, so its word
//             offset is switched on once per row (with_word_offset) and each pack is window_q's
//             four funnel shifts.
//   kAny:     nothing; every pack is two loads and a runtime word pick.
template <typename T, bool kInterleaved, Layout L>
__global__ void __launch_bounds__(kMaxLanes) rope_rows(RopeArgs a) {
  constexpr int N = kPack<T>;
  constexpr bool kAligned = L == Layout::kAligned;
  constexpr bool kShared = kSharedOnGrid<L>;  // cos, sin (and out) on the grid
  const int lanes = blockDim.x;
  const int t = threadIdx.x;
  const int64_t rows = a.batch * a.heads * a.seq;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= rows) return;  // no barrier in this kernel
  const int64_t s = row % a.seq;
  const int64_t bh = row / a.seq;
  const int64_t b = bh / a.heads;
  const T* x = static_cast<const T*>(a.x) + b * a.x_sb + (bh % a.heads) * a.x_sh + s * a.x_ss;
  const T* cs = static_cast<const T*>(a.cos) + b * a.cs_sb + s * a.cs_ss;
  const T* sn = static_cast<const T*>(a.sin) + b * a.cs_sb + s * a.cs_ss;
  T* y = static_cast<T*>(a.out) + row * a.dim;

  if constexpr (kInterleaved) {
    const RowSplit sp = split_row(y, a.dim);  // head, packs and tail hold whole pairs
    auto pair = [&](int64_t e) {
      const float x0 = to_float(x[e]), x1 = to_float(x[e + 1]);
      y[e] = from_float<T>(x0 * to_float(cs[e]) - x1 * to_float(sn[e]));
      y[e + 1] = from_float<T>(x1 * to_float(cs[e + 1]) + x0 * to_float(sn[e + 1]));
    };
    if (2 * t < sp.head) pair(2 * t);
    if (2 * t < sp.tail) pair(sp.head + sp.packs * N + 2 * t);
    // xwin(raw, p): x's pack at p from its raw loads.
    auto packs = [&](auto xwin) {
      for (int64_t j = t; j < sp.packs; j += lanes) {
        const int64_t e = sp.head + j * N;
        // All three loads in flight before the first is used.
        const RawPack rx = load_raw<kAligned>(x + e), rc = load_raw<kShared>(cs + e), rs = load_raw<kShared>(sn + e);
        const Pack<T> xv = xwin(rx, x + e), cv = window<kShared>(rc, cs + e), sv = window<kShared>(rs, sn + e);
        Pack<T> o;
#pragma unroll
        for (int i = 0; i < N; i += 2) {
          const float x0 = to_float(xv.v[i]), x1 = to_float(xv.v[i + 1]);
          o.v[i] = from_float<T>(x0 * to_float(cv.v[i]) - x1 * to_float(sv.v[i]));
          o.v[i + 1] = from_float<T>(x1 * to_float(cv.v[i + 1]) + x0 * to_float(sv.v[i + 1]));
        }
        store_pack(y + e, o);
      }
    };
    with_x_window<T, L>(x + sp.head, packs);
  } else {
    const int64_t half = a.dim / 2;
    const RowSplit sp = split_row(y, half);  // cut by the first half's output
    auto one = [&](int64_t i) {
      const float x1 = to_float(x[i]), x2 = to_float(x[i + half]);
      y[i] = from_float<T>(x1 * to_float(cs[i]) - x2 * to_float(sn[i]));
      y[i + half] = from_float<T>(x2 * to_float(cs[i + half]) + x1 * to_float(sn[i + half]));
    };
    if (t < sp.head) one(t);
    if (t < sp.tail) one(sp.head + sp.packs * N + t);
    auto packs = [&](auto xwin) {  // xwin as above; x + i + half is at x + i's phase when kShifted
      for (int64_t j = t; j < sp.packs; j += lanes) {
        const int64_t i = sp.head + j * N;
        // All six loads in flight before the first is used.
        const RawPack rx1 = load_raw<kAligned>(x + i), rx2 = load_raw<kAligned>(x + i + half);
        const RawPack rc1 = load_raw<kShared>(cs + i), rs1 = load_raw<kShared>(sn + i);
        const RawPack rc2 = load_raw<kShared>(cs + i + half), rs2 = load_raw<kShared>(sn + i + half);
        const Pack<T> x1 = xwin(rx1, x + i), x2 = xwin(rx2, x + i + half);
        const Pack<T> c1 = window<kShared>(rc1, cs + i), s1 = window<kShared>(rs1, sn + i);
        const Pack<T> c2 = window<kShared>(rc2, cs + i + half), s2 = window<kShared>(rs2, sn + i + half);
        Pack<T> o1, o2;
#pragma unroll
        for (int k = 0; k < N; ++k) {
          const float a1 = to_float(x1.v[k]), a2 = to_float(x2.v[k]);
          o1.v[k] = from_float<T>(a1 * to_float(c1.v[k]) - a2 * to_float(s1.v[k]));
          o2.v[k] = from_float<T>(a2 * to_float(c2.v[k]) + a1 * to_float(s2.v[k]));
        }
        store_pack(y + i, o1);
        if constexpr (kShared) {
          store_pack(y + i + half, o2);
        } else {
          store_any(y + i + half, o2);  // aligned too when half is a multiple of the pack
        }
      }
    };
    with_x_window<T, L>(x + sp.head, packs);
  }
}

template <typename T, bool kInterleaved>
cudaError_t launch(const RopeArgs& a, cudaStream_t stream) {
  constexpr int N = kPack<T>;
  const int64_t rows = a.batch * a.heads * a.seq;
  const int64_t packs = (kInterleaved ? a.dim : a.dim / 2) / kPack<T>;
  const int lanes = lanes_for_row(packs, 1, kMaxLanes);
  const int rows_per_block = lanes >= kBlockThreads ? 1 : kBlockThreads / lanes;
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  // cos, sin and out: every pack of every row on the 16-byte grid (base pointers, strides, half).
  const bool shared = aligned16(a.cos) && aligned16(a.sin) && aligned16(a.out) && a.dim % (2 * N) == 0 &&
                      a.cs_sb % N == 0 && a.cs_ss % N == 0;
  // x too: every row on the grid. Otherwise (x[..., 1:]) each row has its own phase: kShifted.
  const bool x_on_grid = aligned16(a.x) && a.x_sb % N == 0 && a.x_sh % N == 0 && a.x_ss % N == 0;
  const dim3 grid(static_cast<unsigned>(blocks)), block(lanes, rows_per_block);
  if (shared && x_on_grid) {
    rope_rows<T, kInterleaved, Layout::kAligned><<<grid, block, 0, stream>>>(a);
  } else if (shared) {
    rope_rows<T, kInterleaved, Layout::kShifted><<<grid, block, 0, stream>>>(a);
  } else {
    rope_rows<T, kInterleaved, Layout::kAny><<<grid, block, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t rope(const RopeArgs& a, cudaStream_t stream) {
  if (a.batch == 0 || a.heads == 0 || a.seq == 0 || a.dim == 0) return cudaSuccess;
  if (a.dim % 2 != 0) return cudaErrorInvalidValue;
  return dispatch_dtype(a.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    return a.interleaved ? launch<T, true>(a, stream) : launch<T, false>(a, stream);
  });
}

}  // namespace ks
