// cuda_emu.h - the CUDA execution model on a CPU, to check a kernel's logic without a GPU.
//
// Read references/cpu-emulator.md first. In short: compile a project's kernel_src/*.cu as
// C++ with this header forced in front (scripts/emulate_kernel.py does it, rewriting the two
// things g++ cannot parse: `kernel<<<...>>>(...)` and `extern __shared__ T name[];`):
//
//   g++ -std=c++20 -O1 -x c++ -include cuda_emu.h -I$CUDA_HOME/include kernels.cu ...
//
// What it models and what it does not (fibers per thread, warp-greedy forward/reverse/random
// schedules via set_schedule or CUDA_EMU_SCHEDULE, clusters, launch checks, the hangs a GPU
// hides turned into launch failures in emu::last_failure()): the tables in
// references/cpu-emulator.md, which is kept in step with this file.
#pragma once

#define CUDA_EMU 1

// g++ must never see the real cooperative groups (device-only code): pretend it is included.
#define _COOPERATIVE_GROUPS_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <source_location>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __noinline__
#undef __launch_bounds__
#undef __shared__
#undef __constant__
#undef __managed__
#undef __grid_constant__
#undef __cluster_dims__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __constant__
#define __managed__
#define __grid_constant__
// Per block: every block (and every block of a cluster) runs on its own OS thread.
#define __shared__ thread_local
#define __cluster_dims__(...) \
  __attribute__((error("cuda_emu: __cluster_dims__ is not modeled; launch with cudaLaunchAttributeClusterDimension")))

// The built-in variables: plain variables (no macros), so cudaLaunchConfig_t::gridDim and
// ::blockDim stay usable. The scheduler sets them when it switches fibers.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

namespace emu {

enum class Schedule { kForward, kReverse, kRandom };

struct Config {
  Schedule schedule = Schedule::kForward;
  unsigned seed = 1;
  int sm_count = 132;                   // an H100 SXM
  int max_active_clusters = -1;         // -1: sm_count / cluster size
  int smem_optin = 227 * 1024;          // sm_90
  size_t stack_bytes = 256 * 1024;
};

inline Config& config() {
  static Config c = [] {
    Config c;
    if (const char* s = std::getenv("CUDA_EMU_SCHEDULE")) {
      std::string v(s);
      if (v.rfind("reverse", 0) == 0) c.schedule = Schedule::kReverse;
      if (v.rfind("random", 0) == 0) {
        c.schedule = Schedule::kRandom;
        if (v.size() > 7 && v[6] == ':') c.seed = static_cast<unsigned>(std::strtoul(v.c_str() + 7, nullptr, 10));
      }
    }
    if (const char* s = std::getenv("CUDA_EMU_SM_COUNT")) c.sm_count = std::atoi(s);
    if (const char* s = std::getenv("CUDA_EMU_MAX_ACTIVE_CLUSTERS")) c.max_active_clusters = std::atoi(s);
    return c;
  }();
  return c;
}
inline void set_schedule(Schedule s, unsigned seed = 1) {
  config().schedule = s;
  config().seed = seed;
}
// What cudaOccupancyMaxActiveClusters answers (0: clusters cannot be scheduled).
inline void set_max_active_clusters(int n) { config().max_active_clusters = n; }

inline std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}
inline std::string& failure_text() {
  static std::string s;
  return s;
}
// The message of the last failed launch ("" when none failed).
inline std::string last_failure() {
  std::lock_guard<std::mutex> g(state_mutex());
  return failure_text();
}
inline thread_local cudaError_t sticky_error = cudaSuccess;

// ------------------------------------------------------------------------------- fibers
enum class Wait { kNone, kBlockBarrier, kClusterBarrier, kWarpOp, kExited };
enum class WarpOpKind { kShfl, kSync, kBallot, kAny, kAll, kReduceAdd, kReduceMin, kReduceMax };
enum class ShflMode { kIdx, kUp, kDown, kBfly };

struct Fiber {
  ucontext_t ctx;
  char* stack = nullptr;
  uint3 tid{};
  int lane = 0, warp = 0;
  Wait wait = Wait::kNone;
  // A pending warp collective.
  WarpOpKind op = WarpOpKind::kSync;
  ShflMode mode = ShflMode::kIdx;
  unsigned mask = 0;
  uint64_t value = 0, result = 0;
  unsigned bytes = 0;
  int b = 0, width = 32;
  bool is_signed = false;
  std::source_location where;
};

struct ClusterState;

struct BlockRunner {
  std::vector<Fiber> fibers;
  std::vector<char*> stacks;
  size_t stack_bytes = 0;
  ucontext_t sched{};
  int current = -1;
  int nthreads = 0, nwarps = 0;
  const std::function<void()>* body = nullptr;
  std::vector<unsigned char> dyn_smem;
  ClusterState* cluster = nullptr;
  int cluster_rank = 0;
  uint3 cluster_index{};
  bool failed = false;
  std::string failure;
  std::mt19937 rng{1};

  ~BlockRunner() {
    for (char* s : stacks) munmap(s, stack_bytes);
  }
};

inline thread_local BlockRunner* runner = nullptr;

struct ClusterState {
  dim3 dims{1, 1, 1};
  int nblocks = 1;
  std::vector<char*> anchors;         // the address of tls_anchor in each block's OS thread
  std::vector<unsigned char*> dyn;    // each block's dynamic shared memory
  size_t dyn_bytes = 0;
  std::vector<char> done;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0, expected = 0;
  unsigned long generation = 0;
  bool aborted = false;
  // One block of the cluster runs at a time, in the schedule's block order, until it waits
  // at cluster.sync() or exits: deterministic, and a missing cluster.sync() reads a partial
  // that is not written yet in one of the two orders.
  std::vector<int> order;
  std::vector<char> at_barrier;
  int turn = -1;
};

inline thread_local char tls_anchor;

[[noreturn]] inline void fail_here(const std::string& msg);

inline void switch_to_scheduler() {
  BlockRunner* r = runner;
  Fiber& f = r->fibers[r->current];
  swapcontext(&f.ctx, &r->sched);
  // Resumed: the scheduler has set threadIdx.
}

inline void fiber_entry() {
  BlockRunner* r = runner;
  (*r->body)();
  r->fibers[r->current].wait = Wait::kExited;
  // uc_link returns to the scheduler.
}

inline std::string where_str(const std::source_location& l) {
  return std::string(l.file_name()) + ":" + std::to_string(l.line());
}

// Block until the scheduler releases this fiber.
inline void park(Wait w) {
  BlockRunner* r = runner;
  if (r == nullptr) {
    std::fprintf(stderr, "cuda_emu: a device function that synchronizes was called outside a kernel\n");
    std::abort();
  }
  r->fibers[r->current].wait = w;
  switch_to_scheduler();
}

// ------------------------------------------------------------------- warp collectives
inline uint64_t poison_bits(unsigned bytes) { return bytes >= 8 ? ~0ull : ((1ull << (8 * bytes)) - 1); }

// Resolves the pending collective of the lanes named by the lowest waiting lane's mask, if
// every one of them has arrived. Returns true when some lanes were released.
inline bool resolve_warp(BlockRunner& r, int warp) {
  const int first = warp * 32;
  const int lanes = std::min(32, r.nthreads - first);
  bool released = false;
  for (int l = 0; l < lanes; ++l) {
    Fiber& f = r.fibers[first + l];
    if (f.wait != Wait::kWarpOp) continue;
    const unsigned mask = f.mask;
    if (!(mask >> l & 1u)) {
      r.failed = true;
      r.failure = "warp collective at " + where_str(f.where) + ": the mask does not include the calling lane " + std::to_string(l);
      return false;
    }
    bool complete = true;
    for (int k = 0; k < lanes; ++k) {
      if (!(mask >> k & 1u)) continue;
      const Fiber& g = r.fibers[first + k];
      if (g.wait == Wait::kExited) {
        r.failed = true;
        r.failure = "warp collective at " + where_str(f.where) + ": mask names lane " + std::to_string(k) + " of warp " +
                    std::to_string(warp) + ", which has exited";
        return false;
      }
      if (g.wait != Wait::kWarpOp) {
        complete = false;
        break;
      }
      if (g.mask != mask || g.op != f.op) {
        r.failed = true;
        r.failure = "warp collective at " + where_str(f.where) + " and " + where_str(g.where) +
                    ": lanes of one collective disagree on the mask or the operation";
        return false;
      }
    }
    if (!complete) continue;
    unsigned ballot = 0;
    uint64_t sum = 0;
    int64_t smin = INT64_MAX, smax = INT64_MIN;
    uint64_t umin = UINT64_MAX, umax = 0;
    for (int k = 0; k < lanes; ++k) {
      if (!(mask >> k & 1u)) continue;
      const Fiber& g = r.fibers[first + k];
      if (g.value) ballot |= 1u << k;
      sum += g.value;
      const int64_t sv = static_cast<int32_t>(static_cast<uint32_t>(g.value));
      smin = std::min(smin, sv);
      smax = std::max(smax, sv);
      umin = std::min<uint64_t>(umin, g.value);
      umax = std::max<uint64_t>(umax, g.value);
    }
    for (int k = 0; k < lanes; ++k) {
      if (!(mask >> k & 1u)) continue;
      Fiber& g = r.fibers[first + k];
      switch (g.op) {
        case WarpOpKind::kShfl: {
          // PTX shfl.sync: c = ((32 - width) << 8) | clamp, clamp 0 for .up, 31 otherwise.
          const int segmask = 32 - g.width;
          const int clamp = g.mode == ShflMode::kUp ? 0 : 31;
          const int max_lane = (k & segmask) | (clamp & ~segmask);
          const int min_lane = k & segmask;
          int j = k;
          bool in = false;
          switch (g.mode) {
            case ShflMode::kUp: j = k - g.b; in = j >= max_lane; break;
            case ShflMode::kDown: j = k + g.b; in = j <= max_lane; break;
            case ShflMode::kBfly: j = k ^ g.b; in = j <= max_lane; break;
            case ShflMode::kIdx: j = min_lane | (g.b & 31 & ~segmask); in = j <= max_lane; break;
          }
          if (!in) j = k;
          if (j < 0 || j >= lanes || !(mask >> j & 1u)) {
            g.result = poison_bits(g.bytes);  // undefined on a GPU: make it loud
          } else {
            g.result = r.fibers[first + j].value;
          }
          break;
        }
        case WarpOpKind::kSync: g.result = 0; break;
        case WarpOpKind::kBallot: g.result = ballot; break;
        case WarpOpKind::kAny: g.result = ballot != 0; break;
        case WarpOpKind::kAll: g.result = ballot == (mask & (lanes == 32 ? ~0u : ((1u << lanes) - 1))); break;
        case WarpOpKind::kReduceAdd: g.result = static_cast<uint32_t>(sum); break;
        case WarpOpKind::kReduceMin:
          g.result = g.is_signed ? static_cast<uint32_t>(static_cast<int32_t>(smin)) : umin;
          break;
        case WarpOpKind::kReduceMax:
          g.result = g.is_signed ? static_cast<uint32_t>(static_cast<int32_t>(smax)) : umax;
          break;
      }
      g.wait = Wait::kNone;
    }
    released = true;
  }
  return released;
}

inline uint64_t warp_collective(WarpOpKind op, unsigned mask, uint64_t value, unsigned bytes, ShflMode mode, int b,
                                int width, bool is_signed, const std::source_location& where) {
  BlockRunner* r = runner;
  if (r == nullptr) {
    std::fprintf(stderr, "cuda_emu: warp collective outside a kernel\n");
    std::abort();
  }
  Fiber& f = r->fibers[r->current];
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0) {
    fail_here("shuffle at " + where_str(where) + ": width " + std::to_string(width) + " is not a power of two <= 32");
  }
  f.op = op;
  f.mask = mask;
  f.value = value;
  f.bytes = bytes;
  f.mode = mode;
  f.b = b;
  f.width = width;
  f.is_signed = is_signed;
  f.where = where;
  park(Wait::kWarpOp);
  return runner->fibers[runner->current].result;
}

template <typename T>
inline uint64_t to_bits(const T& v) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

template <typename T>
inline T shfl(ShflMode mode, unsigned mask, T v, int b, int width, const std::source_location& loc) {
  return from_bits<T>(warp_collective(WarpOpKind::kShfl, mask, to_bits(v), sizeof(T), mode, b, width, false, loc));
}

// ------------------------------------------------------------------------ scheduling
inline std::vector<int> order(int n, BlockRunner& r) {
  std::vector<int> o(n);
  for (int i = 0; i < n; ++i) o[i] = i;
  switch (config().schedule) {
    case Schedule::kForward: break;
    case Schedule::kReverse: std::reverse(o.begin(), o.end()); break;
    case Schedule::kRandom: std::shuffle(o.begin(), o.end(), r.rng); break;
  }
  return o;
}

inline void resume(BlockRunner& r, int i) {
  r.current = i;
  threadIdx = r.fibers[i].tid;
  swapcontext(&r.sched, &r.fibers[i].ctx);
  r.current = -1;
}

// The next block in the schedule's order after `from` that can run (not exited, not
// waiting at the cluster barrier); -1 when none can. Called with c.m held.
inline int next_turn(ClusterState& c, int from) {
  const int n = static_cast<int>(c.order.size());
  int pos = 0;
  while (pos < n && c.order[pos] != from) ++pos;
  for (int k = 1; k <= n; ++k) {
    const int r = c.order[(pos + k) % n];
    if (!c.done[r] && !c.at_barrier[r]) return r;
  }
  return -1;
}

inline void wait_turn(ClusterState& c, int me, std::unique_lock<std::mutex>& lk) {
  c.cv.wait(lk, [&] { return c.turn == me || c.aborted; });
}

// Cluster barrier between the OS threads of a cluster's blocks; `me` arrives (drop: `me`
// has exited). Returns false when another block failed.
inline bool cluster_arrive(ClusterState& c, int me, bool drop) {
  std::unique_lock<std::mutex> lk(c.m);
  if (c.aborted) return false;
  if (drop) {
    --c.expected;
    c.done[me] = 1;
  } else {
    ++c.arrived;
    c.at_barrier[me] = 1;
  }
  if (c.arrived > 0 && c.arrived >= c.expected) {  // everyone still running has arrived
    c.arrived = 0;
    ++c.generation;
    std::fill(c.at_barrier.begin(), c.at_barrier.end(), 0);
    c.turn = -1;
    for (int r : c.order) {
      if (!c.done[r]) {
        c.turn = r;
        break;
      }
    }
  } else {
    c.turn = next_turn(c, me);
  }
  c.cv.notify_all();
  if (drop) return true;
  wait_turn(c, me, lk);
  return !c.aborted;
}

inline void cluster_abort(ClusterState& c) {
  std::lock_guard<std::mutex> lk(c.m);
  c.aborted = true;
  c.cv.notify_all();
}

inline std::string describe_waits(BlockRunner& r) {
  std::string s;
  int shown = 0;
  for (int i = 0; i < r.nthreads && shown < 6; ++i) {
    const Fiber& f = r.fibers[i];
    const char* w = f.wait == Wait::kBlockBarrier ? "__syncthreads"
                    : f.wait == Wait::kClusterBarrier ? "cluster.sync"
                    : f.wait == Wait::kWarpOp ? "a warp collective"
                                              : nullptr;
    if (w == nullptr) continue;
    s += "\n  thread (" + std::to_string(f.tid.x) + "," + std::to_string(f.tid.y) + "," + std::to_string(f.tid.z) +
         ") waits at " + w + " (" + where_str(f.where) + ")";
    ++shown;
  }
  return s;
}

// Runs one block to completion (or failure) on the calling OS thread.
inline void run_block(BlockRunner& r, dim3 block, const std::function<void()>& body) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  r.nthreads = n;
  r.nwarps = (n + 31) / 32;
  r.body = &body;
  r.failed = false;
  r.failure.clear();
  r.stack_bytes = config().stack_bytes;
  if (static_cast<int>(r.fibers.size()) < n) r.fibers.resize(n);
  while (static_cast<int>(r.stacks.size()) < n) {
    void* p = mmap(nullptr, r.stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "cuda_emu: cannot map fiber stacks\n");
      std::abort();
    }
    r.stacks.push_back(static_cast<char*>(p));
  }
  std::fill(r.dyn_smem.begin(), r.dyn_smem.end(), 0xff);
  for (int i = 0; i < n; ++i) {
    Fiber& f = r.fibers[i];
    f = Fiber{};
    f.stack = r.stacks[i];
    f.tid = uint3{static_cast<unsigned>(i) % block.x, static_cast<unsigned>(i) / block.x % block.y,
                  static_cast<unsigned>(i) / (block.x * block.y)};
    f.lane = i % 32;
    f.warp = i / 32;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = r.stack_bytes;
    f.ctx.uc_link = &r.sched;
    makecontext(&f.ctx, fiber_entry, 0);
  }
  BlockRunner* saved = runner;
  runner = &r;
  int live = n;
  while (live > 0 && !r.failed) {
    bool progress = false;
    for (int w : order(r.nwarps, r)) {
      const int first = w * 32, lanes = std::min(32, n - first);
      for (;;) {
        for (int l : order(lanes, r)) {
          Fiber& f = r.fibers[first + l];
          if (f.wait != Wait::kNone) continue;
          resume(r, first + l);
          progress = true;
          if (f.wait == Wait::kExited) --live;
        }
        if (r.failed || !resolve_warp(r, w)) break;
      }
      if (r.failed) break;
    }
    if (r.failed || live == 0) break;
    int at_block = 0, at_cluster = 0;
    std::source_location site;
    bool mixed_sites = false;
    for (int i = 0; i < n; ++i) {
      const Fiber& f = r.fibers[i];
      if (f.wait == Wait::kBlockBarrier) {
        if (at_block > 0 && (f.where.line() != site.line() || std::strcmp(f.where.file_name(), site.file_name()) != 0)) {
          mixed_sites = true;
        }
        if (at_block == 0) site = f.where;
        ++at_block;
      }
      if (f.wait == Wait::kClusterBarrier) ++at_cluster;
    }
    if (at_block == live) {
      if (mixed_sites) {
        r.failed = true;
        r.failure = "__syncthreads reached from different source lines at once (divergent barrier):" + describe_waits(r);
        break;
      }
      uint64_t count = 0;  // __syncthreads_count / _and / _or: the predicates of this barrier
      for (int i = 0; i < n; ++i) {
        if (r.fibers[i].wait == Wait::kBlockBarrier) count += r.fibers[i].value != 0;
      }
      for (int i = 0; i < n; ++i) {
        Fiber& f = r.fibers[i];
        if (f.wait != Wait::kBlockBarrier) continue;
        f.result = count;
        f.bytes = static_cast<unsigned>(live);
        f.wait = Wait::kNone;
      }
      continue;
    }
    if (at_cluster == live) {
      if (r.cluster == nullptr || !cluster_arrive(*r.cluster, r.cluster_rank, false)) {
        r.failed = true;
        if (r.failure.empty()) r.failure = "cluster.sync: another block of the cluster failed";
        break;
      }
      for (auto& f : r.fibers) {
        if (f.wait == Wait::kClusterBarrier) f.wait = Wait::kNone;
      }
      continue;
    }
    (void)progress;
    r.failed = true;
    r.failure = "deadlock: no thread can proceed (a barrier or collective that not every thread reaches):" +
                describe_waits(r);
  }
  runner = saved;
}

inline void record_failure(const std::string& what) {
  std::lock_guard<std::mutex> g(state_mutex());
  failure_text() = what;
}

[[noreturn]] inline void fail_here(const std::string& msg) {
  BlockRunner* r = runner;
  if (r == nullptr) {
    std::fprintf(stderr, "cuda_emu: %s\n", msg.c_str());
    std::abort();
  }
  r->failed = true;
  r->failure = msg;
  // Never resumed: the launch reports the failure.
  r->fibers[r->current].wait = Wait::kExited;
  swapcontext(&r->fibers[r->current].ctx, &r->sched);
  std::abort();
}

// ---------------------------------------------------------------------- launching
struct KernelAttrs {
  int max_dynamic_smem = 48 * 1024;
  bool nonportable_cluster = false;
};
inline std::map<const void*, KernelAttrs>& kernel_attrs() {
  static std::map<const void*, KernelAttrs> m;
  return m;
}
inline KernelAttrs attrs_of(const void* k) {
  std::lock_guard<std::mutex> g(state_mutex());
  auto it = kernel_attrs().find(k);
  return it == kernel_attrs().end() ? KernelAttrs{} : it->second;
}

struct LaunchShape {
  dim3 grid{1, 1, 1}, block{1, 1, 1}, cluster{1, 1, 1};
  size_t smem = 0;
};

inline cudaError_t validate(const LaunchShape& s, const void* kernel) {
  const unsigned long long threads = 1ull * s.block.x * s.block.y * s.block.z;
  if (threads == 0 || threads > 1024 || s.block.x > 1024 || s.block.y > 1024 || s.block.z > 64) {
    return cudaErrorInvalidConfiguration;
  }
  if (s.grid.x == 0 || s.grid.y == 0 || s.grid.z == 0 || s.grid.x > 2147483647u || s.grid.y > 65535 || s.grid.z > 65535) {
    return cudaErrorInvalidConfiguration;
  }
  const KernelAttrs a = attrs_of(kernel);
  if (s.smem > static_cast<size_t>(a.max_dynamic_smem)) return cudaErrorInvalidValue;
  const unsigned cl = s.cluster.x * s.cluster.y * s.cluster.z;
  if (cl == 0 || cl > (a.nonportable_cluster ? 16u : 8u)) return cudaErrorInvalidClusterSize;
  if (s.grid.x % s.cluster.x || s.grid.y % s.cluster.y || s.grid.z % s.cluster.z) return cudaErrorInvalidClusterSize;
  return cudaSuccess;
}

inline thread_local ClusterState* current_cluster = nullptr;

// Runs body() as every thread of the grid. Returns cudaSuccess or a launch failure.
inline cudaError_t launch(const LaunchShape& s, const void* kernel, const std::function<void()>& body) {
  if (const cudaError_t e = validate(s, kernel); e != cudaSuccess) {
    sticky_error = e;
    return e;
  }
  const dim3 saved_grid = gridDim, saved_block = blockDim;
  const uint3 saved_bidx = blockIdx, saved_tidx = threadIdx;
  const dim3 cl = s.cluster;
  const unsigned cx = s.grid.x / cl.x, cy = s.grid.y / cl.y, cz = s.grid.z / cl.z;
  const int per_cluster = static_cast<int>(cl.x * cl.y * cl.z);
  std::vector<unsigned long long> clusters(1ull * cx * cy * cz);
  for (size_t i = 0; i < clusters.size(); ++i) clusters[i] = i;
  std::mt19937 rng(config().seed);
  if (config().schedule == Schedule::kReverse) std::reverse(clusters.begin(), clusters.end());
  if (config().schedule == Schedule::kRandom) std::shuffle(clusters.begin(), clusters.end(), rng);
  std::string failure;
  auto block_of = [&](unsigned long long c, int rank) {
    const unsigned ix = static_cast<unsigned>(c % cx), iy = static_cast<unsigned>(c / cx % cy),
                   iz = static_cast<unsigned>(c / (1ull * cx * cy));
    const unsigned rx = rank % cl.x, ry = rank / cl.x % cl.y, rz = rank / (cl.x * cl.y);
    return uint3{ix * cl.x + rx, iy * cl.y + ry, iz * cl.z + rz};
  };
  auto run_one = [&](BlockRunner& r, uint3 bidx) {
    gridDim = s.grid;
    blockDim = s.block;
    blockIdx = bidx;
    run_block(r, s.block, body);
  };
  if (per_cluster == 1) {
    BlockRunner r;
    r.rng.seed(config().seed);
    r.dyn_smem.assign(s.smem, 0xff);
    for (unsigned long long c : clusters) {
      run_one(r, block_of(c, 0));
      if (r.failed) {
        failure = "block (" + std::to_string(blockIdx.x) + "," + std::to_string(blockIdx.y) + "," +
                  std::to_string(blockIdx.z) + "): " + r.failure;
        break;
      }
    }
  } else {
    for (unsigned long long c : clusters) {
      ClusterState cs;
      cs.dims = cl;
      cs.nblocks = per_cluster;
      cs.expected = per_cluster;
      cs.anchors.assign(per_cluster, nullptr);
      cs.dyn.assign(per_cluster, nullptr);
      cs.dyn_bytes = s.smem;
      cs.done.assign(per_cluster, 0);
      cs.at_barrier.assign(per_cluster, 0);
      for (int k = 0; k < per_cluster; ++k) cs.order.push_back(k);
      if (config().schedule == Schedule::kReverse) std::reverse(cs.order.begin(), cs.order.end());
      if (config().schedule == Schedule::kRandom) std::shuffle(cs.order.begin(), cs.order.end(), rng);
      cs.turn = cs.order[0];
      std::vector<BlockRunner> runners(per_cluster);
      for (int k = 0; k < per_cluster; ++k) {
        runners[k].dyn_smem.assign(s.smem, 0xff);
        runners[k].rng.seed(config().seed + k);
        cs.dyn[k] = runners[k].dyn_smem.data();
      }
      std::atomic<int> ready{0};
      std::vector<std::thread> threads;
      for (int k = 0; k < per_cluster; ++k) {
        threads.emplace_back([&, k] {
          BlockRunner& r = runners[k];
          r.cluster = &cs;
          r.cluster_rank = k;
          current_cluster = &cs;
          cs.anchors[k] = &tls_anchor;
          ready.fetch_add(1);
          while (ready.load() < per_cluster) std::this_thread::yield();
          bool go = false;
          {
            std::unique_lock<std::mutex> lk(cs.m);
            wait_turn(cs, k, lk);
            go = !cs.aborted;
          }
          if (go) run_one(r, block_of(c, k));
          if (r.failed) {
            cluster_abort(cs);
          } else {
            cluster_arrive(cs, k, true);
          }
          current_cluster = nullptr;
        });
      }
      for (auto& t : threads) t.join();
      for (int k = 0; k < per_cluster; ++k) {
        if (runners[k].failed && (failure.empty() || failure.find("another block") != std::string::npos)) {
          const uint3 b = block_of(c, k);
          failure = "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) +
                    ") of a cluster: " + runners[k].failure;
        }
      }
      if (!failure.empty()) break;
    }
  }
  gridDim = saved_grid;
  blockDim = saved_block;
  blockIdx = saved_bidx;
  threadIdx = saved_tidx;
  if (!failure.empty()) {
    record_failure(failure);
    if (std::getenv("CUDA_EMU_QUIET") == nullptr) std::fprintf(stderr, "cuda_emu: launch failed: %s\n", failure.c_str());
    sticky_error = cudaErrorLaunchFailure;
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

template <typename... P, typename... A>
cudaError_t launch_kernel(const LaunchShape& s, void (*kernel)(P...), A&&... args) {
  std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
  const std::function<void()> body = [&] { std::apply(kernel, params); };
  return launch(s, reinterpret_cast<const void*>(kernel), body);
}

// kernel<<<grid, block, smem, stream>>>(args) is rewritten by emulate_kernel.py into
// kernel | ::emu::chevron(grid, block, smem, stream) | ::emu::call(args).
struct Chevron {
  LaunchShape shape;
};
inline Chevron chevron(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t = nullptr) {
  Chevron c;
  c.shape.grid = grid;
  c.shape.block = block;
  c.shape.smem = smem;
  return c;
}
template <typename... P>
struct BoundKernel {
  void (*kernel)(P...);
  LaunchShape shape;
};
template <typename... P>
BoundKernel<P...> operator|(void (*kernel)(P...), const Chevron& c) {
  return {kernel, c.shape};
}
template <typename... A>
struct CallArgs {
  std::tuple<A...> args;
};
template <typename... A>
CallArgs<A&&...> call(A&&... a) {
  return {std::forward_as_tuple(std::forward<A>(a)...)};
}
template <typename... P, typename... A>
void operator|(const BoundKernel<P...>& k, CallArgs<A...>&& c) {
  std::apply([&](auto&&... a) { launch_kernel(k.shape, k.kernel, std::forward<decltype(a)>(a)...); }, c.args);
}

template <typename... P, typename... A>
cudaError_t launch_ex(const cudaLaunchConfig_t* cfg, void (*kernel)(P...), A&&... args) {
  LaunchShape s;
  s.grid = cfg->gridDim;
  s.block = cfg->blockDim;
  s.smem = cfg->dynamicSmemBytes;
  for (unsigned i = 0; i < cfg->numAttrs; ++i) {
    if (cfg->attrs[i].id == cudaLaunchAttributeClusterDimension) {
      s.cluster = dim3(cfg->attrs[i].val.clusterDim.x, cfg->attrs[i].val.clusterDim.y, cfg->attrs[i].val.clusterDim.z);
    }
  }
  return launch_kernel(s, kernel, std::forward<A>(args)...);
}

// Dynamic shared memory of the running block (extern __shared__ is rewritten to this).
template <typename T>
inline T* dynamic_smem() {
  BlockRunner* r = runner;
  return r == nullptr ? nullptr : reinterpret_cast<T*>(r->dyn_smem.data());
}

}  // namespace emu

// ------------------------------------------------------------------ device built-ins
inline int emu_barrier_count(int pred, const std::source_location& loc) {
  emu::Fiber& f = emu::runner->fibers[emu::runner->current];
  f.where = loc;
  f.value = pred != 0;
  emu::park(emu::Wait::kBlockBarrier);
  return static_cast<int>(emu::runner->fibers[emu::runner->current].result);
}
inline void __syncthreads(std::source_location loc = std::source_location::current()) { emu_barrier_count(0, loc); }
inline int __syncthreads_count(int pred, std::source_location loc = std::source_location::current()) {
  return emu_barrier_count(pred, loc);
}
inline int __syncthreads_or(int pred, std::source_location loc = std::source_location::current()) {
  return emu_barrier_count(pred, loc) > 0;
}
// Exited threads do not vote: _and is over the threads that reached the barrier.
inline int __syncthreads_and(int pred, std::source_location loc = std::source_location::current()) {
  const int count = emu_barrier_count(pred, loc);
  return static_cast<unsigned>(count) == emu::runner->fibers[emu::runner->current].bytes;
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location loc = std::source_location::current()) {
  emu::warp_collective(emu::WarpOpKind::kSync, mask, 0, 4, emu::ShflMode::kIdx, 0, 32, false, loc);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32,
                     std::source_location loc = std::source_location::current()) {
  return emu::shfl(emu::ShflMode::kIdx, mask, v, src, width, loc);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                        std::source_location loc = std::source_location::current()) {
  return emu::shfl(emu::ShflMode::kUp, mask, v, static_cast<int>(delta), width, loc);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                          std::source_location loc = std::source_location::current()) {
  return emu::shfl(emu::ShflMode::kDown, mask, v, static_cast<int>(delta), width, loc);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                         std::source_location loc = std::source_location::current()) {
  return emu::shfl(emu::ShflMode::kBfly, mask, v, lane_mask, width, loc);
}
inline unsigned __ballot_sync(unsigned mask, int pred, std::source_location loc = std::source_location::current()) {
  return static_cast<unsigned>(
      emu::warp_collective(emu::WarpOpKind::kBallot, mask, pred != 0, 4, emu::ShflMode::kIdx, 0, 32, false, loc));
}
inline int __any_sync(unsigned mask, int pred, std::source_location loc = std::source_location::current()) {
  return static_cast<int>(
      emu::warp_collective(emu::WarpOpKind::kAny, mask, pred != 0, 4, emu::ShflMode::kIdx, 0, 32, false, loc));
}
inline int __all_sync(unsigned mask, int pred, std::source_location loc = std::source_location::current()) {
  return static_cast<int>(
      emu::warp_collective(emu::WarpOpKind::kAll, mask, pred != 0, 4, emu::ShflMode::kIdx, 0, 32, false, loc));
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v, std::source_location loc = std::source_location::current()) {
  return static_cast<unsigned>(emu::warp_collective(emu::WarpOpKind::kReduceAdd, mask, v, 4, emu::ShflMode::kIdx, 0, 32, false, loc));
}
inline int __reduce_add_sync(unsigned mask, int v, std::source_location loc = std::source_location::current()) {
  return static_cast<int>(emu::warp_collective(emu::WarpOpKind::kReduceAdd, mask, static_cast<uint32_t>(v), 4,
                                               emu::ShflMode::kIdx, 0, 32, true, loc));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v, std::source_location loc = std::source_location::current()) {
  return static_cast<unsigned>(emu::warp_collective(emu::WarpOpKind::kReduceMin, mask, v, 4, emu::ShflMode::kIdx, 0, 32, false, loc));
}
inline int __reduce_min_sync(unsigned mask, int v, std::source_location loc = std::source_location::current()) {
  return static_cast<int>(emu::warp_collective(emu::WarpOpKind::kReduceMin, mask, static_cast<uint32_t>(v), 4,
                                               emu::ShflMode::kIdx, 0, 32, true, loc));
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v, std::source_location loc = std::source_location::current()) {
  return static_cast<unsigned>(emu::warp_collective(emu::WarpOpKind::kReduceMax, mask, v, 4, emu::ShflMode::kIdx, 0, 32, false, loc));
}
inline int __reduce_max_sync(unsigned mask, int v, std::source_location loc = std::source_location::current()) {
  return static_cast<int>(emu::warp_collective(emu::WarpOpKind::kReduceMax, mask, static_cast<uint32_t>(v), 4,
                                               emu::ShflMode::kIdx, 0, 32, true, loc));
}
// Lanes of the calling warp that have not exited.
inline unsigned __activemask() {
  emu::BlockRunner* r = emu::runner;
  const int first = r->fibers[r->current].warp * 32;
  unsigned m = 0;
  for (int k = 0; k < 32 && first + k < r->nthreads; ++k) {
    if (r->fibers[first + k].wait != emu::Wait::kExited) m |= 1u << k;
  }
  return m;
}

// Loads and stores with cache hints: plain accesses, but a vector access (uint4, float4, a
// 16-byte pack) at an address that is not a multiple of its alignment is a launch failure,
// as the misaligned-address fault it is on a GPU. (Plain dereferences are not checked: build
// with -fsanitize=alignment for those; see references/cpu-emulator.md.)
template <typename T>
inline const T* emu_aligned(const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "misaligned %zu-byte access at %p", sizeof(T), static_cast<const void*>(p));
    emu::fail_here(msg);
  }
  return p;
}
template <typename T> inline T __ldg(const T* p) { return *emu_aligned(p); }
template <typename T> inline T __ldcg(const T* p) { return *emu_aligned(p); }
template <typename T> inline T __ldca(const T* p) { return *emu_aligned(p); }
template <typename T> inline T __ldcs(const T* p) { return *emu_aligned(p); }
template <typename T> inline T __ldlu(const T* p) { return *emu_aligned(p); }
template <typename T> inline T __ldcv(const T* p) { return *emu_aligned(p); }
template <typename T> inline void __stcg(T* p, T v) { *const_cast<T*>(emu_aligned(p)) = v; }
template <typename T> inline void __stcs(T* p, T v) { *const_cast<T*>(emu_aligned(p)) = v; }
template <typename T> inline void __stwb(T* p, T v) { *const_cast<T*>(emu_aligned(p)) = v; }
template <typename T> inline void __stwt(T* p, T v) { *const_cast<T*>(emu_aligned(p)) = v; }

// Fast-math intrinsics map to their exact libm counterparts.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __exp2f(float x) { return std::exp2(x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(unsigned x) { return std::countl_zero(x); }
inline int __clzll(unsigned long long x) { return std::countl_zero(x); }
inline int __ffs(unsigned x) { return x == 0 ? 0 : std::countr_zero(x) + 1; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((1ull * a * b) >> 32); }
inline void __nanosleep(unsigned) {}
inline long long clock64() { return 0; }

// CUDA's min/max overloads accept mixed integer types.
template <typename A, typename B>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(a) : static_cast<C>(b);
}
template <typename A, typename B>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

// Atomics: the blocks of a cluster run on different OS threads, so these are real atomics.
template <typename T>
inline T emu_atomic_rmw(T* p, T v, int op) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  for (;;) {
    T next = old;
    switch (op) {
      case 0: next = old + v; break;
      case 1: next = v < old ? v : old; break;
      case 2: next = old < v ? v : old; break;
      case 3: next = v; break;
    }
    if (a.compare_exchange_weak(old, next)) return old;
  }
}
template <typename T> inline T atomicAdd(T* p, T v) { return emu_atomic_rmw(p, v, 0); }
template <typename T> inline T atomicMin(T* p, T v) { return emu_atomic_rmw(p, v, 1); }
template <typename T> inline T atomicMax(T* p, T v) { return emu_atomic_rmw(p, v, 2); }
template <typename T> inline T atomicExch(T* p, T v) { return emu_atomic_rmw(p, v, 3); }
template <typename T>
inline T atomicCAS(T* p, T compare, T v) {
  std::atomic_ref<T> a(*p);
  a.compare_exchange_strong(compare, v);
  return compare;
}

// ------------------------------------------------------------------ cooperative groups
namespace cooperative_groups {

class thread_block {
 public:
  void sync(std::source_location loc = std::source_location::current()) const { __syncthreads(loc); }
  unsigned thread_rank() const { return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x; }
  unsigned num_threads() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned size() const { return num_threads(); }
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return {}; }

// A tile of Size (a power of two <= 32) consecutive threads of a block, as
// tiled_partition<Size>(block) makes it: collectives over the tile's lanes only.
template <unsigned Size>
class thread_block_tile {
  static_assert(Size > 0 && Size <= 32 && (Size & (Size - 1)) == 0, "tile sizes are powers of two <= 32");

 public:
  unsigned thread_rank() const { return linear() % Size; }
  unsigned size() const { return Size; }
  unsigned num_threads() const { return Size; }
  unsigned meta_group_rank() const { return linear() / Size; }
  unsigned meta_group_size() const { return (this_thread_block().num_threads() + Size - 1) / Size; }
  void sync(std::source_location loc = std::source_location::current()) const { __syncwarp(mask(), loc); }
  template <typename T>
  T shfl(T v, int src, std::source_location loc = std::source_location::current()) const {
    return __shfl_sync(mask(), v, src, Size, loc);
  }
  template <typename T>
  T shfl_down(T v, unsigned d, std::source_location loc = std::source_location::current()) const {
    return __shfl_down_sync(mask(), v, d, Size, loc);
  }
  template <typename T>
  T shfl_up(T v, unsigned d, std::source_location loc = std::source_location::current()) const {
    return __shfl_up_sync(mask(), v, d, Size, loc);
  }
  template <typename T>
  T shfl_xor(T v, int m, std::source_location loc = std::source_location::current()) const {
    return __shfl_xor_sync(mask(), v, m, Size, loc);
  }
  unsigned ballot(int p, std::source_location loc = std::source_location::current()) const {
    return (__ballot_sync(mask(), p, loc) & mask()) >> (linear() % 32 / Size * Size);
  }
  int any(int p, std::source_location loc = std::source_location::current()) const { return __any_sync(mask(), p, loc); }
  int all(int p, std::source_location loc = std::source_location::current()) const { return __all_sync(mask(), p, loc); }

 private:
  static unsigned linear() { return this_thread_block().thread_rank(); }
  static unsigned mask() {
    // Lanes of a partial last warp do not exist: leave them out of the mask.
    const unsigned warp_first = linear() / 32 * 32;
    const unsigned n = this_thread_block().num_threads();
    const unsigned present = n - warp_first >= 32 ? 0xffffffffu : ((1u << (n - warp_first)) - 1);
    const unsigned tile = Size == 32 ? 0xffffffffu : ((1u << Size) - 1) << (linear() % 32 / Size * Size);
    return tile & present;
  }
};
template <unsigned Size>
inline thread_block_tile<Size> tiled_partition(const thread_block&) {
  return {};
}

class cluster_group {
 public:
  void sync(std::source_location loc = std::source_location::current()) const {
    emu::runner->fibers[emu::runner->current].where = loc;
    emu::park(emu::Wait::kClusterBarrier);
  }
  unsigned block_rank() const { return emu::runner->cluster ? emu::runner->cluster_rank : 0; }
  unsigned num_blocks() const { return emu::runner->cluster ? emu::runner->cluster->nblocks : 1; }
  dim3 dim_blocks() const { return emu::runner->cluster ? emu::runner->cluster->dims : dim3(1, 1, 1); }
  dim3 block_index() const {
    const dim3 d = dim_blocks();
    return dim3(blockIdx.x % d.x, blockIdx.y % d.y, blockIdx.z % d.z);
  }
  unsigned thread_rank() const { return block_rank() * this_thread_block().num_threads() + this_thread_block().thread_rank(); }
  unsigned num_threads() const { return num_blocks() * this_thread_block().num_threads(); }
  // The address of *addr (a __shared__ variable or dynamic shared memory of this block) in
  // the shared memory of block `rank` of the cluster.
  template <typename T>
  T* map_shared_rank(T* addr, unsigned rank) const {
    emu::BlockRunner* r = emu::runner;
    emu::ClusterState* c = r->cluster;
    if (c == nullptr) {
      if (rank != 0) emu::fail_here("map_shared_rank: rank " + std::to_string(rank) + " outside a cluster of 1 block");
      return addr;
    }
    if (rank >= static_cast<unsigned>(c->nblocks)) {
      emu::fail_here("map_shared_rank: rank " + std::to_string(rank) + " >= cluster size " + std::to_string(c->nblocks));
    }
    if (c->done[rank]) emu::fail_here("map_shared_rank: block " + std::to_string(rank) + " of the cluster has exited");
    const auto* p = reinterpret_cast<const unsigned char*>(addr);
    const unsigned char* mine = r->dyn_smem.data();
    if (c->dyn_bytes > 0 && p >= mine && p < mine + c->dyn_bytes) {
      return reinterpret_cast<T*>(c->dyn[rank] + (p - mine));
    }
    const char* anchor = &emu::tls_anchor;
    const std::ptrdiff_t off = reinterpret_cast<const char*>(p) - anchor;
    if (off < -(1 << 24) || off > (1 << 24)) emu::fail_here("map_shared_rank: the address is not in shared memory");
    return reinterpret_cast<T*>(c->anchors[rank] + off);
  }
  template <typename T>
  T& map_shared_rank(T& addr, unsigned rank) const {
    return *map_shared_rank(&addr, rank);
  }
};
inline cluster_group this_cluster() { return {}; }

template <typename G>
inline void sync(const G& g) {
  g.sync();
}

}  // namespace cooperative_groups

// ------------------------------------------------------------------ runtime API (host)
// kernel launches
#define cudaLaunchKernelEx ::emu::launch_ex

extern "C" {
__attribute__((weak)) cudaError_t cudaGetLastError(void) {
  const cudaError_t e = emu::sticky_error;
  emu::sticky_error = cudaSuccess;
  return e;
}
__attribute__((weak)) cudaError_t cudaPeekAtLastError(void) { return emu::sticky_error; }
__attribute__((weak)) const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return "unspecified launch failure (cuda_emu: see emu::last_failure())";
    case cudaErrorInvalidClusterSize: return "invalid cluster size";
    default: return "cuda_emu error";
  }
}
__attribute__((weak)) const char* cudaGetErrorName(cudaError_t e) { return cudaGetErrorString(e); }
__attribute__((weak)) cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
__attribute__((weak)) cudaError_t cudaSetDevice(int) { return cudaSuccess; }
__attribute__((weak)) cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
__attribute__((weak)) cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
__attribute__((weak)) cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = emu::config().sm_count; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = emu::config().smem_optin; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *value = 32; return cudaSuccess;
    case cudaDevAttrClusterLaunch: *value = 1; return cudaSuccess;
    default: *value = 0; return cudaErrorInvalidValue;
  }
}
__attribute__((weak)) cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  std::lock_guard<std::mutex> g(emu::state_mutex());
  emu::KernelAttrs& a = emu::kernel_attrs()[func];
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > emu::config().smem_optin) return cudaErrorInvalidValue;
    a.max_dynamic_smem = value;
  } else if (attr == cudaFuncAttributeNonPortableClusterSizeAllowed) {
    a.nonportable_cluster = value != 0;
  }
  return cudaSuccess;
}
__attribute__((weak)) cudaError_t cudaOccupancyMaxActiveClusters(int* n, const void*, const cudaLaunchConfig_t* cfg) {
  unsigned size = 1;
  for (unsigned i = 0; i < cfg->numAttrs; ++i) {
    if (cfg->attrs[i].id == cudaLaunchAttributeClusterDimension) {
      size = cfg->attrs[i].val.clusterDim.x * cfg->attrs[i].val.clusterDim.y * cfg->attrs[i].val.clusterDim.z;
    }
  }
  const int set = emu::config().max_active_clusters;
  *n = set >= 0 ? set : emu::config().sm_count / static_cast<int>(size == 0 ? 1 : size);
  return cudaSuccess;
}
__attribute__((weak)) cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void*, int block, size_t) {
  *n = block <= 0 ? 0 : std::max(1, 2048 / block);
  return cudaSuccess;
}
__attribute__((weak)) cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
__attribute__((weak)) cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
__attribute__((weak)) cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) {
  std::memset(p, v, n);
  return cudaSuccess;
}
__attribute__((weak)) cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, enum cudaMemcpyKind, cudaStream_t) {
  std::memmove(d, s, n);
  return cudaSuccess;
}
}

// The typed overloads cuda_runtime.h declares only for nvcc.
template <typename... P>
inline cudaError_t cudaFuncSetAttribute(void (*func)(P...), enum cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(func), attr, value);
}
template <typename... P>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void (*func)(P...), int block, size_t smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, reinterpret_cast<const void*>(func), block, smem);
}
