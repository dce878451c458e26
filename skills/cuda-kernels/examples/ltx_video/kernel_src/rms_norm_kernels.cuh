// rms_norm_kernels.cuh - the RMSNorm kernels (design notes in rms_norm.cu and README.md).
// Header-only so that tests/kernels_emulated.cpp can run them on a CPU.
#pragma once

#include "ltx_common.cuh"

namespace ltx {
namespace {

// h = residual + x [* gate] for one chunk, rounded to T in v (the residual stream eager
// keeps, and what the norm then normalizes).
template <typename T, int N>
__device__ __forceinline__ void add_residual_chunk(Pack<T, N>& v, const Pack<T, N>& r, bool gated,
                                                   const Pack<T, N>& g) {
  float xf[N], rf[N];
  unpack(v, xf);
  unpack(r, rf);
  if (gated) {
    float gf[N];
    unpack(g, gf);
#pragma unroll
    for (int i = 0; i < N; ++i) xf[i] = fmaf(xf[i], gf[i], rf[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) xf[i] = rf[i] + xf[i];
  }
  pack_floats(v, xf);
}

template <typename T, int N>
__device__ __forceinline__ void add_squares(const Pack<T, N>& v, float& ss) {
  float f[N];
  unpack(v, f);
#pragma unroll
  for (int i = 0; i < N; ++i) ss = fmaf(f[i], f[i], ss);
}

// The AdaLN output of one chunk (y = x [* w] on entry): y * (rstd * (1 + scale)) + shift,
// rstd folded in as fma(rstd, scale, rstd): two FFMAs per element instead of three. The AdaLN
// kernels run close to the schedulers' issue limit (repository HISTORY.md, "Fewer
// instructions per row and element").
template <typename T, int N>
__device__ __forceinline__ void modulate_chunk(float (&y)[N], float rstd, const Pack<T, N>& sv,
                                               const Pack<T, N>& hv) {
  float sf[N], hf[N];
  unpack(sv, sf);
  unpack(hv, hf);
#pragma unroll
  for (int i = 0; i < N; ++i) y[i] = fmaf(y[i], fmaf(rstd, sf[i], rstd), hf[i]);
}

// One output chunk of the AdaLN kernels that hold every operand in registers:
// v [* w] * (rstd * (1 + scale)) + shift, rounded once.
template <bool HAS_W, typename T, int N>
__device__ __forceinline__ Pack<T, N> modulated_chunk(const Pack<T, N>& v, float rstd, const Pack<T, N>& wv,
                                                      const Pack<T, N>& sv, const Pack<T, N>& hv) {
  float y[N];
  unpack(v, y);
  if constexpr (HAS_W) {
    float wf[N];
    unpack(wv, wf);
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] *= wf[i];
  }
  modulate_chunk(y, rstd, sv, hv);
  Pack<T, N> o;
  pack_floats(o, y);
  return o;
}

// The looping kernel's output chunk (vector or bounds-checked scalar path): y = v * rstd
// [* w], or with scale/shift the AdaLN output of modulate_chunk.
template <bool VEC, typename T, int N>
__device__ __forceinline__ void finish_chunk(const Pack<T, N>& v, float rstd, const T* __restrict__ w,
                                             const T* __restrict__ srow, const T* __restrict__ hrow,
                                             T* __restrict__ orow, int e, int valid) {
  Pack<T, N> wv, o;
  if (w != nullptr) load_pack<VEC>(wv, w + e, valid);
  float y[N];
  if (srow != nullptr) {
    Pack<T, N> sv, hv;
    load_pack<VEC>(sv, srow + e, valid);
    load_pack<VEC>(hv, hrow + e, valid);
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = w != nullptr ? to_float(v.e[i]) * to_float(wv.e[i]) : to_float(v.e[i]);
    modulate_chunk(y, rstd, sv, hv);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      y[i] = to_float(v.e[i]) * rstd;
      if (w != nullptr) y[i] *= to_float(wv.e[i]);
    }
  }
  pack_floats(o, y);
  store_pack<VEC>(orow + e, o, valid);
}

// Row-resident kernel (16-byte path only). `tpr` consecutive threads own a row, VPT 16-byte
// chunks each. Every operand a chunk needs (x; residual, gate: ADD; weight: HAS_W; scale,
// shift: MOD) is requested before the first value is used, so DRAM and the L1/L2-resident
// broadcast operands are in flight together; then the reduction, then the output from
// registers. (Loading weight/scale/shift after the reduction put one more round trip behind
// every row.) The operand set is a template parameter so a kernel holds registers only for
// what it reads: registers set occupancy, hence bytes in flight per SM. Above 6 chunks the
// weight is read after the reduction: held early next to 8-16 x chunks it spills.
// LATE (AdaLN, opt-in flag 4): scale/shift read after the reduction, chunk by chunk (they
// are per-batch rows every row re-reads: L1/L2 hits). Holding them early costs 8 registers
// per chunk (modulate at 4 chunks: 92 vs 52, 5 vs 9 resident 128-thread blocks).
// LEAN (AdaLN, 1-2 chunks; the weightless fused add's default, adaln_default_lean; flag 64):
// RowIndex::lean offsets and a register cap. Why: the fused add at 4 chunks holds 126
// registers (23 % occupancy) and lost to torch.compile's 32-register two-pass kernel;
// uncapped at 1-2 chunks it still took 64-84 (HISTORY.md, "The lean fused add").
// RELOAD (on top of LEAN, flag 128): nothing held across the reduction; x (or the h just
// stored) is read again after it, as torch.compile's two-pass kernels do. Bit-identical.
// HINTS (on top of LEAN, flags 64 | 256): torch.compile's cache hints (x, residual
// evict-first; weight, scale, shift, gate evict-last). Bit-identical.
// rows_min_blocks: the launch bounds' minimum resident blocks (LATE: 256 threads, else 512),
// i.e. register caps LATE 64 / 80, LEAN 40 / 64, RELOAD 32 / 40 / 64 (the fused add at two
// chunks spilled at 40). The trap: 0 means "not given" to ptxas; an explicit 1 made it
// allocate more (plain norm with weight at 4 chunks: 74 vs 64) and RMSNorm lost 5-8 %.
// (Register counts: ptxas -v, sm_90.)
constexpr int rows_min_blocks(int vpt, bool add, bool late, bool lean, bool reload) {
  if (late) return add ? 3 : 4;
  if (reload) return add ? (vpt == 1 ? 3 : 2) : (vpt == 1 ? 4 : 3);
  if (lean) return vpt == 1 ? 3 : 2;
  return 0;
}

template <typename T, int VPT, bool HAS_W, bool MOD, bool ADD, bool LATE = false, bool LEAN = false,
          bool RELOAD = false, bool HINTS = false>
__global__ void __launch_bounds__(LATE ? 256 : 512, rows_min_blocks(VPT, ADD, LATE, LEAN, RELOAD))
    rms_norm_rows_kernel(const NormArgs a) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  static_assert(!LATE || MOD, "LATE is the AdaLN kernels' variant");
  static_assert(!LEAN || (MOD && !LATE && VPT <= kMaxVptLean), "LEAN is the AdaLN kernels' 1-2 chunk variant");
  static_assert(!RELOAD || LEAN, "RELOAD is a variant of the lean kernel");
  static_assert(!HINTS || (LEAN && !RELOAD), "HINTS is a variant of the lean kernel");
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[32];
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(a.tpr_div(blockDim.x));
  const int slot = static_cast<int>(a.tpr_div(threadIdx.x));
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  const T* __restrict__ w = static_cast<const T*>(a.weight);
  const T* __restrict__ scale = static_cast<const T*>(a.scale);
  const T* __restrict__ shift = static_cast<const T*>(a.shift);
  T* __restrict__ out = static_cast<T*>(a.out);
  const float inv_d = a.inv_d;
  constexpr bool kEarlyW = HAS_W && VPT <= 6 && !RELOAD;
  constexpr bool kLateMod = LATE || RELOAD;  // scale/shift are read after the reduction
  const Hints hints = HINTS ? make_hints() : Hints{};

  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rpb; base < a.rows;
       base += static_cast<int64_t>(gridDim.x) * rpb) {
    const int64_t row = base + slot;
    const bool active = row < a.rows;
    P v[VPT];
    P wv[kEarlyW ? VPT : 1];
    P sv[MOD && !kLateMod ? VPT : 1], hv[MOD && !kLateMod ? VPT : 1];
    float ss[1] = {0.0f};
    if (active) {
      const int64_t xoff = row_at<LEAN>(a.xi, row);
      const T* __restrict__ xr = x + xoff;
      const T* __restrict__ rr = nullptr;
      const T* __restrict__ gr = nullptr;
      // scale's row offset, reused for shift and gate when they are views alike (a.same).
      // Evaluated after x's loads are issued: computed before them, it raised modulate at
      // 3 chunks from 64 to 77 registers (ptxas -v, sm_90).
      int64_t soff = 0;
      P rv[ADD ? VPT : 1], gv[ADD ? VPT : 1];
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) load_vec<HINTS, true>(v[k], xr + e, hints);
      }
      if constexpr (ADD) {
        rr = static_cast<const T*>(a.residual) + ((a.same & kResidualAsX) ? xoff : row_at<LEAN>(a.ri, row));
        if (a.gate != nullptr) {
          if constexpr (MOD && !kLateMod) soff = row_at<LEAN>(a.si, row);
          gr = static_cast<const T*>(a.gate) +
               (MOD && !kLateMod && (a.same & kGateAsScale) ? soff : row_at<LEAN>(a.gi, row));
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            load_vec<HINTS, true>(rv[k], rr + e, hints);
            if (gr != nullptr) load_vec<HINTS, false>(gv[k], gr + e, hints);
          }
        }
      }
      if constexpr (kEarlyW) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) load_vec<HINTS, false>(wv[k], w + e, hints);
        }
      }
      if constexpr (MOD && !kLateMod) {
        if (!ADD || a.gate == nullptr) soff = row_at<LEAN>(a.si, row);
        const T* __restrict__ srow = scale + soff;
        const T* __restrict__ hrow = shift + ((a.same & kShiftAsScale) ? soff : row_at<LEAN>(a.hi, row));
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            load_vec<HINTS, false>(sv[k], srow + e, hints);
            load_vec<HINTS, false>(hv[k], hrow + e, hints);
          }
        }
      }
      if constexpr (ADD) {
        // h = residual + x [* gate], stored in T (the residual stream eager keeps) and
        // normalized as stored.
        T* __restrict__ ro = static_cast<T*>(a.residual_out) + row * d;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            add_residual_chunk(v[k], rv[k], gr != nullptr, gv[k]);
            store_pack16(ro + e, v[k]);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) add_squares(v[k], ss[0]);
      }
    }
    row_sum<1>(ss, tpr, slot, red);
    if (active) {
      const float rstd = rsqrtf(ss[0] * inv_d + a.eps);
      T* __restrict__ orow = out + row * d;
      const int64_t soff_late = kLateMod ? row_at<LEAN>(a.si, row) : 0;
      const T* __restrict__ srow_late = kLateMod ? scale + soff_late : nullptr;
      const T* __restrict__ hrow_late =
          kLateMod ? shift + ((a.same & kShiftAsScale) ? soff_late : row_at<LEAN>(a.hi, row)) : nullptr;
      if constexpr (RELOAD) {
        // h comes back from residual_out, which this thread stored before the reduction:
        // a coherent load (the read-only path may not see this kernel's own writes).
        if constexpr (ADD) {
          const T* ro = static_cast<const T*>(a.residual_out) + row * d;
#pragma unroll
          for (int k = 0; k < VPT; ++k) {
            const int e = (lane + k * tpr) * N;
            if (e < d) load_pack16_coherent(v[k], ro + e);
          }
        } else {
          const T* __restrict__ xr = x + row_at<LEAN>(a.xi, row);
#pragma unroll
          for (int k = 0; k < VPT; ++k) {
            const int e = (lane + k * tpr) * N;
            if (e < d) load_pack<true>(v[k], xr + e, N);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          float y[N];
          unpack(v[k], y);
          if constexpr (!MOD) {  // AdaLN folds rstd into its factor (modulate_chunk)
#pragma unroll
            for (int i = 0; i < N; ++i) y[i] *= rstd;
          }
          if constexpr (HAS_W) {
            float wf[N];
            if constexpr (kEarlyW) {
              unpack(wv[k], wf);
            } else {
              P wl;
              load_pack<true>(wl, w + e, N);
              unpack(wl, wf);
            }
#pragma unroll
            for (int i = 0; i < N; ++i) y[i] *= wf[i];
          }
          if constexpr (MOD) {
            if constexpr (kLateMod) {
              P sl, hl;
              load_pack<true>(sl, srow_late + e, N);
              load_pack<true>(hl, hrow_late + e, N);
              modulate_chunk(y, rstd, sl, hl);
            } else {
              modulate_chunk(y, rstd, sv[k], hv[k]);
            }
          }
          P o;
          pack_floats(o, y);
          store_pack16(orow + e, o);
        }
      }
    }
  }
}

// Column-stationary AdaLN kernel (opt-in: *_with_config with rows_per_block >= 1). It tested
// whether re-reading scale/shift (weight, gate) from L2 for every row holds the rows kernel
// back; the H200 sweep refuted it (at most 5 % faster on one shape, 2-13 % slower on most;
// HISTORY.md, "The AdaLN sweep"), so it stays a sweep knob. `tpr` threads own a strip of up to
// `strip_rows` rows of ONE batch (the host guarantees per-batch scale/shift/gate) and keep its
// weight/scale/shift/gate chunks in registers while walking it. Every slot runs strip_rows
// iterations, active or not, because row_sum may __syncthreads.
//   STREAM (flag 1): ld/st.global.cs on x, residual and outputs (touched once).
//   PREFETCH (flag 2): the next row's x (and residual) requested before this row's reduction.
// __launch_bounds__(256, 1): with (256) alone ptxas capped some instantiations at 64-128
// registers and spilled 8-44 bytes - L1 traffic the kernel exists to remove.
template <bool STREAM, typename T, int N>
__device__ __forceinline__ void load_once(Pack<T, N>& dst, const T* __restrict__ p) {
  if constexpr (STREAM)
    load_pack16_cs(dst, p);
  else
    load_pack<true>(dst, p, N);
}

template <bool STREAM, typename T, int N>
__device__ __forceinline__ void store_once(T* __restrict__ p, const Pack<T, N>& v) {
  if constexpr (STREAM)
    store_pack16_cs(p, v);
  else
    store_pack16(p, v);
}

template <typename T, int VPT, bool HAS_W, bool ADD, bool STREAM, bool PREFETCH>
__global__ void __launch_bounds__(256, 1) rms_norm_mod_colstat_kernel(const NormArgs a, const int strip_rows) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[32];
  const int tpr = a.tpr;
  const int slots = static_cast<int>(a.tpr_div(blockDim.x));
  const int slot = static_cast<int>(a.tpr_div(threadIdx.x));
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  const T* __restrict__ w = static_cast<const T*>(a.weight);
  T* __restrict__ out = static_cast<T*>(a.out);
  const float inv_d = a.inv_d;
  const int64_t inner = a.xi.inner;  // rows per batch
  const int64_t strips_per_batch = (inner + strip_rows - 1) / strip_rows;
  const int64_t strips = (a.rows / inner) * strips_per_batch;
  const bool gated = ADD && a.gate != nullptr;

  for (int64_t first = static_cast<int64_t>(blockIdx.x) * slots; first < strips;
       first += static_cast<int64_t>(gridDim.x) * slots) {
    const int64_t strip = first + slot;
    const bool live = strip < strips;
    int64_t start = 0;
    int len = 0;
    P wv[HAS_W ? VPT : 1], sv[VPT], hv[VPT], gv[ADD ? VPT : 1];
    P v[VPT], rv[ADD ? VPT : 1];
    if (live) {
      const int64_t batch = strip / strips_per_batch;
      const int64_t j = (strip - batch * strips_per_batch) * strip_rows;
      start = batch * inner + j;
      len = static_cast<int>(inner - j < strip_rows ? inner - j : strip_rows);
      // The strip's first x row goes out first (DRAM, the long wait), then the stationary
      // operands, which every later row of the strip reuses from registers.
      const T* __restrict__ xr = x + a.xi(start);
      const T* __restrict__ rr = ADD ? static_cast<const T*>(a.residual) + a.ri(start) : nullptr;
      const T* __restrict__ srow = static_cast<const T*>(a.scale) + a.si(start);
      const T* __restrict__ hrow = static_cast<const T*>(a.shift) + a.hi(start);
      const T* __restrict__ grow = gated ? static_cast<const T*>(a.gate) + a.gi(start) : nullptr;
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          load_once<STREAM>(v[k], xr + e);
          if constexpr (ADD) load_once<STREAM>(rv[k], rr + e);
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          if constexpr (HAS_W) load_pack<true>(wv[k], w + e, N);
          load_pack<true>(sv[k], srow + e, N);
          load_pack<true>(hv[k], hrow + e, N);
          if constexpr (ADD) {
            if (gated) load_pack<true>(gv[k], grow + e, N);
          }
        }
      }
    }
    for (int r = 0; r < strip_rows; ++r) {
      const bool active = r < len;  // len is 0 for a slot past the last strip
      const bool more = r + 1 < len;
      const int64_t row = start + r;
      float ss[1] = {0.0f};
      if (active) {
        if constexpr (ADD) {
          // h = residual + x [* gate], stored in T and normalized as stored.
          T* __restrict__ ro = static_cast<T*>(a.residual_out) + row * d;
#pragma unroll
          for (int k = 0; k < VPT; ++k) {
            const int e = (lane + k * tpr) * N;
            if (e < d) {
              add_residual_chunk(v[k], rv[k], gated, gv[k]);
              store_once<STREAM>(ro + e, v[k]);
            }
          }
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) add_squares(v[k], ss[0]);
        }
      }
      P nv[PREFETCH ? VPT : 1], nr[PREFETCH && ADD ? VPT : 1];
      if constexpr (PREFETCH) {
        if (more) {
          const T* __restrict__ xr = x + a.xi(row + 1);
          const T* __restrict__ rr = ADD ? static_cast<const T*>(a.residual) + a.ri(row + 1) : nullptr;
#pragma unroll
          for (int k = 0; k < VPT; ++k) {
            const int e = (lane + k * tpr) * N;
            if (e < d) {
              load_once<STREAM>(nv[k], xr + e);
              if constexpr (ADD) load_once<STREAM>(nr[k], rr + e);
            }
          }
        }
      }
      row_sum<1>(ss, tpr, slot, red);
      if (active) {
        const float rstd = rsqrtf(ss[0] * inv_d + a.eps);
        T* __restrict__ orow = out + row * d;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            store_once<STREAM>(orow + e, modulated_chunk<HAS_W>(v[k], rstd, wv[k], sv[k], hv[k]));
          }
        }
      }
      if (more) {
        if constexpr (PREFETCH) {
#pragma unroll
          for (int k = 0; k < VPT; ++k) {
            v[k] = nv[k];
            if constexpr (ADD) rv[k] = nr[k];
          }
        } else {
          const T* __restrict__ xr = x + a.xi(row + 1);
          const T* __restrict__ rr = ADD ? static_cast<const T*>(a.residual) + a.ri(row + 1) : nullptr;
#pragma unroll
          for (int k = 0; k < VPT; ++k) {
            const int e = (lane + k * tpr) * N;
            if (e < d) {
              load_once<STREAM>(v[k], xr + e);
              if constexpr (ADD) load_once<STREAM>(rv[k], rr + e);
            }
          }
        }
      }
    }
  }
}

// Pipelined AdaLN kernel (default modulate with 2 stages; flags ADALN_PIPE2 / 3). Why: the rows
// kernel keeps DRAM requests in flight only while a row waits for x; every cycle after the data
// arrived (unpacking, barriers, math, stores: more for AdaLN) requests fewer bytes, and the
// registers holding x cap how many rows wait. Here a persistent grid copies the next STAGES-1
// row groups' x (and residual) into shared memory with cp.async while computing the current
// one: in flight through the compute, no registers. Same layout, order and math as the rows
// kernel: bit-identical. 16-byte path only. __launch_bounds__(256): with (512) ptxas capped
// several instantiations at 64 registers and spilled 28-48 bytes.
#if defined(LTX_CPU_EMULATION)
#define LTX_DYNAMIC_SMEM(name) unsigned char* name = emu_dynamic_smem
#else
#define LTX_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

template <typename T, int VPT, bool HAS_W, bool ADD, int STAGES>
__global__ void __launch_bounds__(256) rms_norm_mod_pipe_kernel(const NormArgs a) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  static_assert(STAGES >= 2, "one stage computes while the others load");
  constexpr int N = VecWidth<T>::value;
  constexpr int kRowsPerSlot = ADD ? 2 : 1;  // x, then the residual
  using P = Pack<T, N>;
  __shared__ float red[32];
  LTX_DYNAMIC_SMEM(smem_raw);
  T* const stages = reinterpret_cast<T*>(smem_raw);
  const int tpr = a.tpr;
  const int rpb = static_cast<int>(a.tpr_div(blockDim.x));
  const int slot = static_cast<int>(a.tpr_div(threadIdx.x));
  const int lane = static_cast<int>(threadIdx.x) - slot * tpr;
  const int d = a.d;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  const T* __restrict__ residual = static_cast<const T*>(a.residual);
  const T* __restrict__ w = static_cast<const T*>(a.weight);
  const T* __restrict__ scale = static_cast<const T*>(a.scale);
  const T* __restrict__ shift = static_cast<const T*>(a.shift);
  T* __restrict__ out = static_cast<T*>(a.out);
  const float inv_d = a.inv_d;
  const int64_t groups = (a.rows + rpb - 1) / rpb;
  const int64_t step = gridDim.x;
  // This thread's part of stage s: its slot's x row (and residual row after it).
  auto stage_row = [&](int s) { return stages + (static_cast<int64_t>(s) * rpb + slot) * kRowsPerSlot * d; };
  // Requests group g's rows into stage s. Every thread commits a group, empty or not, so
  // that wait_group counts the same groups in every thread.
  auto request = [&](int64_t g, int s) {
    const int64_t row = g * rpb + slot;
    if (row < a.rows) {  // past the last group every row is too
      T* dst = stage_row(s);
      const int64_t xoff = a.xi(row);
      const T* __restrict__ xr = x + xoff;
      const T* __restrict__ rr = ADD ? residual + ((a.same & kResidualAsX) ? xoff : a.ri(row)) : nullptr;
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          cp_async16(dst + e, xr + e);
          if constexpr (ADD) cp_async16(dst + d + e, rr + e);
        }
      }
    }
    cp_async_commit();
  };

  // The per-batch operands (scale, shift, gate: [B, 1, D] in LTX) stay in registers across rows,
  // re-read only when the row's offsets change; read per row they put 2-3 more 16-byte L1 reads
  // per chunk through the load pipe. Weighted kernels read per row: holding them took weighted
  // modulate from 100 to 110 registers (4 vs 5 resident blocks), with the weight 125.
  constexpr bool kHold = !HAS_W;
  P sv[VPT], hv[VPT], gv[ADD ? VPT : 1];
  int64_t held_s = -1, held_h = -1, held_g = -1;  // offsets the held chunks came from

  int64_t g = blockIdx.x;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) request(g + s * step, s);
  int cur = 0;
  for (; g < groups; g += step) {
    // The stage refilled here was read (into registers, and used) by this same thread one
    // iteration ago.
    request(g + (STAGES - 1) * step, cur == 0 ? STAGES - 1 : cur - 1);
    const int64_t row = g * rpb + slot;
    const bool active = row < a.rows;
    P v[VPT], wv[HAS_W ? VPT : 1];
    float ss[1] = {0.0f};
    const bool gated = ADD && a.gate != nullptr;
    if (active) {
      // The L1/L2-resident weight goes out before the wait for x.
      if constexpr (HAS_W) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) load_pack<true>(wv[k], w + e, N);
        }
      }
      const int64_t soff = a.si(row);
      const int64_t hoff = (a.same & kShiftAsScale) ? soff : a.hi(row);
      const int64_t goff = gated ? ((a.same & kGateAsScale) ? soff : a.gi(row)) : -1;
      // Issued before the wait for x, so a reload overlaps it.
      if (!kHold || soff != held_s || hoff != held_h || goff != held_g) {
        held_s = soff;
        held_h = hoff;
        held_g = goff;
        const T* __restrict__ gr = gated ? static_cast<const T*>(a.gate) + goff : nullptr;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            load_pack<true>(sv[k], scale + soff + e, N);
            load_pack<true>(hv[k], shift + hoff + e, N);
            if constexpr (ADD) {
              if (gated) load_pack<true>(gv[k], gr + e, N);
            }
          }
        }
      }
    }
    cp_async_wait<STAGES - 1>();  // this group's copies (the STAGES-1 later ones may still fly)
    if (active) {
      const T* src = stage_row(cur);
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) load_shared16(v[k], src + e);
      }
      if constexpr (ADD) {
        T* __restrict__ ro = static_cast<T*>(a.residual_out) + row * d;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int e = (lane + k * tpr) * N;
          if (e < d) {
            P rv;
            load_shared16(rv, src + d + e);
            add_residual_chunk(v[k], rv, gated, gv[k]);
            store_pack16(ro + e, v[k]);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) add_squares(v[k], ss[0]);
      }
    }
    row_sum<1>(ss, tpr, slot, red);
    if (active) {
      const float rstd = rsqrtf(ss[0] * inv_d + a.eps);
      T* __restrict__ orow = out + row * d;
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int e = (lane + k * tpr) * N;
        if (e < d) {
          store_pack16(orow + e, modulated_chunk<HAS_W>(v[k], rstd, wv[k], sv[k], hv[k]));
        }
      }
    }
    cur = cur == STAGES - 1 ? 0 : cur + 1;
  }
  cp_async_wait<0>();  // nothing may still be writing shared memory when the block exits
}

// One block per row, two passes over global memory (the second mostly hits L2).
template <typename T, bool VEC>
__global__ void __launch_bounds__(512) rms_norm_loop_kernel(const NormArgs a) {
  pdl_wait();  // before any global access (ltx_common.cuh)
  constexpr int N = VecWidth<T>::value;
  using P = Pack<T, N>;
  __shared__ float red[32];
  const int64_t d = a.d;
  const T* __restrict__ x = static_cast<const T*>(a.x);
  const T* __restrict__ w = static_cast<const T*>(a.weight);
  const T* __restrict__ scale = static_cast<const T*>(a.scale);
  const T* __restrict__ shift = static_cast<const T*>(a.shift);
  T* __restrict__ out = static_cast<T*>(a.out);
  const int64_t step = static_cast<int64_t>(blockDim.x) * N;
  const float inv_d = a.inv_d;
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* __restrict__ xr = x + a.xi(row);
    float ss[1] = {0.0f};
    for (int64_t e = static_cast<int64_t>(threadIdx.x) * N; e < d; e += step) {
      P v;
      load_pack<VEC>(v, xr + e, static_cast<int>(d - e < N ? d - e : N));
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float f = to_float(v.e[i]);
        ss[0] = fmaf(f, f, ss[0]);
      }
    }
    row_sum<1>(ss, static_cast<int>(blockDim.x), 0, red);
    const float rstd = rsqrtf(ss[0] * inv_d + a.eps);
    const T* __restrict__ srow = scale != nullptr ? scale + a.si(row) : nullptr;
    const T* __restrict__ hrow = shift != nullptr ? shift + a.hi(row) : nullptr;
    T* __restrict__ orow = out + row * d;
    for (int64_t e = static_cast<int64_t>(threadIdx.x) * N; e < d; e += step) {
      const int valid = static_cast<int>(d - e < N ? d - e : N);
      P v;
      load_pack<VEC>(v, xr + e, valid);
      // finish_chunk takes an int offset; pass shifted base pointers instead.
      finish_chunk<VEC>(v, rstd, w != nullptr ? w + e : nullptr, srow != nullptr ? srow + e : nullptr,
                        hrow != nullptr ? hrow + e : nullptr, orow + e, 0, valid);
    }
  }
}

}  // namespace
}  // namespace ltx
