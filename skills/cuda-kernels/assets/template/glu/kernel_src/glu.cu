// Gated activation over the two halves of the last dimension, for the __NAME__ kernel project.
//
//   x = [a | b] (last dimension 2d)      gate, up = (a, b) if gate_first else (b, a)
//   y = act(gate) * up                   (last dimension d; act = silu, gelu or gelu_tanh)
//
// SwiGLU with a fused gate/up projection is act = silu, gate first; diffusers' GEGLU is
// act = gelu (erf), gate second. Math in fp32 (both operands widened on load, y rounded
// once on store), for float32, float16 and bfloat16 tensors with any leading dimensions.
//
// Why it is shaped like this
// - Each output element reads two inputs and writes one, with a few FLOPs: memory-bound,
//   so the floor is 3 * d * rows * element size / copy bandwidth. Every thread handles
//   whole 16-byte packs of the gate, the up half and the output, so each access moves as
//   many bytes as one instruction can.
// - The 16-byte path runs only when every pack is 16-byte aligned: the base pointer, d and
//   the input row stride multiples of the pack (the gate and up halves start d elements
//   apart). Anything else (odd d, x[:, 1:] views) takes the scalar kernel, which is the
//   scalar tail for the whole tensor.
// - The grid covers the work once (one pack per thread) up to the grid limit, beyond which
//   threads loop. Indices are int64: rows * d passes 2^31 on large activations.
// - The kernel launches on the current PyTorch stream of the input's device and is
//   checked after every launch; empty inputs launch nothing.
//
// The launcher glu_cuda() is declared in torch-ext/torch_binding.h; the binding validates
// arguments before calling it.

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <limits>

namespace {

// The binding's activation codes (torch_binding.h: 0 silu, 1 gelu, 2 gelu_tanh).
enum class GluActivation : int { kSilu = 0, kGelu = 1, kGeluTanh = 2 };

constexpr int kVectorBytes = 16;
constexpr int kThreads = 256;

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <GluActivation ACT>
__device__ __forceinline__ float activate(float v) {
  if constexpr (ACT == GluActivation::kSilu) {
    return v / (1.f + expf(-v));
  } else if constexpr (ACT == GluActivation::kGelu) {
    return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
  } else {
    const float inner = 0.79788456080286536f * (v + 0.044715f * v * v * v);  // sqrt(2/pi) (v + 0.044715 v^3)
    return 0.5f * v * (1.f + tanhf(inner));
  }
}

// VEC elements per access; VEC = 1 is the scalar path. `items` = rows * (d / VEC) packs,
// pack i is column pack i % cols of row i / cols.
template <typename T, int VEC, GluActivation ACT>
__global__ void __launch_bounds__(kThreads)
glu_kernel(T* __restrict__ out, const T* __restrict__ gate, const T* __restrict__ up, int64_t items, int64_t cols,
           int64_t in_row_stride, int64_t out_row_stride) {
  using P = Pack<T, VEC>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items; i += step) {
    const int64_t row = i / cols;
    const int64_t col = (i - row * cols) * VEC;
    const P g = *reinterpret_cast<const P*>(gate + row * in_row_stride + col);
    const P u = *reinterpret_cast<const P*>(up + row * in_row_stride + col);
    P y;
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      y.v[e] = static_cast<T>(activate<ACT>(static_cast<float>(g.v[e])) * static_cast<float>(u.v[e]));
    }
    *reinterpret_cast<P*>(out + row * out_row_stride + col) = y;
  }
}

bool is_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kVectorBytes == 0; }

template <typename T, int VEC, GluActivation ACT>
void launch(T* out, const T* gate, const T* up, int64_t rows, int64_t d, int64_t in_row_stride, cudaStream_t stream) {
  const int64_t cols = d / VEC;
  const int64_t items = rows * cols;
  const int64_t wanted = (items + kThreads - 1) / kThreads;
  const int64_t blocks = wanted < std::numeric_limits<int32_t>::max() ? wanted : std::numeric_limits<int32_t>::max();
  glu_kernel<T, VEC, ACT><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(out, gate, up, items, cols,
                                                                                   in_row_stride, d);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, GluActivation ACT>
void dispatch_width(T* out, const T* x, int64_t rows, int64_t d, int64_t in_row_stride, bool gate_first,
                    cudaStream_t stream) {
  constexpr int VEC = kVectorBytes / sizeof(T);
  const T* gate = x + (gate_first ? 0 : d);
  const T* up = x + (gate_first ? d : 0);
  // The halves are d elements apart, so d % VEC == 0 with an aligned base aligns both.
  if (d % VEC == 0 && in_row_stride % VEC == 0 && is_aligned(x) && is_aligned(out)) {
    launch<T, VEC, ACT>(out, gate, up, rows, d, in_row_stride, stream);
  } else {
    launch<T, 1, ACT>(out, gate, up, rows, d, in_row_stride, stream);
  }
}

template <typename T>
void dispatch(at::Tensor& out, const at::Tensor& x, int64_t row_stride, GluActivation act, bool gate_first) {
  // at::Half / at::BFloat16 convert to and from float with the CUDA intrinsics.
  T* y = out.data_ptr<T>();
  const T* in = x.const_data_ptr<T>();
  const int64_t rows = x.size(0);
  const int64_t d = x.size(1) / 2;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  switch (act) {
    case GluActivation::kSilu:
      dispatch_width<T, GluActivation::kSilu>(y, in, rows, d, row_stride, gate_first, stream);
      break;
    case GluActivation::kGelu:
      dispatch_width<T, GluActivation::kGelu>(y, in, rows, d, row_stride, gate_first, stream);
      break;
    case GluActivation::kGeluTanh:
      dispatch_width<T, GluActivation::kGeluTanh>(y, in, rows, d, row_stride, gate_first, stream);
      break;
  }
}

}  // namespace

at::Tensor glu_cuda(const at::Tensor& input, int64_t activation, bool gate_first) {
  TORCH_CHECK(activation >= 0 && activation <= 2, "glu: unknown activation code ", activation);
  const c10::cuda::CUDAGuard device_guard(input.device());
  auto sizes = input.sizes().vec();
  sizes.back() /= 2;
  at::Tensor out = at::empty(sizes, input.options());  // contiguous, like the fake kernel
  if (out.numel() == 0) return out;

  const int64_t width = input.size(-1);
  // A view when the leading dimensions collapse to one row stride (contiguous tensors,
  // column slices like x[:, :w]); otherwise reshape copies.
  at::Tensor x = input.reshape({-1, width});
  if (x.stride(1) != 1) x = x.contiguous();
  const int64_t row_stride = x.size(0) > 1 ? x.stride(0) : width;

  switch (x.scalar_type()) {
    case at::ScalarType::Float:
      dispatch<float>(out, x, row_stride, static_cast<GluActivation>(activation), gate_first);
      break;
    case at::ScalarType::Half:
      dispatch<at::Half>(out, x, row_stride, static_cast<GluActivation>(activation), gate_first);
      break;
    case at::ScalarType::BFloat16:
      dispatch<at::BFloat16>(out, x, row_stride, static_cast<GluActivation>(activation), gate_first);
      break;
    default:
      TORCH_CHECK(false, "glu: unsupported dtype ", x.scalar_type(), " (float32, float16, bfloat16)");
  }
  return out;
}
