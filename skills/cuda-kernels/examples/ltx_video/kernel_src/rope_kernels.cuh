// rope_kernels.cuh - the RoPE and fused q/k norm + RoPE kernels (notes in rope.cu).
// Header-only so that tests/kernels_emulated.cpp can run them on a CPU.
#pragma once

#include "ltx_common.cuh"

namespace ltx {
namespace {

// Rotates one pair (x0, x1) = elements 2i and 2i+1, each with its own cos/sin. Every RoPE
// kernel rotates through this one expression, so they round alike.
template <typename T>
__device__ __forceinline__ void rotate_pair(float x0, float x1, float c0, float c1, float s0, float s1, T& o0, T& o1) {
  o0 = from_float<T>(x0 * c0 - x1 * s0);
  o1 = from_float<T>(x1 * c1 + x0 * s1);
}

// Rotates one chunk: v holds normalized fp32 values of N consecutive elements
// starting at an even index.
template <typename T, int N>
__device__ __forceinline__ void rotate_store(const float (&v)[N], const Pack<float, N>& c, const Pack<float, N>& s,
                                             Pack<T, N>& o) {
#pragma unroll
  for (int i = 0; i < N; i += 2)
    rotate_pair(v[i], v[i + 1], c.e[i], c.e[i + 1], s.e[i], s.e[i + 1], o.e[i], o.e[i + 1]);
}

template <typename T, bool VEC>
__global__ void __launch_bounds__(512) rope_kernel(const RopeArgs a) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  constexpr int N = VecWidth<T>::value;
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(a.tpr_div(blockDim.x));
  const int slot = static_cast<int>(a.tpr_div(threadIdx.x));
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * rpb + slot; row < a.rows;
       row += static_cast<int64_t>(gridDim.x) * rpb) {
    const T* __restrict__ xr = static_cast<const T*>(a.x) + a.xi(row);
    const int64_t coff = a.ci(row);
    const float* __restrict__ cr = a.cos + coff;
    const float* __restrict__ sr = a.sin + ((a.same & kSinAsCos) ? coff : a.si(row));
    T* __restrict__ orow = static_cast<T*>(a.out) + row * d;
    for (int e = lane * N; e < d; e += tpr * N) {
      const int valid = d - e;
      Pack<T, N> xv;
      Pack<float, N> cv, sv;
      load_pack<VEC>(xv, xr + e, valid);
      load_pack<VEC>(cv, cr + e, valid);
      load_pack<VEC>(sv, sr + e, valid);
      float f[N];
#pragma unroll
      for (int i = 0; i < N; ++i) f[i] = to_float(xv.e[i]);
      Pack<T, N> o;
      rotate_store<T, N>(f, cv, sv, o);
      store_pack<VEC>(orow + e, o, valid);
    }
  }
}

// Flat RoPE: when x, cos, sin and the output all store their rows back to back (row
// stride d: what LTX passes), the tensor is one array of 16-byte chunks of x and a chunk
// never straddles a row or a rotation pair (d % N == 0, N even). Each thread takes CPT
// chunks `blockDim.x` apart (coalesced per warp) and requests all of them - 80 bytes
// each for bf16 - before it computes, with no per-row index arithmetic (rope_kernel
// divides three row indices per chunk). 16-byte path only: the host checks alignment.
template <typename T, int CPT>
__global__ void __launch_bounds__(256) rope_flat_kernel(const RopeArgs a, const int64_t chunks) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  constexpr int N = VecWidth<T>::value;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  T* __restrict__ out = static_cast<T*>(a.out);
  const int64_t step = static_cast<int64_t>(blockDim.x);
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * step * CPT + threadIdx.x; base < chunks;
       base += static_cast<int64_t>(gridDim.x) * step * CPT) {
    Pack<T, N> xv[CPT];
    Pack<float, N> cv[CPT], sv[CPT];
#pragma unroll
    for (int u = 0; u < CPT; ++u) {
      const int64_t e = (base + u * step) * N;
      if (base + u * step < chunks) {
        load_pack<true>(xv[u], x + e, N);
        load_pack<true>(cv[u], a.cos + e, N);
        load_pack<true>(sv[u], a.sin + e, N);
      }
    }
#pragma unroll
    for (int u = 0; u < CPT; ++u) {
      const int64_t e = (base + u * step) * N;
      if (base + u * step < chunks) {
        float f[N];
#pragma unroll
        for (int i = 0; i < N; ++i) f[i] = to_float(xv[u].e[i]);
        Pack<T, N> o;
        rotate_store<T, N>(f, cv[u], sv[u], o);
        store_pack16(out + e, o);
      }
    }
  }
}

// The unsigned word one global access of BYTES moves (4, 8 or 16: one LDG/STG of that width).
template <int BYTES>
struct AccessWord;
template <>
struct AccessWord<4> {
  using type = unsigned int;
};
template <>
struct AccessWord<8> {
  using type = uint2;
};
template <>
struct AccessWord<16> {
  using type = uint4;
};

// Narrow flat RoPE: the flat layout, E elements (2 or 4) per thread instead of a 16-byte chunk
// (bf16, E = 2: 4 + 8 + 8 bytes; a warp's x access 128 contiguous bytes, not 512). The launch
// shape of torch.compile's kernel for this expression (Nsight Compute: 2 elements, 256-thread
// blocks, 17 registers), 0-2 % faster than the 16-byte flat kernel at the DRAM floor. One
// access per operand, so E elements of T and of float are 4, 8 or 16 bytes; the host checks
// alignment and d % E == 0. STREAM (flag kRopeStreaming): ld/st.global.cs. Bit-identical.
template <typename T, int E, bool STREAM = false>
__global__ void __launch_bounds__(256) rope_narrow_kernel(const RopeArgs a, const int64_t units) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  static_assert(E % 2 == 0, "whole rotation pairs");
  using XWord = typename AccessWord<static_cast<int>(sizeof(T)) * E>::type;
  using CWord = typename AccessWord<static_cast<int>(sizeof(float)) * E>::type;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  T* __restrict__ out = static_cast<T*>(a.out);
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = u * E;
    const XWord* xp = reinterpret_cast<const XWord*>(x + e);
    const CWord* cp = reinterpret_cast<const CWord*>(a.cos + e);
    const CWord* sp = reinterpret_cast<const CWord*>(a.sin + e);
    const XWord xw = STREAM ? __ldcs(xp) : __ldg(xp);
    const CWord cw = STREAM ? __ldcs(cp) : __ldg(cp);
    const CWord sw = STREAM ? __ldcs(sp) : __ldg(sp);
    T xv[E], o[E];
    float c[E], sn[E];
    memcpy(xv, &xw, sizeof(xw));
    memcpy(c, &cw, sizeof(cw));
    memcpy(sn, &sw, sizeof(sw));
#pragma unroll
    for (int i = 0; i < E; i += 2)
      rotate_pair(to_float(xv[i]), to_float(xv[i + 1]), c[i], c[i + 1], sn[i], sn[i + 1], o[i], o[i + 1]);
    XWord ow;
    memcpy(&ow, o, sizeof(ow));
    if constexpr (STREAM)
      __stcs(reinterpret_cast<XWord*>(out + e), ow);
    else
      *reinterpret_cast<XWord*>(out + e) = ow;
  }
}

// LEAN (one chunk, blocks of kMaxLeanRopeBlock; the default where it applies, flag 64 forces
// it): RowIndex::lean offsets and >= 5 resident 256-thread blocks, i.e. <= 48 registers
// instead of 64 (no spills; at 40 it spilled 84 bytes in bf16: fp32 cos/sin take 16
// registers per chunk). 1.0-4.6 % faster on all 7 shapes at d = 2048 (bf16; other dtypes and
// d take it by the same rule, unmeasured). HINTS (flags 64 | 256): q, k, cos, sin
// evict-first, weights evict-last, as torch.compile's kernels. Bit-identical.
template <typename T, int VPT, bool VEC, bool LEAN = false, bool HINTS = false>
__global__ void __launch_bounds__(LEAN ? kMaxLeanRopeBlock : 512, LEAN ? 5 : 0) rms_norm_rope_kernel(const RopeArgs a) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  static_assert(!LEAN || (VEC && VPT == 1), "LEAN is the 16-byte one-chunk variant");
  static_assert(!HINTS || LEAN, "HINTS is a variant of the lean kernel");
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[64];
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(a.tpr_div(blockDim.x));
  const int slot = static_cast<int>(a.tpr_div(threadIdx.x));
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const bool two = a.x2 != nullptr;
  const T* __restrict__ w = static_cast<const T*>(a.w);
  const T* __restrict__ w2 = static_cast<const T*>(a.w2);
  const float inv_d = a.inv_d;
  const Hints hints = HINTS ? make_hints() : Hints{};

  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rpb; base < a.rows;
       base += static_cast<int64_t>(gridDim.x) * rpb) {
    const int64_t row = base + slot;
    const bool active = row < a.rows;
    // Everything the row needs from DRAM - q, k, cos, sin - is requested before the
    // reduction, so the 16 bytes per element position are in flight at once; only the
    // L1/L2-resident weights are read after it.
    P v[VPT], u[VPT];
    Pack<float, N> cv[VPT], sv[VPT];
    float ss[2] = {0.0f, 0.0f};
    if (active) {
      const int64_t xoff = row_at<LEAN>(a.xi, row);
      const int64_t coff = row_at<LEAN>(a.ci, row);
      const T* __restrict__ xr = static_cast<const T*>(a.x) + xoff;
      const T* __restrict__ x2r =
          two ? static_cast<const T*>(a.x2) + ((a.same & kX2AsX) ? xoff : row_at<LEAN>(a.x2i, row)) : nullptr;
      const float* __restrict__ cr = a.cos + coff;
      const float* __restrict__ sr = a.sin + ((a.same & kSinAsCos) ? coff : row_at<LEAN>(a.si, row));
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          load_vec<HINTS, true, VEC>(v[k], xr + e, hints, d - e);
          if (two) load_vec<HINTS, true, VEC>(u[k], x2r + e, hints, d - e);
          load_vec<HINTS, true, VEC>(cv[k], cr + e, hints, d - e);
          load_vec<HINTS, true, VEC>(sv[k], sr + e, hints, d - e);
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
#pragma unroll
          for (int i = 0; i < N; ++i) {
            const float f = to_float(v[k].e[i]);
            ss[0] = fmaf(f, f, ss[0]);
            if (two) {
              const float g = to_float(u[k].e[i]);
              ss[1] = fmaf(g, g, ss[1]);
            }
          }
        }
      }
    }
    row_sum<2>(ss, tpr, slot, red);
    if (active) {
      const float r1 = rsqrtf(ss[0] * inv_d + a.eps);
      const float r2 = rsqrtf(ss[1] * inv_d + a.eps);
      T* __restrict__ o1 = static_cast<T*>(a.out) + row * d;
      T* __restrict__ o2 = two ? static_cast<T*>(a.out2) + row * d : nullptr;
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          const int valid = d - e;
          P wv, o;
          float f[N];
          if (w != nullptr) load_vec<HINTS, false, VEC>(wv, w + e, hints, valid);
#pragma unroll
          for (int i = 0; i < N; ++i) f[i] = to_float(v[k].e[i]) * r1 * (w != nullptr ? to_float(wv.e[i]) : 1.0f);
          rotate_store<T, N>(f, cv[k], sv[k], o);
          store_pack<VEC>(o1 + e, o, valid);
          if (two) {
            if (w2 != nullptr) load_vec<HINTS, false, VEC>(wv, w2 + e, hints, valid);
#pragma unroll
            for (int i = 0; i < N; ++i)
              f[i] = to_float(u[k].e[i]) * r2 * (w2 != nullptr ? to_float(wv.e[i]) : 1.0f);
            rotate_store<T, N>(f, cv[k], sv[k], o);
            store_pack<VEC>(o2 + e, o, valid);
          }
        }
      }
    }
  }
}

// PREFETCH (the default q/k kernel for calls of a few waves, qk_prefetch_default; flag
// 64 | 512; one chunk, blocks <= kMaxLeanRopeBlock, rows < 2^31): a persistent grid of
// kPrefetchRopeBlocks blocks per SM whose threads request the next row group's q, k, cos,
// sin before reducing the current one. Why: the one-row-per-block kernel leaves a call's end
// to its last blocks (2048 rows of 2048 are 3.1 waves: 79-80 % of copy where 4096 rows ran
// at 90 %). Same bits. 80 registers at 3 blocks per SM; held to 64 for 4 blocks it spilled
// 20 bytes and ran 5-18 % slower (ptxas -v, sm_90, bf16; H200).
template <typename T, bool HINTS>
__global__ void __launch_bounds__(kMaxLeanRopeBlock, kPrefetchRopeBlocks)
    rms_norm_rope_prefetch_kernel(const RopeArgs a) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  using F = Pack<float, N>;
  struct Chunk {  // one thread's part of a row: what crosses the reduction
    P v, u;
    F c, s;
  };
  __shared__ float red[64];
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(a.tpr_div(blockDim.x));
  const int slot = static_cast<int>(a.tpr_div(threadIdx.x));
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const int e = lane * N;
  const bool has_chunk = e < d;  // tpr x N covers the row; the last lanes may idle
  const bool two = a.x2 != nullptr;
  const T* __restrict__ w = static_cast<const T*>(a.w);
  const T* __restrict__ w2 = static_cast<const T*>(a.w2);
  const Hints hints = HINTS ? make_hints() : Hints{};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * rpb;

  auto fetch = [&](int64_t row, Chunk& ch) {
    if (row >= a.rows || !has_chunk) return;
    const int64_t xoff = a.xi.lean(row);
    const int64_t coff = a.ci.lean(row);
    load_vec<HINTS, true>(ch.v, static_cast<const T*>(a.x) + xoff + e, hints);
    if (two)
      load_vec<HINTS, true>(ch.u, static_cast<const T*>(a.x2) + ((a.same & kX2AsX) ? xoff : a.x2i.lean(row)) + e,
                            hints);
    load_vec<HINTS, true>(ch.c, a.cos + coff + e, hints);
    load_vec<HINTS, true>(ch.s, a.sin + ((a.same & kSinAsCos) ? coff : a.si.lean(row)) + e, hints);
  };

  int64_t row = static_cast<int64_t>(blockIdx.x) * rpb + slot;
  Chunk cur;
  fetch(row, cur);
  // The loop bound is the block's first row, the same for all its threads: row_sum's
  // barrier is reached by every thread of the block or by none.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rpb; base < a.rows; base += stride, row += stride) {
    Chunk next;
    fetch(row + stride, next);  // in flight during this row's reduction and stores
    const bool active = row < a.rows && has_chunk;
    float ss[2] = {0.0f, 0.0f};
    if (active) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float f = to_float(cur.v.e[i]);
        ss[0] = fmaf(f, f, ss[0]);
        if (two) {
          const float g = to_float(cur.u.e[i]);
          ss[1] = fmaf(g, g, ss[1]);
        }
      }
    }
    row_sum<2>(ss, tpr, slot, red);
    if (active) {
      const float r1 = rsqrtf(ss[0] * a.inv_d + a.eps);
      const float r2 = rsqrtf(ss[1] * a.inv_d + a.eps);
      P wv, o;
      float f[N];
      if (w != nullptr) load_vec<HINTS, false>(wv, w + e, hints);
#pragma unroll
      for (int i = 0; i < N; ++i) f[i] = to_float(cur.v.e[i]) * r1 * (w != nullptr ? to_float(wv.e[i]) : 1.0f);
      rotate_store<T, N>(f, cur.c, cur.s, o);
      store_pack<true>(static_cast<T*>(a.out) + row * d + e, o, N);
      if (two) {
        if (w2 != nullptr) load_vec<HINTS, false>(wv, w2 + e, hints);
#pragma unroll
        for (int i = 0; i < N; ++i) f[i] = to_float(cur.u.e[i]) * r2 * (w2 != nullptr ? to_float(wv.e[i]) : 1.0f);
        rotate_store<T, N>(f, cur.c, cur.s, o);
        store_pack<true>(static_cast<T*>(a.out2) + row * d + e, o, N);
      }
    }
    cur = next;
  }
}

}  // namespace
}  // namespace ltx
