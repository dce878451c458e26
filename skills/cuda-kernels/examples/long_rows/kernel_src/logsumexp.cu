// logsumexp.cu - logsumexp and cross-entropy over long rows (a vocabulary of logits).
//
// Design in ../README.md: the byte and exp2 budget (memory-bound if 64 bytes per thread stay in
// flight), the base-2 running (m, s) pairs and their -inf rule, and the three ways lse_plan
// splits a row (kRow, kCluster, kMultiPass). Every path reads a row through one loop: a scalar
// head up to the first 16-byte boundary, 16-byte packs, a scalar tail.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#define LONG_ROWS_HAVE_CLUSTERS 1
#endif

#include "long_rows.h"

namespace long_rows {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kThreads = 512;         // row and slice kernels
constexpr int kUnroll = 4;            // 16-byte packs in flight per thread
constexpr int kMaxChunks = 64;        // multi-pass slices per row
constexpr int64_t kMinSlice = 4096;   // elements: narrower slices are not worth a block

struct MS {
  float m;  // max(x) * log2(e)
  float s;  // sum 2^(x * log2(e) - m)
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
struct alignas(16) Pack {
  T v[16 / sizeof(T)];
};

template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T* p) {
  const uint4 u = __ldcs(reinterpret_cast<const uint4*>(p));  // read once: evict first
  Pack<T> r;
  static_assert(sizeof(r) == sizeof(u), "a pack is 16 bytes");
  __builtin_memcpy(&r, &u, sizeof(u));
  return r;
}

__device__ __forceinline__ MS combine(MS a, MS b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.s * exp2f(a.m - m) + b.s * exp2f(b.m - m)};
}

// Folds n values (already times log2(e)) into acc: one max, one rescale, n exp2.
template <int N>
__device__ __forceinline__ void fold(MS& acc, const float (&t)[N]) {
  float pm = t[0];
#pragma unroll
  for (int j = 1; j < N; ++j) pm = fmaxf(pm, t[j]);
  const float m = fmaxf(acc.m, pm);
  if (m == -INFINITY) return;  // nothing but -inf so far
  float s = acc.s * exp2f(acc.m - m);
#pragma unroll
  for (int j = 0; j < N; ++j) s += exp2f(t[j] - m);
  acc = {m, s};
}

// (m, s) of p[0..n) over threads t = 0..nt-1 of the caller's group.
template <typename T>
__device__ __forceinline__ MS reduce_range(const T* p, int64_t n, int t, int nt) {
  constexpr int N = 16 / sizeof(T);
  MS acc{-INFINITY, 0.f};
  // Head: elements before the first 16-byte boundary (rows of an odd width, x[:, 1:] views).
  const int64_t to_boundary = static_cast<int64_t>(((16 - (reinterpret_cast<uintptr_t>(p) & 15)) & 15) / sizeof(T));
  const int64_t head = to_boundary < n ? to_boundary : n;
  if (t < head) {
    const float v[1] = {to_float(p[t]) * kLog2e};
    fold(acc, v);
  }
  const T* q = p + head;
  const int64_t packs = (n - head) / N;
  // Every round loads kUnroll packs at once, the last one too: a pack past the end re-reads
  // the row's last pack (an L1 hit, never out of bounds) and counts as -inf. A one-pack loop
  // for the last round left one load in flight (32,000 bf16 wide: 73.5 % of copy on an H100,
  // 88.2 % with this loop); predicated loads cost 74-86 registers (ptxas -v).
  for (int64_t i = t; i < packs; i += static_cast<int64_t>(kUnroll) * nt) {
    Pack<T> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = i + static_cast<int64_t>(u) * nt;
      v[u] = load_pack(q + (j < packs ? j : packs - 1) * N);
    }
    float f[kUnroll * N];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const bool in = i + static_cast<int64_t>(u) * nt < packs;
#pragma unroll
      for (int j = 0; j < N; ++j) f[u * N + j] = in ? to_float(v[u].v[j]) * kLog2e : -INFINITY;
    }
    fold(acc, f);
  }
  for (int64_t e = head + packs * N + t; e < n; e += nt) {  // tail
    const float v[1] = {to_float(p[e]) * kLog2e};
    fold(acc, v);
  }
  return acc;
}

__device__ __forceinline__ MS warp_reduce(MS v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const MS other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
    v = combine(v, other);
  }
  return v;
}

// The block's (m, s), valid in thread 0. `scratch` holds 32 pairs. The leading barrier is
// the one barrier discipline of these templates: a block that calls this again (the next
// row of the grid-stride loop) cannot overwrite scratch while warp 0 still reads it.
__device__ __forceinline__ MS block_reduce(MS v, MS* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_reduce(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : MS{-INFINITY, 0.f};
    v = warp_reduce(v);
  }
  return v;
}

// Thread 0 of a row: lse and, with targets, the loss.
template <typename T>
__device__ __forceinline__ void finish_row(const LseArgs& a, int64_t row, MS v) {
  float lse;
  if (v.m == INFINITY) {
    lse = INFINITY;
  } else if (v.m == -INFINITY) {
    lse = -INFINITY;
  } else {
    lse = (v.m + log2f(v.s)) * kLn2;
  }
  a.lse[row] = lse;
  if (a.target != nullptr) {
    const int64_t t = a.target[row];
    float loss;
    if (t == a.ignore_index) {
      loss = 0.f;
    } else if (t < 0 || t >= a.vocab) {
      loss = NAN;
    } else {
      loss = lse - to_float(static_cast<const T*>(a.logits)[row * a.row_stride + t]);
    }
    a.loss[row] = loss;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2) lse_rows_kernel(const LseArgs a) {
  __shared__ MS scratch[32];
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* p = static_cast<const T*>(a.logits) + row * a.row_stride;
    MS v = reduce_range(p, a.vocab, threadIdx.x, blockDim.x);
    v = block_reduce(v, scratch);
    if (threadIdx.x == 0) finish_row<T>(a, row, v);
  }
}

// Slice blockIdx.y of row blockIdx.x (multi-pass pass 1 and the cluster path).
__host__ __device__ __forceinline__ int64_t slice_len(int64_t vocab, int chunks) {
  // Whole 64-byte multiples, so every slice but the first starts where the row's packs do.
  const int64_t per = (vocab + chunks - 1) / chunks;
  return (per + 31) / 32 * 32;
}

template <typename T>
__device__ __forceinline__ MS reduce_slice(const LseArgs& a, int64_t row, int chunk, int chunks) {
  const int64_t len = slice_len(a.vocab, chunks);
  const int64_t begin = chunk * len;
  const int64_t n = begin < a.vocab ? (a.vocab - begin < len ? a.vocab - begin : len) : 0;
  const T* p = static_cast<const T*>(a.logits) + row * a.row_stride + begin;
  return reduce_range(p, n, threadIdx.x, blockDim.x);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) lse_partial_kernel(const LseArgs a, int chunks) {
  __shared__ MS scratch[32];
  const int64_t row = blockIdx.x;
  MS v = reduce_slice<T>(a, row, blockIdx.y, chunks);
  v = block_reduce(v, scratch);
  if (threadIdx.x == 0) static_cast<MS*>(a.workspace)[row * chunks + blockIdx.y] = v;
}

// Pass 2: one warp per row combines the row's partials.
template <typename T>
__global__ void __launch_bounds__(256) lse_combine_kernel(const LseArgs a, int chunks) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= a.rows) return;  // whole warps leave together
  const int lane = threadIdx.x & 31;
  const MS* w = static_cast<const MS*>(a.workspace) + row * chunks;
  MS v{-INFINITY, 0.f};
  for (int c = lane; c < chunks; c += 32) v = combine(v, w[c]);
  v = warp_reduce(v);
  if (lane == 0) finish_row<T>(a, row, v);
}

#if defined(LONG_ROWS_HAVE_CLUSTERS)
// A cluster of gridDim.y blocks per row (cluster dims (1, C, 1)): rank r reduces slice r.
template <typename T>
__global__ void __launch_bounds__(kThreads) lse_cluster_kernel(const LseArgs a) {
  namespace cg = cooperative_groups;
  __shared__ MS scratch[32];
  __shared__ MS partial;
  cg::cluster_group cluster = cg::this_cluster();
  const int64_t row = blockIdx.x;
  const int chunks = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  MS v = reduce_slice<T>(a, row, rank, chunks);
  v = block_reduce(v, scratch);
  if (threadIdx.x == 0) partial = v;
  cluster.sync();  // every block's partial is written
  if (rank == 0 && threadIdx.x == 0) {
    MS acc = partial;
    for (int r = 1; r < chunks; ++r) acc = combine(acc, *cluster.map_shared_rank(&partial, r));
    finish_row<T>(a, row, acc);
  }
  cluster.sync();  // no block leaves while rank 0 may still read its shared memory
}
#endif

// ------------------------------------------------------------------------------ host side
struct Device {
  int sms = 0;
  int major = 0;
};

// Per-device answers of the queries the plan needs, asked once: a launch of a few
// microseconds (one row) must not wait for an occupancy query every time.
constexpr int kMaxDevices = 64;
std::atomic<int> g_sms[kMaxDevices];
std::atomic<int> g_major[kMaxDevices];
std::atomic<int> g_clusters_fit[kMaxDevices][3][4];  // [device][dtype][log2(C) - 1]; 0 unknown, 1 no, 2 yes

int current_device() {
  int dev = 0;
  return cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < kMaxDevices ? dev : -1;
}

Device device_info() {
  Device d;
  const int dev = current_device();
  if (dev < 0) return d;
  d.sms = g_sms[dev].load(std::memory_order_relaxed);
  d.major = g_major[dev].load(std::memory_order_relaxed);
  if (d.sms == 0) {
    cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev);
    g_major[dev].store(d.major, std::memory_order_relaxed);
    g_sms[dev].store(d.sms, std::memory_order_relaxed);
  }
  return d;
}

int pow2_at_least(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p <<= 1;
  return p;
}

int row_threads(const LseArgs& a) {
  const int64_t elems = 16 / (a.dtype == DType::kFloat32 ? 4 : 2);
  const int64_t per_thread = 4 * elems * kUnroll / 2;  // ~2 unrolled iterations each
  const int t = pow2_at_least((a.vocab + per_thread - 1) / per_thread);
  return t < 64 ? 64 : (t > kThreads ? kThreads : t);
}

int cluster_blocks(const LseArgs& a, const Device& d) {
  if (a.cluster_size > 0) return a.cluster_size;
  int c = pow2_at_least((d.sms + a.rows - 1) / (a.rows > 0 ? a.rows : 1));
  while (c > 2 && a.vocab / c < kMinSlice) c >>= 1;
  return c < 2 ? 2 : (c > 8 ? 8 : c);
}

int multipass_chunks(const LseArgs& a, const Device& d) {
  int64_t c = (2LL * d.sms + a.rows - 1) / (a.rows > 0 ? a.rows : 1);
  const int64_t by_width = (a.vocab + kMinSlice - 1) / kMinSlice;
  if (c > by_width) c = by_width;
  if (c > kMaxChunks) c = kMaxChunks;
  return c < 2 ? 2 : static_cast<int>(c);
}

template <typename T>
cudaLaunchConfig_t cluster_config(const LseArgs& a, int c, cudaLaunchAttribute* attr, cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(a.rows), static_cast<unsigned>(c), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = 1;
  attr->val.clusterDim.y = static_cast<unsigned>(c);
  attr->val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

template <typename T>
bool clusters_fit(const LseArgs& a, int c) {
#if defined(LONG_ROWS_HAVE_CLUSTERS)
  const int dev = current_device();
  int slot = 0;
  while ((2 << slot) < c && slot < 3) ++slot;
  std::atomic<int>* known = dev >= 0 ? &g_clusters_fit[dev][static_cast<int>(a.dtype)][slot] : nullptr;
  if (known != nullptr && known->load(std::memory_order_relaxed) != 0) return known->load() == 2;
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config<T>(a, c, &attr, nullptr);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, lse_cluster_kernel<T>, &cfg) != cudaSuccess) {
    cudaGetLastError();  // a query that fails means "no": clear it, take the fallback
    n = 0;
  }
  if (known != nullptr) known->store(n > 0 ? 2 : 1, std::memory_order_relaxed);
  return n > 0;
#else
  (void)a;
  (void)c;
  return false;
#endif
}

template <typename T>
Path plan(const LseArgs& a, const Device& d) {
  if (a.path != Path::kAuto) return a.path;
  if (a.rows >= d.sms || a.vocab < 2 * kMinSlice) return Path::kRow;
  if (d.major >= 9 && clusters_fit<T>(a, cluster_blocks(a, d))) return Path::kCluster;
  return Path::kMultiPass;
}

template <typename F>
auto dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat16:
      return f(__half{});
    case DType::kBFloat16:
      return f(__nv_bfloat16{});
    case DType::kFloat32:
    default:
      return f(float{});
  }
}

template <typename T>
cudaError_t launch(const LseArgs& a, cudaStream_t stream) {
  const Device d = device_info();
  const Path p = plan<T>(a, d);
  if (p == Path::kRow) {
    const int64_t grid = a.rows < 0x7fffffffLL ? a.rows : 0x7fffffffLL;
    lse_rows_kernel<T><<<static_cast<unsigned>(grid), row_threads(a), 0, stream>>>(a);
    return cudaGetLastError();
  }
  if (a.rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (p == Path::kCluster) {
#if defined(LONG_ROWS_HAVE_CLUSTERS)
    const int c = cluster_blocks(a, d);
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = cluster_config<T>(a, c, &attr, stream);
    return cudaLaunchKernelEx(&cfg, lse_cluster_kernel<T>, a);
#else
    return cudaErrorNotSupported;
#endif
  }
  if (a.workspace == nullptr) return cudaErrorInvalidValue;
  const int chunks = multipass_chunks(a, d);
  lse_partial_kernel<T><<<dim3(static_cast<unsigned>(a.rows), chunks), kThreads, 0, stream>>>(a, chunks);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const unsigned warps_per_block = 8;
  const int64_t blocks = (a.rows + warps_per_block - 1) / warps_per_block;
  lse_combine_kernel<T><<<static_cast<unsigned>(blocks), warps_per_block * 32, 0, stream>>>(a, chunks);
  return cudaGetLastError();
}

}  // namespace

void forget_device_queries() {
  for (int d = 0; d < kMaxDevices; ++d) {
    g_sms[d].store(0);
    g_major[d].store(0);
    for (auto& per_dtype : g_clusters_fit[d]) {
      for (auto& v : per_dtype) v.store(0);
    }
  }
}

Path lse_plan(const LseArgs& args) {
  const Device d = device_info();
  return dispatch(args.dtype, [&](auto t) { return plan<decltype(t)>(args, d); });
}

size_t lse_workspace_bytes(const LseArgs& args) {
  if (args.rows <= 0 || args.vocab <= 0 || lse_plan(args) != Path::kMultiPass) return 0;
  return static_cast<size_t>(args.rows) * multipass_chunks(args, device_info()) * sizeof(MS);
}

cudaError_t logsumexp(const LseArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return cudaSuccess;
  if (args.rows < 0 || args.vocab <= 0 || args.logits == nullptr || args.lse == nullptr) return cudaErrorInvalidValue;
  if (args.target != nullptr && args.loss == nullptr) return cudaErrorInvalidValue;
  return dispatch(args.dtype, [&](auto t) { return launch<decltype(t)>(args, stream); });
}

}  // namespace long_rows
