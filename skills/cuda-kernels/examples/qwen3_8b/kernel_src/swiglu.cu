// SwiGLU for the Qwen3 MLP: out = silu(gate) * up in one pass (transformers' act_fn(gate) * up
// writes a temporary and reads it back: two kernels, three more tensor passes).
//
// fp32 math, one rounding. sigmoid = rcp.approx(1 + e^-g) (one MUFU.RCP, 1 ulp). No IEEE
// division: g / (1 + expf(-g)) compiled to an FCHK plus a branch to a slow path per element
// (per bf16 pack: 8 FCHK, 8 CALLs, 11 BSSY, stores split into 32-bit STGs) and ran 22 %
// behind torch.compile's kernel. `exact` in SwiGluTuning keeps the division for comparison.
// Large negative gates give -0 (rcp of +inf is 0), not NaN.
//
// gate/up are [rows, cols], contiguous last dimension, any row stride: the halves of a fused
// gate_up output are read in place. All-contiguous operands run as one long row through the
// flat kernel (8-byte accesses); otherwise the grid-stride kernel, 16-byte packs when aligned,
// else one element per access.
#include "common.cuh"

namespace qwen3_kernels {
namespace {

template <typename T>
struct SwiGluArgs {
  T* out;
  int64_t out_rs;
  const T* gate;
  int64_t gate_rs;
  const T* up;
  int64_t up_rs;
  int64_t rows;
  int64_t packs_per_row;
};

__device__ __forceinline__ float rcp_approx(float v) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
#else  // the CPU emulator (tests/test_kernels_emulated.py): no PTX there
  return 1.0f / v;
#endif
}

__device__ __forceinline__ float exp_neg_approx(float g) {
  // e^-g = 2^(-g * log2 e): one FMUL and one MUFU.EX2, what Triton's tl.exp emits.
#if defined(__CUDA_ARCH__)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(g * -1.4426950408889634f));
  return r;
#else
  return exp2f(g * -1.4426950408889634f);
#endif
}

// FAST_EXP (16-bit outputs): expf's accurate range reduction is ~9 instructions against 2;
// ex2.approx's error (< 2e-5 relative for |g| < 88) is far below one bf16 / fp16 rounding, so
// only fp32 keeps expf.
template <bool EXACT, bool FAST_EXP>
__device__ __forceinline__ float silu_mul(float g, float u) {
  const float e = FAST_EXP ? exp_neg_approx(g) : expf(-g);
  if constexpr (EXACT) {
    return g / (1.0f + e) * u;
  } else {
    return g * rcp_approx(1.0f + e) * u;
  }
}

// VPT packs of gate and up per thread, all loads in flight; grid-stride over columns (x) and rows (y).
template <typename T, int W, int VPT, bool EXACT>
__global__ void __launch_bounds__(512) swiglu_kernel(const SwiGluArgs<T> a) {
  const int64_t chunk = static_cast<int64_t>(blockDim.x) * VPT;
  for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) {
    const T* g = a.gate + row * a.gate_rs;
    const T* u = a.up + row * a.up_rs;
    T* o = a.out + row * a.out_rs;
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * chunk + threadIdx.x; base < a.packs_per_row;
         base += static_cast<int64_t>(gridDim.x) * chunk) {
      Pack<T, W> gv[VPT];
      Pack<T, W> uv[VPT];
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const int64_t idx = base + static_cast<int64_t>(j) * blockDim.x;
        if (idx < a.packs_per_row) {
          gv[j] = load_pack<T, W>(g + idx * W);
          uv[j] = load_pack<T, W>(u + idx * W);
        }
      }
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const int64_t idx = base + static_cast<int64_t>(j) * blockDim.x;
        if (idx < a.packs_per_row) {
          float gf[W], uf[W];
          unpack<T, W>(gv[j], gf);
          unpack<T, W>(uv[j], uf);
#pragma unroll
          for (int e = 0; e < W; ++e) gf[e] = silu_mul<EXACT, sizeof(T) == 2 && !EXACT>(gf[e], uf[e]);
          store_pack<T, W>(o + idx * W, pack_floats<T, W>(gf));
        }
      }
    }
  }
}

// The flat kernel: one pack of each operand per thread, a 32-bit index, no loop: a thread's
// whole chain is two loads, the math, one store. At one token (12288 elements) the grid-stride
// kernel ran 134 warp instructions per warp in 64-bit loops where torch.compile's kernel ran
// 40, 2.56 against 2.24 us (ncu, H200). W: 8 bytes unless `width` asks for 16 or 4; operands
// that do not allow W take the grid-stride kernel.
template <typename T, int W, bool EXACT>
__global__ void __launch_bounds__(512) swiglu_flat_kernel(T* __restrict__ out, const T* __restrict__ gate,
                                                         const T* __restrict__ up, uint32_t packs) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= packs) return;
  const int64_t off = static_cast<int64_t>(i) * W;
  const Pack<T, W> gv = load_pack<T, W>(gate + off);
  const Pack<T, W> uv = load_pack<T, W>(up + off);
  float gf[W], uf[W];
  unpack<T, W>(gv, gf);
  unpack<T, W>(uv, uf);
#pragma unroll
  for (int e = 0; e < W; ++e) gf[e] = silu_mul<EXACT, sizeof(T) == 2 && !EXACT>(gf[e], uf[e]);
  store_pack<T, W>(out + off, pack_floats<T, W>(gf));
}

template <typename T, int W, bool EXACT>
void launch_flat(T* out, const T* gate, const T* up, int64_t packs, int threads, cudaStream_t stream) {
  const int64_t grid = ceil_div(packs, threads);
  swiglu_flat_kernel<T, W, EXACT><<<static_cast<unsigned>(grid), threads, 0, stream>>>(out, gate, up,
                                                                                      static_cast<uint32_t>(packs));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int W, int VPT, bool EXACT>
void launch_typed(SwiGluArgs<T> a, int threads, cudaStream_t stream) {
  const int64_t chunk = static_cast<int64_t>(threads) * VPT;
  int64_t gx = ceil_div(a.packs_per_row, chunk);
  gx = gx < 0x7fffffff ? gx : 0x7fffffff;
  const int64_t gy = a.rows < 65535 ? a.rows : 65535;
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  swiglu_kernel<T, W, VPT, EXACT><<<grid, threads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int W, bool EXACT>
void launch_vpt(SwiGluArgs<T> a, int threads, int vpt, cudaStream_t stream) {
  switch (vpt) {
    case 1:
      return launch_typed<T, W, 1, EXACT>(a, threads, stream);
    case 4:
      return launch_typed<T, W, 4, EXACT>(a, threads, stream);
    default:
      return launch_typed<T, W, 2, EXACT>(a, threads, stream);
  }
}

// Block size of either kernel: the tuning's, else 128.
inline int swiglu_threads(const SwiGluTuning& t) {
  const int threads = t.threads > 0 ? t.threads : 128;
  TORCH_CHECK(threads % 32 == 0 && threads <= 512, "swiglu: threads must be a multiple of 32 up to 512, got ", threads);
  return threads;
}

template <typename T, int W>
void launch_config(SwiGluArgs<T> a, const SwiGluTuning& t, cudaStream_t stream) {
  // Grid-stride kernel (row-strided operands, or forced): one pack per thread in 128-thread
  // blocks, the shape of torch.compile's kernel at 512 x 12288 on the H200; 32 registers.
  const int threads = swiglu_threads(t);
  const int vpt = t.vpt > 0 ? t.vpt : 1;
  TORCH_CHECK(vpt == 1 || vpt == 2 || vpt == 4, "swiglu: vpt must be 1, 2 or 4, got ", vpt);
  if (t.exact == 1) return launch_vpt<T, W, true>(a, threads, vpt, stream);
  launch_vpt<T, W, false>(a, threads, vpt, stream);
}

// Launches the flat kernel at `bytes` per access, or returns false when sizes or addresses do not allow it.
template <typename T>
bool try_flat(const SwiGluParams& p, int64_t elems, int bytes, int threads, bool exact, cudaStream_t stream) {
  const int w = bytes / static_cast<int>(sizeof(T));
  if (w < 1 || w * static_cast<int>(sizeof(T)) != bytes || elems % w != 0) return false;
  if (!aligned_to(p.out, bytes) || !aligned_to(p.gate, bytes) || !aligned_to(p.up, bytes)) return false;
  const int64_t packs = elems / w;
  if (packs > int64_t{0xffffffff} - threads) return false;  // the 32-bit index must not wrap
  T* out = static_cast<T*>(p.out);
  const T* gate = static_cast<const T*>(p.gate);
  const T* up = static_cast<const T*>(p.up);
  auto go = [&](auto w_tag) {
    constexpr int W = decltype(w_tag)::value;
    if (exact) {
      launch_flat<T, W, true>(out, gate, up, packs, threads, stream);
    } else {
      launch_flat<T, W, false>(out, gate, up, packs, threads, stream);
    }
  };
  switch (w) {
    case 1:
      go(std::integral_constant<int, 1>{});
      return true;
    case 2:
      go(std::integral_constant<int, 2>{});
      return true;
    case 4:
      go(std::integral_constant<int, 4>{});
      return true;
    case 8:
      go(std::integral_constant<int, 8>{});
      return true;
    default:
      return false;
  }
}

}  // namespace

void launch_swiglu(const SwiGluParams& p, const SwiGluTuning& tuning, cudaStream_t stream) {
  if (p.rows <= 0 || p.cols <= 0) return;  // empty: nothing to launch
  dispatch_dtype(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    constexpr int W = kVecElems<T>;
    SwiGluArgs<T> a{static_cast<T*>(p.out),         p.out_row_stride, static_cast<const T*>(p.gate), p.gate_row_stride,
                    static_cast<const T*>(p.up),    p.up_row_stride,  p.rows,                        p.cols};
    // Contiguous operands: one long row, so no block straddles a row end.
    const bool contiguous =
        p.rows == 1 || (p.out_row_stride == p.cols && p.gate_row_stride == p.cols && p.up_row_stride == p.cols);
    if (contiguous) {
      a.rows = 1;
      a.packs_per_row = p.rows * p.cols;
      a.out_rs = a.gate_rs = a.up_rs = 0;
    }
    TORCH_CHECK(tuning.width == 0 || tuning.width == 4 || tuning.width == 8 || tuning.width == 16,
                "swiglu: width must be 4, 8 or 16 bytes, got ", tuning.width);
    TORCH_CHECK(tuning.flat >= -1 && tuning.flat <= 1, "swiglu: flat must be -1, 0 or 1, got ", tuning.flat);
    TORCH_CHECK(tuning.flat != 1 || tuning.vpt <= 1, "swiglu: the flat kernel runs one pack per thread (vpt 1)");
    // Default for contiguous operands: flat, 128 threads, 8 bytes. H200 sweeps against the
    // grid-stride kernel at 16 bytes: 1 x 12288 1.25 against 1.42 us, 512 x 12288 10.55 against
    // 10.96 (16-byte flat 10.70); from 4096 tokens all within 0.7 %, so one width serves every
    // size. 4-byte accesses won only at one token and lost 23 % to 3.4x from 512 tokens.
    const int flat = tuning.flat >= 0 ? tuning.flat : (tuning.vpt <= 1 ? 1 : 0);
    if (contiguous && flat == 1) {
      const int bytes = tuning.width > 0 ? tuning.width : 8;
      if (try_flat<T>(p, a.packs_per_row, bytes, swiglu_threads(tuning), tuning.exact == 1, stream)) return;
    }
    const int64_t elems_per_row = a.packs_per_row;
    const bool vec = elems_per_row % W == 0 && aligned16(p.out) && aligned16(p.gate) && aligned16(p.up) &&
                     a.out_rs % W == 0 && a.gate_rs % W == 0 && a.up_rs % W == 0;
    if (vec) {
      a.packs_per_row = elems_per_row / W;
      launch_config<T, W>(a, tuning, stream);
    } else {
      launch_config<T, 1>(a, tuning, stream);
    }
  });
}

}  // namespace qwen3_kernels
