// ltx_launch.cuh - the one launch call of the .cu launchers (host code, nvcc only).
//
// launch_kernel(kernel, grid, block, smem, stream, args...) is kernel<<<grid, block, smem,
// stream.handle>>>(args...) through cudaLaunchKernelEx, so that a launch can carry the
// programmatic-stream-serialization attribute when stream.pdl is set (ltx_ops.cpp decides:
// compute capability 9.0+ and not switched off). The kernels' side is pdl_wait() in
// ltx_common.cuh. Errors surface here, as the launch check did.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>

#include "ltx_kernels.h"

namespace ltx {

template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, const Stream& stream,
                   Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream.handle;
  config.attrs = attr;
  config.numAttrs = stream.pdl ? 1 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace ltx
