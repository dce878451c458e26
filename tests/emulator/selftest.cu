// selftest.cu - cuda_emu.h checked against what CUDA specifies, one case per line of output.
// Built by tests/emulator/test_cuda_emu.py through scripts/emulate_kernel.py; prints
// "ok <case>" or "FAIL <case>: <why>" and exits 1 on any failure.
#include <cooperative_groups.h>

#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

static int failures = 0;
static void expect(bool ok, const char* name, const char* why = "") {
  std::printf("%s %s%s%s\n", ok ? "ok" : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
  if (!ok) ++failures;
}

// ---- shuffles: every mode and width, against the PTX definition worked out by hand
__global__ void shuffle_kernel(int* out, int mode, int arg, int width) {
  const int lane = threadIdx.x;
  int v = 100 + lane;
  int r = 0;
  switch (mode) {
    case 0: r = __shfl_sync(0xffffffffu, v, arg, width); break;
    case 1: r = __shfl_up_sync(0xffffffffu, v, arg, width); break;
    case 2: r = __shfl_down_sync(0xffffffffu, v, arg, width); break;
    case 3: r = __shfl_xor_sync(0xffffffffu, v, arg, width); break;
  }
  out[lane] = r;
}

static int expected_shuffle(int lane, int mode, int arg, int width) {
  const int base = lane / width * width, pos = lane % width;
  int src = lane;
  switch (mode) {
    case 0: src = base + arg % width; break;
    case 1: src = pos - arg >= 0 ? lane - arg : lane; break;
    case 2: src = pos + arg < width ? lane + arg : lane; break;
    case 3: src = (lane ^ arg) < base + width ? (lane ^ arg) : lane; break;
  }
  return 100 + src;
}

static void test_shuffles() {
  std::vector<int> out(32);
  bool ok = true;
  for (int mode = 0; mode < 4; ++mode) {
    for (int width : {1, 2, 4, 8, 16, 32}) {
      for (int arg : {0, 1, 2, 3, 5, 8, 16, 31}) {
        shuffle_kernel<<<1, 32>>>(out.data(), mode, arg, width);
        for (int l = 0; l < 32; ++l) ok &= out[l] == expected_shuffle(l, mode, arg, width);
      }
    }
  }
  expect(ok && cudaGetLastError() == cudaSuccess, "shuffle_modes_and_widths");
}

// ---- a template kernel launched with <<<>>> (the rewrite keeps template-ids intact)
template <typename T, int kScale>
__global__ void scale_kernel(T* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * static_cast<T>(kScale);
}

static void test_template_launch() {
  std::vector<double> x(100, 1.5);
  scale_kernel<double, 3><<<(100 + 31) / 32, 32>>>(x.data(), 100);
  bool ok = cudaGetLastError() == cudaSuccess;
  for (double v : x) ok &= v == 4.5;
  expect(ok, "template_kernel_chevron_launch");
}

// ---- a block reduction with a leading barrier, called twice (mean, then variance)
__device__ float block_sum(float v, float* scratch, bool leading_barrier) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (leading_barrier) __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? scratch[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}

__global__ void two_sums_kernel(const float* x, float* out, bool leading_barrier) {
  __shared__ float scratch[32];
  const float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  const float s1 = block_sum(v, scratch, leading_barrier);
  const float s2 = block_sum(v * v, scratch, leading_barrier);
  if (threadIdx.x == 0 || threadIdx.x == blockDim.x - 1) out[blockIdx.x * 2 + (threadIdx.x != 0)] = s1 + 1000.f * s2;
}

static bool two_sums_correct(bool leading_barrier) {
  const int blocks = 3, threads = 256;
  std::vector<float> x(blocks * threads), out(blocks * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.f;
  two_sums_kernel<<<blocks, threads>>>(x.data(), out.data(), leading_barrier);
  bool ok = cudaGetLastError() == cudaSuccess;
  for (int b = 0; b < blocks; ++b) {
    float s1 = 0, s2 = 0;
    for (int t = 0; t < threads; ++t) {
      s1 += x[b * threads + t];
      s2 += x[b * threads + t] * x[b * threads + t];
    }
    ok &= out[2 * b] == s1 + 1000.f * s2 && out[2 * b + 1] == s1 + 1000.f * s2;
  }
  return ok;
}

static void test_barrier_discipline() {
  bool with = true, without = true;
  for (auto s : {emu::Schedule::kForward, emu::Schedule::kReverse}) {
    emu::set_schedule(s);
    with &= two_sums_correct(true);
    without &= two_sums_correct(false);
  }
  emu::set_schedule(emu::Schedule::kForward);
  expect(with, "reused_reduction_buffer_with_leading_barrier");
  expect(!without, "reused_reduction_buffer_without_leading_barrier_is_caught");
}

// ---- a divergent __syncthreads deadlocks on a GPU; here it is a launch failure
__global__ void divergent_barrier_kernel(int* out) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}
__global__ void shuffle_after_exit_kernel(int* out) {
  if (threadIdx.x == 5) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

static void test_failures() {
  std::vector<int> out(64);
  divergent_barrier_kernel<<<1, 64>>>(out.data());
  const cudaError_t e1 = cudaGetLastError();
  expect(e1 == cudaErrorLaunchFailure && emu::last_failure().find("different source lines") != std::string::npos,
         "divergent_syncthreads_is_a_launch_failure", emu::last_failure().c_str());
  shuffle_after_exit_kernel<<<1, 32>>>(out.data());
  const cudaError_t e2 = cudaGetLastError();
  expect(e2 == cudaErrorLaunchFailure && emu::last_failure().find("has exited") != std::string::npos,
         "shuffle_naming_an_exited_lane_is_a_launch_failure", emu::last_failure().c_str());
  expect(cudaGetLastError() == cudaSuccess, "errors_are_cleared_by_cudaGetLastError");
  shuffle_kernel<<<1, 2048>>>(out.data(), 0, 0, 32);
  expect(cudaGetLastError() == cudaErrorInvalidConfiguration, "block_of_2048_threads_is_refused");
}

// ---- dynamic shared memory, 2-D blocks, and the opt-in above 48 KiB
__global__ void dynamic_smem_kernel(float* out, int n) {
  extern __shared__ float buf[];
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  for (int i = t; i < n; i += blockDim.x * blockDim.y) buf[i] = static_cast<float>(i);
  __syncthreads();
  float s = 0;
  for (int i = 0; i < n; ++i) s += buf[n - 1 - i];
  if (t == 0) out[blockIdx.x] = s;
}

static void test_dynamic_smem() {
  std::vector<float> out(2);
  const int n = 1000;
  dynamic_smem_kernel<<<2, dim3(32, 4), n * sizeof(float)>>>(out.data(), n);
  expect(cudaGetLastError() == cudaSuccess && out[0] == 499500.f && out[1] == 499500.f, "extern_shared_and_2d_blocks");
  const int big = 20000;  // 80 KB
  dynamic_smem_kernel<<<1, 64, big * sizeof(float)>>>(out.data(), big);
  expect(cudaGetLastError() == cudaErrorInvalidValue, "dynamic_smem_over_48k_needs_the_attribute");
  cudaFuncSetAttribute(dynamic_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big * sizeof(float));
  dynamic_smem_kernel<<<1, 64, big * sizeof(float)>>>(out.data(), big);
  float ref = 0;
  for (int i = 0; i < big; ++i) ref += static_cast<float>(big - 1 - i);
  expect(cudaGetLastError() == cudaSuccess && out[0] == ref, "dynamic_smem_over_48k_with_the_attribute");
}

// ---- a cluster: each block sums its part, block 0 adds the partials through DSMEM
__global__ void cluster_sum_kernel(const float* x, float* out, int per_block, bool sync_before_read) {
  __shared__ float partial;
  __shared__ float scratch[32];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const float* mine = x + static_cast<size_t>(blockIdx.x) * per_block;
  float v = 0;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) v += mine[i];
  v = block_sum(v, scratch, true);
  if (threadIdx.x == 0) partial = v;
  if (sync_before_read) cluster.sync();
  if (rank == 0 && threadIdx.x == 0) {
    float total = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(&partial, r);
    out[blockIdx.x / cluster.num_blocks()] = total;
  }
  cluster.sync();  // no block exits while another may still read its shared memory
}

static void test_cluster() {
  const int cluster = 4, clusters = 3, per_block = 300, threads = 128;
  std::vector<float> x(cluster * clusters * per_block), out(clusters, -1.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cluster * clusters);
  cfg.blockDim = dim3(threads);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, cluster_sum_kernel, x.data(), out.data(), per_block, true);
  bool ok = e == cudaSuccess;
  for (int c = 0; c < clusters; ++c) {
    float s = 0;
    for (int i = 0; i < cluster * per_block; ++i) s += x[c * cluster * per_block + i];
    ok &= out[c] == s;
  }
  expect(ok, "cluster_dsmem_sum_via_cudaLaunchKernelEx", emu::last_failure().c_str());
  // Without the cluster.sync() between writing the partials and reading them, rank 0 reads
  // partials not written yet (forward order) or left from the last cluster (reverse).
  bool caught = false;
  for (auto sched : {emu::Schedule::kForward, emu::Schedule::kReverse}) {
    emu::set_schedule(sched);
    std::fill(out.begin(), out.end(), -1.f);
    cudaLaunchKernelEx(&cfg, cluster_sum_kernel, x.data(), out.data(), per_block, false);
    for (int c = 0; c < clusters; ++c) {
      float s = 0;
      for (int i = 0; i < cluster * per_block; ++i) s += x[c * cluster * per_block + i];
      caught |= out[c] != s;
    }
  }
  emu::set_schedule(emu::Schedule::kForward);
  expect(caught && cudaGetLastError() == cudaSuccess, "missing_cluster_sync_is_caught");
  cfg.gridDim = dim3(cluster * clusters + 1);
  expect(cudaLaunchKernelEx(&cfg, cluster_sum_kernel, x.data(), out.data(), per_block, true) ==
             cudaErrorInvalidClusterSize,
         "grid_not_a_multiple_of_the_cluster_is_refused");
  cudaGetLastError();  // as on a GPU, the refused launch is also the last error: clear it
  int n = -1;
  emu::set_max_active_clusters(0);
  cudaOccupancyMaxActiveClusters(&n, cluster_sum_kernel, &cfg);
  emu::set_max_active_clusters(-1);
  expect(n == 0, "max_active_clusters_is_settable");
}

// ---- __syncthreads_count/_and/_or and cooperative_groups tiles
__global__ void votes_and_tiles_kernel(int* out) {
  const int t = threadIdx.x;
  const int count = __syncthreads_count(t % 3 == 0);
  const int all = __syncthreads_and(t < 1000);
  const int any = __syncthreads_or(t == 77);
  cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
  int v = static_cast<int>(tile.thread_rank());
  for (int o = 4; o > 0; o >>= 1) v += tile.shfl_down(v, o);  // lane 0 of each tile: 0 + 1 + ... + 7
  const int first = tile.shfl(t, 0);
  if (tile.thread_rank() == 0) out[t / 8] = v * 1000 + (first == t);
  if (t == 0) out[100] = count * 100 + all * 10 + any;
}

static void test_votes_and_tiles() {
  std::vector<int> out(101, -1);
  votes_and_tiles_kernel<<<1, 96>>>(out.data());
  bool ok = cudaGetLastError() == cudaSuccess && out[100] == 32 * 100 + 10 + 1;
  for (int i = 0; i < 12; ++i) ok &= out[i] == 28 * 1000 + 1;
  expect(ok, "syncthreads_count_and_or_and_tiled_partition", emu::last_failure().c_str());
}

int main() {
  test_shuffles();
  test_template_launch();
  test_barrier_discipline();
  test_failures();
  test_dynamic_smem();
  test_cluster();
  test_votes_and_tiles();
  std::printf("failures: %d\n", failures);
  return failures == 0 ? 0 : 1;
}
