// rms_norm_kernels.cuh - the RMSNorm kernels (design notes in rms_norm.cu and README.md).
// Header-only so that tests/test_kernels_emulated.py can run them on a CPU.
#pragma once

#include "ltx_common.cuh"

namespace ltx {
namespace {

// Writes one chunk of the output: y = v * rstd [* w] [* (1 + scale) + shift].
template <bool VEC, typename T, int N>
__device__ __forceinline__ void finish_chunk(const Pack<T, N>& v, float rstd, const T* __restrict__ w,
                                             const T* __restrict__ srow, const T* __restrict__ hrow,
                                             T* __restrict__ orow, int e, int valid) {
  Pack<T, N> wv, sv, hv, o;
  if (w != nullptr) load_pack<VEC>(wv, w + e, valid);
  if (srow != nullptr) {
    load_pack<VEC>(sv, srow + e, valid);
    load_pack<VEC>(hv, hrow + e, valid);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float y = to_float(v.e[i]) * rstd;
    if (w != nullptr) y *= to_float(wv.e[i]);
    if (srow != nullptr) y = fmaf(y, 1.0f + to_float(sv.e[i]), to_float(hv.e[i]));
    o.e[i] = from_float<T>(y);
  }
  store_pack<VEC>(orow + e, o, valid);
}

template <typename T, int VPT, bool VEC, bool ADD>
__global__ void __launch_bounds__(512) rms_norm_rows_kernel(const NormArgs a) {
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[32];
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(blockDim.x) / tpr;
  const int slot = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  const T* __restrict__ w = static_cast<const T*>(a.weight);
  const T* __restrict__ scale = static_cast<const T*>(a.scale);
  const T* __restrict__ shift = static_cast<const T*>(a.shift);
  T* __restrict__ out = static_cast<T*>(a.out);
  const float inv_d = 1.0f / static_cast<float>(d);

  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rpb; base < a.rows;
       base += static_cast<int64_t>(gridDim.x) * rpb) {
    const int64_t row = base + slot;
    const bool active = row < a.rows;
    P v[VPT];
    float ss[1] = {0.0f};
    if (active) {
      const T* __restrict__ xr = x + a.xi(row);
      if constexpr (ADD) {
        const T* __restrict__ rr = static_cast<const T*>(a.residual) + a.ri(row);
        const T* __restrict__ gr =
            a.gate != nullptr ? static_cast<const T*>(a.gate) + a.gi(row) : nullptr;
        T* __restrict__ ro = static_cast<T*>(a.residual_out) + row * d;
        P r[VPT], g[VPT];
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            load_pack<VEC>(v[k], xr + e, d - e);
            load_pack<VEC>(r[k], rr + e, d - e);
            if (gr != nullptr) load_pack<VEC>(g[k], gr + e, d - e);
          }
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
#pragma unroll
            for (int i = 0; i < N; ++i) {
              const float xv = to_float(v[k].e[i]);
              const float h = gr != nullptr ? fmaf(xv, to_float(g[k].e[i]), to_float(r[k].e[i]))
                                            : to_float(r[k].e[i]) + xv;
              v[k].e[i] = from_float<T>(h);  // the residual stream is stored in T
              const float hr = to_float(v[k].e[i]);
              ss[0] = fmaf(hr, hr, ss[0]);
            }
            store_pack<VEC>(ro + e, v[k], d - e);
          }
        }
      } else {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) load_pack<VEC>(v[k], xr + e, d - e);
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
#pragma unroll
            for (int i = 0; i < N; ++i) {
              const float f = to_float(v[k].e[i]);
              ss[0] = fmaf(f, f, ss[0]);
            }
          }
        }
      }
    }
    row_sum<1>(ss, tpr, red);
    if (active) {
      const float rstd = rsqrtf(ss[0] * inv_d + a.eps);
      const T* __restrict__ srow = scale != nullptr ? scale + a.si(row) : nullptr;
      const T* __restrict__ hrow = shift != nullptr ? shift + a.hi(row) : nullptr;
      T* __restrict__ orow = out + row * d;
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) finish_chunk<VEC>(v[k], rstd, w, srow, hrow, orow, e, d - e);
      }
    }
  }
}

// One block per row, two passes over global memory (the second mostly hits L2).
template <typename T, bool VEC>
__global__ void __launch_bounds__(512) rms_norm_loop_kernel(const NormArgs a) {
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[32];
  const int64_t d = a.d;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  const T* __restrict__ w = static_cast<const T*>(a.weight);
  const T* __restrict__ scale = static_cast<const T*>(a.scale);
  const T* __restrict__ shift = static_cast<const T*>(a.shift);
  T* __restrict__ out = static_cast<T*>(a.out);
  const int64_t step = static_cast<int64_t>(blockDim.x) * N;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* __restrict__ xr = x + a.xi(row);
    float ss[1] = {0.0f};
    for (int64_t e = static_cast<int64_t>(threadIdx.x) * N; e < d; e += step) {
      P v;
      load_pack<VEC>(v, xr + e, static_cast<int>(d - e < N ? d - e : N));
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float f = to_float(v.e[i]);
        ss[0] = fmaf(f, f, ss[0]);
      }
    }
    row_sum<1>(ss, static_cast<int>(blockDim.x), red);
    const float rstd = rsqrtf(ss[0] * inv_d + a.eps);
    const T* __restrict__ srow = scale != nullptr ? scale + a.si(row) : nullptr;
    const T* __restrict__ hrow = shift != nullptr ? shift + a.hi(row) : nullptr;
    T* __restrict__ orow = out + row * d;
    for (int64_t e = static_cast<int64_t>(threadIdx.x) * N; e < d; e += step) {
      const int valid = static_cast<int>(d - e < N ? d - e : N);
      P v;
      load_pack<VEC>(v, xr + e, valid);
      // finish_chunk takes an int offset; pass shifted base pointers instead.
      finish_chunk<VEC>(v, rstd, w != nullptr ? w + e : nullptr, srow != nullptr ? srow + e : nullptr,
                        hrow != nullptr ? hrow + e : nullptr, orow + e, 0, valid);
    }
  }
}

}  // namespace
}  // namespace ltx
