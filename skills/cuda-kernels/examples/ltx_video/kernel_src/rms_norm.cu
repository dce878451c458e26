// rms_norm.cu - RMSNorm for LTX-Video, plain, AdaLN-modulated, and fused with
// the (gated) residual add that precedes it.
//
//   rms_norm(x, w?, eps)                       y = x * rsqrt(mean(x^2) + eps) [* w]
//   rms_norm_modulate(x, w?, scale, shift, eps) y = rms_norm(x, w) * (1 + scale) + shift
//   add_rms_norm_modulate(x, residual, gate?, w?, scale?, shift?, eps)
//       h = residual + x [* gate]  (rounded to the input dtype, as eager stores it)
//       returns (rms_norm(h, w) [* (1 + scale) + shift], h)
//
// All math in fp32, one rounding per output. Design (see README.md):
//  * rows_kernel: a row lives in registers. `tpr` consecutive threads own a row
//    (a power of two <= 32, or whole warps), each holding VPT 16-byte chunks:
//    all loads are issued before the first use, the sum of squares is reduced
//    with warp shuffles (plus shared memory across the warps of a row), and the
//    output is written from registers - one read and one write of x.
//  * loop_kernel: rows too long for registers (> 512 threads x 16 chunks) are
//    read twice by one block, the second read mostly from L2.
//  * VEC = 16-byte accesses, used only when every pointer and row offset is
//    16-byte aligned and D is a multiple of the chunk width (checked in
//    ltx_ops.cpp). Otherwise the loop kernel runs element by element with
//    bounds checks (the scalar path) - misaligned views and odd sizes.
//
// Build: kernel-builder (build.toml) or scripts/build_local.py; tests in
// tests/test_kernels_gpu.py, timings in benchmarks/bench_ops.py.

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

template <typename T, bool ADD>
void launch_rows_t(const NormArgs& a, int vpt, cudaStream_t stream) {
  const int rpb = rows_per_block(a.tpr);
  const dim3 grid(grid_for(a.rows, rpb));
  const dim3 block(static_cast<unsigned>(rpb * a.tpr));
  switch (vpt) {
    case 1:
      rms_norm_rows_kernel<T, 1, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 2:
      rms_norm_rows_kernel<T, 2, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 3:
      rms_norm_rows_kernel<T, 3, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 4:
      rms_norm_rows_kernel<T, 4, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 6:
      rms_norm_rows_kernel<T, 6, true, ADD><<<grid, block, 0, stream>>>(a);
      break;
    case 8:
      if constexpr (!ADD) rms_norm_rows_kernel<T, 8, true, false><<<grid, block, 0, stream>>>(a);
      break;
    case 12:
      if constexpr (!ADD) rms_norm_rows_kernel<T, 12, true, false><<<grid, block, 0, stream>>>(a);
      break;
    case 16:
      if constexpr (!ADD) rms_norm_rows_kernel<T, 16, true, false><<<grid, block, 0, stream>>>(a);
      break;
    default:
      break;  // the host validated vpt against kVptChoices / kMaxVptAdd
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

void launch_rms_norm_rows(DType dt, const NormArgs& a, int vpt, bool add, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (add)
      launch_rows_t<T, true>(a, vpt, stream);
    else
      launch_rows_t<T, false>(a, vpt, stream);
  });
}

void launch_rms_norm_loop(DType dt, const NormArgs& a, int block, bool vec, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const dim3 grid(grid_for(a.rows, 1));
    if (vec)
      rms_norm_loop_kernel<T, true><<<grid, dim3(static_cast<unsigned>(block)), 0, stream>>>(a);
    else
      rms_norm_loop_kernel<T, false><<<grid, dim3(static_cast<unsigned>(block)), 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace ltx
