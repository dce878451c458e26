// SwiGLU for the Qwen3 MLP: out = silu(gate) * up = gate / (1 + exp(-gate)) * up, in one
// pass (transformers runs act_fn(gate_proj(x)) * up_proj(x) as two kernels and three
// tensor-sized round trips more: silu writes a temporary that the multiply reads back).
//
// Math in fp32 with expf and one rounding at the end; eager rounds silu's result to the
// input dtype before multiplying, so the two differ by at most about one bf16 ulp.
//
// gate/up are [rows, cols] with a contiguous last dimension and any row stride, so the
// two halves of a fused gate_up projection output ([T, 2I] -> [:, :I], [:, I:]) are read
// in place. When every operand is contiguous the launcher collapses the grid to one long
// row (no per-row tail). Vector path: 16-byte packs when pointers are 16-byte aligned and
// cols and row strides are multiples of the pack; otherwise the scalar path (same kernel
// with one element per access).
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

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// Each thread loads VPT packs of gate and of up (all loads in flight), then computes and
// stores. blockIdx.x walks the columns, blockIdx.y the rows (grid-stride in both).
// Two packs per operand and thread: with four, bf16 needs about 94 registers and only two
// 256-thread blocks fit on an SM, so fewer bytes are in flight per SM, not more.
template <typename T, int W, int VPT>
__global__ void __launch_bounds__(256) swiglu_kernel(const SwiGluArgs<T> a) {
  const int64_t chunk = static_cast<int64_t>(blockDim.x) * VPT;
  for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) {
    const T* g = a.gate + row * a.gate_rs;
    const T* u = a.up + row * a.up_rs;
    T* o = a.out + row * a.out_rs;
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * chunk; base < a.packs_per_row;
         base += static_cast<int64_t>(gridDim.x) * chunk) {
      Pack<T, W> gv[VPT];
      Pack<T, W> uv[VPT];
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const int64_t idx = base + threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
        if (idx < a.packs_per_row) {
          gv[j] = load_pack<T, W>(g + idx * W);
          uv[j] = load_pack<T, W>(u + idx * W);
        }
      }
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const int64_t idx = base + threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
        if (idx < a.packs_per_row) {
          float gf[W], uf[W];
          unpack<T, W>(gv[j], gf);
          unpack<T, W>(uv[j], uf);
#pragma unroll
          for (int e = 0; e < W; ++e) gf[e] = silu_mul(gf[e], uf[e]);
          store_pack<T, W>(o + idx * W, pack_floats<T, W>(gf));
        }
      }
    }
  }
}

constexpr int kThreads = 256;
constexpr int kVpt = 2;

template <typename T, int W>
void launch_typed(SwiGluArgs<T> a, cudaStream_t stream) {
  const int64_t chunk = static_cast<int64_t>(kThreads) * kVpt;
  int64_t gx = ceil_div(a.packs_per_row, chunk);
  gx = gx < 0x7fffffff ? gx : 0x7fffffff;
  const int64_t gy = a.rows < 65535 ? a.rows : 65535;
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  swiglu_kernel<T, W, kVpt><<<grid, kThreads, 0, stream>>>(a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

void launch_swiglu(const SwiGluParams& p, cudaStream_t stream) {
  if (p.rows <= 0 || p.cols <= 0) return;  // empty: nothing to launch
  dispatch_dtype(p.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    constexpr int W = kVecElems<T>;
    SwiGluArgs<T> a{static_cast<T*>(p.out),         p.out_row_stride, static_cast<const T*>(p.gate), p.gate_row_stride,
                    static_cast<const T*>(p.up),    p.up_row_stride,  p.rows,                        p.cols};
    // Contiguous operands: one long row, so no block straddles a row end.
    if (p.rows > 1 && p.out_row_stride == p.cols && p.gate_row_stride == p.cols && p.up_row_stride == p.cols) {
      a.rows = 1;
      a.packs_per_row = p.rows * p.cols;
      a.out_rs = a.gate_rs = a.up_rs = 0;
    }
    const int64_t elems_per_row = a.packs_per_row;
    const bool vec = elems_per_row % W == 0 && aligned16(p.out) && aligned16(p.gate) && aligned16(p.up) &&
                     a.out_rs % W == 0 && a.gate_rs % W == 0 && a.up_rs % W == 0;
    if (vec) {
      a.packs_per_row = elems_per_row / W;
      launch_typed<T, W>(a, stream);
    } else {
      launch_typed<T, 1>(a, stream);
    }
  });
}

}  // namespace qwen3_kernels
