// rope.cu - LTX-Video's rotary embedding, alone and fused with norm_q/norm_k.
//
// diffusers 0.42.1 transformer_ltx.apply_rotary_emb on x: [B, S, C] with
// cos, sin: [B, S, C] float32 (repeat-interleaved, so pairs share a value):
//   out[2i]   = x[2i]   * cos[2i]   - x[2i+1] * sin[2i]
//   out[2i+1] = x[2i+1] * cos[2i+1] + x[2i]   * sin[2i+1]
// computed in fp32, rounded to x's dtype.
//
//   rope_interleaved(x, cos, sin)
//   rms_norm_rope(x, w?, cos, sin, eps)           = rope(rms_norm(x, w, eps))
//   rms_norm_rope_qk(q, k, wq?, wk?, cos, sin, eps) = both, sharing cos/sin reads
//
// Bytes per element (bf16 x, fp32 cos/sin): rope alone moves 2 + 2 + 4 + 4 = 12.
// diffusers runs norm_q, norm_k, rope(q), rope(k): 4 + 4 + 12 + 12 = 32 bytes
// per element position. The fused q/k kernel reads q, k, cos, sin once and
// writes q, k once: 16 bytes - half. Normalization is not rounded to bf16
// before the rotation (eager rounds there), so the fused result is closer to
// the exact value than eager's.
//
// Layout: `tpr` consecutive threads own a row; chunks of 16 bytes of x (with
// the matching 32 bytes of fp32 cos and of sin) are the unit of work. The
// fused kernel keeps its rows in registers like rms_norm.cu - q, k, cos and
// sin, all requested before the reduction so that every DRAM byte of the row
// is in flight at once (2 chunks per thread: 96 registers for bf16) - and
// runs only on the 16-byte path; misaligned or odd-sized inputs are
// normalized by the scalar loop kernel and rotated by rope_kernel's scalar
// path instead (ltx_ops.cpp decides).

#include "ltx_common.cuh"

namespace ltx {
namespace {

// Rotates one chunk: v holds normalized fp32 values of N consecutive elements
// starting at an even index.
template <typename T, int N>
__device__ __forceinline__ void rotate_store(const float (&v)[N], const Pack<float, N>& c, const Pack<float, N>& s,
                                             Pack<T, N>& o) {
#pragma unroll
  for (int i = 0; i < N; i += 2) {
    o.e[i] = from_float<T>(v[i] * c.e[i] - v[i + 1] * s.e[i]);
    o.e[i + 1] = from_float<T>(v[i + 1] * c.e[i + 1] + v[i] * s.e[i + 1]);
  }
}

template <typename T, bool VEC>
__global__ void __launch_bounds__(512) rope_kernel(const RopeArgs a) {
  constexpr int N = VecWidth<T>::value;
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(blockDim.x) / tpr;
  const int slot = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * rpb + slot; row < a.rows;
       row += static_cast<int64_t>(gridDim.x) * rpb) {
    const T* __restrict__ xr = static_cast<const T*>(a.x) + a.xi(row);
    const float* __restrict__ cr = a.cos + a.ci(row);
    const float* __restrict__ sr = a.sin + a.si(row);
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

template <typename T, int VPT, bool VEC>
__global__ void __launch_bounds__(512) rms_norm_rope_kernel(const RopeArgs a) {
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[64];
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(blockDim.x) / tpr;
  const int slot = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const bool two = a.x2 != nullptr;
  const T* __restrict__ w = static_cast<const T*>(a.w);
  const T* __restrict__ w2 = static_cast<const T*>(a.w2);
  const float inv_d = 1.0f / static_cast<float>(d);

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
      const T* __restrict__ xr = static_cast<const T*>(a.x) + a.xi(row);
      const T* __restrict__ x2r = two ? static_cast<const T*>(a.x2) + a.x2i(row) : nullptr;
      const float* __restrict__ cr = a.cos + a.ci(row);
      const float* __restrict__ sr = a.sin + a.si(row);
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          load_pack<VEC>(v[k], xr + e, d - e);
          if (two) load_pack<VEC>(u[k], x2r + e, d - e);
          load_pack<VEC>(cv[k], cr + e, d - e);
          load_pack<VEC>(sv[k], sr + e, d - e);
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
    row_sum<2>(ss, tpr, red);
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
          if (w != nullptr) load_pack<VEC>(wv, w + e, valid);
#pragma unroll
          for (int i = 0; i < N; ++i) f[i] = to_float(v[k].e[i]) * r1 * (w != nullptr ? to_float(wv.e[i]) : 1.0f);
          rotate_store<T, N>(f, cv[k], sv[k], o);
          store_pack<VEC>(o1 + e, o, valid);
          if (two) {
            if (w2 != nullptr) load_pack<VEC>(wv, w2 + e, valid);
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

}  // namespace

void launch_rope(DType dt, const RopeArgs& a, bool vec, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int rpb = rows_per_block(a.tpr);
    const dim3 grid(grid_for(a.rows, rpb));
    const dim3 block(static_cast<unsigned>(rpb * a.tpr));
    if (vec)
      rope_kernel<T, true><<<grid, block, 0, stream>>>(a);
    else
      rope_kernel<T, false><<<grid, block, 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void launch_rms_norm_rope(DType dt, const RopeArgs& a, int vpt, cudaStream_t stream) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int rpb = rows_per_block(a.tpr);
    const dim3 grid(grid_for(a.rows, rpb));
    const dim3 block(static_cast<unsigned>(rpb * a.tpr));
    switch (vpt) {
      case 1:
        rms_norm_rope_kernel<T, 1, true><<<grid, block, 0, stream>>>(a);
        break;
      case 2:
        rms_norm_rope_kernel<T, 2, true><<<grid, block, 0, stream>>>(a);
        break;
      case 3:
        rms_norm_rope_kernel<T, 3, true><<<grid, block, 0, stream>>>(a);
        break;
      case 4:
        rms_norm_rope_kernel<T, 4, true><<<grid, block, 0, stream>>>(a);
        break;
      default:
        break;  // the host validated vpt (<= kMaxVptNormRope)
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace ltx
