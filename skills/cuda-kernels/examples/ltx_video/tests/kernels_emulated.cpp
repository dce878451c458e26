// kernels_emulated.cpp - the example's CUDA kernels run on a CPU against float64, through
// the skill's CPU emulator (assets/emulator/cuda_emu.h, references/cpu-emulator.md).
//
// Built and run by test_ltx_kernels_cpu.py (test_kernels_match_float64_on_the_cpu_emulator):
//   g++ -std=c++20 -O1 -DLTX_CPU_EMULATION -I<kernel_src> -I<cuda include> kernels_emulated.cpp -lpthread
//   ./a.out [full]
// It calls the kernels directly with hand-built NormArgs/RopeArgs: every launch
// configuration (threads per row x chunks per thread), strided and broadcast rows (the
// [B, 1, D] AdaLN slices, [1, S, D] cos/sin), the vector and the scalar paths, the fused
// residual add, the looping kernel and the grid-stride loops, in fp32, fp16 and bf16.
// Exit status 0 and "failures: 0" when every output is within the GPU tests' bounds.
#include "../../../assets/emulator/cuda_emu.h"

// The most dynamic shared memory an sm_90 block may opt into; every emu_launch gets it.
inline constexpr size_t kEmuDynamicSmemBytes = 227 * 1024;
// What the kernel headers call under LTX_CPU_EMULATION (defined before they are included).
#define emu_dynamic_smem (::emu::dynamic_smem<unsigned char>())

inline void emu_check_align(const void* p, uintptr_t bytes = 16) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0) {
    std::fprintf(stderr, "misaligned %u-byte access at %p\n", static_cast<unsigned>(bytes), p);
    std::abort();
  }
}

// Runs kernel() as every thread of a grid of `grid` blocks of `block` threads; aborts on a
// launch failure (the exit status reports it).
template <typename F>
void emu_launch(unsigned grid, unsigned block, F kernel) {
  static const char key = 0;  // the launch's identity for the shared-memory opt-in
  cudaFuncSetAttribute(&key, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kEmuDynamicSmemBytes));
  emu::LaunchShape s;
  s.grid = dim3(grid);
  s.block = dim3(block);
  s.smem = kEmuDynamicSmemBytes;
  const std::function<void()> body = kernel;
  if (emu::launch(s, &key, body) != cudaSuccess) {
    std::fprintf(stderr, "launch failed: %s\n", emu::last_failure().c_str());
    std::abort();
  }
}

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>

#include "gelu_kernels.cuh"
#include "rms_norm_kernels.cuh"
#include "rope_kernels.cuh"

using namespace ltx;
static bool full = false;

static std::mt19937 rng(1234);
static int failures = 0;
template <typename T> float tf(T v) { return to_float(v); }
template <typename T> T ff(float v) { return from_float<T>(v); }
template <typename T> std::vector<T> rand_vec(size_t n, float scale = 1, float shift = 0) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<T> v(n);
  for (auto& e : v) e = ff<T>(nd(rng) * scale + shift);
  return v;
}
template <typename T> double tol() { return sizeof(T) == 4 ? 2e-5 : (std::is_same_v<T, __half> ? 1.5e-3 : 8e-3); }
template <typename T>
void check(const char* what, const std::vector<T>& out, const std::vector<double>& ref, double tmul = 1, const std::vector<double>* mag = nullptr) {
  double mx = 0; for (double r : ref) mx = std::max(mx, std::fabs(r));
  double floor = 1e-3 * mx + 1e-30, worst = 0; size_t wi = 0;
  // Near zero T's values are spaced by its smallest subnormal (fp16: 2^-24), so rounding
  // alone may miss by half of it: a reference of 3e-9 is 0 in fp16, not an error.
  const double spacing = sizeof(T) == 4 ? 0x1p-149 : (std::is_same_v<T, __half> ? 0x1p-24 : 0x1p-133);
  for (size_t i = 0; i < ref.size(); ++i) {
    double o = tf(out[i]);
    if (!std::isfinite(o)) { worst = 1e9; wi = i; break; }
    double sc = std::fabs(ref[i]); if (mag) sc = std::max(sc, (*mag)[i]);
    double rel = std::max(0.0, std::fabs(o - ref[i]) - 0.5 * spacing) / (sc + floor);
    if (rel > worst) { worst = rel; wi = i; }
  }
  bool ok = worst <= tol<T>() * tmul;
  if (!ok) { failures++; printf("FAIL %s: rel %.3g at %zu (out %g ref %g)\n", what, worst, wi, (double)tf(out[wi]), ref[wi]); }
}
template <typename T> const char* tn() { return sizeof(T) == 4 ? "f32" : (std::is_same_v<T, __half> ? "f16" : "bf16"); }
static int rpb(int tpr) { return tpr >= 256 ? 1 : 256 / tpr; }

// x [B, S, D] stored with row stride D + pad; scale/shift slices of [B, 1, 6, D] (per batch)
// or, per_token, of [B, S, 6, D] (LTX-Video 0.9.5+'s per-token timestep embedding).
// pipe > 0: the opt-in pipelined AdaLN kernel with that many stages, on a grid of at most 3
// blocks (each walks several row groups, so stages wrap around) - same checks.
// mixed: operands the kernels may share a row offset between get different layouts - the
// residual a row stride N elements longer than x's, shift and gate per token where scale is
// per batch (or the reverse) - so NormArgs::same is 0 and every RowIndex is evaluated; a.same
// is set as ltx_ops.cpp sets it.
template <typename T>
void test_norm(int B, int S, int D, int tpr, int vpt, bool weight, bool mod, bool add, bool gate, int pad,
               bool per_token = false, bool late = false, int pipe = 0, bool mixed = false, int lean = 0) {
  const int N = VecWidth<T>::value;
  int64_t rows = (int64_t)B * S, rs = D + pad, rrs = mixed ? rs + N : rs;
  auto xs = rand_vec<T>(rows * rs, 2.0f), rsd = rand_vec<T>(rows * rrs, 1.5f);
  auto w = rand_vec<T>(D, 0.4f, 1.0f);
  const bool tok_s = per_token, tok_h = per_token != mixed;  // scale; shift and gate
  const int64_t trows = tok_s || tok_h ? (int64_t)B * S : B;  // rows of the [.., 6, D] table
  auto table = rand_vec<T>((size_t)trows * 6 * D, 0.3f);
  auto table_index = [&](bool tok) {
    return tok ? make_row_index(S, (int64_t)S * 6 * D, 6LL * D) : make_row_index(S, 6LL * D, 0);
  };
  const RowIndex ts = table_index(tok_s), th = table_index(tok_h);
  auto trow = [&](int64_t r, bool tok) -> size_t { return (size_t)(tok ? r : r / S) * 6 * D; };
  std::vector<T> out(rows * D, ff<T>(NAN)), rout(rows * D, ff<T>(NAN));
  NormArgs a{};
  a.x = xs.data(); a.xi = make_row_index(S, (int64_t)S * rs, rs);
  if (add) { a.residual = rsd.data(); a.ri = make_row_index(S, (int64_t)S * rrs, rrs); a.residual_out = rout.data();
             if (gate) { a.gate = table.data() + 2 * D; a.gi = th; } }
  if (weight) a.weight = w.data();
  if (mod) { a.scale = table.data() + D; a.si = ts; a.shift = table.data(); a.hi = th; }
  a.same = norm_shared_offsets(a);  // as ltx_ops.cpp sets it
  if (a.same != (mixed ? 0u : (add ? kResidualAsX : 0u) | (mod ? kShiftAsScale : 0u) | (mod && add && gate ? kGateAsScale : 0u)))
    std::abort();
  a.out = out.data(); a.rows = rows; set_row_shape(a, D, tpr); a.eps = 1e-6f;
  bool vec = D % N == 0 && rs % N == 0;
  if (pipe > 0) {
    const int r = norm_rows_per_block(tpr);
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>((rows + r - 1) / r, 3));
    if (rms_norm_pipe_smem(tpr, D, sizeof(T), add, pipe) > kEmuDynamicSmemBytes) std::abort();
    auto go = [&](auto vc, auto wc, auto ac, auto sc) {
      constexpr int V = decltype(vc)::value, ST = decltype(sc)::value;
      constexpr bool W = decltype(wc)::value, A = decltype(ac)::value;
      emu_launch(grid, r * tpr, [&] { rms_norm_mod_pipe_kernel<T, V, W, A, ST>(a); });
    };
    using F = std::false_type; using Tr = std::true_type;
    auto by_stages = [&](auto vc, auto wc, auto ac) {
      if (pipe == 2) go(vc, wc, ac, std::integral_constant<int, 2>{}); else go(vc, wc, ac, std::integral_constant<int, 3>{});
    };
    auto by_flags = [&](auto vc) {
      if (weight) { if (add) by_stages(vc, Tr{}, Tr{}); else by_stages(vc, Tr{}, F{}); }
      else { if (add) by_stages(vc, F{}, Tr{}); else by_stages(vc, F{}, F{}); }
    };
    switch (vpt) {
      case 1: by_flags(std::integral_constant<int, 1>{}); break;
      case 2: by_flags(std::integral_constant<int, 2>{}); break;
      case 3: by_flags(std::integral_constant<int, 3>{}); break;
      case 4: by_flags(std::integral_constant<int, 4>{}); break;
      default: std::abort();
    }
  } else if (vpt > 0) {
    int r = norm_rows_per_block(tpr);
    unsigned grid = (rows + r - 1) / r;
    if (grid > 2 && vpt % 2 == 0) grid = 2;  // some configs: the grid-stride loop over rows
    auto run = [&](auto vptc) {
      constexpr int V = decltype(vptc)::value;
      auto go = [&](auto wc, auto mc, auto ac) {
        constexpr bool W = decltype(wc)::value, M = decltype(mc)::value, A = decltype(ac)::value;
        if constexpr ((M || A) && V > kMaxVptMod) { std::abort(); }
        else if constexpr (M) {
          if (lean) {
            if constexpr (V <= kMaxVptLean) {
              if (lean == 2) emu_launch(grid, r * tpr, [&] { rms_norm_rows_kernel<T, V, W, M, A, false, true, true>(a); });
              else if (lean == 3) emu_launch(grid, r * tpr, [&] { rms_norm_rows_kernel<T, V, W, M, A, false, true, false, true>(a); });
              else emu_launch(grid, r * tpr, [&] { rms_norm_rows_kernel<T, V, W, M, A, false, true>(a); });
            } else std::abort();
          } else if (late) emu_launch(grid, r * tpr, [&] { rms_norm_rows_kernel<T, V, W, M, A, true>(a); });
          else emu_launch(grid, r * tpr, [&] { rms_norm_rows_kernel<T, V, W, M, A>(a); });
        } else emu_launch(grid, r * tpr, [&] { rms_norm_rows_kernel<T, V, W, M, A>(a); });
      };
      using F = std::false_type; using Tr = std::true_type;
      if (weight) { if (mod) { if (add) go(Tr{}, Tr{}, Tr{}); else go(Tr{}, Tr{}, F{}); } else { if (add) go(Tr{}, F{}, Tr{}); else go(Tr{}, F{}, F{}); } }
      else { if (mod) { if (add) go(F{}, Tr{}, Tr{}); else go(F{}, Tr{}, F{}); } else { if (add) go(F{}, F{}, Tr{}); else go(F{}, F{}, F{}); } }
    };
    switch (vpt) {
      case 1: run(std::integral_constant<int, 1>{}); break;
      case 2: run(std::integral_constant<int, 2>{}); break;
      case 3: run(std::integral_constant<int, 3>{}); break;
      case 4: run(std::integral_constant<int, 4>{}); break;
      case 6: run(std::integral_constant<int, 6>{}); break;
      case 8: run(std::integral_constant<int, 8>{}); break;
      case 12: run(std::integral_constant<int, 12>{}); break;
      case 16: run(std::integral_constant<int, 16>{}); break;
    }
  } else {
    unsigned grid = std::min<int64_t>(rows, 3);  // exercise the grid-stride loop
    if (vec) emu_launch(grid, tpr, [&] { rms_norm_loop_kernel<T, true>(a); });
    else emu_launch(grid, tpr, [&] { rms_norm_loop_kernel<T, false>(a); });
  }
  // mag: the size of the modulation's terms. y * (1 + scale) + shift can cancel to near zero,
  // where fp32 rounding of the terms (a few ulps of |y * (1 + scale)| + |shift|) is the error
  // to expect, however small the result.
  std::vector<double> ref(rows * D), href(rows * D), mag(rows * D);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t tb = trow(r, tok_s), hb = trow(r, tok_h);
    std::vector<double> h(D);
    for (int i = 0; i < D; ++i) {
      double xv = tf(xs[r * rs + i]);
      if (add) {
        double g = gate ? tf(table[hb + 2 * D + i]) : 1.0;
        double hv = tf(rsd[r * rrs + i]) + xv * g;
        href[r * D + i] = hv;
        h[i] = tf(ff<T>((float)hv));
      } else h[i] = xv;
    }
    double ss = 0; for (double v : h) ss += v * v;
    double rstd = 1.0 / std::sqrt(ss / D + 1e-6);
    for (int i = 0; i < D; ++i) {
      double y = h[i] * rstd;
      if (weight) y *= tf(w[i]);
      mag[r * D + i] = std::fabs(y);
      if (mod) {
        const double scaled = y * (1 + tf(table[tb + D + i])), shift = tf(table[hb + i]);
        y = scaled + shift;
        mag[r * D + i] = std::fabs(scaled) + std::fabs(shift);
      }
      ref[r * D + i] = y;
    }
  }
  std::string what = std::string("norm ") + tn<T>() + " D=" + std::to_string(D) + " tpr=" + std::to_string(tpr) + " vpt=" + std::to_string(vpt) +
      (weight ? " w" : "") + (mod ? " mod" : "") + (add ? " add" : "") + (gate ? " gate" : "") + (per_token ? " per-token" : "") +
      (late ? " late" : "") + (lean == 1 ? " lean" : lean == 2 ? " reload" : lean == 3 ? " hints" : "") + (pipe ? " pipe" + std::to_string(pipe) : "") + (mixed ? " mixed" : "") +
      " pad=" + std::to_string(pad);
  check(what.c_str(), out, ref, 1, &mag);
  if (add) check((what + " residual").c_str(), rout, href);
}

// The opt-in column-stationary AdaLN kernel: x [B, S, D] with row stride D + pad, per-batch
// scale/shift/gate slices of a [B, 1, 6, D] table. R = rows per strip (S % R != 0 in most
// calls: short last strips), several batches (a block's slots hold strips of different
// batches), a forced small grid (the grid-stride loop over strip groups), every flag.
template <typename T>
void test_colstat(int B, int S, int D, int tpr, int vpt, int R, int flags, bool weight, bool add, bool gate, int pad,
                  unsigned max_grid = 0) {
  int64_t rows = (int64_t)B * S, rs = D + pad;
  auto xs = rand_vec<T>(rows * rs, 2.0f), rsd = rand_vec<T>(rows * rs, 1.5f);
  auto w = rand_vec<T>(D, 0.4f, 1.0f);
  auto table = rand_vec<T>((size_t)B * 6 * D, 0.3f);
  const RowIndex ti = make_row_index(S, 6LL * D, 0);
  std::vector<T> out(rows * D, ff<T>(NAN)), rout(rows * D, ff<T>(NAN));
  NormArgs a{};
  a.x = xs.data(); a.xi = make_row_index(S, (int64_t)S * rs, rs);
  if (add) { a.residual = rsd.data(); a.ri = a.xi; a.residual_out = rout.data();
             if (gate) { a.gate = table.data() + 2 * D; a.gi = ti; } }
  if (weight) a.weight = w.data();
  a.scale = table.data() + D; a.si = ti; a.shift = table.data(); a.hi = ti;
  a.out = out.data(); a.rows = rows; set_row_shape(a, D, tpr); a.eps = 1e-6f;
  const int slots = norm_rows_per_block(tpr);
  const int64_t strips = (int64_t)B * ((S + R - 1) / R);
  unsigned grid = (unsigned)((strips + slots - 1) / slots);
  if (max_grid && grid > max_grid) grid = max_grid;
  auto run = [&](auto vptc, auto wc, auto ac) {
    constexpr int V = decltype(vptc)::value;
    constexpr bool W = decltype(wc)::value, A = decltype(ac)::value;
    auto go = [&](auto sc, auto pc) {
      constexpr bool ST = decltype(sc)::value, PF = decltype(pc)::value;
      emu_launch(grid, slots * tpr, [&] { rms_norm_mod_colstat_kernel<T, V, W, A, ST, PF>(a, R); });
    };
    using F = std::false_type; using Tr = std::true_type;
    switch (flags) { case 0: go(F{}, F{}); break; case 1: go(Tr{}, F{}); break; case 2: go(F{}, Tr{}); break; default: go(Tr{}, Tr{}); }
  };
  auto pick = [&](auto vptc) {
    using F = std::false_type; using Tr = std::true_type;
    if (weight) { if (add) run(vptc, Tr{}, Tr{}); else run(vptc, Tr{}, F{}); }
    else { if (add) run(vptc, F{}, Tr{}); else run(vptc, F{}, F{}); }
  };
  switch (vpt) {
    case 1: pick(std::integral_constant<int, 1>{}); break;
    case 2: pick(std::integral_constant<int, 2>{}); break;
    case 3: pick(std::integral_constant<int, 3>{}); break;
    case 4: pick(std::integral_constant<int, 4>{}); break;
    default: std::abort();
  }
  std::vector<double> ref(rows * D), href(rows * D);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t tb = (size_t)(r / S) * 6 * D;
    std::vector<double> h(D);
    for (int i = 0; i < D; ++i) {
      double xv = tf(xs[r * rs + i]);
      if (add) {
        double g = gate ? tf(table[tb + 2 * D + i]) : 1.0;
        double hv = tf(rsd[r * rs + i]) + xv * g;
        href[r * D + i] = hv;
        h[i] = tf(ff<T>((float)hv));
      } else h[i] = xv;
    }
    double ss = 0; for (double v : h) ss += v * v;
    double rstd = 1.0 / std::sqrt(ss / D + 1e-6);
    for (int i = 0; i < D; ++i) {
      double y = h[i] * rstd;
      if (weight) y *= tf(w[i]);
      ref[r * D + i] = y * (1 + tf(table[tb + D + i])) + tf(table[tb + i]);
    }
  }
  std::string what = std::string("colstat ") + tn<T>() + " B=" + std::to_string(B) + " S=" + std::to_string(S) +
      " D=" + std::to_string(D) + " tpr=" + std::to_string(tpr) + " vpt=" + std::to_string(vpt) + " R=" + std::to_string(R) +
      " flags=" + std::to_string(flags) + (weight ? " w" : "") + (add ? " add" : "") + (gate ? " gate" : "") +
      " pad=" + std::to_string(pad) + " grid=" + std::to_string(grid);
  check(what.c_str(), out, ref);
  if (add) check((what + " residual").c_str(), rout, href);
}

template <typename T>
// flat_cpt > 0: the flat kernel (dense, aligned rows only) with that many chunks per
// thread, on blocks of `flat_block` threads and `flat_grid` blocks (small: the grid-stride
// loop and a partial last round of chunks). mixed (with bcast): sin is [B, S, D] while cos
// broadcasts [1, S, D], so the kernel cannot reuse cos's row offset for sin. narrow > 0
// (with flat_cpt 1): the narrow flat kernel with that many elements per thread instead
// (streaming: its ld/st.global.cs variant).
void test_rope(int B, int S, int D, bool vec_ok, bool bcast, int tpr, int flat_cpt = 0, unsigned flat_block = 32,
               unsigned flat_grid = 2, bool mixed = false, int narrow = 0, bool streaming = false) {
  int64_t rows = (int64_t)B * S;
  int shift = vec_ok ? 0 : 1;
  auto xbuf = rand_vec<T>(rows * D + 1, 2.0f);
  const T* x = xbuf.data() + shift;
  const bool sbcast = bcast && !mixed;
  int64_t crows = bcast ? S : rows, srows = sbcast ? S : rows;
  auto cs = rand_vec<float>(crows * D), sn = rand_vec<float>(srows * D);
  std::vector<T> out(rows * D, ff<T>(NAN));
  RopeArgs a{};
  a.x = x; a.xi = make_row_index(S, (int64_t)S * D, D);
  a.cos = cs.data(); a.sin = sn.data();
  a.ci = make_row_index(S, bcast ? 0 : (int64_t)S * D, D);
  a.si = make_row_index(S, sbcast ? 0 : (int64_t)S * D, D);
  a.same = rope_shared_offsets(a);  // as ltx_ops.cpp sets it
  if ((a.same != 0) == (bcast && mixed)) std::abort();
  a.out = out.data(); a.rows = rows; set_row_shape(a, D, tpr);
  int r = rpb(tpr);
  unsigned grid = (rows + r - 1) / r;
  const int N = VecWidth<T>::value;
  bool vec = vec_ok && D % N == 0;
  if (flat_cpt > 0) {
    if (!vec || bcast) std::abort();  // the host never sends these to the flat kernel
    const int64_t chunks = rows * D / N;
    if (narrow > 0) {
      const int64_t units = rows * D / narrow;
      if (narrow == 2 && streaming) emu_launch(flat_grid, flat_block, [&] { rope_narrow_kernel<T, 2, true>(a, units); });
      else if (narrow == 2) emu_launch(flat_grid, flat_block, [&] { rope_narrow_kernel<T, 2>(a, units); });
      else if (streaming) emu_launch(flat_grid, flat_block, [&] { rope_narrow_kernel<T, 4, true>(a, units); });
      else emu_launch(flat_grid, flat_block, [&] { rope_narrow_kernel<T, 4>(a, units); });
    } else if (flat_cpt == 1) emu_launch(flat_grid, flat_block, [&] { rope_flat_kernel<T, 1>(a, chunks); });
    else if (flat_cpt == 2) emu_launch(flat_grid, flat_block, [&] { rope_flat_kernel<T, 2>(a, chunks); });
    else emu_launch(flat_grid, flat_block, [&] { rope_flat_kernel<T, 4>(a, chunks); });
  } else if (vec) emu_launch(grid, r * tpr, [&] { rope_kernel<T, true>(a); });
  else emu_launch(grid, r * tpr, [&] { rope_kernel<T, false>(a); });
  std::vector<double> ref(rows * D), mag(rows * D);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t cr = bcast ? row % S : row, sr = sbcast ? row % S : row;
    for (int i = 0; i < D; i += 2) {
      double x0 = tf(x[row * D + i]), x1 = tf(x[row * D + i + 1]);
      double c0 = cs[cr * D + i], c1 = cs[cr * D + i + 1], s0 = sn[sr * D + i], s1 = sn[sr * D + i + 1];
      ref[row * D + i] = x0 * c0 - x1 * s0; ref[row * D + i + 1] = x1 * c1 + x0 * s1;
      mag[row * D + i] = std::fabs(x0 * c0) + std::fabs(x1 * s0); mag[row * D + i + 1] = std::fabs(x1 * c1) + std::fabs(x0 * s1);
    }
  }
  std::string what = std::string("rope ") + tn<T>() + " D=" + std::to_string(D) + (vec ? " vec" : " scalar") + (bcast ? " bcast" : "") + (mixed ? " mixed" : "") +
      (flat_cpt ? " flat cpt=" + std::to_string(flat_cpt) + " block=" + std::to_string(flat_block) : "") +
      (narrow ? " narrow=" + std::to_string(narrow) : "") + (streaming ? " streaming" : "");
  check(what.c_str(), out, ref, 1, &mag);
}

// mixed: k and sin are stored with a row stride 16 elements longer than q's and cos's, so
// the kernel evaluates all four RowIndexes (RopeArgs::same = 0). lean: the one-chunk lean
// kernel (flag 64 of rms_norm_rope_qk_with_config); hints: the same with cache hints (320).
// prefetch_grid > 0: the persistent kernel that prefetches each thread's next row (flag 512)
// on a grid of that many blocks - fewer than the row groups, so every block loops and the
// last round is partial.
template <typename T>
void test_norm_rope(int B, int S, int D, int tpr, int vpt, bool two, bool weight, bool mixed = false,
                    bool lean = false, bool hints = false, unsigned prefetch_grid = 0) {
  int64_t rows = (int64_t)B * S, ks = mixed ? D + 16 : D;
  auto q = rand_vec<T>(rows * D, 2.0f), k = rand_vec<T>(rows * ks, 0.5f, 0.2f);
  auto wq = rand_vec<T>(D, 0.4f, 1.0f), wk = rand_vec<T>(D, 0.4f, 1.0f);
  auto cs = rand_vec<float>(rows * D), sn = rand_vec<float>(rows * ks);
  std::vector<T> o1(rows * D, ff<T>(NAN)), o2(rows * D, ff<T>(NAN));
  RopeArgs a{};
  a.x = q.data(); a.xi = make_row_index(S, (int64_t)S * D, D);
  const RowIndex padded = make_row_index(S, (int64_t)S * ks, ks);
  if (two) { a.x2 = k.data(); a.x2i = padded; a.out2 = o2.data(); if (weight) a.w2 = wk.data(); }
  if (weight) a.w = wq.data();
  a.cos = cs.data(); a.sin = sn.data(); a.ci = a.xi; a.si = padded;
  a.same = rope_shared_offsets(a);  // as ltx_ops.cpp sets it
  if ((a.same & kSinAsCos) == 0 && !mixed) std::abort();
  a.out = o1.data(); a.rows = rows; set_row_shape(a, D, tpr); a.eps = 1e-5f;
  int r = rpb(tpr);
  unsigned grid = (rows + r - 1) / r;
  if (prefetch_grid > 0) {
    if (!lean || vpt != 1) std::abort();
    if (hints) emu_launch(prefetch_grid, r * tpr, [&] { rms_norm_rope_prefetch_kernel<T, true>(a); });
    else emu_launch(prefetch_grid, r * tpr, [&] { rms_norm_rope_prefetch_kernel<T, false>(a); });
  }
  auto run = [&](auto vptc) {
    constexpr int V = decltype(vptc)::value;
    if constexpr (V == 1) {
      if (lean && hints) { emu_launch(grid, r * tpr, [&] { rms_norm_rope_kernel<T, 1, true, true, true>(a); }); return; }
      if (lean) { emu_launch(grid, r * tpr, [&] { rms_norm_rope_kernel<T, 1, true, true>(a); }); return; }
    }
    if (lean) std::abort();
    emu_launch(grid, r * tpr, [&] { rms_norm_rope_kernel<T, V, true>(a); });
  };
  if (prefetch_grid == 0) switch (vpt) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 3: run(std::integral_constant<int, 3>{}); break;
    case 4: run(std::integral_constant<int, 4>{}); break;
  }
  for (int which = 0; which < (two ? 2 : 1); ++which) {
    auto& src = which ? k : q; auto& w = which ? wk : wq; auto& out = which ? o2 : o1;
    const int64_t xs = which ? ks : D;
    std::vector<double> ref(rows * D), mag(rows * D);
    for (int64_t row = 0; row < rows; ++row) {
      double ss = 0; for (int i = 0; i < D; ++i) { double v = tf(src[row * xs + i]); ss += v * v; }
      double rstd = 1 / std::sqrt(ss / D + 1e-5);
      std::vector<double> y(D);
      for (int i = 0; i < D; ++i) y[i] = tf(src[row * xs + i]) * rstd * (weight ? tf(w[i]) : 1.0);
      for (int i = 0; i < D; i += 2) {
        double c0 = cs[row * D + i], c1 = cs[row * D + i + 1], s0 = sn[row * ks + i], s1 = sn[row * ks + i + 1];
        ref[row * D + i] = y[i] * c0 - y[i + 1] * s0; ref[row * D + i + 1] = y[i + 1] * c1 + y[i] * s1;
        mag[row * D + i] = std::fabs(y[i] * c0) + std::fabs(y[i + 1] * s0); mag[row * D + i + 1] = std::fabs(y[i + 1] * c1) + std::fabs(y[i] * s1);
      }
    }
    std::string what = std::string("normrope ") + tn<T>() + " D=" + std::to_string(D) + " tpr=" + std::to_string(tpr) + " vpt=" + std::to_string(vpt) + (which ? " k" : " q") + (mixed ? " mixed" : "") + (lean ? " lean" : "") + (hints ? " hints" : "") + (prefetch_grid ? " prefetch grid=" + std::to_string(prefetch_grid) : "");
    check(what.c_str(), out, ref, 1, &mag);
  }
}

template <typename T, int UNROLL>
void test_gelu(int64_t n, bool vec, int threads) {
  auto buf = rand_vec<T>(n + 1, 3.0f);
  const T* x = buf.data() + (vec ? 0 : 1);
  std::vector<T> y(n, ff<T>(NAN));
  const int N = vec ? VecWidth<T>::value : 1;
  int64_t per_block = int64_t{threads} * UNROLL * N;
  unsigned grid = std::max<int64_t>(1, (n + per_block - 1) / per_block);
  grid = std::min<unsigned>(grid, 2);  // grid-stride loop
  if (vec) emu_launch(grid, threads, [&] { gelu_tanh_kernel<T, true, UNROLL>(x, y.data(), n); });
  else emu_launch(grid, threads, [&] { gelu_tanh_kernel<T, false, UNROLL>(x, y.data(), n); });
  std::vector<double> ref(n);
  for (int64_t i = 0; i < n; ++i) { double v = tf(x[i]); ref[i] = v / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }  // = 0.5 v (1 + tanh(u)), no cancellation
  std::string what = std::string("gelu ") + tn<T>() + " n=" + std::to_string(n) + (vec ? " vec" : " scalar") +
                     " threads=" + std::to_string(threads) + " unroll=" + std::to_string(UNROLL);
  check(what.c_str(), y, ref);
}

static bool vec_ok(int D, int N) { return D % N == 0; }

template <typename T> void all() {
  const int N = VecWidth<T>::value;
  // rows kernel: LTX sizes, every config family, modulate/weight/add/gate, strided rows
  for (int D : {2048, 3072, 128, 64, 40}) {
    if (!full && D == 3072 && !std::is_same_v<T, __nv_bfloat16>) continue;
    int chunks = (D + N - 1) / N;
    std::vector<std::pair<int,int>> cfgs;
    for (int tpr : {1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512})
      for (int vpt : {1, 2, 3, 4, 6, 8, 12, 16})
        if ((int64_t)tpr * vpt >= chunks && (int64_t)tpr * (vpt - 1) < chunks) cfgs.push_back({tpr, vpt});
    for (size_t ci = 0; ci < cfgs.size(); ++ci) {
      auto [tpr, vpt] = cfgs[ci];
      if (!full && ci % 2 == 1 && tpr != 32 && tpr != 64) continue;  // quick: half the configs
      // plain, with and without weight (every chunk count: >6 reads the weight late)
      test_norm<T>(2, 5, D, tpr, vpt, true, false, false, false, 0);
      test_norm<T>(1, 3, D, tpr, vpt, false, false, false, false, 8);
      if (vpt > kMaxVptMod) continue;  // modulate / fused add have rows kernels up to 4 chunks
      test_norm<T>(2, 5, D, tpr, vpt, false, true, false, false, 8);
      test_norm<T>(2, 3, D, tpr, vpt, true, true, false, false, 0, true);
      test_norm<T>(2, 3, D, tpr, vpt, false, true, true, true, 0);
      test_norm<T>(2, 3, D, tpr, vpt, true, true, true, true, 8, true);
      test_norm<T>(1, 3, D, tpr, vpt, true, false, true, false, 8);
      test_norm<T>(1, 3, D, tpr, vpt, false, false, true, true, 0, true);
      // layouts that stop the kernels from sharing row offsets between operands
      test_norm<T>(2, 3, D, tpr, vpt, true, true, true, true, 8, false, false, 0, true);
      test_norm<T>(2, 3, D, tpr, vpt, false, true, true, true, 0, true, false, 0, true);
      // scale/shift read after the reduction (flag 4 of the *_with_config ops)
      if (tpr <= kMaxLateBlock) {
        test_norm<T>(2, 5, D, tpr, vpt, false, true, false, false, 8, false, true);
        test_norm<T>(2, 3, D, tpr, vpt, true, true, true, true, 8, true, true);
        test_norm<T>(2, 3, D, tpr, vpt, false, true, true, true, 0, false, true);
        test_norm<T>(2, 3, D, tpr, vpt, true, true, true, true, 8, true, true, 0, true);
      }
      // the lean kernel (flag 64): 32-bit row offsets - per-token and per-batch tables,
      // padded rows, operands laid out differently, the grid-stride loop (grid 2 above)
      // its reload variant (flag 128: x or h read again after the reduction) and the lean
      // kernel with cache hints (flags 64 | 256)
      if (vpt <= kMaxVptLean) {
        for (int lean : {1, 2, 3}) {
          test_norm<T>(2, 5, D, tpr, vpt, false, true, false, false, 8, false, false, 0, false, lean);
          test_norm<T>(2, 3, D, tpr, vpt, true, true, true, true, 8, true, false, 0, false, lean);
          test_norm<T>(2, 3, D, tpr, vpt, false, true, true, true, 0, false, false, 0, false, lean);
          test_norm<T>(2, 3, D, tpr, vpt, true, true, true, true, 8, true, false, 0, true, lean);
          test_norm<T>(3, 4, D, tpr, vpt, false, true, true, false, 0, true, false, 0, true, lean);
        }
      }
      // the pipelined kernel (flags 8 / 16): 2 and 3 stages, more row groups than blocks x
      // stages (B * S = 21 rows), per-token tables, gated and ungated add, padded rows
      if (vec_ok(D, N) && vpt <= kMaxVptPipe && tpr <= kMaxPipeBlock) {
        for (int st : {2, 3}) {
          test_norm<T>(3, 7, D, tpr, vpt, false, true, false, false, 8, false, false, st);
          test_norm<T>(3, 7, D, tpr, vpt, true, true, true, true, 0, true, false, st);
          test_norm<T>(3, 7, D, tpr, vpt, true, true, true, true, 8, false, false, st, true);
          // without a weight the kernel holds scale/shift/gate across rows: per-batch tables
          // (above), shift and gate per token where scale is per batch, and all per token
          test_norm<T>(3, 7, D, tpr, vpt, false, true, true, true, 8, false, false, st, true);
          test_norm<T>(3, 7, D, tpr, vpt, false, true, true, true, 0, true, false, st);
          if (full || st == 2) {
            test_norm<T>(2, 5, D, tpr, vpt, true, true, false, false, 0, true, false, st);
            test_norm<T>(3, 4, D, tpr, vpt, false, true, true, false, 8, false, false, st);
          }
        }
      }
    }
  }
  // column-stationary AdaLN kernel (opt-in sweep ops): every flag, with and without the
  // weight, modulate and fused (gated / ungated) add; short, whole-warp and multi-warp rows
  // (tpr 64: two slots share row_sum's barriers while their strips have different lengths);
  // rows that do not fill the last chunk round (D = 5 chunks on 8 x 1 threads); a row count
  // not divisible by R; R = 1 and R >= S (one strip per batch)
  {
    struct Cfg { int D, tpr, vpt; };
    std::vector<Cfg> cfgs = {{2048, 64, 2048 / N / 64},
                             {5 * N, 8, 1}, {24 * N, 8, 3}, {64 * N, 32, 2}};
    if (full || std::is_same_v<T, __nv_bfloat16>) cfgs.push_back({3072, 96, 3072 / N / 96});
    for (const Cfg& c : cfgs) {
      if (c.vpt < 1 || c.vpt > kMaxVptColstat) continue;  // fp32 2048 on 64 threads is 8 chunks
      for (int R : {1, 3, 8}) for (int flags = 0; flags < 4; ++flags) {
        // quick: every flag with both the modulate and the add kernel, half the layouts
        auto want = [&](int i) { return full || (flags + i) % 2 == 0; };
        if (want(0)) test_colstat<T>(3, 7, c.D, c.tpr, c.vpt, R, flags, true, false, false, 8);
        if (want(1)) test_colstat<T>(2, 5, c.D, c.tpr, c.vpt, R, flags, false, false, false, 0, 2);
        if (want(2)) test_colstat<T>(3, 7, c.D, c.tpr, c.vpt, R, flags, false, true, true, 0, 1);
        if (want(3)) test_colstat<T>(2, 6, c.D, c.tpr, c.vpt, R, flags, true, true, true, 8);
        if (want(4)) test_colstat<T>(1, 4, c.D, c.tpr, c.vpt, R, flags, true, true, false, 0);
      }
    }
    // fp32 needs 4 chunks per thread at 2048 on 128 threads; strips longer than a batch
    if constexpr (sizeof(T) == 4) test_colstat<T>(2, 5, 2048, 128, 4, 8, 3, true, true, true, 4, 1);
    test_colstat<T>(4, 3, 16 * N, 16, 1, 64, 3, true, false, false, 0);
    test_colstat<T>(4, 3, 16 * N, 16, 1, 64, 2, false, true, true, 0);
  }
  // loop kernel: vector and scalar, odd sizes
  for (int D : {2048, 1001, 7, 3072}) for (int tpr : {32, 96, 256}) {
    test_norm<T>(2, 3, D, tpr, 0, true, true, false, false, D % N ? 1 : 0);
    test_norm<T>(2, 3, D, tpr, 0, false, true, false, false, D % N ? 1 : 0, true);
    test_norm<T>(1, 2, D, tpr, 0, false, false, false, false, 0);
  }
  // rope
  for (int D : {2048, 64, 66, 6, 2}) for (bool bc : {false, true}) {
    int chunks = (D + N - 1) / N;
    int tpr = chunks <= 32 ? 1 : std::min(((chunks + 31) / 32) * 32, 512);
    if (chunks <= 32) while (tpr < chunks) tpr <<= 1;
    test_rope<T>(2, 3, D, true, bc, tpr);
    test_rope<T>(2, 3, D, false, bc, tpr);
    if (bc) test_rope<T>(2, 3, D, true, true, tpr, 0, 32, 2, true);
    // flat kernel: dense rows only; partial last rounds (D = 64 in bf16: 48 chunks on 2
    // blocks of 32 threads x 2 chunks), the grid-stride loop (D = 2048), one block
    if (!bc && D % N == 0)
      for (int cpt : {1, 2, 4}) {
        test_rope<T>(2, 3, D, true, false, tpr, cpt);
        test_rope<T>(3, 5, D, true, false, tpr, cpt, 64, 1);
      }
    // narrow flat kernel: 2 and 4 elements per thread, grid-stride loop and partial last round
    if (!bc && D % N == 0)
      for (int narrow : {2, 4}) {
        test_rope<T>(2, 3, D, true, false, tpr, 1, 32, 2, false, narrow);
        test_rope<T>(3, 5, D, true, false, tpr, 1, 64, 1, false, narrow);
        test_rope<T>(2, 3, D, true, false, tpr, 1, 32, 2, false, narrow, true);
      }
  }
  // fused norm + rope
  for (int D : {2048, 3072, 64}) {
    int chunks = D / N;
    for (int tpr : {1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512})
      for (int vpt : {1, 2, 3, 4})
        if (tpr * vpt >= chunks && tpr * (vpt - 1) < chunks) { test_norm_rope<T>(2, 3, D, tpr, vpt, true, true); test_norm_rope<T>(1, 2, D, tpr, vpt, false, false);
          test_norm_rope<T>(2, 3, D, tpr, vpt, true, false, true);
          if (vpt == 1 && tpr <= kMaxLeanRopeBlock) {
            test_norm_rope<T>(2, 3, D, tpr, 1, true, true, false, true);
            test_norm_rope<T>(3, 5, D, tpr, 1, true, false, true, true);
            test_norm_rope<T>(1, 2, D, tpr, 1, false, false, false, true);  // rms_norm_rope's default
            test_norm_rope<T>(2, 3, D, tpr, 1, true, true, false, true, true);
            test_norm_rope<T>(3, 5, D, tpr, 1, true, false, true, true, true);
            // the prefetching persistent kernel: one block per row group, and 2 or 4 blocks
            // looping over them (15 rows), q alone, mixed strides, hints
            const unsigned groups = (15 + rpb(tpr) - 1) / rpb(tpr);
            test_norm_rope<T>(3, 5, D, tpr, 1, true, true, false, true, false, groups);
            test_norm_rope<T>(3, 5, D, tpr, 1, true, false, true, true, false, 2);
            test_norm_rope<T>(3, 5, D, tpr, 1, false, true, false, true, false, 4);
            test_norm_rope<T>(3, 5, D, tpr, 1, true, true, true, true, true, 2);
          } }
  }
  for (int64_t n : {1, 7, 8, 1000, 20003, 8192 * 3 + 5}) {
    for (bool vec : {true, false}) {
      test_gelu<T, kGeluDefaultUnroll>(n, vec, kGeluDefaultThreads);
      test_gelu<T, 1>(n, vec, 64);
      test_gelu<T, 2>(n, vec, 128);
      test_gelu<T, 8>(n, vec, 64);
    }
  }
}

// RowIndex's multiply-high division (make_row_index) against exact division: every inner
// size up to 4096, powers of two and their neighbours up to 2^31 - 1, random sizes; rows at
// the ends of the fast range, next to multiples of inner, random, and past 2^31 (slow path).
void test_row_index() {
  std::vector<int64_t> inners;
  for (int64_t d = 1; d <= 4096; ++d) inners.push_back(d);
  for (int k = 12; k <= 31; ++k)
    for (int64_t dd : {int64_t{-1}, int64_t{0}, int64_t{1}}) {
      const int64_t d = (int64_t{1} << k) + dd;
      if (d < (int64_t{1} << 31)) inners.push_back(d);
    }
  std::uniform_int_distribution<int64_t> any_inner(2, (int64_t{1} << 31) - 1), any_row(0, (int64_t{1} << 31) - 1);
  for (int i = 0; i < 2000; ++i) inners.push_back(any_inner(rng));
  int bad = 0;
  for (int64_t inner : inners) {
    const RowIndex r = make_row_index(inner, 7, 3);
    if (inner >= 2 && r.div_mul == 0) ++bad;  // the fast path must be on for every size we use
    std::vector<int64_t> rows = {0, 1, inner - 1, inner, inner + 1, (int64_t{1} << 31) - 1,
                                 (int64_t{1} << 31), (int64_t{1} << 33) + 5};
    const int64_t top = ((int64_t{1} << 31) - 1) / inner * inner;
    for (int64_t m : {top - inner, top, top + inner - 1})
      if (m >= 0 && m < (int64_t{1} << 31)) rows.push_back(m);
    for (int i = 0; i < 64; ++i) rows.push_back(any_row(rng));
    for (int64_t row : rows) {
      if (row < 0) continue;
      const int64_t want = (row / inner) * 7 + (row % inner) * 3;
      // RowIndex::lean is only defined below 2^31 rows (the host's check for flag 64)
      const bool lean_bad = row < (int64_t{1} << 31) && r.lean(row) != want;
      if (r.outer(row) != row / inner || r(row) != want || lean_bad) {
        if (bad < 10) printf("FAIL row_index inner=%lld row=%lld: outer %lld, want %lld\n", (long long)inner,
                             (long long)row, (long long)r.outer(row), (long long)(row / inner));
        ++bad;
      }
    }
  }
  printf("row_index: %zu sizes, %d wrong\n", inners.size(), bad);
  failures += bad;
  // FastDiv splits blocks into rows (threadIdx.x / tpr, blockDim.x / tpr): every divisor and
  // numerator a block of up to 1024 threads can produce, then random ones up to 2^31 - 1.
  int bad_div = 0;
  auto check_div = [&](int64_t d, int64_t n) {
    const uint32_t got = make_fast_div(d)(static_cast<uint32_t>(n));
    if (got != static_cast<uint32_t>(n / d)) {
      if (bad_div < 10) printf("FAIL fast_div %lld / %lld = %u\n", (long long)n, (long long)d, got);
      ++bad_div;
    }
  };
  for (int64_t d = 1; d <= 1024; ++d)
    for (int64_t n = 0; n <= 1024; ++n) check_div(d, n);
  for (int i = 0; i < 200000; ++i) check_div(any_inner(rng), any_row(rng));
  // row_shape_set, the launchers' guard: false for args built without set_row_shape or
  // changed after it, true right after it.
  NormArgs na{};
  if (row_shape_set(na)) ++bad_div;
  set_row_shape(na, 2048, 256);
  if (!row_shape_set(na)) ++bad_div;
  na.tpr = 128;
  if (row_shape_set(na)) ++bad_div;
  RopeArgs ra{};
  set_row_shape(ra, 3072, 96);
  if (!row_shape_set(ra)) ++bad_div;
  ra.d = 2048;
  if (row_shape_set(ra)) ++bad_div;
  printf("fast_div: %d wrong\n", bad_div);
  failures += bad_div;
}

// The default ops' cache-hint rule (ltx_kernels.h, kQkHints* / kAddHints*; off unless
// set_cache_hints(true)) on the H200's 60 MiB L2 gives the hints exactly to the bf16 shapes
// where a one-output-buffer timer measured them faster:
// q/k at 1x1024, 2x1024 and 1x2688 x 2048 but not from 4x1024 on, the fused add from 1x1024
// to 1x4096 x 2048 and 1x2688 but not at 2x2688; and only to cos/sin tables no two rows share.
void test_hint_rule() {
  int bad = 0;
  const int64_t l2 = int64_t{60} << 20;
  auto expect = [&](const char* what, bool got, bool want) {
    if (got != want) { printf("FAIL hint rule %s: %d, want %d\n", what, got, want); ++bad; }
  };
  auto qk = [&](int64_t rows) { return within_l2_share(rows * 2048 * (4 * 2 + 2 * 4), l2, kQkHintsNum, kQkHintsDen); };
  auto add = [&](int64_t rows) { return within_l2_share(rows * 2048 * 4 * 2, l2, kAddHintsNum, kAddHintsDen); };
  expect("qk 1x1024", qk(1024), true);
  expect("qk 2x1024", qk(2048), true);
  expect("qk 1x2688", qk(2688), true);
  expect("qk 4x1024", qk(4096), false);
  expect("qk 2x2688", qk(5376), false);
  expect("add 1x1024", add(1024), true);
  expect("add 4x1024", add(4096), true);
  expect("add 1x2688", add(2688), true);
  expect("add 2x2688", add(5376), false);
  expect("add 1x8192", add(8192), false);
  expect("unknown L2", within_l2_share(1, 0, 3, 2), false);
  // the weightless modulate's lean default: the measured 8.4 and 16.8 MB calls, not 22 MB and up
  auto mod = [&](int64_t rows) { return within_l2_share(rows * 2048 * 2 * 2, l2, kModLeanNum, kModLeanDen); };
  expect("modulate 1x1024", mod(1024), true);
  expect("modulate 2x1024", mod(2048), true);
  expect("modulate 1x2688", mod(2688), false);
  expect("modulate 4x1024", mod(4096), false);
  const int64_t S = 2688, D = 2048;
  expect("cos per token and batch", own_rows(make_row_index(S, S * D, D), 2 * S), true);
  expect("cos broadcast over the batch", own_rows(make_row_index(S, 0, D), 2 * S), false);
  expect("cos broadcast, one batch", own_rows(make_row_index(S, 0, D), S), true);
  expect("cos one row for all", own_rows(make_row_index(1, 0, 0), 5), false);
  expect("2-d cos per row", own_rows(make_row_index(1, D, 0), 5), true);
  // the q/k default's prefetching kernel (qk_prefetch_default) on the H200's 132 SMs, one row
  // group per row at d = 2048: the sweep's winners 1x1024, 2x1024 and 1x2688, not its losers
  // 4x1024 / 1x4096, 2x2688 and 1x8192; the last row it takes is 7 rounds x 3 blocks x 132
  expect("prefetch 1x1024", qk_prefetch_default(1024, 132), true);
  expect("prefetch 2x1024", qk_prefetch_default(2048, 132), true);
  expect("prefetch 1x2688", qk_prefetch_default(2688, 132), true);
  expect("prefetch 2772 rows", qk_prefetch_default(2772, 132), true);
  expect("prefetch 2773 rows", qk_prefetch_default(2773, 132), false);
  expect("prefetch 4x1024", qk_prefetch_default(4096, 132), false);
  expect("prefetch 2x2688", qk_prefetch_default(5376, 132), false);
  expect("prefetch 1x8192", qk_prefetch_default(8192, 132), false);
  expect("prefetch unknown SMs", qk_prefetch_default(1, 0), false);
  printf("hint rule: %d wrong\n", bad);
  failures += bad;
}

int main(int argc, char** argv) {
  full = argc > 1 && std::strcmp(argv[1], "full") == 0;
  test_row_index();
  test_hint_rule();
  all<__nv_bfloat16>();
  printf("bf16 done, failures %d\n", failures); fflush(stdout);
  all<float>();
  all<__half>();
  printf("failures: %d\n", failures);
  return failures != 0;
}
