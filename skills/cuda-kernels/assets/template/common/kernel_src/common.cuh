// Device helpers shared by every kernel of this project: fp32 conversions, 16-byte packs,
// loads at any alignment, the row layout (peeled head, 16-byte body, tail) and the
// block reduction. Torch-free: CUDA headers only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dtype.h"

namespace ks {

// Math is fp32; storage is the tensor's dtype. The intrinsics compile with and without
// torch's -D__CUDA_NO_HALF_OPERATORS__-style defines.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// 16 bytes of T: one 128-bit load or store (8 bf16/fp16 or 4 fp32 elements).
template <typename T>
constexpr int kPack = 16 / static_cast<int>(sizeof(T));

template <typename T>
struct alignas(16) Pack {
  T v[kPack<T>];
};

// The kPack<T> elements of a pack as floats, from its 32-bit words: bf16 by shifts (a bf16
// is the high half of a float), fp16 two at a time. Element by element, ptxas kept each
// 16-bit half in a register of its own: glu bf16 took 94 registers that way, 58 this way.
// Time both layouts after adopting it: glu's rows not aligned ran 2-6 % slower with it (they
// convert element by element), rmsnorm's did not move.
template <typename T>
__device__ __forceinline__ void unpack(const Pack<T>& p, float (&f)[kPack<T>]) {
  uint32_t w[4];
  memcpy(w, &p, sizeof(w));
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      f[i] = __uint_as_float(w[i]);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    } else {
      __half2 h;
      memcpy(&h, &w[i], sizeof(h));
      const float2 t = __half22float2(h);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
}

// One st.global.v4 through __stwb (a plain write-back store). Assigning the Pack struct, or
// a uint4 through a cast pointer (even with __builtin_assume_aligned), compiled (nvcc 13) to
// 2- or 4-byte stores: 0 st.global.v4 in the PTX of glu, elementwise, layernorm and rope.
// tests/test_kernel_resources.py fails a kernel whose PTX has no 16-byte store.
// The four words are assembled from the elements' bits, in registers.
__device__ __forceinline__ uint32_t bits_of(float v) { return __float_as_uint(v); }
__device__ __forceinline__ uint32_t bits_of(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ uint32_t bits_of(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }

template <typename T>
__device__ __forceinline__ void store_pack(T* p, const Pack<T>& v) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      w[i] = bits_of(v.v[i]);
    } else {
      w[i] = bits_of(v.v[2 * i]) | bits_of(v.v[2 * i + 1]) << 16;
    }
  }
  __stwb(reinterpret_cast<uint4*>(p), make_uint4(w[0], w[1], w[2], w[3]));
}

// Elements of T between the last 16-byte boundary and p (0 when p is 16-byte aligned).
template <typename T>
__host__ __device__ __forceinline__ int phase_of(const T* p) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(p) % 16 / sizeof(T));
}

// Loads at any element alignment, in two steps: load_raw issues the loads (the aligned
// 16-byte pack that holds p, and the next one only when p is not aligned: 16 bytes of
// request never touch a 16-byte block outside the requested range), window() picks the
// kPack<T> elements out with selects and a 32-bit funnel shift. A loop that needs several
// packs issues every load_raw before the first window(), so all its loads are in flight
// together. (The earlier load_any picked the elements with a switch on the phase; each
// call ended in a branch merge that waited for its load, so a thread had one load in
// flight: the elementwise kernel went from 71.8 % to 79.2 % of copy bandwidth at 134 MB on
// one H100 when it moved to load_raw; the kernel-skills repository's evidence/scaffolds.)
struct RawPack {
  uint4 a, b;
};

// kAligned: the launcher checked that every pack this kernel reads is 16-byte aligned (base
// pointers and row strides): one load, and no registers for a second pack or the shift.
template <bool kAligned = false, typename T>
__device__ __forceinline__ RawPack load_raw(const T* p) {
  if constexpr (kAligned) return {*reinterpret_cast<const uint4*>(p), make_uint4(0u, 0u, 0u, 0u)};
  const int s = phase_of(p);
  const uint4* base = reinterpret_cast<const uint4*>(p - s);
  RawPack r;
  r.a = base[0];
  r.b = make_uint4(0u, 0u, 0u, 0u);
  // A predicated load (ptxas makes it one), never a branch whose merge would wait for r.a.
  if (s != 0) r.b = base[1];
  return r;
}

// The pack at phase ph (elements) of the raw pair r, by a runtime word pick (see window_q).
template <typename T>
__device__ __forceinline__ Pack<T> window_at(const RawPack& r, int ph) {
  const int off = ph * static_cast<int>(sizeof(T));  // bytes, 0..15
  const int q = off >> 2;                            // whole words to skip, 0..3
  const int shift = (off & 3) * 8;                   // then bits: 0, or 16 for 2-byte types
  const uint32_t w[8] = {r.a.x, r.a.y, r.a.z, r.a.w, r.b.x, r.b.y, r.b.z, r.b.w};
  // w[i + q] by selects: a runtime index into a register array would go to local memory.
  auto pick = [&](int i) -> uint64_t {
    uint32_t v = w[i];
    v = q == 1 ? w[i + 1] : v;
    v = q == 2 ? w[i + 2] : v;
    v = q == 3 ? w[i + 3] : v;
    return v;
  };
  auto word = [&](int i) { return static_cast<uint32_t>(((pick(i + 1) << 32) | pick(i)) >> shift); };
  const uint4 out = make_uint4(word(0), word(1), word(2), word(3));
  Pack<T> v;
  static_assert(sizeof(v) == sizeof(out), "a pack is 16 bytes");
  memcpy(&v, &out, sizeof(v));
  return v;
}

template <bool kAligned = false, typename T>
__device__ __forceinline__ Pack<T> window(const RawPack& r, const T* p) {
  if constexpr (kAligned) {
    Pack<T> v;
    memcpy(&v, &r.a, sizeof(v));
    return v;
  }
  return window_at<T>(r, phase_of(p));
}

// One pack at any alignment (kAligned: p on the grid), when there is a single load to issue.
template <bool kAligned = false, typename T>
__device__ __forceinline__ Pack<T> load_any(const T* p) {
  return window<kAligned>(load_raw<kAligned>(p), p);
}

// window() with the whole-word part of the phase known at compile time: four funnel shifts,
// where window() spends three selects on each of five words to pick them by a runtime offset.
// Q: the whole 32-bit words between the first chunk's start and p (0..3); shift: the bits
// left over (0, or 16 for a 2-byte type at an odd phase). Reach it through with_word_offset.
template <int Q, typename T>
__device__ __forceinline__ Pack<T> window_q(const RawPack& r, int shift) {
  const uint32_t w[8] = {r.a.x, r.a.y, r.a.z, r.a.w, r.b.x, r.b.y, r.b.z, r.b.w};
  auto word = [&](int i) { return static_cast<uint32_t>(((static_cast<uint64_t>(w[i + 1]) << 32) | w[i]) >> shift); };
  const uint4 out = make_uint4(word(Q), word(Q + 1), word(Q + 2), word(Q + 3));
  Pack<T> v;
  memcpy(&v, &out, sizeof(v));
  return v;
}

// Calls f(std::integral_constant<int, Q>{}, shift) for the phase ph (elements) of T: one
// switch per row, around a loop of window_q, not one per pack (a switch per pack made each
// load's use a branch merge: see load_raw). It pays where the splice limits the row: LayerNorm
// + AdaLN 8192x4096 bf16 x[..., 1:] from 58.8 to 65.8 % of copy, glu 2048x8192 from 73.7 to
// 79.3; elementwise and RMSNorm's 2-pack rows gained nothing and keep window() (one H100, same
// call; the kernel-skills repository's evidence/scaffolds/h100_run13).
template <typename T, typename F>
__device__ __forceinline__ void with_word_offset(int ph, F&& f) {
  const int off = ph * static_cast<int>(sizeof(T));
  const int shift = (off & 3) * 8;
  switch (off >> 2) {
    case 0:
      f(std::integral_constant<int, 0>{}, shift);
      break;
    case 1:
      f(std::integral_constant<int, 1>{}, shift);
      break;
    case 2:
      f(std::integral_constant<int, 2>{}, shift);
      break;
    default:
      f(std::integral_constant<int, 3>{}, shift);
      break;
  }
}

// f(k, pack) for each of a lane's raw packs raw[0..K) of one row operand, all at the phase ph
// (elements: an operand's packs in one row share it); pack() makes the k-th pack. f calls
// it only for packs inside the row, so raw packs never loaded are never read (reading them
// cost layernorm's VPT 2 instances a 4-byte spill on sm_80). kAligned: ph is 0 and each pack
// is its first load. kSwitch: the word offset is switched on once, outside the loop, so a
// pack is window_q's four shifts, not window_at's fifteen selects and four shifts. That costs
// four copies of the loop, and registers: layernorm's kAny rows at VPT 2 spilled with it, so
// they pass kSwitch = false.
template <bool kAligned, typename T, bool kSwitch = true, int K, typename F>
__device__ __forceinline__ void for_each_window(const RawPack (&raw)[K], int ph, F&& f) {
  if constexpr (kAligned) {
#pragma unroll
    for (int k = 0; k < K; ++k) f(k, [&] { return window<true>(raw[k], static_cast<const T*>(nullptr)); });
  } else if constexpr (!kSwitch) {
#pragma unroll
    for (int k = 0; k < K; ++k) f(k, [&] { return window_at<T>(raw[k], ph); });
  } else {
    with_word_offset<T>(ph, [&](auto q, int shift) {
#pragma unroll
      for (int k = 0; k < K; ++k) f(k, [&] { return window_q<decltype(q)::value, T>(raw[k], shift); });
    });
  }
}

// Stores a pack at p: one 16-byte store when p is aligned (the body of an output row
// always is), element stores otherwise (a second output whose phase differs).
template <typename T>
__device__ __forceinline__ void store_any(T* p, const Pack<T>& v) {
  if (phase_of(p) == 0) {
    store_pack(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < kPack<T>; ++i) p[i] = v.v[i];
  }
}

// How one row of n elements is cut, relative to the 16-byte boundaries of the row's
// output `out`: `head` elements before the first boundary (< kPack), `packs` whole
// 16-byte packs, then `tail` elements (< kPack). Every width and every alignment takes
// the same path; only the head and the tail are scalar.
struct RowSplit {
  int head;
  int64_t packs;
  int tail;
};

template <typename T>
__device__ __forceinline__ RowSplit split_row(const T* out, int64_t n) {
  constexpr int N = kPack<T>;
  const int phase = phase_of(out);
  int head = phase == 0 ? 0 : N - phase;
  if (head > n) head = static_cast<int>(n);
  const int64_t packs = (n - head) / N;
  return {head, packs, static_cast<int>(n - head - packs * N)};
}

// Sum of `v` over the `lanes` consecutive threads (threadIdx.x of one threadIdx.y) that
// own one row; every thread gets the total in the same order. lanes is a power of two up
// to 32, a multiple of 32 above (lanes_for_row).
//
// Barrier discipline (one rule for every reduction in this project): the shared buffer is
// written only after a leading __syncthreads(), so the previous reduction's readers have
// all finished before it is overwritten. A kernel may therefore reduce twice in a row
// with one buffer (LayerNorm: mean, then variance) without a race. Every thread of the
// block must call it (rows past the end included), because it contains barriers.
__device__ __forceinline__ float row_sum(float v, int lanes, float* scratch) {
  const int width = lanes < 32 ? lanes : 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    if (offset < width) v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  if (lanes <= 32) return v;
  const int warps = lanes / 32;
  float* mine = scratch + threadIdx.y * warps;
  __syncthreads();  // the leading barrier: the last reduction's reads of scratch are done
  if ((threadIdx.x & 31) == 0) mine[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < warps; ++w) total += mine[w];
  return total;
}

// Calls f(T{}) with T the C++ type of `dtype`.
template <typename F>
cudaError_t dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat16:
      return f(__half{});
    case DType::kBFloat16:
      return f(__nv_bfloat16{});
  }
  return cudaErrorInvalidValue;
}

// Threads per row for row ops: the fewest that give each thread at most `per_thread`
// packs, as a power of two up to 32 (at least 8, so the peeled head and tail, < 8 elements
// each, take one element per lane) and whole warps above, capped at max_lanes (a multiple
// of 32). Whole warps, not the next power of two: 5120 bf16 elements (640 packs) get 320
// lanes of 2 packs, where 512 lanes left 384 of them one pack and the row at 52 % of copy
// bandwidth on an H100 (the kernel-skills repository's evidence/scaffolds).
inline int lanes_for_row(int64_t packs, int64_t per_thread, int max_lanes = 1024) {
  const int64_t want = (packs + per_thread - 1) / per_thread;
  if (want > 32) return static_cast<int>(want < max_lanes ? (want + 31) / 32 * 32 : max_lanes);
  int lanes = 8;
  while (lanes < want) lanes <<= 1;
  return lanes;
}

// lanes_for_row(packs, vpt, max_lanes) into *lanes; true when those lanes hold the whole row
// (an instance whose launch bound caps its threads below the row's packs / vpt cannot).
inline bool lanes_cover(int64_t packs, int vpt, int max_lanes, int* lanes) {
  *lanes = lanes_for_row(packs, vpt, max_lanes);
  return static_cast<int64_t>(*lanes) * vpt >= packs;
}

// Shuffled loads, for rows whose input sits at another phase than the output (x[..., 1:]
// views): an output pack spans two aligned 16-byte chunks of the input. Each lane of a warp
// loads one chunk (load_chunk) and takes the next from the lane above (window_next); the
// warp's last lane only loads, because its chunk is the next warp's first. A warp makes 31
// packs with 32 loads, where load_raw makes 32 packs with 64, and holds one chunk per pack,
// not two: glu's bf16 instances for such rows went from 85-96 to 58-63 registers and
// 4096x11008 x[..., 1:] from 76.5 to 90.9 % of copy on an H100 (elementwise: 81-82 to 83-84.5;
// the kernel-skills repository's evidence/scaffolds/h100_run12). Blocks are whole warps, and
// lane t takes packs slot_of(t) + k * packs_per_iter(threads). Size them with
// shuffled_threads: a warp makes one pack fewer than it has lanes, so a row that took 512
// threads takes 544 (rmsnorm's 4096x8192 x[..., 1:] rows fell from 65.3 to 39.3 % of copy
// with its blocks grown that way).
constexpr int kWarpPacks = 31;
__host__ __device__ __forceinline__ int packs_per_iter(int threads) { return threads / 32 * kWarpPacks; }
__device__ __forceinline__ int slot_of(int t) { return t / 32 * kWarpPacks + t % 32; }
__device__ __forceinline__ bool makes_pack(int t) { return t % 32 != 31; }

// The aligned chunk that holds p, whose phase is ph. Call it for the packs j < packs, and for
// j == packs only when ph != 0 (that chunk still holds the row's last elements).
template <typename T>
__device__ __forceinline__ uint4 load_chunk(const T* p, int ph) {
  return *reinterpret_cast<const uint4*>(p - ph);
}

// Whether a lane's pack j needs its chunk loaded (see load_chunk).
__device__ __forceinline__ bool chunk_in_row(int64_t j, int64_t packs, int ph) {
  return j < packs || (j == packs && ph != 0);
}

// This lane's chunk and the next lane's, for window_q. Every lane of the warp calls it.
__device__ __forceinline__ RawPack with_next(const uint4& a) {
  return RawPack{a, make_uint4(__shfl_down_sync(0xffffffffu, a.x, 1), __shfl_down_sync(0xffffffffu, a.y, 1),
                               __shfl_down_sync(0xffffffffu, a.z, 1), __shfl_down_sync(0xffffffffu, a.w, 1))};
}

// Warp runs, for rows off the output's phase where a lane caches VPT packs: warp w of a row
// owns the packs [32 * VPT * w, 32 * VPT * (w + 1)), and lane l's k-th pack is
// 32 * VPT * w + 32 * k + l, so each of its loads is one chunk of a warp's 512 coalesced bytes.
// A pack needs the next pack's chunk too: lanes 0..30 take it from the lane above, lane 31
// from lane 0's chunk k + 1 (lane 0's own chunk k is nobody else's, so lane 0 can offer that
// one instead). Lane 0 alone also loads the chunk after the run, as its chunk VPT. A lane holds
// VPT + 1 chunks where load_raw holds 2 * VPT, and a warp makes 32 packs per load, not 31.
// RMSNorm's shifted rows at 4 packs per lane this way: bf16 4096x8192 x[..., 1:] from 70.0 to
// 86.9 % of copy (one H100, same call; evidence/scaffolds/warp_runs). Elementwise's shuffled
// loads this way lost 2.3-3.7 points on an H200, its unchanged aligned rows -2.0 to +1.2 (bf16
// 40 -> 52 registers): time it per op.
template <int VPT>
__device__ __forceinline__ int64_t run_pack(int t, int k) {
  return static_cast<int64_t>(t / 32) * (32 * VPT) + 32 * k + t % 32;
}

// This lane's chunk c[k] (mine) and the next pack's, given c[k + 1] (after). Every lane of
// the warp calls it, with blocks whose rows are whole warps.
__device__ __forceinline__ RawPack with_run_next(const uint4& mine, const uint4& after) {
  const bool first = threadIdx.x % 32 == 0;
  const int above = (threadIdx.x + 1) % 32;
  auto next = [&](uint32_t m, uint32_t a) { return __shfl_sync(0xffffffffu, first ? a : m, above); };
  return RawPack{mine, make_uint4(next(mine.x, after.x), next(mine.y, after.y), next(mine.z, after.z),
                                  next(mine.w, after.w))};
}

// This lane's chunks of a warp run of the row operand p (`packs` packs, all at phase ph): c[k]
// for its k-th pack, and in lane 0 c[VPT], the chunk after the run. A chunk outside the row
// stays zero and no pack that is made reads it. Issue every load before the first with_run_next.
template <int VPT, typename T>
__device__ __forceinline__ void load_run(const T* p, int64_t packs, int ph, uint4 (&c)[VPT + 1]) {
  const int t = threadIdx.x;
#pragma unroll
  for (int k = 0; k <= VPT; ++k) {
    const int64_t j = run_pack<VPT>(t, k);
    c[k] = make_uint4(0u, 0u, 0u, 0u);
    if ((k < VPT || t % 32 == 0) && chunk_in_row(j, packs, ph)) c[k] = load_chunk(p + j * kPack<T>, ph);
  }
}

// The pack at p from this lane's chunk `a` and the next lane's. Every lane of the warp calls it
// (a shuffle), whether or not it makes a pack.
template <typename T>
__device__ __forceinline__ Pack<T> window_next(const uint4& a, const T* p) {
  return window<false>(with_next(a), p);
}

// Threads (whole warps, at most max_threads) whose shuffled loads cover `packs` at `vpt` packs
// per thread, into *threads; false when max_threads cannot.
inline bool shuffled_threads(int64_t packs, int vpt, int max_threads, int* threads) {
  int n = lanes_for_row(packs, vpt, max_threads);
  n = n < 32 ? 32 : n;
  while (static_cast<int64_t>(packs_per_iter(n)) * vpt < packs && n < max_threads) n += 32;
  *threads = n;
  return static_cast<int64_t>(packs_per_iter(n)) * vpt >= packs;
}

// Threads per block and blocks per row for rows of `packs` at `unroll` packs per thread
// (elementwise, glu): the fewest threads that give each at most `unroll` packs (at least
// min_threads), so narrow rows get small blocks and no thread idles (at d = 1024 in bf16 a
// 256-thread block would leave half its threads without work); rows not aligned (shuffled loads) grow their
// block until it holds the row where max_threads can (2048 bf16: 96 threads, not a block of 64
// and one for 8 packs).
struct RowGrid {
  int threads;
  int64_t blocks_per_row;
};
inline RowGrid row_grid(int64_t packs, bool aligned, int unroll, int max_threads, int min_threads) {
  int threads = 0;
  if (aligned || !shuffled_threads(packs, unroll, max_threads, &threads)) {
    threads = lanes_for_row(packs, unroll, max_threads);
  }
  if (threads < min_threads) threads = min_threads;
  const int64_t per_block = static_cast<int64_t>(unroll) * (aligned ? threads : packs_per_iter(threads));
  return {threads, packs > per_block ? (packs + per_block - 1) / per_block : 1};
}

// A launcher's alignment check for the kAligned instances: p on the 16-byte grid (nullptr is).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// What a row kernel instance may assume about its operands, from the launcher's checks:
//   kAny:       nothing; every input pack is two aligned loads and a shift (load_raw/window).
//   kShifted:   the row operands (x, a residual) at any phase, but the output's rows and the
//               operands shared by all rows (weight, bias) on the grid: x[..., 1:] views into
//               a fresh output. Row packs are shifted; the shared operands' are one load each,
//               so they can be fetched all at once like the aligned instances'.
//   kSamePhase: every row of each row operand (x, residual, second outputs) starts at the
//               phase of the output's row, so past the peeled head each of their packs is one
//               aligned load; operands shared by all rows (weight, bias) are still shifted.
//               Contiguous rows whose width is not a multiple of the pack (4100 bf16) are so.
//   kAligned:   every pointer 16-byte aligned and every row stride whole packs: no shifts.
// kShifted came last, so the others keep their numbers in mangled kernel names.
enum class Layout { kAny, kSamePhase, kAligned, kShifted };

// The row operands' packs (x, a residual) are one load each past the head.
template <Layout L>
constexpr bool kRowsOnGrid = L == Layout::kSamePhase || L == Layout::kAligned;
// The shared operands' packs (weight, bias, modulation rows) are one load each.
template <Layout L>
constexpr bool kSharedOnGrid = L == Layout::kAligned || L == Layout::kShifted;

// Every row of p (row stride p_stride elements) starts at the phase of the matching row of
// q (nullptr p: no operand, so no constraint).
inline bool same_phase(const void* p, int64_t p_stride, const void* q, int64_t q_stride, int elem_bytes) {
  if (p == nullptr) return true;
  return reinterpret_cast<uintptr_t>(p) % 16 == reinterpret_cast<uintptr_t>(q) % 16 &&
         (p_stride - q_stride) * elem_bytes % 16 == 0;
}

}  // namespace ks
