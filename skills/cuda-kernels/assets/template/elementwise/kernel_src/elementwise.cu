// Elementwise activations, for the __NAME__ kernel project: out = f(x), f one formula in
// apply<>() (GELU-tanh and SiLU here). To make another elementwise op, add an Activation
// value, its formula below, and its name in torch-ext/torch_binding.cpp and reference.py.
//
// Why it is shaped like this
// - One read and one write per element and a few FLOPs: memory-bound, so the floor is
//   2 * numel * element size / copy bandwidth.
// - Every width and alignment takes one path (split_row in common.cuh): the output row's
//   16-byte packs with a scalar head and tail; an input at another 16-byte phase (a
//   x[..., 1:] view) is read with shuffled loads (load_chunk/window_next in common.cuh):
//   one aligned 16-byte load per pack, the next chunk from the lane above. Against two
//   loads per pack: 40-43 registers instead of 54-64 (bf16, ptxas -v, sm_90), and every
//   >= 64 MB x[..., 1:] row from 80.9-81.9 to 82.7-84.5 % of copy (one H100, same call).
//   When every pack is aligned (the launcher checks), an aligned instance loads each pack
//   once, with no shift.
// - A block of 64-256 threads (fewer for narrow rows) covers kUnroll packs per thread of
//   one row (shuffled: 31 packs per warp); each thread issues its kUnroll loads (64 bytes
//   in flight) before any math. A contiguous tensor is one row.
// - __launch_bounds__(kThreads); int64 indices (numel passes 2^31).
// - The formula is where the instructions are: GELU-tanh as written, 0.5 v (1 + tanhf(u)),
//   and SiLU through an IEEE division (an FCHK and a slow-path branch per element) made the
//   aligned bf16 instances 1144 and 1128 SASS instructions (sm_90). As v / (1 + exp(-2u))
//   (the same function, without the cancellation in 1 + tanh(u) for negative v) and
//   v / (1 + exp(-v)), each one __expf and one __fdividef: 784 and 648.
// - Fast-math note: __expf and __fdividef are exact enough (2 ulp each, plus __expf's error
//   growing with |x|: inside fp32's 1e-5 bound). Where the divisor passes 2^126 (SiLU below
//   about -87.3, GELU-tanh below about -10), __fdividef returns 0: the result is -0 (the
//   limit; the true value is under 1e-36 in magnitude), never NaN.
#include "common.cuh"
#include "launchers.h"

namespace ks {
namespace {

constexpr int kThreads = 256;    // the most threads per block (the launch bound)
constexpr int kMinThreads = 64;  // the fewest: more than any head or tail (< 8 elements)
constexpr int kUnroll = 4;

// The formula: edit here (fp32 in, fp32 out; the result is rounded once to the dtype).
template <Activation ACT>
__device__ __forceinline__ float apply(float v) {
  if constexpr (ACT == Activation::kGeluTanh) {
    // 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3)
    const float u2 = 1.5957691216057308f * (v + 0.044715f * v * v * v);
    return __fdividef(v, 1.f + __expf(-u2));
  } else {
    return __fdividef(v, 1.f + __expf(-v));  // SiLU: v * sigmoid(v)
  }
}

// kAligned: the launcher checked that every pack is on the 16-byte grid (one load per pack).
template <typename T, Activation ACT, bool kAligned>
__global__ void __launch_bounds__(kThreads) elementwise_rows(ElementwiseArgs a, int64_t blocks_per_row) {
  constexpr int N = kPack<T>;
  const int t = threadIdx.x;
  const int64_t row = blockIdx.x / blocks_per_row;
  const int64_t chunk = blockIdx.x % blocks_per_row;
  const T* x = static_cast<const T*>(a.x) + row * a.x_stride;
  T* y = static_cast<T*>(a.out) + row * a.n;
  const RowSplit sp = split_row(y, a.n);

  if (chunk == 0) {  // the scalar head and tail: fewer than N elements each
    if (t < sp.head) y[t] = from_float<T>(apply<ACT>(to_float(x[t])));
    const int64_t e = sp.head + sp.packs * N + t;
    if (t < sp.tail) y[e] = from_float<T>(apply<ACT>(to_float(x[e])));
  }
  const int nt = blockDim.x;
  if constexpr (kAligned) {
    const int64_t j0 = chunk * (kUnroll * nt) + t;
    RawPack raw[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * nt;
      if (j < sp.packs) raw[k] = load_raw<true>(x + sp.head + j * N);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * nt;
      if (j < sp.packs) {
        const Pack<T> v = window<true>(raw[k], x + sp.head + j * N);
        Pack<T> o;
#pragma unroll
        for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(apply<ACT>(to_float(v.v[i])));
        store_pack(y + sp.head + j * N, o);
      }
    }
  } else {  // x at another phase: one load per pack (load_chunk/window_next in common.cuh)
    const int step = packs_per_iter(nt);  // packs the block's threads cover per k
    const int64_t j0 = chunk * (kUnroll * step) + slot_of(t);
    const int ph = phase_of(x + sp.head);
    uint4 raw[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * step;
      raw[k] = make_uint4(0u, 0u, 0u, 0u);
      if (chunk_in_row(j, sp.packs, ph)) raw[k] = load_chunk(x + sp.head + j * N, ph);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t j = j0 + k * step;
      const Pack<T> v = window_next(raw[k], x + sp.head + j * N);
      if (makes_pack(t) && j < sp.packs) {
        Pack<T> o;
#pragma unroll
        for (int i = 0; i < N; ++i) o.v[i] = from_float<T>(apply<ACT>(to_float(v.v[i])));
        store_pack(y + sp.head + j * N, o);
      }
    }
  }
}

template <typename T, Activation ACT>
cudaError_t launch(const ElementwiseArgs& a, cudaStream_t stream) {
  const int64_t packs = a.n / kPack<T>;
  // Every pack on the 16-byte grid: both base pointers, and (several rows) whole packs per row.
  const bool aligned = aligned16(a.x) && aligned16(a.out) &&
                       (a.rows == 1 || (a.n % kPack<T> == 0 && a.x_stride % kPack<T> == 0));
  // Narrow rows get smaller blocks, rows not aligned whole warps (row_grid in common.cuh).
  const RowGrid g = row_grid(packs, aligned, kUnroll, kThreads, kMinThreads);
  const int64_t blocks = a.rows * g.blocks_per_row;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  if (aligned) {
    elementwise_rows<T, ACT, true><<<static_cast<unsigned>(blocks), g.threads, 0, stream>>>(a, g.blocks_per_row);
  } else {
    elementwise_rows<T, ACT, false><<<static_cast<unsigned>(blocks), g.threads, 0, stream>>>(a, g.blocks_per_row);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t elementwise(const ElementwiseArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.n == 0) return cudaSuccess;
  return dispatch_dtype(a.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    switch (a.act) {
      case Activation::kGeluTanh:
        return launch<T, Activation::kGeluTanh>(a, stream);
      case Activation::kSilu:
        return launch<T, Activation::kSilu>(a, stream);
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace ks
