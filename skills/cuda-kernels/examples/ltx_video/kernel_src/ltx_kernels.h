// ltx_kernels.h - the interface between the host code (ltx_ops.cpp, host compiler) and the
// CUDA kernels (*.cu, nvcc): plain structs and launcher declarations only, so the .cu files
// never include the heavy ATen headers (keeps nvcc fast).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ltx {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// n / d for 0 <= n < 2^31, 1 <= d < 2^31 as a multiply-high and a shift (constants from make_fast_div).
// The kernels split a block into rows with it (tpr is known only at run time): a plain `/`
// compiled to ~20 instructions (SASS, sm_90), issued by every thread before its first load.
struct FastDiv {
  uint32_t mul;  // 0: d == 1
  uint32_t shr;
#if defined(__CUDACC__) || defined(LTX_CPU_EMULATION)
  __device__ __forceinline__ uint32_t operator()(uint32_t n) const { return mul == 0 ? n : __umulhi(n, mul) >> shr; }
#endif
};

// A tensor seen as rows of D contiguous elements, numbered like x's rows: row r = (outer
// o = r / inner, inner i = r % inner), inner = x's second-to-last size, first element at
// o * s_outer + i * s_inner. Broadcast operands have stride 0 where they broadcast, so
// [B, 1, D] scale/shift and [B|1, S, D] cos/sin are read in place. Build it with
// make_row_index: the division by `inner` is then a multiply-high (div_mul / div_shr). The
// GPU has no integer divider: `row / inner` is ~20 dependent instructions (SASS sm_90), and
// the AdaLN norms evaluate three to five RowIndexes per row.
struct RowIndex {
  int64_t inner;
  int64_t s_outer;
  int64_t s_inner;
  // row / inner == umulhi(row, div_mul) >> div_shr for 0 <= row < 2^31 when div_mul != 0
  // (make_row_index sets it for 2 <= inner < 2^31; 0 = divide the slow way).
  uint32_t div_mul;
  uint32_t div_shr;
#if defined(__CUDACC__) || defined(LTX_CPU_EMULATION)  // the emulation test runs kernels on a CPU
  __device__ __forceinline__ int64_t outer(int64_t row) const {
    if (div_mul != 0 && static_cast<uint64_t>(row) < (1ULL << 31))
      return static_cast<int64_t>(__umulhi(static_cast<uint32_t>(row), div_mul) >> div_shr);
    return row / inner;
  }
  __device__ __forceinline__ int64_t operator()(int64_t row) const {
    if (inner == 1) return row * s_outer;
    if (div_mul != 0 && static_cast<uint64_t>(row) < (1ULL << 31)) {
      // 32-bit quotient and remainder (both < 2^31), widened only for the strides
      const uint32_t r = static_cast<uint32_t>(row);
      const uint32_t o = __umulhi(r, div_mul) >> div_shr;
      const uint32_t i = r - o * static_cast<uint32_t>(inner);
      return static_cast<int64_t>(o) * s_outer + static_cast<int64_t>(i) * s_inner;
    }
    const int64_t o = row / inner;
    return o * s_outer + (row - o * inner) * s_inner;
  }
  // operator() without branches, for 0 <= row < 2^31 only (the host checks before a lean
  // launch): then div_mul is set whenever inner >= 2, and inner == 1 is a select. No 64-bit
  // division to keep code and registers for. The lean rows kernels use it (kRowsLean).
  __device__ __forceinline__ int64_t lean(int64_t row) const {
    const uint32_t r = static_cast<uint32_t>(row);
    const uint32_t o = inner == 1 ? r : __umulhi(r, div_mul) >> div_shr;
    const uint32_t i = r - o * static_cast<uint32_t>(inner);
    return static_cast<int64_t>(o) * s_outer + static_cast<int64_t>(i) * s_inner;
  }
#endif
};

// The multiplier for n / d (1 <= d < 2^31, 0 <= n < 2^31): with l = ceil(log2 d), p = 31 + l,
// m = ceil(2^p / d) = (2^p + e) / d, 0 <= e < d, the error n * e / (d * 2^p) < 1 / d because
// n * e < 2^p, so floor(n * m / 2^p) = floor(n / d); m < 2^32 and shift p - 32 after the
// multiply-high. d == 1 (and d >= 2^31) get mul 0. tests/kernels_emulated.cpp checks both uses.
inline FastDiv make_fast_div(int64_t d) {
  FastDiv f{0, 0};
  if (d >= 2 && d < (int64_t{1} << 31)) {
    int l = 0;
    while ((int64_t{1} << l) < d) ++l;
    const uint64_t p2 = uint64_t{1} << (31 + l);
    f.mul = static_cast<uint32_t>((p2 + static_cast<uint64_t>(d) - 1) / static_cast<uint64_t>(d));
    f.shr = static_cast<uint32_t>(31 + l - 32);
  }
  return f;
}

inline RowIndex make_row_index(int64_t inner, int64_t s_outer, int64_t s_inner) {
  const FastDiv f = make_fast_div(inner);
  return RowIndex{inner, s_outer, s_inner, f.mul, f.shr};
}

// Host: two operands address their rows alike (views sliced from one tensor, or tensors of
// one shape and layout), so a kernel can reuse one's row offset for the other.
inline bool same_rows(const RowIndex& a, const RowIndex& b) {
  return a.inner == b.inner && a.s_outer == b.s_outer && a.s_inner == b.s_inner;
}

// Bits of NormArgs::same / RopeArgs::same: the operand's RowIndex equals the named one's, so
// the kernel reuses that offset. LTX's scale, shift and gate slice one table; residual and
// x, q and k, cos and sin share a layout: the fused add evaluates two RowIndexes per row, not five.
constexpr unsigned kResidualAsX = 1;  // NormArgs: ri == xi
constexpr unsigned kShiftAsScale = 2;  // NormArgs: hi == si
constexpr unsigned kGateAsScale = 4;   // NormArgs: gi == si
constexpr unsigned kX2AsX = 1;         // RopeArgs: x2i == xi
constexpr unsigned kSinAsCos = 2;      // RopeArgs: si == ci

struct NormArgs {
  const void* x;
  RowIndex xi;
  const void* residual;  // fused residual add only
  RowIndex ri;
  const void* gate;  // fused residual add only; nullptr = ungated
  RowIndex gi;
  const void* weight;  // nullptr = no elementwise weight
  const void* scale;   // nullptr = no modulation (shift is then nullptr too)
  RowIndex si;
  const void* shift;
  RowIndex hi;
  void* out;           // contiguous [rows, d]
  void* residual_out;  // fused residual add only; contiguous [rows, d]
  int64_t rows;
  int d;
  int tpr;  // threads per row: a power of two <= 32 or a multiple of 32
  FastDiv tpr_div;  // these two from set_row_shape
  float inv_d;
  float eps;
  unsigned same;  // kResidualAsX | kShiftAsScale | kGateAsScale
};

struct RopeArgs {
  const void* x;
  RowIndex xi;
  const void* x2;  // second tensor (k) of the fused q/k kernel; nullptr = none
  RowIndex x2i;
  const float* cos;
  RowIndex ci;
  const float* sin;
  RowIndex si;
  const void* w;   // norm weight for x (fused kernel; nullable)
  const void* w2;  // norm weight for x2 (nullable)
  void* out;       // contiguous [rows, d]
  void* out2;
  int64_t rows;
  int d;
  int tpr;
  FastDiv tpr_div;  // these two from set_row_shape
  float inv_d;
  float eps;
  unsigned same;  // kX2AsX | kSinAsCos
};

// Sets the row length d and the threads per row of a NormArgs / RopeArgs, with what every
// thread would otherwise derive from them before its row's first load: 1 / d (a float
// division: a call to a slow path when not inlined) and the division by tpr.
template <typename Args>
inline void set_row_shape(Args& a, int d, int tpr) {
  a.d = d;
  a.tpr = tpr;
  a.tpr_div = make_fast_div(tpr);
  a.inv_d = 1.0f / static_cast<float>(d);
}

// Whether set_row_shape filled `a`: args built field by field would leave tpr_div and inv_d
// zero, and the kernels would then split each block by 1 and normalize by rsqrt(eps), with
// no error. The launchers of the row kernels abort on false (require_row_shape).
template <typename Args>
inline bool row_shape_set(const Args& a) {
  const FastDiv want = make_fast_div(a.tpr);
  return a.d > 0 && a.inv_d == 1.0f / static_cast<float>(a.d) && a.tpr_div.mul == want.mul &&
         a.tpr_div.shr == want.shr;
}

// NormArgs::same / RopeArgs::same for arguments whose pointers and RowIndexes are set: the
// host (ltx_ops.cpp) and the CPU emulator's tests fill them the same way.
inline unsigned norm_shared_offsets(const NormArgs& a) {
  const bool mod = a.scale != nullptr;
  return (a.residual != nullptr && same_rows(a.ri, a.xi) ? kResidualAsX : 0u) |
         (mod && same_rows(a.hi, a.si) ? kShiftAsScale : 0u) |
         (mod && a.gate != nullptr && same_rows(a.gi, a.si) ? kGateAsScale : 0u);
}
inline unsigned rope_shared_offsets(const RopeArgs& a) {
  return (a.x2 != nullptr && same_rows(a.x2i, a.xi) ? kX2AsX : 0u) | (same_rows(a.si, a.ci) ? kSinAsCos : 0u);
}

// Register-resident rows: `vpt` 16-byte chunks per thread from kVptChoices, at most
// kMaxThreadsPerRow threads. Modulate and the fused add keep every operand's chunks live, so
// their rows kernels stop at kMaxVptMod / kMaxVptAdd; longer rows take the loop kernel
// (modulate) or the unfused path (add).
constexpr int kVptChoices[] = {1, 2, 3, 4, 6, 8, 12, 16};
constexpr int kMaxVptMod = 4;
constexpr int kMaxVptAdd = 4;
constexpr int kMaxVptNormRope = 4;  // q, k, cos and sin chunks live together
constexpr int kMaxThreadsPerRow = 512;

// Rows kernels: 16-byte path only (the caller checked alignment); the operand set comes from
// a's non-null pointers, rows per block from norm_rows_per_block. late: scale/shift read after
// the reduction (LATE), blocks <= kMaxLateBlock; *_with_config flag kRowsLateModulation only.
constexpr int kRowsLateModulation = 4;
constexpr int kMaxLateBlock = 256;
// lean: AdaLN rows kernels at 1-2 chunks with RowIndex::lean offsets (rows < kLeanMaxRows,
// host-checked) and launch bounds holding them to 40 / 64 registers (the fused add at one
// chunk 64 -> 40, no spill; with the general index it spilled at 40). The weightless fused
// add's default, at 2 chunks (adaln_default_lean); *_with_config flag kRowsLean.
constexpr int kRowsLean = 64;
constexpr int kMaxVptLean = 2;
constexpr int64_t kLeanMaxRows = int64_t{1} << 31;
// reload: the lean kernel reading x (or its stored h) again after the reduction, holding
// nothing across it: 32-64 registers (RELOAD); flag kRowsReload, same limits. Sweep knob.
constexpr int kRowsReload = 128;
// hints: the lean kernel with torch.compile's cache hints (HINTS): flags kRowsLean |
// kLeanHints (AdaLN and rms_norm_rope_qk_with_config). Sweep knob.
constexpr int kLeanHints = 256;
// The default ops' kLeanHints rule, only while set_cache_hints(true) (default_hints in
// ltx_ops.cpp has the timings): calls moving at most num/den of L2 (q/k 3/2, weightless fused
// add 5/4), and for q/k no cos/sin row shared by two rows (own_rows). Host-only, pure: the
// CPU emulation test checks them.
constexpr int kQkHintsNum = 3, kQkHintsDen = 2;
constexpr int kAddHintsNum = 5, kAddHintsDen = 4;
// Weightless modulate runs the lean kernel instead of the pipelined one while x + output fit
// in num/den of L2 (adaln_default_lean has the timings); with hints switched on such a call
// always passes the fused add's hint limit.
constexpr int kModLeanNum = 1, kModLeanDen = 3;
inline bool within_l2_share(int64_t bytes, int64_t l2, int num, int den) {
  return l2 > 0 && bytes * den <= l2 * num;
}
inline bool own_rows(const RowIndex& r, int64_t rows) {
  if (rows <= 1) return true;
  if (r.inner == 1) return r.s_outer != 0;
  return r.s_inner != 0 && (r.s_outer != 0 || rows <= r.inner);
}
// Where and how a launcher launches: the stream, and whether as a programmatic dependent
// launch (PDL, cc 9.0+): the kernel may launch before the one ahead completes, its threads
// waiting in griddepcontrol.wait (pdl_wait, ltx_common.cuh). Every kernel waits before
// touching global memory, so the flag changes only grid set-up, never what is read.
struct Stream {
  cudaStream_t handle = nullptr;
  bool pdl = false;
};
// The rows kernel's opt-in variants; all false is the default kernel at the given chunks.
struct RowsVariant {
  bool late = false;    // kRowsLateModulation
  bool lean = false;    // kRowsLean, or the default fused add without a weight
  bool reload = false;  // kRowsReload
  bool hints = false;   // kRowsLean | kLeanHints
};
void launch_rms_norm_rows(DType dt, const NormArgs& a, int vpt, const RowsVariant& v, const Stream& stream);
// One block of `block` threads per row, two reads of x; vec = 16-byte path.
void launch_rms_norm_loop(DType dt, const NormArgs& a, int block, bool vec, const Stream& stream);
// Opt-in column-stationary AdaLN kernel (*_with_config only): 16-byte path, per-batch
// scale/shift (gate), vpt <= kMaxVptColstat, blocks <= kMaxColstatBlock; `strip_rows` rows of
// one batch per slot of tpr threads; flags kColstatStream | kColstatPrefetch.
constexpr int kMaxVptColstat = 4;
constexpr int kMaxColstatBlock = 256;
constexpr int kMaxStripRows = 1024;
constexpr int kColstatStream = 1;
constexpr int kColstatPrefetch = 2;
void launch_rms_norm_colstat(DType dt, const NormArgs& a, int vpt, int strip_rows, int flags, const Stream& stream);
// Pipelined AdaLN kernel (rms_norm_mod_pipe_kernel): a persistent grid copying the next
// stages-1 row groups' x (and residual) to shared memory (cp.async) while computing the
// current one. 16-byte path, vpt <= kMaxVptPipe, tpr <= kMaxPipeBlock, 2 or 3 stages, rows
// per block as norm_rows_per_block. Returns 0 after launching, or (launching nothing) the
// shared memory per block it needs when the GPU cannot give it. Default modulate: 2 stages
// (adaln_default_stages); *_with_config flags kAdalnPipe2 / kAdalnPipe3.
constexpr int kMaxVptPipe = 4;
constexpr int kMaxPipeBlock = 256;
constexpr int kAdalnPipe2 = 8;
constexpr int kAdalnPipe3 = 16;
// Rows per block of the RoPE kernels (rope_kernel, rms_norm_rope_kernel and its prefetching
// variant): blocks of 256 threads' worth of rows, one row per block from 256 threads per row.
inline int rows_per_block(int tpr) { return tpr >= 256 ? 1 : 256 / tpr; }
// Rows per block of the RMSNorm rows kernels: tpr < 32 packs 256 threads' worth of rows;
// whole-warp rows get ~128-thread blocks (32 -> 4 rows, 64 -> 2, 96+ -> 1). Small blocks let
// one more block fit per SM for the operand-heavy kernels, and fewer rows share row_sum's barrier.
inline int norm_rows_per_block(int tpr) {
  if (tpr < 32) return 256 / tpr;
  return tpr >= 128 ? 1 : 128 / tpr;
}
inline size_t rms_norm_pipe_smem(int tpr, int d, size_t elem, bool add, int stages) {
  return static_cast<size_t>(stages) * norm_rows_per_block(tpr) * (add ? 2 : 1) * static_cast<size_t>(d) * elem;
}
size_t launch_rms_norm_pipe(DType dt, const NormArgs& a, int vpt, int stages, const Stream& stream);
void launch_rope(DType dt, const RopeArgs& a, bool vec, const Stream& stream);
// Flat RoPE (rope_kernels.cuh): x, cos, sin and out with rows back to back (stride d),
// d % chunk width == 0, 16-byte aligned; `cpt` chunks per thread, one of kRopeFlatCpt.
constexpr int kRopeFlatCpt[] = {1, 2, 4};
void launch_rope_flat(DType dt, const RopeArgs& a, int cpt, const Stream& stream);
// Narrow flat RoPE (rope_narrow_kernel): the flat layout and checks, `elems` elements (one of
// kRopeNarrowElems) per thread instead of a 16-byte chunk; `streaming`: ld/st.global.cs
// (flag kRopeStreaming of rope_interleaved_with_config).
constexpr int kRopeNarrowElems[] = {2, 4};
constexpr int kRopeStreaming = 1;
void launch_rope_narrow(DType dt, const RopeArgs& a, int elems, bool streaming, const Stream& stream);
// lean: the one-chunk variant held to 48 registers (vpt 1, tpr <= kMaxLeanRopeBlock, rows < 2^31;
// the default wherever those hold, else rms_norm_rope_qk_with_config's flag kRowsLean).
constexpr int kMaxLeanRopeBlock = 256;
// prefetch: the persistent lean kernel that requests each thread's next row before reducing
// its current one (rope_kernels.cuh, rms_norm_rope_prefetch_kernel), kPrefetchRopeBlocks
// resident blocks per SM; rms_norm_rope_qk_with_config's flag kQkPrefetch (with kRowsLean).
constexpr int kQkPrefetch = 512;
constexpr int kPrefetchRopeBlocks = 3;
// The default q/k op (q and k, the lean kernel's conditions, no hints) runs the prefetching
// kernel while each block loops over at most kQkPrefetchMaxRounds row groups. H200 q/k sweep
// (d = 2048, bf16, 396 blocks): 2.0-3.4 % faster than lean at 1024-2688 rows (3-7 rounds),
// 0.8-1.8 % slower at 4096-8192 (11-21 rounds). Host-only, pure: the CPU emulation test checks it.
constexpr int kQkPrefetchMaxRounds = 7;
inline bool qk_prefetch_default(int64_t groups, int sms) {
  return sms > 0 && groups <= int64_t{kQkPrefetchMaxRounds} * kPrefetchRopeBlocks * sms;
}
// prefetch_sms > 0 (with lean): the prefetching kernel on a device of that many SMs, which
// the host knows from its cached attribute query (ltx_ops.cpp, device_attribute).
void launch_rms_norm_rope(DType dt, const RopeArgs& a, int vpt, bool lean, bool hints, const Stream& stream,
                          int64_t prefetch_sms = 0);
// GELU-tanh (gelu_kernels.cuh): blocks of `threads` (kGeluThreadChoices), `unroll` 16-byte
// chunks per thread per grid-stride step (kGeluUnrollChoices; elements on the scalar path).
// Default: gelu_default_config (ltx_ops.cpp); gelu_tanh_with_config forces one (sweeps, tests).
constexpr int kGeluMaxThreads = 256;
constexpr int kGeluThreadChoices[] = {64, 128, 256};
constexpr int kGeluUnrollChoices[] = {1, 2, 4, 8};
constexpr int kGeluDefaultThreads = 128, kGeluDefaultUnroll = 1;  // measured: gelu_default_config
void launch_gelu_tanh(DType dt, const void* x, void* y, int64_t n, bool vec, int threads, int unroll,
                      const Stream& stream);

}  // namespace ltx
