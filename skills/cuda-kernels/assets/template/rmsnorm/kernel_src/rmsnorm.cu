// RMSNorm over the last dimension, for the __NAME__ kernel project.
//
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight      (weight optional)
//
// Math in fp32 (x and weight are widened on load, y is rounded once on store), for
// float32, float16 and bfloat16 tensors with any number of leading dimensions.
//
// Why it is shaped like this
// - RMSNorm moves 2 bytes (fp16/bf16) per element in and 2 out and does ~4 FLOPs, so it
//   is memory-bound: the floor is (read + write bytes) / copy bandwidth. Each element is
//   read from DRAM exactly once: a thread loads its whole share of the row into
//   registers (all loads issued before any arithmetic, so they are in flight together),
//   the row's sum of squares is reduced, and the cached values are scaled and stored.
// - 16-byte loads/stores (8 halves / 4 floats) when, and only when, every row start is
//   16-byte aligned: base pointers aligned, hidden and the input row stride multiples of
//   the vector width. Rows that fail the check (e.g. hidden = 4100 in fp16) take the
//   scalar kernel, which is the scalar tail for the whole row; its second pass re-reads
//   the row, which is still in L1/L2.
// - Threads per row grow with the hidden size (about 4 vectors per thread, 32..1024
//   threads). Wide rows get one row per block; narrow rows (e.g. 128-wide q/k norms)
//   pack several rows into a 256-thread block, one row per group of lanes, so no lanes
//   idle and the reduction stays inside a warp.
// - Indices are int64 (rows * hidden can exceed 2^31). The kernel launches on the
//   current PyTorch stream of the input's device and is checked after every launch.
//
// The launcher rms_norm_cuda() is declared in torch-ext/torch_binding.h; the binding
// validates arguments before calling it.

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace {

constexpr int kVectorBytes = 16;
constexpr int kBlockThreads = 256;         // block size when several rows share a block
constexpr int kMaxThreadsPerRow = 1024;
constexpr int kMaxVectorsPerThread = 8;    // register budget of the cached row

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Sum `value` over the threads_per_row lanes that own one row (threadIdx.x of one
// threadIdx.y). Lanes of a row are consecutive, so xor-shuffles with offsets below the
// row width never mix rows. Rows wider than a warp combine per-warp sums in shared
// memory; every lane of the block takes part, so the barrier is uniform.
__device__ __forceinline__ float row_sum(float value, int threads_per_row, float* partials) {
  const int width = threads_per_row < 32 ? threads_per_row : 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    if (offset < width) value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  if (threads_per_row > 32) {
    const int warps_per_row = threads_per_row / 32;
    float* row_partials = partials + threadIdx.y * warps_per_row;
    if ((threadIdx.x & 31) == 0) row_partials[threadIdx.x / 32] = value;
    __syncthreads();
    value = 0.f;
    for (int w = 0; w < warps_per_row; ++w) value += row_partials[w];  // same order in every lane
  }
  return value;
}

// Vector path: every row start is 16-byte aligned and hidden % VEC == 0 (checked by the
// launcher). Thread x of a row owns vectors x, x + tpr, x + 2*tpr, ... (coalesced).
template <typename T, int VPT>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
rms_norm_vector_kernel(T* __restrict__ out, const T* __restrict__ in, const T* __restrict__ weight,
                       int64_t rows, int64_t hidden, int64_t in_row_stride, float eps) {
  constexpr int VEC = kVectorBytes / sizeof(T);
  using P = Pack<T, VEC>;
  __shared__ float partials[kMaxThreadsPerRow / 32];

  const int tpr = blockDim.x;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < rows;  // the last block may hang past the end; it still joins the reduction
  const int64_t nvec = hidden / VEC;
  const P* x = reinterpret_cast<const P*>(in + (active ? row : 0) * in_row_stride);

  P cache[VPT];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * tpr;
    if (active && j < nvec) cache[k] = x[j];
  }
  float sum_sq = 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * tpr;
    if (active && j < nvec) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const float f = static_cast<float>(cache[k].v[e]);
        sum_sq += f * f;
      }
    }
  }
  sum_sq = row_sum(sum_sq, tpr, partials);
  if (!active) return;  // after the only barrier
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(hidden) + eps);

  P* y = reinterpret_cast<P*>(out + row * hidden);
  const P* w = reinterpret_cast<const P*>(weight);
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * tpr;
    if (j < nvec) {
      P result;
      if (w != nullptr) {
        const P wk = w[j];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          result.v[e] = static_cast<T>(static_cast<float>(cache[k].v[e]) * inv_rms * static_cast<float>(wk.v[e]));
        }
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          result.v[e] = static_cast<T>(static_cast<float>(cache[k].v[e]) * inv_rms);
        }
      }
      y[j] = result;
    }
  }
}

// Scalar path for any alignment and any hidden size: two passes over the row, the
// second served from cache. Also used when a row is too wide for the register cache.
template <typename T>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
rms_norm_scalar_kernel(T* __restrict__ out, const T* __restrict__ in, const T* __restrict__ weight,
                       int64_t rows, int64_t hidden, int64_t in_row_stride, float eps) {
  __shared__ float partials[kMaxThreadsPerRow / 32];
  const int tpr = blockDim.x;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < rows;
  const T* x = in + (active ? row : 0) * in_row_stride;

  float sum_sq = 0.f;
  for (int64_t j = threadIdx.x; active && j < hidden; j += tpr) {
    const float f = static_cast<float>(x[j]);
    sum_sq += f * f;
  }
  sum_sq = row_sum(sum_sq, tpr, partials);
  if (!active) return;
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(hidden) + eps);

  T* y = out + row * hidden;
  for (int64_t j = threadIdx.x; j < hidden; j += tpr) {
    const float scale = weight != nullptr ? inv_rms * static_cast<float>(weight[j]) : inv_rms;
    y[j] = static_cast<T>(static_cast<float>(x[j]) * scale);
  }
}

struct LaunchShape {
  int threads_per_row;
  int rows_per_block;
  int64_t items_per_thread;
};

int next_pow2(int64_t n) {
  int p = 1;
  while (p < n && p < kMaxThreadsPerRow) p <<= 1;
  return p;
}

// `items` = vectors (or scalars) per row; aim for about `target` items per thread.
LaunchShape plan_launch(int64_t items, int64_t target) {
  int tpr;
  if (items <= 32) {
    tpr = next_pow2(items);  // narrow rows: a group of lanes per row
  } else {
    tpr = next_pow2((items + target - 1) / target);
    tpr = tpr < 32 ? 32 : tpr;
  }
  const int rows_per_block = tpr >= kBlockThreads ? 1 : kBlockThreads / tpr;
  return {tpr, rows_per_block, (items + tpr - 1) / tpr};
}

bool is_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kVectorBytes == 0; }

template <typename T>
void launch_rms_norm(T* out, const T* in, const T* weight, int64_t rows, int64_t hidden, int64_t in_row_stride,
                     float eps, cudaStream_t stream) {
  constexpr int VEC = kVectorBytes / sizeof(T);
  const bool vectorizable = hidden % VEC == 0 && in_row_stride % VEC == 0 && is_aligned(in) && is_aligned(out) &&
                            (weight == nullptr || is_aligned(weight));
  if (vectorizable) {
    const LaunchShape s = plan_launch(hidden / VEC, 4);
    if (s.items_per_thread <= kMaxVectorsPerThread) {
      const int64_t blocks = (rows + s.rows_per_block - 1) / s.rows_per_block;
      TORCH_CHECK(blocks <= std::numeric_limits<int32_t>::max(), "rms_norm: too many rows (", rows, ")");
      const dim3 grid(static_cast<unsigned>(blocks));
      const dim3 block(s.threads_per_row, s.rows_per_block);
      if (s.items_per_thread <= 1) {
        rms_norm_vector_kernel<T, 1><<<grid, block, 0, stream>>>(out, in, weight, rows, hidden, in_row_stride, eps);
      } else if (s.items_per_thread <= 2) {
        rms_norm_vector_kernel<T, 2><<<grid, block, 0, stream>>>(out, in, weight, rows, hidden, in_row_stride, eps);
      } else if (s.items_per_thread <= 4) {
        rms_norm_vector_kernel<T, 4><<<grid, block, 0, stream>>>(out, in, weight, rows, hidden, in_row_stride, eps);
      } else {
        rms_norm_vector_kernel<T, 8><<<grid, block, 0, stream>>>(out, in, weight, rows, hidden, in_row_stride, eps);
      }
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return;
    }
  }
  const LaunchShape s = plan_launch(hidden, 8);
  const int64_t blocks = (rows + s.rows_per_block - 1) / s.rows_per_block;
  TORCH_CHECK(blocks <= std::numeric_limits<int32_t>::max(), "rms_norm: too many rows (", rows, ")");
  const dim3 grid(static_cast<unsigned>(blocks));
  const dim3 block(s.threads_per_row, s.rows_per_block);
  rms_norm_scalar_kernel<T><<<grid, block, 0, stream>>>(out, in, weight, rows, hidden, in_row_stride, eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void dispatch(at::Tensor& out, const at::Tensor& x, const at::Tensor* weight, int64_t row_stride, float eps) {
  // at::Half / at::BFloat16 convert to and from float with the CUDA intrinsics.
  launch_rms_norm<T>(out.data_ptr<T>(), x.const_data_ptr<T>(), weight ? weight->const_data_ptr<T>() : nullptr,
                     x.size(0), x.size(1), row_stride, eps, at::cuda::getCurrentCUDAStream());
}

}  // namespace

at::Tensor rms_norm_cuda(const at::Tensor& input, const std::optional<at::Tensor>& weight, double epsilon) {
  const c10::cuda::CUDAGuard device_guard(input.device());
  at::Tensor out = at::empty(input.sizes(), input.options());  // contiguous, like the fake kernel
  if (input.numel() == 0) return out;

  const int64_t hidden = input.size(-1);
  // A view when the leading dimensions collapse to one row stride (contiguous tensors,
  // column slices like x[:, :h]); otherwise reshape copies.
  at::Tensor x = input.reshape({-1, hidden});
  if (hidden > 1 && x.stride(1) != 1) x = x.contiguous();
  const int64_t row_stride = x.size(0) > 1 ? x.stride(0) : hidden;
  const at::Tensor* w = weight.has_value() ? &*weight : nullptr;
  const float eps = static_cast<float>(epsilon);

  switch (x.scalar_type()) {
    case at::ScalarType::Float:
      dispatch<float>(out, x, w, row_stride, eps);
      break;
    case at::ScalarType::Half:
      dispatch<at::Half>(out, x, w, row_stride, eps);
      break;
    case at::ScalarType::BFloat16:
      dispatch<at::BFloat16>(out, x, w, row_stride, eps);
      break;
    default:
      TORCH_CHECK(false, "rms_norm: unsupported dtype ", x.scalar_type(), " (float32, float16, bfloat16)");
  }
  return out;
}
