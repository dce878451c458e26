// The dtype tag of the launch API, shared by launchers.h and common.cuh. Torch-free on
// purpose: kernel_src/ compiles with CUDA headers only, and the binding maps torch's
// scalar types onto this enum.
#pragma once

namespace ks {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

}  // namespace ks
