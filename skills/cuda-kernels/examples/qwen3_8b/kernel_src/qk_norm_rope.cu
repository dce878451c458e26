// Qwen3 attention's q/k preprocessing in one pass, in place (README.md, Design):
//
//   y      = x * rsqrt(mean(x^2) + eps) * w            (per head row of D = head_dim; w = q_norm or k_norm weight)
//   out[d]       = y[d]       * cos[d]       - y[d + D/2] * sin[d]
//   out[d + D/2] = y[d + D/2] * cos[d + D/2] + y[d]       * sin[d + D/2]          (d < D/2)
//
// transformers makes three passes (q_norm, k_norm, apply_rotary_pos_emb), rounding between
// them; here q/k are read and written once, fp32 math, one rounding.
//
// Layout: q [B, S, Hq, D], k [B, S, Hk, D] (BEFORE the transpose), each through its own
// strides, so views of a merged qkv projection work in place. cos/sin: [B or 1, S, D].
//
// Vector kernel (LPR = D/2 / pack a power of two <= 32, 16-byte aligned, strides multiples
// of the pack): lane l of a row's LPR lanes holds pack l of each half, so every rotate-half
// partner is in the same thread and the sum of squares is a lane-group shuffle: registers
// only. Consecutive groups take consecutive heads: cos/sin from DRAM once per token.
// Scalar kernel: any even head_dim, alignment or strides; one warp a row, two passes; each
// lane writes only the pairs it read. ptxas -v (sm_90): vector 48 (bf16/fp16) / 40 (fp32)
// registers, scalar 73-74, no spills.
#include "common.cuh"

namespace qwen3_kernels {
namespace {

template <typename T>
struct QkArgs {
  T* q;
  T* k;
  const T* q_w;
  const T* k_w;
  const T* cos;
  const T* sin;
  int64_t q_st[4], k_st[4];  // b, s, h, d
  int64_t cos_st[3], sin_st[3];
  int64_t seq;
  int64_t rows;  // batch * seq * (q_heads + k_heads)
  int q_heads, heads, half;
  float eps;
  float inv_dim;
};

// (row / heads, row % heads), (token / seq, token % seq); 32-bit division when the operands fit.
__device__ __forceinline__ void split_row(int64_t row, int heads, int64_t seq, int64_t& b, int64_t& s, int& h) {
  int64_t token;
  if ((row >> 31) == 0) {
    const uint32_t r = static_cast<uint32_t>(row);
    token = r / static_cast<uint32_t>(heads);
    h = static_cast<int>(r - static_cast<uint32_t>(token) * static_cast<uint32_t>(heads));
  } else {
    token = row / heads;
    h = static_cast<int>(row - token * heads);
  }
  if (((token | seq) >> 31) == 0) {
    const uint32_t t = static_cast<uint32_t>(token), sq = static_cast<uint32_t>(seq);
    b = t / sq;
    s = t - static_cast<uint32_t>(b) * sq;
  } else {
    b = token / seq;
    s = token - b * seq;
  }
}

template <typename T, int LPR>
__global__ void __launch_bounds__(256) qk_norm_rope_vec_kernel(const QkArgs<T> a) {
  constexpr int W = kVecElems<T>;
  const int lane = static_cast<int>(threadIdx.x) & (LPR - 1);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / LPR) + threadIdx.x / LPR;
  // Rows past the end still take part in the shuffles (full mask), with zeros.
  const bool active = row < a.rows;
  const int64_t d = static_cast<int64_t>(lane) * W;
  Pack<T, W> x_lo, x_hi, w_lo, w_hi, c_lo, c_hi, s_lo, s_hi;
  T* x = nullptr;
  float ss = 0.0f;
  if (active) {
    int64_t b, s;
    int h;
    split_row(row, a.heads, a.seq, b, s, h);
    const bool is_q = h < a.q_heads;
    const int64_t* st = is_q ? a.q_st : a.k_st;
    x = (is_q ? a.q + b * st[0] + s * st[1] + h * st[2] : a.k + b * st[0] + s * st[1] + (h - a.q_heads) * st[2]) + d;
    const T* w = (is_q ? a.q_w : a.k_w) + d;
    const T* c = a.cos + b * a.cos_st[0] + s * a.cos_st[1] + d;
    const T* sn = a.sin + b * a.sin_st[0] + s * a.sin_st[1] + d;
    // Every load is issued before any math: the row, its weight and its cos/sin are in flight together.
    x_lo = load_pack<T, W>(x);
    x_hi = load_pack<T, W>(x + a.half);
    w_lo = load_pack<T, W>(w);
    w_hi = load_pack<T, W>(w + a.half);
    c_lo = load_pack<T, W>(c);
    c_hi = load_pack<T, W>(c + a.half);
    s_lo = load_pack<T, W>(sn);
    s_hi = load_pack<T, W>(sn + a.half);
    float lo[W], hi[W];
    unpack<T, W>(x_lo, lo);
    unpack<T, W>(x_hi, hi);
#pragma unroll
    for (int e = 0; e < W; ++e) ss = fmaf(lo[e], lo[e], fmaf(hi[e], hi[e], ss));
  }
  ss = group_sum<LPR>(ss);
  if (!active) return;  // after the last shuffle: no barriers below
  const float inv = rsqrtf(ss * a.inv_dim + a.eps);
  float lo[W], hi[W], wl[W], wh[W], cl[W], ch[W], sl[W], sh[W], ol[W], oh[W];
  unpack<T, W>(x_lo, lo);
  unpack<T, W>(x_hi, hi);
  unpack<T, W>(w_lo, wl);
  unpack<T, W>(w_hi, wh);
  unpack<T, W>(c_lo, cl);
  unpack<T, W>(c_hi, ch);
  unpack<T, W>(s_lo, sl);
  unpack<T, W>(s_hi, sh);
#pragma unroll
  for (int e = 0; e < W; ++e) {
    const float yl = lo[e] * inv * wl[e];
    const float yh = hi[e] * inv * wh[e];
    ol[e] = fmaf(yl, cl[e], -yh * sl[e]);
    oh[e] = fmaf(yh, ch[e], yl * sh[e]);
  }
  store_pack<T, W>(x, pack_floats<T, W>(ol));
  store_pack<T, W>(x + a.half, pack_floats<T, W>(oh));
}

// One warp per row, any even head_dim and any strides (also a last-dim stride != 1).
template <typename T>
__global__ void __launch_bounds__(256) qk_norm_rope_scalar_kernel(const QkArgs<T> a) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  // Every lane of a warp runs the same rows, so the full-mask shuffles below are uniform.
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; row < a.rows;
       row += warps) {
    int64_t b, s;
    int h;
    split_row(row, a.heads, a.seq, b, s, h);
    const bool is_q = h < a.q_heads;
    const int64_t* st = is_q ? a.q_st : a.k_st;
    T* x = is_q ? a.q + b * st[0] + s * st[1] + h * st[2] : a.k + b * st[0] + s * st[1] + (h - a.q_heads) * st[2];
    const int64_t xd = st[3];
    const T* w = is_q ? a.q_w : a.k_w;
    const T* c = a.cos + b * a.cos_st[0] + s * a.cos_st[1];
    const T* sn = a.sin + b * a.sin_st[0] + s * a.sin_st[1];
    float ss = 0.0f;
    for (int j = lane; j < a.half; j += 32) {
      const float lo = to_float(x[j * xd]), hi = to_float(x[(j + a.half) * xd]);
      ss = fmaf(lo, lo, fmaf(hi, hi, ss));
    }
    ss = group_sum<32>(ss);
    const float inv = rsqrtf(ss * a.inv_dim + a.eps);
    for (int j = lane; j < a.half; j += 32) {
      const int jh = j + a.half;
      const float yl = to_float(x[j * xd]) * inv * to_float(w[j]);
      const float yh = to_float(x[jh * xd]) * inv * to_float(w[jh]);
      const float cl = to_float(c[j * a.cos_st[2]]), ch = to_float(c[jh * a.cos_st[2]]);
      const float sl = to_float(sn[j * a.sin_st[2]]), sh = to_float(sn[jh * a.sin_st[2]]);
      x[j * xd] = from_float<T>(fmaf(yl, cl, -yh * sl));
      x[jh * xd] = from_float<T>(fmaf(yh, ch, yl * sh));
    }
  }
}

template <typename T>
bool vector_ok(const QkNormRopeParams& p) {
  constexpr int W = kVecElems<T>;
  const int64_t half = p.head_dim / 2;
  if (half % W != 0) return false;
  const int64_t lpr = half / W;
  if (lpr != 2 && lpr != 4 && lpr != 8 && lpr != 16 && lpr != 32) return false;
  const void* ptrs[] = {p.q, p.k, p.q_weight, p.k_weight, p.cos, p.sin};
  for (const void* ptr : ptrs) {
    if (!aligned16(ptr)) return false;
  }
  const int64_t* strides4[] = {p.q_stride, p.k_stride};
  for (const int64_t* st : strides4) {
    if (st[3] != 1 || st[0] % W != 0 || st[1] % W != 0 || st[2] % W != 0) return false;
  }
  const int64_t* strides3[] = {p.cos_stride, p.sin_stride};
  for (const int64_t* st : strides3) {
    if (st[2] != 1 || st[0] % W != 0 || st[1] % W != 0) return false;
  }
  return true;
}

template <typename T, int LPR>
void launch_vec(const QkArgs<T>& a, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t grid = ceil_div(a.rows, kThreads / LPR);
  TORCH_CHECK(grid <= 0x7fffffff, "qk_norm_rope: too many rows (", a.rows, ") for one launch");
  qk_norm_rope_vec_kernel<T, LPR><<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

void launch_qk_norm_rope(const QkNormRopeParams& p, cudaStream_t stream) {
  // Empty guard: a grid of zero blocks is a launch error, and there is nothing to do.
  if (p.batch <= 0 || p.seq <= 0 || p.head_dim <= 0 || p.q_heads + p.k_heads <= 0) return;
  dispatch_dtype(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    constexpr int W = kVecElems<T>;
    QkArgs<T> a;
    a.q = static_cast<T*>(p.q);
    a.k = static_cast<T*>(p.k);
    a.q_w = static_cast<const T*>(p.q_weight);
    a.k_w = static_cast<const T*>(p.k_weight);
    a.cos = static_cast<const T*>(p.cos);
    a.sin = static_cast<const T*>(p.sin);
    for (int i = 0; i < 4; ++i) {
      a.q_st[i] = p.q_stride[i];
      a.k_st[i] = p.k_stride[i];
    }
    for (int i = 0; i < 3; ++i) {
      a.cos_st[i] = p.cos_stride[i];
      a.sin_st[i] = p.sin_stride[i];
    }
    a.seq = p.seq;
    a.q_heads = static_cast<int>(p.q_heads);
    a.heads = static_cast<int>(p.q_heads + p.k_heads);
    a.rows = p.batch * p.seq * a.heads;
    a.half = static_cast<int>(p.head_dim / 2);
    a.eps = p.eps;
    a.inv_dim = 1.0f / static_cast<float>(p.head_dim);
    if (vector_ok<T>(p)) {
      switch (a.half / W) {
        case 2:
          return launch_vec<T, 2>(a, stream);
        case 4:
          return launch_vec<T, 4>(a, stream);
        case 8:
          return launch_vec<T, 8>(a, stream);
        case 16:
          return launch_vec<T, 16>(a, stream);
        default:
          return launch_vec<T, 32>(a, stream);
      }
    }
    int64_t grid = ceil_div(a.rows, 8);  // 8 warps (rows) per 256-thread block
    const int64_t cap = static_cast<int64_t>(sm_count()) * 16;
    grid = grid < cap ? grid : cap;
    qk_norm_rope_scalar_kernel<T><<<static_cast<unsigned>(grid), 256, 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace qwen3_kernels
