// gelu.cu - GELU with the tanh approximation, the activation of LTX-Video's
// FeedForward (diffusers GELU(dim, 4 * dim, approximate="tanh"), applied to
// the [B, S, 8192] output of its first projection).
//
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//
// Evaluated as x / (1 + exp(-2u)), which equals the formula above because
// 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)). That costs one MUFU exp and one
// reciprocal instead of tanhf's longer sequence, and it avoids the
// cancellation in 1 + tanh(u) for negative x. Relative error vs float64 is
// ~1e-6, far below bf16/fp16 rounding and inside the fp32 test bound.
//
// Elementwise and memory bound (2 + 2 bytes per bf16 element): each thread
// moves UNROLL 16-byte chunks per grid-stride step, issuing all loads before any math; the
// block size and UNROLL are launch parameters (gelu_default_config in ltx_ops.cpp picks them). The vector
// path needs 16-byte aligned input and output; the < 8 tail elements are done
// by block 0 with scalar accesses. Misaligned input runs the scalar kernel
// (ltx_ops.cpp checks the pointers).

#include <c10/cuda/CUDAException.h>

#include <cstdio>
#include <cstdlib>

#include "ltx_launch.cuh"
#include "gelu_kernels.cuh"

namespace ltx {

namespace {

template <typename T, int UNROLL>
void launch_gelu_unrolled(const T* x, T* y, int64_t n, bool vec, int threads, const Stream& stream) {
  const int64_t per_block = static_cast<int64_t>(threads) * UNROLL * (vec ? VecWidth<T>::value : 1);
  const dim3 grid(grid_for(n, static_cast<int>(per_block)));
  if (vec)
    launch_kernel(&gelu_tanh_kernel<T, true, UNROLL>, grid, dim3(threads), 0, stream, x, y, n);
  else
    launch_kernel(&gelu_tanh_kernel<T, false, UNROLL>, grid, dim3(threads), 0, stream, x, y, n);
}

}  // namespace

void launch_gelu_tanh(DType dt, const void* x, void* y, int64_t n, bool vec, int threads, int unroll,
                      const Stream& stream) {
  if (threads <= 0 || threads > kGeluMaxThreads || threads % 32 != 0) {
    std::fprintf(stderr, "launch_gelu_tanh: %d threads per block is not a configuration\n", threads);
    std::abort();  // ltx_ops.cpp validated the request: reaching this is a host-code bug
  }
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    switch (unroll) {
      case 1: launch_gelu_unrolled<T, 1>(xt, yt, n, vec, threads, stream); break;
      case 2: launch_gelu_unrolled<T, 2>(xt, yt, n, vec, threads, stream); break;
      case 4: launch_gelu_unrolled<T, 4>(xt, yt, n, vec, threads, stream); break;
      case 8: launch_gelu_unrolled<T, 8>(xt, yt, n, vec, threads, stream); break;
      default:
        std::fprintf(stderr, "launch_gelu_tanh: unroll %d is not a configuration\n", unroll);
        std::abort();
    }
  });
}

}  // namespace ltx
