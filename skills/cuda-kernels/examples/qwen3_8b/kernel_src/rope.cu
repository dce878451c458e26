// Rotate-half RoPE (transformers' apply_rotary_pos_emb, unsqueeze_dim=1) on q [B, Hq, S, D]
// and k [B, Hk, S, D] in one launch; the contract is in qwen3_kernels.h.
// fp32 math, one rounding (eager rounds q*cos, rotate_half(q)*sin and their sum separately).
// Addressed through strides: Qwen3's q/k are view(B, S, H, D).transpose(1, 2), and copying
// them contiguous would cost a full extra read and write. In place when out == in (rope_).
//
// Vector kernels: a block row covers all Hq + Hk heads of a token, LPR = D/2/pack lanes per
// head, each lane owning one 16-byte pack in each half (by default of two heads:
// rope_vec2_seq_kernel). cos/sin are read from DRAM once per token, by the other heads from L1.
// Scalar kernel: one thread per element pair, any strides and head_dim.
#include "common.cuh"

namespace qwen3_kernels {
namespace {

template <typename T>
struct RopeArgs {
  const T* q_in;
  T* q_out;
  const T* k_in;
  T* k_out;
  const T* cos;
  const T* sin;
  int64_t q_in_st[4], q_out_st[4], k_in_st[4], k_out_st[4];
  int64_t cos_st[3], sin_st[3];
  int64_t batch, seq;
  int q_heads, k_heads, half;
};

// (token / seq, token % seq); 32-bit division when both fit, several times cheaper.
__device__ __forceinline__ void split_token(int64_t token, int64_t seq, int64_t& b, int64_t& s) {
  if (((token | seq) >> 31) == 0) {
    const uint32_t t = static_cast<uint32_t>(token), sq = static_cast<uint32_t>(seq);
    b = t / sq;
    s = t - static_cast<uint32_t>(b) * sq;
  } else {
    b = token / seq;
    s = token - b * seq;
  }
}

template <typename T, int W>
__device__ __forceinline__ void rotate_packs(const Pack<T, W>& x_lo, const Pack<T, W>& x_hi, const Pack<T, W>& c_lo,
                                             const Pack<T, W>& c_hi, const Pack<T, W>& s_lo, const Pack<T, W>& s_hi,
                                             Pack<T, W>& o_lo, Pack<T, W>& o_hi) {
  float lo[W], hi[W], cl[W], ch[W], sl[W], sh[W], ol[W], oh[W];
  unpack<T, W>(x_lo, lo);
  unpack<T, W>(x_hi, hi);
  unpack<T, W>(c_lo, cl);
  unpack<T, W>(c_hi, ch);
  unpack<T, W>(s_lo, sl);
  unpack<T, W>(s_hi, sh);
#pragma unroll
  for (int e = 0; e < W; ++e) {
    ol[e] = fmaf(lo[e], cl[e], -hi[e] * sl[e]);
    oh[e] = fmaf(hi[e], ch[e], lo[e] * sh[e]);
  }
  o_lo = pack_floats<T, W>(ol);
  o_hi = pack_floats<T, W>(oh);
}

// Variant 1, token-loop kernels. TPT tokens per thread, all loads issued before any math.
// Per 16 bytes of q/k a thread runs ~200 instructions, near the issue limit at full
// bandwidth. Block limits cap registers at 65536 / (limit x 2): TPT 1 at 512 threads (64;
// nvcc takes 56, uncapped 72); CAP at 640 (48, a 40-56 byte spill); TPT 2 holds 12 packs and
// spilled at 64 registers, so at most 320 threads (one Qwen3 token).
template <int TPT, bool CAP>
__host__ __device__ constexpr int rope_max_threads() {
  return TPT == 2 ? 320 : CAP ? 640 : 512;
}

template <typename T, int LPR, int TPT, bool CAP>
__global__ void __launch_bounds__(rope_max_threads<TPT, CAP>(), TPT == 2 ? 1 : 2) rope_vec_kernel(const RopeArgs<T> a) {
  constexpr int W = kVecElems<T>;
  const int head_slot = static_cast<int>(threadIdx.x) / LPR;
  const int lane = static_cast<int>(threadIdx.x) % LPR;
  if (head_slot >= a.q_heads + a.k_heads) return;  // padding lanes of the last warp; no barriers below
  const bool is_q = head_slot < a.q_heads;
  const int h = is_q ? head_slot : head_slot - a.q_heads;
  // Strides stay constant-bank operands: copied to registers they cost 16 more (72 vs 56).
  const int64_t* ist = is_q ? a.q_in_st : a.k_in_st;
  const int64_t* ost = is_q ? a.q_out_st : a.k_out_st;
  const int64_t d = static_cast<int64_t>(lane) * W;
  const T* in = (is_q ? a.q_in : a.k_in) + h * ist[1] + d;
  T* out = (is_q ? a.q_out : a.k_out) + h * ost[1] + d;
  const T* cos = a.cos + d;
  const T* sin = a.sin + d;
  const int64_t tokens = a.batch * a.seq;
  const int64_t block_tokens = static_cast<int64_t>(blockDim.y) * TPT;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * block_tokens + threadIdx.y; first < tokens;
       first += static_cast<int64_t>(gridDim.x) * block_tokens) {
    Pack<T, W> x_lo[TPT], x_hi[TPT], c_lo[TPT], c_hi[TPT], s_lo[TPT], s_hi[TPT];
    int64_t b[TPT], s[TPT];
#pragma unroll
    for (int t = 0; t < TPT; ++t) {
      const int64_t token = first + static_cast<int64_t>(t) * blockDim.y;
      if (token < tokens) {
        split_token(token, a.seq, b[t], s[t]);
        const T* xi = in + b[t] * ist[0] + s[t] * ist[2];
        const T* c = cos + b[t] * a.cos_st[0] + s[t] * a.cos_st[1];
        const T* sn = sin + b[t] * a.sin_st[0] + s[t] * a.sin_st[1];
        x_lo[t] = load_pack<T, W>(xi);
        x_hi[t] = load_pack<T, W>(xi + a.half);
        c_lo[t] = load_pack<T, W>(c);
        c_hi[t] = load_pack<T, W>(c + a.half);
        s_lo[t] = load_pack<T, W>(sn);
        s_hi[t] = load_pack<T, W>(sn + a.half);
      }
    }
#pragma unroll
    for (int t = 0; t < TPT; ++t) {
      const int64_t token = first + static_cast<int64_t>(t) * blockDim.y;
      if (token < tokens) {
        Pack<T, W> o_lo, o_hi;
        rotate_packs<T, W>(x_lo[t], x_hi[t], c_lo[t], c_hi[t], s_lo[t], s_hi[t], o_lo, o_hi);
        T* xo = out + b[t] * ost[0] + s[t] * ost[2];
        store_pack<T, W>(xo, o_lo);
        store_pack<T, W>(xo + a.half, o_hi);
      }
    }
  }
}

// Two heads per thread (slot and slot + ceil(H / 2), same lane) share the token's index math
// and cos/sin loads: ~130 instead of ~200 instructions per 16 bytes, 64 bytes in flight.
template <typename T, int LPR>
__global__ void __launch_bounds__(320, 2) rope_vec2_kernel(const RopeArgs<T> a) {
  constexpr int W = kVecElems<T>;
  const int heads = a.q_heads + a.k_heads;
  const int slots = (heads + 1) / 2;
  const int slot = static_cast<int>(threadIdx.x) / LPR;
  const int lane = static_cast<int>(threadIdx.x) % LPR;
  if (slot >= slots) return;  // padding lanes of the last warp; no barriers below
  const int64_t d = static_cast<int64_t>(lane) * W;
  const T* in[2];
  T* out[2];
  const int64_t* ist[2];
  const int64_t* ost[2];
  bool has[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int hs = slot + j * slots;
    has[j] = hs < heads;  // false only for the second head of the last slot when H is odd
    const bool is_q = hs < a.q_heads;
    const int h = !has[j] ? 0 : is_q ? hs : hs - a.q_heads;
    ist[j] = is_q ? a.q_in_st : a.k_in_st;
    ost[j] = is_q ? a.q_out_st : a.k_out_st;
    in[j] = (is_q ? a.q_in : a.k_in) + h * ist[j][1] + d;
    out[j] = (is_q ? a.q_out : a.k_out) + h * ost[j][1] + d;
  }
  const T* cos = a.cos + d;
  const T* sin = a.sin + d;
  const int64_t tokens = a.batch * a.seq;
  for (int64_t token = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; token < tokens;
       token += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    int64_t b, s;
    split_token(token, a.seq, b, s);
    Pack<T, W> x_lo[2], x_hi[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (has[j]) {
        const T* xi = in[j] + b * ist[j][0] + s * ist[j][2];
        x_lo[j] = load_pack<T, W>(xi);
        x_hi[j] = load_pack<T, W>(xi + a.half);
      }
    }
    const T* c = cos + b * a.cos_st[0] + s * a.cos_st[1];
    const T* sn = sin + b * a.sin_st[0] + s * a.sin_st[1];
    const Pack<T, W> c_lo = load_pack<T, W>(c), c_hi = load_pack<T, W>(c + a.half);
    const Pack<T, W> s_lo = load_pack<T, W>(sn), s_hi = load_pack<T, W>(sn + a.half);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (has[j]) {
        Pack<T, W> o_lo, o_hi;
        rotate_packs<T, W>(x_lo[j], x_hi[j], c_lo, c_hi, s_lo, s_hi, o_lo, o_hi);
        T* xo = out[j] + b * ost[j][0] + s * ost[j][2];
        store_pack<T, W>(xo, o_lo);
        store_pack<T, W>(xo + a.half, o_hi);
      }
    }
  }
}

// The default (variant 2): two heads per thread, blockIdx.y the batch entry and each block
// row one token, so no thread divides a token index by seq and none loops: 62 registers
// against the token loop's 89 (ptxas, sm_90, bf16, head_dim 128), 6 blocks of 160 threads
// per SM instead of 4, and 4.2-6.5 % less time at 512-16384 tokens on an H200. Not
// occupancy: capped at 48 registers it was 1.7-2.7 % slower than at 62, and one 16-byte pack
// per thread (32 registers) 2.2-3.9 % slower than the token loop.
template <typename T, int LPR>
__global__ void __launch_bounds__(320, 2) rope_vec2_seq_kernel(const RopeArgs<T> a) {
  constexpr int W = kVecElems<T>;
  const int heads = a.q_heads + a.k_heads;
  const int slots = (heads + 1) / 2;
  const int slot = static_cast<int>(threadIdx.x) / LPR;
  const int lane = static_cast<int>(threadIdx.x) % LPR;
  const int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (slot >= slots || s >= a.seq) return;  // no barriers or shuffles below
  const int64_t b = blockIdx.y;
  const int d = lane * W;
  Pack<T, W> x_lo[2], x_hi[2];
  bool has[2];
  T* out[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int hs = slot + j * slots;
    has[j] = hs < heads;  // false only for the second head of the last slot when H is odd
    const bool is_q = hs < a.q_heads;
    const int h = is_q ? hs : hs - a.q_heads;
    const int64_t* ist = is_q ? a.q_in_st : a.k_in_st;
    const int64_t* ost = is_q ? a.q_out_st : a.k_out_st;
    if (has[j]) {
      const T* xi = (is_q ? a.q_in : a.k_in) + b * ist[0] + h * ist[1] + s * ist[2] + d;
      x_lo[j] = load_pack<T, W>(xi);
      x_hi[j] = load_pack<T, W>(xi + a.half);
    }
    out[j] = (is_q ? a.q_out : a.k_out) + b * ost[0] + h * ost[1] + s * ost[2] + d;
  }
  const T* c = a.cos + b * a.cos_st[0] + s * a.cos_st[1] + d;
  const T* sn = a.sin + b * a.sin_st[0] + s * a.sin_st[1] + d;
  const Pack<T, W> c_lo = load_pack<T, W>(c), c_hi = load_pack<T, W>(c + a.half);
  const Pack<T, W> s_lo = load_pack<T, W>(sn), s_hi = load_pack<T, W>(sn + a.half);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    if (has[j]) {
      Pack<T, W> o_lo, o_hi;
      rotate_packs<T, W>(x_lo[j], x_hi[j], c_lo, c_hi, s_lo, s_hi, o_lo, o_hi);
      store_pack<T, W>(out[j], o_lo);
      store_pack<T, W>(out[j] + a.half, o_hi);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(256) rope_scalar_kernel(const RopeArgs<T> a) {
  const int heads = a.q_heads + a.k_heads;
  const int64_t total = a.batch * a.seq * heads * a.half;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = i % a.half;
    const int64_t r = i / a.half;
    const int head_slot = static_cast<int>(r % heads);
    const int64_t token = r / heads;
    int64_t b, s;
    split_token(token, a.seq, b, s);
    const bool is_q = head_slot < a.q_heads;
    const int h = is_q ? head_slot : head_slot - a.q_heads;
    const int64_t* ist = is_q ? a.q_in_st : a.k_in_st;
    const int64_t* ost = is_q ? a.q_out_st : a.k_out_st;
    const T* xi = (is_q ? a.q_in : a.k_in) + b * ist[0] + h * ist[1] + s * ist[2];
    T* xo = (is_q ? a.q_out : a.k_out) + b * ost[0] + h * ost[1] + s * ost[2];
    const T* c = a.cos + b * a.cos_st[0] + s * a.cos_st[1];
    const T* sn = a.sin + b * a.sin_st[0] + s * a.sin_st[1];
    Pack<T, 1> x_lo{{xi[j * ist[3]]}}, x_hi{{xi[(j + a.half) * ist[3]]}};
    Pack<T, 1> c_lo{{c[j * a.cos_st[2]]}}, c_hi{{c[(j + a.half) * a.cos_st[2]]}};
    Pack<T, 1> s_lo{{sn[j * a.sin_st[2]]}}, s_hi{{sn[(j + a.half) * a.sin_st[2]]}};
    Pack<T, 1> o_lo, o_hi;
    rotate_packs<T, 1>(x_lo, x_hi, c_lo, c_hi, s_lo, s_hi, o_lo, o_hi);
    xo[j * ost[3]] = o_lo.v[0];
    xo[(j + a.half) * ost[3]] = o_hi.v[0];
  }
}

template <typename T>
bool vector_ok(const RopeParams& p) {
  constexpr int W = kVecElems<T>;
  const int64_t half = p.head_dim / 2;
  if (half % W != 0) return false;
  const int lpr = static_cast<int>(half / W);
  if (lpr != 2 && lpr != 4 && lpr != 8 && lpr != 16 && lpr != 32) return false;
  if ((p.q_heads + p.k_heads) * lpr > 640) return false;  // one token's heads in one block (launch bounds)
  const void* ptrs[] = {p.q_in, p.q_out, p.k_in, p.k_out, p.cos, p.sin};
  for (const void* ptr : ptrs) {
    if (!aligned16(ptr)) return false;
  }
  const int64_t* strides4[] = {p.q_in_stride, p.q_out_stride, p.k_in_stride, p.k_out_stride};
  for (const int64_t* st : strides4) {
    if (st[3] != 1 || st[0] % W != 0 || st[1] % W != 0 || st[2] % W != 0) return false;
  }
  const int64_t* strides3[] = {p.cos_stride, p.sin_stride};
  for (const int64_t* st : strides3) {
    if (st[2] != 1 || st[0] % W != 0 || st[1] % W != 0) return false;
  }
  return true;
}

template <typename T, int LPR, int TPT, bool CAP>
void launch_vec_tpt(const RopeArgs<T>& a, int by, cudaStream_t stream) {
  const int heads = a.q_heads + a.k_heads;
  const int bx = static_cast<int>(ceil_div(static_cast<int64_t>(heads) * LPR, 32) * 32);
  const int64_t tokens = a.batch * a.seq;
  int64_t grid = ceil_div(tokens, static_cast<int64_t>(by) * TPT);
  grid = grid < 0x7fffffff ? grid : 0x7fffffff;
  rope_vec_kernel<T, LPR, TPT, CAP><<<static_cast<unsigned>(grid), dim3(bx, by), 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int LPR>
void launch_vec2(const RopeArgs<T>& a, int by, cudaStream_t stream) {
  const int slots = (a.q_heads + a.k_heads + 1) / 2;
  const int bx = static_cast<int>(ceil_div(static_cast<int64_t>(slots) * LPR, 32) * 32);
  TORCH_CHECK(bx * by <= 320, "rope: ", by, " tokens of ", bx, " threads exceed the 320-thread block limit of the "
              "two-heads-per-thread kernel");
  const int64_t tokens = a.batch * a.seq;
  int64_t grid = ceil_div(tokens, static_cast<int64_t>(by));
  grid = grid < 0x7fffffff ? grid : 0x7fffffff;
  rope_vec2_kernel<T, LPR><<<static_cast<unsigned>(grid), dim3(bx, by), 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int LPR>
void launch_vec2_seq(const RopeArgs<T>& a, int by, cudaStream_t stream) {
  const int slots = (a.q_heads + a.k_heads + 1) / 2;
  const int bx = static_cast<int>(ceil_div(static_cast<int64_t>(slots) * LPR, 32) * 32);
  TORCH_CHECK(bx * by <= 320, "rope: ", by, " tokens of ", bx, " threads exceed the 320-thread block limit of the "
              "two-heads-per-thread kernel");
  const dim3 grid(static_cast<unsigned>(ceil_div(a.seq, by)), static_cast<unsigned>(a.batch));
  rope_vec2_seq_kernel<T, LPR><<<grid, dim3(bx, by), 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Variant 2 needs batch <= 65535 (grid y) and seq within the x dimension.
template <typename T>
bool batch_grid_ok(const RopeArgs<T>& a) { return a.batch <= 65535 && a.seq < (int64_t{1} << 31) - 8; }

template <typename T, int LPR>
void launch_vec(const RopeArgs<T>& a, const RopeTuning& t, cudaStream_t stream) {
  const int heads = a.q_heads + a.k_heads;
  const bool token_loop_knobs = t.tokens_per_thread > 0 || t.reg_cap > 0 || t.heads_per_thread > 0;
  TORCH_CHECK(t.variant != 2 || !token_loop_knobs,
              "rope: tokens_per_thread, reg_cap and heads_per_thread belong to variant 1 (the token-loop kernels)");
  // vector_ok caps heads x LPR at 640, so a two-heads row fits 320 threads.
  const int bx2 = static_cast<int>(ceil_div(static_cast<int64_t>((heads + 1) / 2) * LPR, 32) * 32);
  const bool batch_grid = batch_grid_ok(a);
  if (t.variant == 2 || (t.variant == 0 && !token_loop_knobs && batch_grid)) {
    TORCH_CHECK(batch_grid, "rope: variant 2 needs batch <= 65535 (the grid's y dimension), got batch ", a.batch);
    int by = t.tokens_per_block > 0 ? t.tokens_per_block : 256 / bx2;
    by = by < 1 ? 1 : by;
    TORCH_CHECK(by == 1 || by == 2 || by == 4 || by == 8, "rope: tokens_per_block must be 1, 2, 4 or 8, got ", by);
    return launch_vec2_seq<T, LPR>(a, by, stream);
  }
  // Variant 1 (batches above 65535): two heads per thread when a token has several heads that
  // fit one block; tokens_per_thread / reg_cap choose the one-head kernels.
  int hpt = t.heads_per_thread > 0 ? t.heads_per_thread
            : (heads >= 4 && bx2 <= 320 && t.tokens_per_thread <= 1 && t.reg_cap <= 0) ? 2 : 1;
  TORCH_CHECK(hpt == 1 || hpt == 2, "rope: heads_per_thread must be 1 or 2, got ", hpt);
  if (hpt == 2) {
    TORCH_CHECK(t.tokens_per_thread <= 1 && t.reg_cap <= 0,
                "rope: heads_per_thread=2 has one token per thread and no register cap");
    int by2 = t.tokens_per_block > 0 ? t.tokens_per_block : 256 / bx2;
    by2 = by2 < 1 ? 1 : by2;
    TORCH_CHECK(by2 == 1 || by2 == 2 || by2 == 4 || by2 == 8, "rope: tokens_per_block must be 1, 2, 4 or 8, got ", by2);
    if (bx2 * by2 > 320 && t.tokens_per_block <= 0) by2 = 1;
    return launch_vec2<T, LPR>(a, by2, stream);
  }
  const int bx = static_cast<int>(ceil_div(static_cast<int64_t>(heads) * LPR, 32) * 32);
  // Blocks of >= 256 threads; Qwen3-8B (40 heads x 8 lanes) gets one token per block.
  int by = t.tokens_per_block > 0 ? t.tokens_per_block : 256 / bx;
  by = by < 1 ? 1 : by;
  const int tpt = t.tokens_per_thread > 0 ? t.tokens_per_thread : 1;
  TORCH_CHECK(by == 1 || by == 2 || by == 4 || by == 8, "rope: tokens_per_block must be 1, 2, 4 or 8, got ", by);
  TORCH_CHECK(tpt == 1 || tpt == 2, "rope: tokens_per_thread must be 1 or 2, got ", tpt);
  // Wider than 512 threads (fp32 Qwen3: 40 x 16 lanes): the capped kernel, limit 640.
  const bool cap = t.reg_cap == 1 || (tpt == 1 && bx > rope_max_threads<1, false>());
  const int limit = tpt == 2 ? rope_max_threads<2, false>()
                             : cap ? rope_max_threads<1, true>() : rope_max_threads<1, false>();
  if (bx * by > limit) {
    TORCH_CHECK(t.tokens_per_block <= 0, "rope: ", by, " tokens of ", bx, " threads exceed the ", limit,
                "-thread block limit");
    by = 1;
  }
  TORCH_CHECK(bx <= limit, "rope: ", bx, " threads per token exceed the ", limit, "-thread block limit");
  if (tpt == 2) return launch_vec_tpt<T, LPR, 2, false>(a, by, stream);
  if (cap) return launch_vec_tpt<T, LPR, 1, true>(a, by, stream);
  launch_vec_tpt<T, LPR, 1, false>(a, by, stream);
}

}  // namespace

void launch_rope(const RopeParams& p, const RopeTuning& tuning, cudaStream_t stream) {
  // Checked first, so shapes that take the scalar kernel refuse a bad variant too.
  TORCH_CHECK(tuning.variant >= 0 && tuning.variant <= 2, "rope: variant must be 0 (built-in), 1 or 2, got ",
              tuning.variant);
  if (p.batch <= 0 || p.seq <= 0 || p.head_dim <= 0 || p.q_heads + p.k_heads <= 0) return;  // empty
  dispatch_dtype(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    constexpr int W = kVecElems<T>;
    RopeArgs<T> a;
    a.q_in = static_cast<const T*>(p.q_in);
    a.q_out = static_cast<T*>(p.q_out);
    a.k_in = static_cast<const T*>(p.k_in);
    a.k_out = static_cast<T*>(p.k_out);
    a.cos = static_cast<const T*>(p.cos);
    a.sin = static_cast<const T*>(p.sin);
    for (int i = 0; i < 4; ++i) {
      a.q_in_st[i] = p.q_in_stride[i];
      a.q_out_st[i] = p.q_out_stride[i];
      a.k_in_st[i] = p.k_in_stride[i];
      a.k_out_st[i] = p.k_out_stride[i];
    }
    for (int i = 0; i < 3; ++i) {
      a.cos_st[i] = p.cos_stride[i];
      a.sin_st[i] = p.sin_stride[i];
    }
    a.batch = p.batch;
    a.seq = p.seq;
    a.q_heads = static_cast<int>(p.q_heads);
    a.k_heads = static_cast<int>(p.k_heads);
    a.half = static_cast<int>(p.head_dim / 2);
    if (vector_ok<T>(p)) {
      switch (a.half / W) {
        case 2:
          return launch_vec<T, 2>(a, tuning, stream);
        case 4:
          return launch_vec<T, 4>(a, tuning, stream);
        case 8:
          return launch_vec<T, 8>(a, tuning, stream);
        case 16:
          return launch_vec<T, 16>(a, tuning, stream);
        default:
          return launch_vec<T, 32>(a, tuning, stream);
      }
    }
    const int64_t total = p.batch * p.seq * (p.q_heads + p.k_heads) * (p.head_dim / 2);
    int64_t grid = ceil_div(total, 256);
    const int64_t cap = static_cast<int64_t>(sm_count()) * 16;
    grid = grid < cap ? grid : cap;
    rope_scalar_kernel<T><<<static_cast<unsigned>(grid), 256, 0, stream>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace qwen3_kernels
