// ltx_ops.cpp - torch-facing host code: input checks, row views of broadcast operands, the
// 16-byte alignment test, launch configuration and kernel choice. Host compiler, light ATen
// headers; the kernels live in *.cu. Every entry point: CUDA fp32/fp16/bf16 operands of one
// dtype (cos/sin fp32), any leading dims, feature dim last; new contiguous outputs; empty
// inputs launch nothing; the current stream of x's device.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <iterator>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>

#include "ltx_kernels.h"

namespace ltx {
namespace {

DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    default:
      TORCH_CHECK(false, "unreachable: dtype was checked");
  }
}

void check_float_cuda(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.is_cuda(), op, ": ", name, " must be a CUDA tensor, got device ", t.device());
  const auto st = t.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kHalf || st == at::kBFloat16, op, ": ", name,
              " must be float32, float16 or bfloat16, got ", st);
}

void check_same(const at::Tensor& t, const at::Tensor& x, const char* op, const char* name) {
  TORCH_CHECK(t.device() == x.device(), op, ": ", name, " is on ", t.device(), " but x is on ", x.device());
  TORCH_CHECK(t.scalar_type() == x.scalar_type(), op, ": ", name, " has dtype ", t.scalar_type(),
              " but x has dtype ", x.scalar_type(), " (the Python wrapper falls back to PyTorch for mixed dtypes)");
}

// RowIndex for a tensor whose last dim is contiguous and whose leading dims
// (all but the last two) collapse into one stride; nullopt otherwise.
std::optional<RowIndex> try_row_index(const at::Tensor& t) {
  const int64_t nd = t.dim();
  if (nd == 0) return std::nullopt;
  if (t.size(nd - 1) > 1 && t.stride(nd - 1) != 1) return std::nullopt;
  if (nd == 1) return make_row_index(1, 0, 0);
  const int64_t inner = std::max<int64_t>(t.size(nd - 2), 1);
  const int64_t s_inner = t.size(nd - 2) > 1 ? t.stride(nd - 2) : 0;
  int64_t s_outer = 0;
  bool have = false;
  int64_t expected = 0;
  for (int64_t d = nd - 3; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (!have) {
      s_outer = t.stride(d);
      have = true;
    } else if (t.stride(d) != expected) {
      return std::nullopt;
    }
    expected = t.stride(d) * t.size(d);
  }
  return make_row_index(inner, s_outer, s_inner);
}

// x itself as rows: views are used in place when they can be, else copied.
std::pair<at::Tensor, RowIndex> x_rows(const at::Tensor& x) {
  std::optional<RowIndex> r = try_row_index(x);
  if (r) return {x, *r};
  at::Tensor c = x.contiguous();
  return {c, *try_row_index(c)};
}

// `t` broadcast to `shape` as rows: stride-0 broadcasting kept when the leading dims
// collapse, else materialised (correct, only slower).
std::pair<at::Tensor, RowIndex> as_rows(const at::Tensor& t, at::IntArrayRef shape, const char* op,
                                        const char* name) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  bool ok = t.dim() <= nd;
  for (int64_t i = 1; ok && i <= t.dim(); ++i) {
    const int64_t ts = t.size(t.dim() - i);
    ok = ts == shape[nd - i] || ts == 1;
  }
  TORCH_CHECK(ok, op, ": ", name, " has shape ", t.sizes(), ", which does not broadcast to x's shape ", shape);
  at::Tensor e = t.expand(shape);
  std::optional<RowIndex> r = try_row_index(e);
  if (!r) {
    e = e.contiguous();
    r = try_row_index(e);
  }
  return {e, *r};
}

// The 16-byte path needs every base pointer 16-byte aligned and every row offset a multiple
// of 16 bytes. The trap: `.contiguous()` does not give that (a view at a 1-element offset is
// contiguous and 2-byte aligned).
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

bool rows_aligned16(const at::Tensor& t, const RowIndex& r) {
  const int64_t per16 = 16 / static_cast<int64_t>(t.element_size());
  return aligned16(t.data_ptr()) && r.s_outer % per16 == 0 && r.s_inner % per16 == 0;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int next_pow2(int64_t v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

bool valid_tpr(int64_t tpr) {
  return tpr >= 1 && tpr <= kMaxThreadsPerRow && (tpr <= 32 ? (tpr & (tpr - 1)) == 0 : tpr % 32 == 0);
}

bool valid_vpt(int64_t vpt) {
  for (int v : kVptChoices)
    if (v == vpt) return true;
  return false;
}

int smallest_vpt_at_least(int64_t need) {
  for (int v : kVptChoices)
    if (v >= need) return v;
  return 0;
}

struct RowConfig {
  int tpr;  // threads per row
  int vpt;  // 16-byte chunks per thread; 0 = too long for registers
};

// The fewest threads per row (whole warps beyond 32 chunks) with at most `target` chunks per
// thread, exact fits first: more chunks = more 16-byte loads in flight per thread, fewer
// threads = a cheaper reduction. `target` is per operand set (all its chunks are live at once).
RowConfig choose_row_config(int64_t d, int n_per_chunk, int target) {
  const int64_t chunks = ceil_div(d, n_per_chunk);
  if (chunks <= 32) return {next_pow2(chunks), 1};
  for (int tpr = 32; tpr <= kMaxThreadsPerRow; tpr += 32)
    if (chunks % tpr == 0 && chunks / tpr <= target && valid_vpt(chunks / tpr))
      return {tpr, static_cast<int>(chunks / tpr)};
  for (int tpr = 32; tpr <= kMaxThreadsPerRow; tpr += 32) {
    const int vpt = smallest_vpt_at_least(ceil_div(chunks, tpr));
    if (vpt != 0 && vpt <= target) return {tpr, vpt};
  }
  return {kMaxThreadsPerRow, smallest_vpt_at_least(ceil_div(chunks, kMaxThreadsPerRow))};
}

// Target chunks per thread by operand set (each chunk: 16 bytes, 4 registers per operand):
//   plain (x [, w]) 3: bf16 2048 -> 128x2, 3072 -> 128x3 (1.2-8.6 % faster than 64x4 / 96x4);
//   modulate 4: 64x4 / 96x4, run pipelined (adaln_default_stages);
//   fused add 4: 64x4 / 96x4 (1.13-1.28x faster than 2 chunks on the rows kernel); weightless
//     it runs the lean kernel at 2 chunks instead (adaln_default_lean).
// From H200 sweeps of every threads x chunks (repository: benchmarks/ltx_video/sweep_ops.py,
// evidence/ltx_video/HISTORY.md); no column-stationary point beat the best rows kernel by > 6 %.
int norm_target_vpt(bool mod, bool add) { return add ? 4 : mod ? 4 : 3; }

// The largest chunk count with a rows kernel for this operand set (rms_norm.cu).
int max_rows_vpt(bool mod, bool add) { return add ? kMaxVptAdd : mod ? kMaxVptMod : 16; }

at::Tensor checked_weight(const std::optional<at::Tensor>& weight, const at::Tensor& x, const char* op,
                          const char* name) {
  if (!weight.has_value()) return at::Tensor();
  check_same(*weight, x, op, name);
  TORCH_CHECK(weight->dim() == 1 && weight->size(0) == x.size(-1), op, ": ", name, " must have shape [", x.size(-1),
              "], got ", weight->sizes());
  return weight->contiguous();
}

const void* ptr_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// ------------------------------------------------------------------ rms norms
struct NormRequest {
  const char* op;
  at::Tensor x;
  std::optional<at::Tensor> weight;
  std::optional<at::Tensor> scale;
  std::optional<at::Tensor> shift;
  std::optional<at::Tensor> residual;  // set: fused residual add
  std::optional<at::Tensor> gate;
  double eps;
  int tpr = 0;  // > 0: forced configuration (tuning, tests); vpt 0 = loop kernel
  int vpt = -1;
  int strip_rows = 0;  // > 0: the opt-in column-stationary kernel (the *_with_config ops)
  int colstat_flags = 0;
  bool late_modulation = false;  // rows kernel reads scale/shift after the reduction (sweep knob)
  int pipe_stages = 0;  // > 0: the opt-in pipelined AdaLN kernel with this many stages
  bool lean = false;  // the lean 1-2 chunk rows kernel (kRowsLean; sweep knob)
  bool reload = false;  // its two-read variant (kRowsReload; sweep knob)
  bool hints = false;   // the lean kernel with cache hints (kRowsLean | kLeanHints; sweep knob)
};

// Pipeline stages of the default AdaLN ops (0 = the rows kernel). H200 AdaLN sweep: modulate
// at 2 stages was fastest or within 1 % on all 9 shapes (up to 7.7 % ahead of the rows
// kernel; 3 stages -1 to +5 %); the fused add was fastest on the rows kernel on 8 of 9.
int adaln_default_stages(bool add) { return add ? 0 : 2; }

// A device attribute, queried once per device: a 5-20 us kernel's launch path cannot afford a
// driver query per call. 0 if the device reports none.
template <cudaDeviceAttr kAttr>
int64_t device_attribute(int device) {
  static std::array<std::atomic<int64_t>, 64> cache{};  // 0: not queried yet, -1: unknown
  if (device < 0 || device >= static_cast<int>(cache.size())) return 0;
  int64_t v = cache[device].load(std::memory_order_relaxed);
  if (v == 0) {
    int got = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&got, kAttr, device));
    v = got > 0 ? got : -1;
    cache[device].store(v, std::memory_order_relaxed);
  }
  return v > 0 ? v : 0;
}

// This GPU's L2 size in bytes (0 if unknown).
int64_t l2_cache_bytes(int device) { return device_attribute<cudaDevAttrL2CacheSize>(device); }
// Its SM count (0 if unknown).
int64_t sm_count(int device) { return device_attribute<cudaDevAttrMultiProcessorCount>(device); }

// Whether the default ops run the lean rows kernel (kRowsLean, kMaxVptLean chunks):
// - the weightless fused add + AdaLN (LTX's h + attn2(h), norm2, MLP AdaLN), always: fastest
//   in the AdaLN sweep on all 9 shapes, gated or not, 1.1-11.6 % ahead of the 4-chunk rows
//   kernel (ncu: 64 registers and 44 % occupancy against 126 and 23 %);
// - weightless modulate only while x + output fit in 1/3 of L2 (kModLeanNum/Den;
//   modulate_bytes = 2 * rows * d * element size): ahead of the pipelined kernel at 8.4 and
//   16.8 MB, 2 % less to 23 % more from 33.6 MB up (22 MB gained too little to widen it).
// Weighted, the lean 2-chunk fused add spills (ptxas -v, sm_90) and was never measured;
// without scale/shift there is no lean kernel.
bool adaln_default_lean(bool mod, bool add, bool weighted, int64_t modulate_bytes, int device) {
  if (!mod || weighted) return false;
  return add || within_l2_share(modulate_bytes, l2_cache_bytes(device), kModLeanNum, kModLeanDen);
}

// A process-wide switch: `env` read at the first op ("0" off, "1" on, else the default);
// set() overrides it for the rest of the process and returns the previous value.
class ProcessSwitch {
 public:
  constexpr ProcessSwitch(const char* env, bool on_by_default) : env_(env), default_(on_by_default) {}

  bool get() {
    int v = state_.load(std::memory_order_relaxed);
    if (v < 0) {
      const char* e = std::getenv(env_);
      v = (e != nullptr && std::strcmp(e, "0") == 0) ? 0 : (e != nullptr && std::strcmp(e, "1") == 0) ? 1 : default_;
      int expected = -1;  // a concurrent set() wins over the environment
      if (!state_.compare_exchange_strong(expected, v, std::memory_order_relaxed)) v = expected;
    }
    return v == 1;
  }

  bool set(bool on) {
    const bool was = get();
    state_.store(on ? 1 : 0, std::memory_order_relaxed);
    return was;
  }

 private:
  const char* env_;
  int default_;
  std::atomic<int> state_{-1};  // 1 = on, 0 = off, -1 = the environment not read yet
};

// Programmatic dependent launch (Stream::pdl) on compute capability 9.0+ unless
// LTX_VIDEO_PDL=0 or set_pdl(false).
ProcessSwitch g_pdl{"LTX_VIDEO_PDL", true};

// default_hints' rule: off unless LTX_VIDEO_CACHE_HINTS=1 or set_cache_hints(true).
ProcessSwitch g_cache_hints{"LTX_VIDEO_CACHE_HINTS", false};

// The current stream of `device`, and whether launches on it use PDL.
Stream launch_stream(int device) {
  const bool pdl = g_pdl.get() && device_attribute<cudaDevAttrComputeCapabilityMajor>(device) >= 9;
  return Stream{c10::cuda::getCurrentCUDAStream(device).stream(), pdl};
}

// Whether the default ops give the lean kernels torch.compile's cache hints (kLeanHints): only
// when switched on (g_cache_hints) and the call moves at most num/den of L2 (q/k 3/2, the
// weightless fused add 5/4). The trap: hints won 3-9 % only under a timer that reused one
// output buffer; with a fresh output per call, as in a model, every hinted default was slower
// (q/k 20.62 against 19.48 us at 2x1024x2048; repository hint_check.py). The switch stays for
// A/B runs (benchmark_e2e.py's +hints, bench_ops.py's "kernel, cache hints" row).
bool default_hints(int64_t bytes, int device, int num, int den) {
  return g_cache_hints.get() && within_l2_share(bytes, l2_cache_bytes(device), num, den);
}

// The column-stationary kernel keeps one batch's scale/shift/gate rows in registers while
// it walks that batch's rows: it needs them constant over x's second-to-last dim (per
// batch, [B, 1, D]); per-token tables ([B, S, D]) take the rows kernel.
bool per_batch(const at::Tensor& t, const RowIndex& r, const RowIndex& xi) {
  return !t.defined() || xi.inner == 1 || r.s_inner == 0;
}

std::tuple<at::Tensor, at::Tensor> norm_forward(const NormRequest& q) {
  const char* op = q.op;
  check_float_cuda(q.x, op, "x");
  TORCH_CHECK(q.x.dim() >= 1, op, ": x must have at least one dimension");
  // As qwen3's binding: a negative eps would make rsqrt return NaN/inf instead of an error.
  TORCH_CHECK(q.eps >= 0.0, op, ": eps must be >= 0, got ", q.eps);
  const int64_t d64 = q.x.size(-1);
  TORCH_CHECK(d64 < INT_MAX, op, ": the normalized dimension (", d64, ") must be < 2^31 - 1");
  const at::IntArrayRef shape = q.x.sizes();

  const at::Tensor w = checked_weight(q.weight, q.x, op, "weight");
  TORCH_CHECK(q.scale.has_value() == q.shift.has_value(), op, ": pass both scale and shift, or neither");
  at::Tensor scale, shift, residual, gate;
  RowIndex si = make_row_index(1, 0, 0), hi = si, ri = si, gi = si;
  if (q.scale.has_value()) {
    check_same(*q.scale, q.x, op, "scale");
    check_same(*q.shift, q.x, op, "shift");
    std::tie(scale, si) = as_rows(*q.scale, shape, op, "scale");
    std::tie(shift, hi) = as_rows(*q.shift, shape, op, "shift");
  }
  if (q.residual.has_value()) {
    check_same(*q.residual, q.x, op, "residual");
    TORCH_CHECK(q.residual->sizes() == shape, op, ": residual has shape ", q.residual->sizes(),
                " but x has shape ", shape);
    std::tie(residual, ri) = as_rows(*q.residual, shape, op, "residual");
    if (q.gate.has_value()) {
      check_same(*q.gate, q.x, op, "gate");
      std::tie(gate, gi) = as_rows(*q.gate, shape, op, "gate");
    }
  }
  auto [x, xi] = x_rows(q.x);

  at::Tensor out = at::empty(shape, x.options());
  at::Tensor residual_out = residual.defined() ? at::empty(shape, x.options()) : at::Tensor();
  if (x.numel() == 0) return {out, residual_out};

  const c10::cuda::CUDAGuard guard(x.device());
  const Stream stream = launch_stream(x.device().index());
  const int n = 16 / static_cast<int>(x.element_size());
  const int d = static_cast<int>(d64);

  bool vec = d % n == 0 && rows_aligned16(x, xi) && aligned16(out.data_ptr());
  if (w.defined()) vec = vec && aligned16(w.data_ptr());
  if (scale.defined()) vec = vec && rows_aligned16(scale, si) && rows_aligned16(shift, hi);
  if (residual.defined()) vec = vec && rows_aligned16(residual, ri) && aligned16(residual_out.data_ptr());
  if (gate.defined()) vec = vec && rows_aligned16(gate, gi);

  const bool mod = scale.defined(), add = residual.defined();
  // The opt-in column-stationary kernel (the *_with_config ops validated its config) has
  // only the 16-byte path: refuse rather than time a different kernel.
  TORCH_CHECK(q.strip_rows == 0 || vec, op,
              ": rows_per_block >= 1 runs the column-stationary kernel, which has only the 16-byte path: the last",
              " dim (", d64, ") must be a multiple of ", n,
              " and every operand 16-byte aligned with 16-byte row strides; use rows_per_block=0");
  TORCH_CHECK(q.pipe_stages == 0 || vec, op,
              ": flags 8 and 16 run the pipelined kernel, which has only the 16-byte path: the last dim (", d64,
              ") must be a multiple of ", n, " and every operand 16-byte aligned with 16-byte row strides");
  TORCH_CHECK(!(q.lean || q.reload) || vec, op, ": flag ", q.reload ? 128 : 64,
              " runs a lean rows kernel, which has only the 16-byte path: the last dim (", d64,
              ") must be a multiple of ", n, " and every operand 16-byte aligned with 16-byte row strides");
  const int64_t rows = x.numel() / d64;
  // RowIndex::lean computes in 32 bits; 2^31 rows of even 8 bf16 elements are 32 GiB
  TORCH_CHECK(!(q.lean || q.reload) || rows < kLeanMaxRows, op, ": flag ", q.reload ? 128 : 64,
              " (a lean rows kernel) takes fewer than 2^31 rows, got ", rows);
  const bool lean_default = q.tpr <= 0 && vec && rows < kLeanMaxRows &&
                            adaln_default_lean(mod, add, w.defined(), 2 * rows * d64 * x.element_size(),
                                               x.get_device());
  int tpr = q.tpr, vpt = q.vpt;
  if (tpr <= 0) {
    const RowConfig cfg = choose_row_config(d64, n, lean_default ? kMaxVptLean : norm_target_vpt(mod, add));
    tpr = cfg.tpr;
    vpt = cfg.vpt;
  }
  const bool lean = q.lean || (lean_default && vpt >= 1 && vpt <= kMaxVptLean);
  // The rows default_hints weighs: x, residual, h and the output for the fused add; x and the
  // output for the lean modulate, which its 1/3-of-L2 limit keeps inside 5/4. Only with
  // per-batch scale/shift/gate ([B, 1, D], what LTX passes and what the rule was measured on),
  // which the hinted kernel keeps evict-last because every row of the batch re-reads them.
  const bool tables_per_batch =
      per_batch(scale, si, xi) && per_batch(shift, hi, xi) && per_batch(gate, gi, xi);
  const int64_t traffic = (add ? 4 : 2) * rows * d64 * x.element_size();
  const bool hints = q.hints || (lean && q.tpr <= 0 && tables_per_batch &&
                                 default_hints(traffic, x.get_device(), kAddHintsNum, kAddHintsDen));
  // Rows too long for this operand set's rows kernels, or the scalar path: the
  // loop kernel, one block of whole warps per row.
  if (!vec || vpt > max_rows_vpt(mod, add)) vpt = 0;
  if (vpt == 0 && (q.tpr <= 0 || !vec)) {
    tpr = static_cast<int>(std::clamp<int64_t>(ceil_div(ceil_div(d64, n), 32) * 32, 32, 256));
  }
  if (add && vpt == 0) {
    // Not the fused kernel's case (long rows or the scalar path): add in fp32,
    // round once like the fused kernel, then normalize the stored sum.
    at::Tensor h = residual.to(at::kFloat);
    h = gate.defined() ? h.addcmul(x.to(at::kFloat), gate.to(at::kFloat)) : h.add(x.to(at::kFloat));
    residual_out.copy_(h);
    NormRequest rest = q;
    rest.x = residual_out;
    rest.residual.reset();
    rest.gate.reset();
    rest.tpr = 0;
    return {std::get<0>(norm_forward(rest)), residual_out};
  }

  NormArgs a{};
  a.x = x.data_ptr();
  a.xi = xi;
  a.residual = ptr_or_null(residual);
  a.ri = ri;
  a.gate = ptr_or_null(gate);
  a.gi = gi;
  a.weight = ptr_or_null(w);
  a.scale = ptr_or_null(scale);
  a.si = si;
  a.shift = ptr_or_null(shift);
  a.hi = hi;
  a.same = norm_shared_offsets(a);
  a.out = out.data_ptr();
  a.residual_out = residual_out.defined() ? residual_out.data_ptr() : nullptr;
  a.rows = rows;
  set_row_shape(a, d, tpr);
  a.eps = static_cast<float>(q.eps);
  if (q.strip_rows > 0) {
    // Opt-in sweep path (never taken by the default ops); vec was checked above.
    if (per_batch(scale, si, xi) && per_batch(shift, hi, xi) && per_batch(gate, gi, xi)) {
      launch_rms_norm_colstat(dtype_of(x), a, vpt, q.strip_rows, q.colstat_flags, stream);
      return {out, residual_out};
    }
    // per-token modulation: the rows kernel with the same threads and chunks
  }
  int stages = q.pipe_stages;
  if (q.tpr <= 0 && mod && !lean && vec && vpt >= 1 && vpt <= kMaxVptPipe && tpr <= kMaxPipeBlock)
    stages = adaln_default_stages(add);
  if (stages > 0) {
    // vec and vpt were checked above (the *_with_config ops) or just now (the default ops)
    const size_t need = launch_rms_norm_pipe(dtype_of(x), a, vpt, stages, stream);
    if (need == 0) return {out, residual_out};
    TORCH_CHECK(q.pipe_stages == 0, op, ": ", stages, " pipeline stages of ", norm_rows_per_block(tpr),
                " row(s) of ", d64, " elements need ", need,
                " bytes of shared memory per block, more than this GPU gives one block; use flag 8 (2 stages)",
                " or fewer threads per row");
    // default op: the rows kernel needs no shared memory for the rows
  }
  if (vpt == 0)
    launch_rms_norm_loop(dtype_of(x), a, tpr, vec, stream);
  else
    launch_rms_norm_rows(dtype_of(x), a, vpt, RowsVariant{q.late_modulation && mod, lean, q.reload && mod, hints},
                         stream);
  return {out, residual_out};
}

// ----------------------------------------------------------------------- rope
struct RopeInputs {
  at::Tensor x;
  RowIndex xi;
  at::Tensor cos, sin;
  RowIndex ci, si;
};

RopeInputs prepare_rope(const char* op, const at::Tensor& x_in, const at::Tensor& cos, const at::Tensor& sin) {
  check_float_cuda(x_in, op, "x");
  TORCH_CHECK(x_in.dim() >= 1, op, ": x must have at least one dimension");
  const int64_t d = x_in.size(-1);
  TORCH_CHECK(d % 2 == 0, op, ": the last dimension holds (real, imaginary) pairs and must be even, got ", d);
  TORCH_CHECK(d < INT_MAX, op, ": the last dimension (", d, ") must be < 2^31 - 1");
  const std::pair<const at::Tensor*, const char*> tables[] = {{&cos, "cos"}, {&sin, "sin"}};
  for (const auto& [t, name] : tables) {
    TORCH_CHECK(t->device() == x_in.device(), op, ": ", name, " must be on ", x_in.device(), ", got ", t->device());
    TORCH_CHECK(t->scalar_type() == at::kFloat, op, ": ", name,
                " must be float32 as LTX-Video computes it (the Python wrapper falls back to PyTorch otherwise), got ",
                t->scalar_type());
  }
  RopeInputs r;
  std::tie(r.x, r.xi) = x_rows(x_in);
  std::tie(r.cos, r.ci) = as_rows(cos, r.x.sizes(), op, "cos");
  std::tie(r.sin, r.si) = as_rows(sin, r.x.sizes(), op, "sin");
  return r;
}

// Rows stored back to back at stride d: row r (< rows) starts at r * d. A stride of a dim
// the rows never step across (one block of `inner` rows, one row) does not matter:
// try_row_index leaves it 0 (batch 1: s_outer = 0).
bool dense_rows(const RowIndex& r, int64_t d, int64_t rows) {
  if (r.inner == 1) return rows <= 1 || r.s_outer == d;
  return r.s_inner == d && (rows <= r.inner || r.s_outer == r.inner * d);
}

// Where the flat layout holds rope_interleaved runs the narrow flat kernel at 4 elements per
// thread (else the per-row kernel). H200 RoPE sweep: flat at 1 chunk beat per-row by 0.6-7.1 %
// with batch > 1 (2, 4 chunks no better); narrow at 4 elements beat that by 0.2-1.2 % on 8 of
// 9 shapes. Streaming hints (kRopeStreaming) stay opt-in for default_hints' reason.
constexpr int kRopeDefaultNarrowElems = 4;

// flat_cpt: -1 = the default choice; 0 = the per-row kernel; 1, 2, 4 = the flat kernel
// with that many chunks per thread (rope_interleaved_with_config; refused where the
// flat kernel cannot run). narrow_elems 2 or 4 (with flat_cpt 1): the narrow flat kernel
// with that many elements per thread, under the flat kernel's checks; streaming: its
// ld/st.global.cs variant (kRopeStreaming).
at::Tensor rope_forward(const char* op, const at::Tensor& x_in, const at::Tensor& cos, const at::Tensor& sin,
                        int flat_cpt = -1, int narrow_elems = 0, bool streaming = false) {
  const RopeInputs in = prepare_rope(op, x_in, cos, sin);
  at::Tensor out = at::empty(in.x.sizes(), in.x.options());
  if (in.x.numel() == 0) return out;
  const c10::cuda::CUDAGuard guard(in.x.device());
  const Stream stream = launch_stream(in.x.device().index());
  const int n = 16 / static_cast<int>(in.x.element_size());
  const int64_t d = in.x.size(-1);
  const int64_t chunks = ceil_div(d, n);
  RopeArgs a{};
  a.x = in.x.data_ptr();
  a.xi = in.xi;
  a.cos = in.cos.data_ptr<float>();
  a.ci = in.ci;
  a.sin = in.sin.data_ptr<float>();
  a.si = in.si;
  a.same = rope_shared_offsets(a);
  a.out = out.data_ptr();
  a.rows = in.x.numel() / d;
  // One chunk per thread up to kMaxThreadsPerRow chunks per row; longer rows loop.
  set_row_shape(a, static_cast<int>(d),
                chunks <= 32 ? next_pow2(chunks)
                             : static_cast<int>(std::min<int64_t>(ceil_div(chunks, 32) * 32, kMaxThreadsPerRow)));
  const bool vec = d % n == 0 && rows_aligned16(in.x, in.xi) && rows_aligned16(in.cos, in.ci) &&
                   rows_aligned16(in.sin, in.si) && aligned16(out.data_ptr());
  const bool flat = vec && dense_rows(in.xi, d, a.rows) && dense_rows(in.ci, d, a.rows) && dense_rows(in.si, d, a.rows);
  TORCH_CHECK(flat_cpt <= 0 || flat, op,
              ": the flat kernel needs x, cos and sin with rows back to back (cos/sin of x's shape, not broadcast),",
              " 16-byte aligned, and a last dimension that is a multiple of ", n);
  if (flat_cpt < 0 && flat) narrow_elems = kRopeDefaultNarrowElems;
  const int cpt = flat_cpt >= 0 ? flat_cpt : 0;
  if (narrow_elems > 0)
    launch_rope_narrow(dtype_of(in.x), a, narrow_elems, streaming, stream);
  else if (cpt > 0)
    launch_rope_flat(dtype_of(in.x), a, cpt, stream);
  else
    launch_rope(dtype_of(in.x), a, vec, stream);
  return out;
}

std::tuple<at::Tensor, at::Tensor> norm_rope_forward(const char* op, const at::Tensor& q_in,
                                                     const std::optional<at::Tensor>& k_in,
                                                     const std::optional<at::Tensor>& wq_in,
                                                     const std::optional<at::Tensor>& wk_in, const at::Tensor& cos,
                                                     const at::Tensor& sin, double eps, int forced_tpr = 0,
                                                     int forced_vpt = 0, bool lean = false, bool hints = false,
                                                     bool prefetch = false) {
  TORCH_CHECK(eps >= 0.0, op, ": eps must be >= 0, got ", eps);
  const RopeInputs in = prepare_rope(op, q_in, cos, sin);
  const at::Tensor wq = checked_weight(wq_in, in.x, op, "weight_q");
  at::Tensor k, wk;
  RowIndex ki = make_row_index(1, 0, 0);
  if (k_in.has_value()) {
    check_same(*k_in, in.x, op, "k");
    TORCH_CHECK(k_in->sizes() == q_in.sizes(), op, ": k has shape ", k_in->sizes(), " but q has shape ",
                q_in.sizes());
    std::tie(k, ki) = x_rows(*k_in);
    wk = checked_weight(wk_in, in.x, op, "weight_k");
  }
  at::Tensor out = at::empty(in.x.sizes(), in.x.options());
  at::Tensor out2 = k.defined() ? at::empty(in.x.sizes(), in.x.options()) : at::Tensor();
  if (in.x.numel() == 0) return {out, out2};

  const int n = 16 / static_cast<int>(in.x.element_size());
  const int64_t d = in.x.size(-1);
  // One chunk per thread (q, k, cos, sin: 24 registers in bf16) while a row fits 256 threads,
  // else up to 3: 2048 -> 256x1 (1-7 % ahead of 128x2 in the q/k sweep), 3072 -> 128x3 (1-2 %
  // ahead of 192x2; 384x1 27-29 % behind).
  const int64_t qk_chunks = ceil_div(d, n);
  RowConfig cfg = choose_row_config(d, n, qk_chunks <= 256 ? 1 : 3);
  if (forced_tpr > 0) cfg = RowConfig{forced_tpr, forced_vpt};  // *_with_config: validated by the caller
  bool vec = d % n == 0 && rows_aligned16(in.x, in.xi) && rows_aligned16(in.cos, in.ci) &&
             rows_aligned16(in.sin, in.si) && aligned16(out.data_ptr());
  if (wq.defined()) vec = vec && aligned16(wq.data_ptr());
  if (k.defined()) vec = vec && rows_aligned16(k, ki) && aligned16(out2.data_ptr());
  if (wk.defined()) vec = vec && aligned16(wk.data_ptr());

  TORCH_CHECK(forced_tpr == 0 || vec, op, ": a forced configuration runs only the 16-byte path: the last dim (", d,
              ") must be a multiple of ", n, " and q, k, cos, sin 16-byte aligned with 16-byte row strides");
  const int64_t rows = in.x.numel() / d;
  TORCH_CHECK(!lean || rows < kLeanMaxRows, op, ": flag 64 (the lean kernel) takes fewer than 2^31 rows, got ",
              rows);
  const int64_t sms = sm_count(in.x.get_device());
  // The default runs the one-chunk kernel lean (kMaxLeanRopeBlock): 1.0-4.6 % faster on all 7
  // shapes at d = 2048, bit for bit the same output.
  if (forced_tpr == 0 && vec && cfg.vpt == 1 && cfg.tpr <= kMaxLeanRopeBlock && rows < kLeanMaxRows) {
    lean = true;
    // q [and k] in and out, cos and sin in fp32: the traffic default_hints weighs. Only when
    // no cos/sin row is read twice (the rule was measured on per-token tables): the hints load
    // them evict-first.
    const int64_t bytes = rows * d * ((k.defined() ? 4 : 2) * in.x.element_size() + 2 * 4);
    hints = own_rows(in.ci, rows) && own_rows(in.si, rows) &&
            default_hints(bytes, in.x.get_device(), kQkHintsNum, kQkHintsDen);
    // Calls of a few waves take the prefetching persistent kernel (qk_prefetch_default's note),
    // only without the hints: hinted, its 4-block variant was 1-12 % slower, and the 3-block
    // kernel the default runs was never timed with them.
    prefetch = k.defined() && !hints &&
               qk_prefetch_default(ceil_div(rows, rows_per_block(cfg.tpr)), static_cast<int>(sms));
  }
  if (!vec || cfg.vpt == 0 || cfg.vpt > kMaxVptNormRope) {
    // Scalar path or rows too long for registers: normalize, then rotate, both in fp32, and
    // round once to x's dtype at the end, as the fused kernel does (rounding the normalized
    // rows to bf16 before the rotation gave 2.35e-3 relative L2 error at [2, 33, 2050] bf16
    // against 1.66e-3 for one rounding).
    auto norm_then_rope = [&](const at::Tensor& t, const at::Tensor& w) {
      const at::Tensor t32 = t.to(at::kFloat);
      NormRequest nq{op, t32, w.defined() ? std::optional<at::Tensor>(w.to(at::kFloat)) : std::nullopt,
                     std::nullopt, std::nullopt, std::nullopt, std::nullopt, eps};
      return rope_forward(op, std::get<0>(norm_forward(nq)), cos, sin).to(t.scalar_type());
    };
    out = norm_then_rope(in.x, wq);
    if (k.defined()) out2 = norm_then_rope(k, wk);
    return {out, out2};
  }

  const c10::cuda::CUDAGuard guard(in.x.device());
  const Stream stream = launch_stream(in.x.device().index());
  RopeArgs a{};
  a.x = in.x.data_ptr();
  a.xi = in.xi;
  a.x2 = ptr_or_null(k);
  a.x2i = ki;
  a.cos = in.cos.data_ptr<float>();
  a.ci = in.ci;
  a.sin = in.sin.data_ptr<float>();
  a.si = in.si;
  a.same = rope_shared_offsets(a);
  a.w = ptr_or_null(wq);
  a.w2 = ptr_or_null(wk);
  a.out = out.data_ptr();
  a.out2 = out2.defined() ? out2.data_ptr() : nullptr;
  a.rows = rows;
  set_row_shape(a, static_cast<int>(d), cfg.tpr);
  a.eps = static_cast<float>(eps);
  // A device that reports no SM count (0) is counted as one SM, so a forced prefetch still gets a grid.
  const int64_t prefetch_sms = lean && prefetch ? std::max<int64_t>(sms, 1) : 0;
  launch_rms_norm_rope(dtype_of(in.x), a, cfg.vpt, lean, lean && hints, stream, prefetch_sms);
  return {out, out2};
}

// ------------------------------------------------------------------ gelu
// Default: blocks of kGeluDefaultThreads (128), kGeluDefaultUnroll (1) 16-byte chunk per
// thread, a grid that covers the tensor once. H200 GELU sweep: fastest of 12 configurations on
// 6 of 9 shapes, within 0.85 % elsewhere, 4.0-19.2 % ahead of 256x4. One size for all.
std::pair<int, int> gelu_default_config(int64_t /*n*/) { return {kGeluDefaultThreads, kGeluDefaultUnroll}; }

// threads 0: gelu_default_config's choice; otherwise a configuration the caller validated.
at::Tensor gelu_forward(const char* op, const at::Tensor& x_in, int threads, int unroll) {
  check_float_cuda(x_in, op, "x");
  // Elementwise, so any dense layout would do; non-contiguous views are copied
  // once. Contiguous views at an element offset are used in place (scalar path).
  const at::Tensor x = x_in.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (x.numel() == 0) return y;
  if (threads == 0) std::tie(threads, unroll) = gelu_default_config(x.numel());
  const c10::cuda::CUDAGuard guard(x.device());
  const Stream stream = launch_stream(x.device().index());
  const bool vec = aligned16(x.data_ptr()) && aligned16(y.data_ptr());
  launch_gelu_tanh(dtype_of(x), x.data_ptr(), y.data_ptr(), x.numel(), vec, threads, unroll, stream);
  return y;
}

}  // namespace
}  // namespace ltx

// ------------------------------------------------------------ public entries
// (declared in torch-ext/torch_binding.h, registered in torch_binding.cpp)

at::Tensor rms_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps) {
  const ltx::NormRequest q{"rms_norm", x, weight, std::nullopt, std::nullopt, std::nullopt, std::nullopt, eps};
  return std::get<0>(ltx::norm_forward(q));
}

at::Tensor rms_norm_modulate(const at::Tensor& x, const std::optional<at::Tensor>& weight, const at::Tensor& scale,
                             const at::Tensor& shift, double eps) {
  const ltx::NormRequest q{"rms_norm_modulate", x, weight, scale, shift, std::nullopt, std::nullopt, eps};
  return std::get<0>(ltx::norm_forward(q));
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm_modulate(const at::Tensor& x, const at::Tensor& residual,
                                                         const std::optional<at::Tensor>& gate,
                                                         const std::optional<at::Tensor>& weight,
                                                         const std::optional<at::Tensor>& scale,
                                                         const std::optional<at::Tensor>& shift, double eps) {
  const ltx::NormRequest q{"add_rms_norm_modulate", x, weight, scale, shift, residual, gate, eps};
  return ltx::norm_forward(q);
}

at::Tensor rms_norm_with_config(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps,
                                int64_t threads_per_row, int64_t chunks_per_thread) {
  const char* op = "rms_norm_with_config";
  TORCH_CHECK(ltx::valid_tpr(threads_per_row), op,
              ": threads_per_row must be a power of two <= 32 or a multiple of 32 <= ", ltx::kMaxThreadsPerRow,
              ", got ", threads_per_row);
  if (chunks_per_thread == 0) {
    TORCH_CHECK(threads_per_row % 32 == 0, op, ": the looping kernel (chunks_per_thread=0) needs whole warps");
  } else {
    TORCH_CHECK(ltx::valid_vpt(chunks_per_thread), op,
                ": chunks_per_thread must be 0 (looping kernel) or one of 1, 2, 3, 4, 6, 8, 12, 16, got ",
                chunks_per_thread);
    const int64_t n = 16 / x.element_size();
    const int64_t d = x.dim() >= 1 ? x.size(-1) : 0;
    TORCH_CHECK(threads_per_row * chunks_per_thread * n >= d, op, ": ", threads_per_row, " threads x ",
                chunks_per_thread, " chunks of ", n, " elements do not cover a row of ", d);
  }
  ltx::NormRequest q{op, x, weight, std::nullopt, std::nullopt, std::nullopt, std::nullopt, eps};
  q.tpr = static_cast<int>(threads_per_row);
  q.vpt = static_cast<int>(chunks_per_thread);
  return std::get<0>(ltx::norm_forward(q));
}

namespace ltx {
namespace {

// Checks the launch configuration of the AdaLN *_with_config ops (see torch_binding.h).
void check_adaln_config(const char* op, const at::Tensor& x, int64_t tpr, int64_t vpt, int64_t strip_rows,
                        int64_t flags) {
  TORCH_CHECK(valid_tpr(tpr), op, ": threads_per_row must be a power of two <= 32 or a multiple of 32 <= ",
              kMaxThreadsPerRow, ", got ", tpr);
  TORCH_CHECK(strip_rows >= 0 && strip_rows <= kMaxStripRows, op, ": rows_per_block must be 0 (the default rows",
              " kernel) or 1..", kMaxStripRows, " (the column-stationary kernel), got ", strip_rows);
  constexpr int64_t kPipe = kAdalnPipe2 | kAdalnPipe3;
  constexpr int64_t kKnown =
      kColstatStream | kColstatPrefetch | kRowsLateModulation | kPipe | kRowsLean | kRowsReload | kLeanHints;
  TORCH_CHECK((flags & ~kKnown) == 0, op,
              ": flags is a bit set (1 = streaming cache hints, 2 = prefetch the next row, 4 = read scale/shift",
              " after the reduction, 8 / 16 = the pipelined kernel with 2 / 3 stages, 64 = the lean rows kernel,",
              " 128 = the lean rows kernel reading x again after the reduction, 64 | 256 = the lean rows kernel",
              " with cache hints), got ", flags);
  TORCH_CHECK((flags & kLeanHints) == 0 || (flags & kRowsLean) != 0, op, ": flag 256 (cache hints) needs flag 64");
  const int64_t lean_flags = flags & ~int64_t{kLeanHints};
  for (const int64_t lean_flag : {int64_t{kRowsLean}, int64_t{kRowsReload}})
    TORCH_CHECK((lean_flags & lean_flag) == 0 ||
                    (lean_flags == lean_flag && strip_rows == 0 && vpt >= 1 && vpt <= kMaxVptLean),
                op, ": flag ", lean_flag, " (a lean rows kernel) takes rows_per_block 0, chunks_per_thread 1..",
                kMaxVptLean, " and no other flag but 256 with 64");
  TORCH_CHECK(strip_rows > 0 || (flags & (kColstatStream | kColstatPrefetch)) == 0, op,
              ": flags 1 and 2 need the column-stationary kernel (rows_per_block >= 1)");
  TORCH_CHECK(strip_rows == 0 || (flags & (kRowsLateModulation | kPipe)) == 0, op,
              ": flags 4, 8 and 16 take rows_per_block 0 (they are not the column-stationary kernel)");
  TORCH_CHECK((flags & kPipe) != kPipe, op, ": flags 8 and 16 (2 or 3 pipeline stages) exclude each other");
  TORCH_CHECK((flags & kPipe) == 0 || ((flags & kRowsLateModulation) == 0 && vpt >= 1 && vpt <= kMaxVptPipe &&
                                        tpr <= kMaxPipeBlock),
              op, ": the pipelined kernel (flags 8 / 16) takes chunks_per_thread 1..", kMaxVptPipe, ", at most ",
              kMaxPipeBlock, " threads per row and no flag 4");
  TORCH_CHECK((flags & kRowsLateModulation) == 0 || (vpt >= 1 && tpr <= kMaxLateBlock), op,
              ": flag 4 (late scale/shift) needs chunks_per_thread >= 1 and at most ", kMaxLateBlock,
              " threads per row");
  const int64_t n = 16 / x.element_size();
  const int64_t d = x.dim() >= 1 ? x.size(-1) : 0;
  if (strip_rows == 0) {
    TORCH_CHECK(vpt >= 0 && vpt <= kMaxVptMod && valid_vpt(vpt == 0 ? 1 : vpt), op,
                ": chunks_per_thread must be 0 (looping kernel) or 1..", kMaxVptMod, ", got ", vpt);
    if (vpt == 0) TORCH_CHECK(tpr % 32 == 0, op, ": the looping kernel (chunks_per_thread=0) needs whole warps");
  } else {
    TORCH_CHECK(vpt >= 1 && vpt <= kMaxVptColstat, op, ": the column-stationary kernel takes chunks_per_thread 1..",
                kMaxVptColstat, ", got ", vpt);
    TORCH_CHECK(tpr <= kMaxColstatBlock, op, ": the column-stationary kernel takes at most ", kMaxColstatBlock,
                " threads per row, got ", tpr);
  }
  if (vpt > 0)
    TORCH_CHECK(tpr * vpt * n >= d, op, ": ", tpr, " threads x ", vpt, " chunks of ", n,
                " elements do not cover a row of ", d);
}

// Decodes the AdaLN *_with_config ops' launch knobs (validated by check_adaln_config).
void set_adaln_config(NormRequest& q, int64_t tpr, int64_t vpt, int64_t strip_rows, int64_t flags) {
  q.tpr = static_cast<int>(tpr);
  q.vpt = static_cast<int>(vpt);
  q.strip_rows = static_cast<int>(strip_rows);
  q.colstat_flags = static_cast<int>(flags & (kColstatStream | kColstatPrefetch));
  q.late_modulation = (flags & kRowsLateModulation) != 0;
  q.pipe_stages = (flags & kAdalnPipe2) != 0 ? 2 : (flags & kAdalnPipe3) != 0 ? 3 : 0;
  q.lean = (flags & kRowsLean) != 0;
  q.reload = (flags & kRowsReload) != 0;
  q.hints = (flags & kLeanHints) != 0;
}

}  // namespace
}  // namespace ltx

at::Tensor rms_norm_modulate_with_config(const at::Tensor& x, const std::optional<at::Tensor>& weight,
                                         const at::Tensor& scale, const at::Tensor& shift, double eps,
                                         int64_t threads_per_row, int64_t chunks_per_thread, int64_t rows_per_block,
                                         int64_t flags) {
  const char* op = "rms_norm_modulate_with_config";
  ltx::check_float_cuda(x, op, "x");
  ltx::check_adaln_config(op, x, threads_per_row, chunks_per_thread, rows_per_block, flags);
  ltx::NormRequest q{op, x, weight, scale, shift, std::nullopt, std::nullopt, eps};
  ltx::set_adaln_config(q, threads_per_row, chunks_per_thread, rows_per_block, flags);
  return std::get<0>(ltx::norm_forward(q));
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm_modulate_with_config(
    const at::Tensor& x, const at::Tensor& residual, const std::optional<at::Tensor>& gate,
    const std::optional<at::Tensor>& weight, const at::Tensor& scale, const at::Tensor& shift, double eps,
    int64_t threads_per_row, int64_t chunks_per_thread, int64_t rows_per_block, int64_t flags) {
  const char* op = "add_rms_norm_modulate_with_config";
  ltx::check_float_cuda(x, op, "x");
  ltx::check_adaln_config(op, x, threads_per_row, chunks_per_thread, rows_per_block, flags);
  ltx::NormRequest q{op, x, weight, scale, shift, residual, gate, eps};
  ltx::set_adaln_config(q, threads_per_row, chunks_per_thread, rows_per_block, flags);
  return ltx::norm_forward(q);
}

at::Tensor gelu_tanh(const at::Tensor& x_in) { return ltx::gelu_forward("gelu_tanh", x_in, 0, 0); }

at::Tensor gelu_tanh_with_config(const at::Tensor& x, int64_t threads_per_block, int64_t unroll) {
  const char* op = "gelu_tanh_with_config";
  ltx::check_float_cuda(x, op, "x");
  const auto in = [](const auto& choices, int64_t v) {
    return std::find(std::begin(choices), std::end(choices), v) != std::end(choices);
  };
  TORCH_CHECK(in(ltx::kGeluThreadChoices, threads_per_block), op, ": threads_per_block must be 64, 128 or 256, got ",
              threads_per_block);
  TORCH_CHECK(in(ltx::kGeluUnrollChoices, unroll), op, ": unroll must be 1, 2, 4 or 8, got ", unroll);
  return ltx::gelu_forward(op, x, static_cast<int>(threads_per_block), static_cast<int>(unroll));
}

at::Tensor rope_interleaved(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return ltx::rope_forward("rope_interleaved", x, cos, sin);
}

at::Tensor rope_interleaved_with_config(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                        int64_t chunks_per_thread, int64_t elements_per_thread, int64_t flags) {
  const char* op = "rope_interleaved_with_config";
  ltx::check_float_cuda(x, op, "x");
  const bool known = chunks_per_thread == 0 || std::find(std::begin(ltx::kRopeFlatCpt), std::end(ltx::kRopeFlatCpt),
                                                         chunks_per_thread) != std::end(ltx::kRopeFlatCpt);
  TORCH_CHECK(known, op, ": chunks_per_thread must be 0 (the per-row kernel) or 1, 2, 4 (the flat kernel), got ",
              chunks_per_thread);
  const bool narrow = std::find(std::begin(ltx::kRopeNarrowElems), std::end(ltx::kRopeNarrowElems),
                                elements_per_thread) != std::end(ltx::kRopeNarrowElems);
  TORCH_CHECK(elements_per_thread == 0 || (narrow && chunks_per_thread == 1), op,
              ": elements_per_thread must be 0 (16-byte chunks of x) or 2, 4 (the narrow flat kernel, with "
              "chunks_per_thread 1), got ",
              elements_per_thread, " with chunks_per_thread ", chunks_per_thread);
  TORCH_CHECK(flags == 0 || (flags == ltx::kRopeStreaming && elements_per_thread != 0), op,
              ": flags must be 0 or ", ltx::kRopeStreaming, " (streaming cache hints, narrow kernel only), got ", flags,
              " with elements_per_thread ", elements_per_thread);
  return ltx::rope_forward(op, x, cos, sin, static_cast<int>(chunks_per_thread), static_cast<int>(elements_per_thread),
                           flags == ltx::kRopeStreaming);
}

at::Tensor rms_norm_rope(const at::Tensor& x, const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                         const at::Tensor& sin, double eps) {
  return std::get<0>(ltx::norm_rope_forward("rms_norm_rope", x, std::nullopt, weight, std::nullopt, cos, sin, eps));
}

std::tuple<at::Tensor, at::Tensor> rms_norm_rope_qk(const at::Tensor& q, const at::Tensor& k,
                                                    const std::optional<at::Tensor>& weight_q,
                                                    const std::optional<at::Tensor>& weight_k, const at::Tensor& cos,
                                                    const at::Tensor& sin, double eps) {
  return ltx::norm_rope_forward("rms_norm_rope_qk", q, k, weight_q, weight_k, cos, sin, eps);
}

std::tuple<at::Tensor, at::Tensor> rms_norm_rope_qk_with_config(
    const at::Tensor& q, const at::Tensor& k, const std::optional<at::Tensor>& weight_q,
    const std::optional<at::Tensor>& weight_k, const at::Tensor& cos, const at::Tensor& sin, double eps,
    int64_t threads_per_row, int64_t chunks_per_thread, int64_t flags) {
  const char* op = "rms_norm_rope_qk_with_config";
  ltx::check_float_cuda(q, op, "q");
  TORCH_CHECK(ltx::valid_tpr(threads_per_row), op,
              ": threads_per_row must be a power of two <= 32 or a multiple of 32 <= ", ltx::kMaxThreadsPerRow,
              ", got ", threads_per_row);
  TORCH_CHECK(chunks_per_thread >= 1 && chunks_per_thread <= ltx::kMaxVptNormRope, op,
              ": chunks_per_thread must be 1..", ltx::kMaxVptNormRope, ", got ", chunks_per_thread);
  const int64_t n = 16 / q.element_size();
  const int64_t d = q.dim() >= 1 ? q.size(-1) : 0;
  TORCH_CHECK(threads_per_row * chunks_per_thread * n >= d, op, ": ", threads_per_row, " threads x ",
              chunks_per_thread, " chunks of ", n, " elements do not cover a row of ", d);
  const int64_t lean_variants = ltx::kLeanHints | ltx::kQkPrefetch;
  TORCH_CHECK(flags == 0 || ((flags & ltx::kRowsLean) != 0 && (flags & ~(ltx::kRowsLean | lean_variants)) == 0), op,
              ": flags must be 0 or 64 (the lean kernel) plus any of 256 (cache hints) and 512 (persistent, "
              "next row requested before the reduction), got ",
              flags);
  const bool lean = (flags & ltx::kRowsLean) != 0;
  TORCH_CHECK(!lean || (chunks_per_thread == 1 && threads_per_row <= ltx::kMaxLeanRopeBlock), op,
              ": flag 64 (the lean kernel) takes chunks_per_thread 1 and at most ", ltx::kMaxLeanRopeBlock,
              " threads per row");
  return ltx::norm_rope_forward(op, q, k, weight_q, weight_k, cos, sin, eps, static_cast<int>(threads_per_row),
                                static_cast<int>(chunks_per_thread), lean, (flags & ltx::kLeanHints) != 0,
                                (flags & ltx::kQkPrefetch) != 0);
}

bool set_pdl(bool enable) { return ltx::g_pdl.set(enable); }

bool set_cache_hints(bool enable) { return ltx::g_cache_hints.set(enable); }
