// Gated activation over the two halves of the last dimension, for the __NAME__ kernel
// project: y = act(gate) * up (SwiGLU: act = silu, gate first; diffusers' GEGLU: act =
// gelu (erf), gate second). Math in fp32, y rounded once.
//
// Why it is shaped like this
// - Two reads and one write per output element and a few FLOPs: memory-bound, so the
//   floor is 3 * rows * d * element size / copy bandwidth.
// - Every width and alignment takes one path (split_row in common.cuh): the output row's
//   16-byte packs, with a scalar head and tail. The gate and up halves usually sit at
//   another 16-byte phase than the output (d = 4100 in bf16 puts up 8 bytes off); they
//   are read with shuffled loads (load_chunk/window_next in common.cuh): one aligned
//   16-byte load per pack and the next chunk from the lane above, so no access is scalar
//   except the head and tail. Against two loads per pack: 58-63 registers instead of 85-96
//   (bf16, ptxas -v, sm_90), 4096x11008 bf16 x[..., 1:] from 76.5 to 90.9 % of copy, 4100
//   from 72.2 to 75.2 (one H100, same call). When gate and up share a phase (d in whole
//   packs), the splice's word offset is switched on once per row (window_q): 2048x8192
//   x[..., 1:] from 73.7 to 79.3 %, 16384x1024 from 72.8 to 76.9, at 58-64 registers (bf16).
//   When every pack is aligned (the launcher checks the pointers and strides), an aligned
//   instance loads each pack once, with no shift, and takes its floats from the pack's
//   32-bit words (unpack in common.cuh): 4096x11008 bf16 went from 81.1 to 93.7 % of copy.
//   Shifted packs convert element by element: unpack made them 2-6 % slower.
// - A block of 64-256 threads (fewer for narrow rows) covers kUnroll packs per thread of
//   one row (shuffled: 31 packs per warp); each thread issues all its loads (kUnroll packs
//   of gate and of up: 128 bytes in flight) before any math.
// - __launch_bounds__(kThreads) on every kernel; int64 indices (rows * d passes 2^31).
// - SiLU and GELU-tanh take one __expf and one __fdividef (GELU-tanh as v / (1 + exp(-2u)),
//   the same function): IEEE division (an FCHK and a slow-path branch per element) and tanhf
//   made the aligned bf16 SiLU instance 1360 SASS instructions against 744 (sm_90). Errors:
//   kernel-templates.md, "Gated and elementwise activations".
#include "common.cuh"
#include "launchers.h"

namespace ks {
namespace {

constexpr int kThreads = 256;    // the most threads per block (the launch bound)
constexpr int kMinThreads = 64;  // the fewest: more than any head or tail (< 8 elements)
constexpr int kUnroll = 4;

template <GluActivation ACT>
__device__ __forceinline__ float activate(float v) {
  if constexpr (ACT == GluActivation::kSilu) {
    return __fdividef(v, 1.f + __expf(-v));  // v * sigmoid(v)
  } else if constexpr (ACT == GluActivation::kGelu) {
    return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
  } else {
    // 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3)
    const float u2 = 1.5957691216057308f * (v + 0.044715f * v * v * v);
    return __fdividef(v, 1.f + __expf(-u2));
  }
}

// kAligned: the launcher checked that every pack is on the 16-byte grid (one load per pack).
template <typename T, GluActivation ACT, bool kAligned>
__global__ void __launch_bounds__(kThreads) glu_rows(GluArgs a, int64_t blocks_per_row) {
  constexpr int N = kPack<T>;
  const int t = threadIdx.x;
  const int64_t row = blockIdx.x / blocks_per_row;
  const int64_t chunk = blockIdx.x % blocks_per_row;
  const T* gate = static_cast<const T*>(a.gate) + row * a.x_stride;
  const T* up = static_cast<const T*>(a.up) + row * a.x_stride;
  T* y = static_cast<T*>(a.out) + row * a.d;
  const RowSplit sp = split_row(y, a.d);

  if (chunk == 0) {  // the scalar head and tail: fewer than N elements each
    if (t < sp.head) y[t] = from_float<T>(activate<ACT>(to_float(gate[t])) * to_float(up[t]));
    const int64_t e = sp.head + sp.packs * N + t;
    if (t < sp.tail) y[e] = from_float<T>(activate<ACT>(to_float(gate[e])) * to_float(up[e]));
  }
  const int nt = blockDim.x;
  auto store = [&](int64_t j, const float (&gf)[N], const float (&uf)[N]) {
    Pack<T> o;
#pragma unroll
    for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(activate<ACT>(gf[i]) * uf[i]);
    store_pack(y + sp.head + j * N, o);
  };
  if constexpr (kAligned) {
    const int64_t j0 = chunk * (kUnroll * nt) + t;
    RawPack g[kUnroll], u[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * nt;
      if (j < sp.packs) {
        g[k] = load_raw<true>(gate + sp.head + j * N);
        u[k] = load_raw<true>(up + sp.head + j * N);
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * nt;
      if (j < sp.packs) {
        float gf[N], uf[N];
        unpack(window<true>(g[k], gate + sp.head + j * N), gf);
        unpack(window<true>(u[k], up + sp.head + j * N), uf);
        store(j, gf, uf);
      }
    }
  } else {  // gate and up at any phase: one load per pack (load_chunk/window_next in common.cuh)
    const int step = packs_per_iter(nt);  // packs the block's threads cover per k
    const int64_t j0 = chunk * (kUnroll * step) + slot_of(t);
    const int pg = phase_of(gate + sp.head), pu = phase_of(up + sp.head);
    uint4 g[kUnroll], u[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * step;
      g[k] = u[k] = make_uint4(0u, 0u, 0u, 0u);
      if (chunk_in_row(j, sp.packs, pg)) g[k] = load_chunk(gate + sp.head + j * N, pg);
      if (chunk_in_row(j, sp.packs, pu)) u[k] = load_chunk(up + sp.head + j * N, pu);
    }
    auto make = [&](int64_t j, const Pack<T>& gv, const Pack<T>& uv) {
      if (makes_pack(t) && j < sp.packs) {
        float gf[N], uf[N];
#pragma unroll
        for (int i = 0; i < N; ++i) {
          gf[i] = to_float(gv.v[i]);
          uf[i] = to_float(uv.v[i]);
        }
        store(j, gf, uf);
      }
    };
    if (pu == pg) {  // one switch on the shared word offset: four funnel shifts per pack
      with_word_offset<T>(pg, [&](auto q, int shift) {
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          const int64_t j = j0 + k * step;
          make(j, window_q<decltype(q)::value, T>(with_next(g[k]), shift),
               window_q<decltype(q)::value, T>(with_next(u[k]), shift));
        }
      });
    } else {  // gate and up at different phases (d not whole packs): runtime word picks
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const int64_t j = j0 + k * step;
        make(j, window_next(g[k], gate + sp.head + j * N), window_next(u[k], up + sp.head + j * N));
      }
    }
  }
}

template <typename T, GluActivation ACT>
cudaError_t launch(const GluArgs& a, cudaStream_t stream) {
  const int64_t packs = a.d / kPack<T>;
  // Every pack on the 16-byte grid: the base pointers, and whole packs per row.
  const bool aligned = aligned16(a.gate) && aligned16(a.up) && aligned16(a.out) && a.d % kPack<T> == 0 &&
                       a.x_stride % kPack<T> == 0;
  // Narrow rows get smaller blocks, rows not aligned whole warps (row_grid in common.cuh).
  const RowGrid g = row_grid(packs, aligned, kUnroll, kThreads, kMinThreads);
  const int64_t blocks = a.rows * g.blocks_per_row;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  if (aligned) {
    glu_rows<T, ACT, true><<<static_cast<unsigned>(blocks), g.threads, 0, stream>>>(a, g.blocks_per_row);
  } else {
    glu_rows<T, ACT, false><<<static_cast<unsigned>(blocks), g.threads, 0, stream>>>(a, g.blocks_per_row);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t glu(const GluArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.d == 0) return cudaSuccess;
  return dispatch_dtype(a.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    switch (a.act) {
      case GluActivation::kSilu:
        return launch<T, GluActivation::kSilu>(a, stream);
      case GluActivation::kGelu:
        return launch<T, GluActivation::kGelu>(a, stream);
      case GluActivation::kGeluTanh:
        return launch<T, GluActivation::kGeluTanh>(a, stream);
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace ks
