// The runtime on a real GPU: module loads, launches (clusters, PDL, large dynamic shared memory), the capture
// rule, and reloading from disk. Skipped, with the reason, where there is no sm_90 device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "moegemm/device.hpp"
#include "moegemm/error.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch.hpp"
#include "../cpu/test_jit_support.hpp"

namespace moegemm {
namespace {

#define CUDART_OK(call)                                                   \
  do {                                                                    \
    cudaError_t status_ = (call);                                         \
    ASSERT_EQ(status_, cudaSuccess) << #call << ": " << cudaGetErrorString(status_); \
  } while (0)

jit::KernelSpec fill_spec(int offset, const std::string& tag) {
  jit::KernelSpec spec;
  spec.name = "fill_index_" + std::to_string(offset);
  spec.name_expression = "moegemm::kernels::fill_index<" + std::to_string(offset) + ">";
  spec.source = "// " + tag + R"(
#include "common/platform.cuh"
namespace moegemm::kernels {
template <int kOffset>
__global__ void fill_index(int* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = i + kOffset;
}
}  // namespace moegemm::kernels
)";
  return spec;
}

// Each block writes its rank in the cluster, and a value that went through the far end of its dynamic shared memory.
jit::KernelSpec cluster_spec() {
  jit::KernelSpec spec;
  spec.name = "cluster_rank";
  spec.name_expression = "moegemm::kernels::cluster_rank<1>";
  spec.source = R"(
namespace moegemm::kernels {
template <int kUnused>
__global__ void cluster_rank(int* out, unsigned shared_words) {
  extern __shared__ int dynamic_shared[];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) dynamic_shared[shared_words - 1] = static_cast<int>(blockIdx.x) * 10;
  __syncthreads();
  if (threadIdx.x == 0) out[2 * blockIdx.x] = static_cast<int>(rank);
  if (threadIdx.x == 0) out[2 * blockIdx.x + 1] = dynamic_shared[shared_words - 1];
}
}  // namespace moegemm::kernels
)";
  return spec;
}

class RuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceInfo info = device_info();
    if (!info.available) GTEST_SKIP() << "no CUDA device: " << info.reason;
    ASSERT_FALSE(folder_.path().empty());
    CUDART_OK(cudaSetDevice(0));
    CUDART_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    for (void* p : allocations_) cudaFree(p);
  }
  int* device_ints(int n) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, sizeof(int) * n), cudaSuccess);
    allocations_.push_back(p);
    EXPECT_EQ(cudaMemset(p, 0xff, sizeof(int) * n), cudaSuccess);  // poison: -1 everywhere
    return static_cast<int*>(p);
  }
  std::vector<int> to_host(const int* device, int n) {
    std::vector<int> host(n);
    EXPECT_EQ(cudaMemcpy(host.data(), device, sizeof(int) * n, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  void launch_fill(const jit::Kernel& kernel, int* out, int n, cudaStream_t stream) {
    jit::LaunchConfig config;
    config.grid[0] = static_cast<unsigned>((n + 127) / 128);
    config.block[0] = 128;
    void* args[] = {&out, &n};
    jit::launch(kernel, config, args, stream);
  }
  std::string unique_tag(const char* what) {
    return std::string(what) + " " + folder_.path() + " " + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  test::TempFolder folder_;
  test::ScopedEnv cache_dir_{"MOEGEMM_CACHE_DIR", folder_.path()};
  cudaStream_t stream_ = nullptr;
  std::vector<void*> allocations_;
};

TEST_F(RuntimeGpu, DeviceInfoDescribesAnSm90Device) {
  DeviceInfo info = device_info();
  EXPECT_EQ(info.major, 9);
  EXPECT_EQ(info.minor, 0);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GE(info.smem_per_block_optin, 227 * 1024);
  EXPECT_GT(info.l2_bytes, 0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_TRUE(info.reason.empty());
  const int saved = get_num_sms();
  EXPECT_THROW(set_num_sms(info.sm_count + 1), Error);
  set_num_sms(info.sm_count);
  EXPECT_EQ(get_num_sms(), info.sm_count);
  set_num_sms(saved);
}

TEST_F(RuntimeGpu, JitKernelLaunchesAndWritesItsOutput) {
  const int n = 1000;
  int* out = device_ints(n);
  jit::KernelSpec spec = fill_spec(7, unique_tag("launch"));
  const jit::Kernel& kernel = jit::get_kernel("test.fill.7.launch", [&] { return spec; }, stream_);
  EXPECT_FALSE(kernel.record.from_disk);
  EXPECT_GT(kernel.record.usage.registers, 0);
  launch_fill(kernel, out, n, stream_);
  CUDART_OK(cudaStreamSynchronize(stream_));
  std::vector<int> host = to_host(out, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], i + 7) << "at " << i;

  // A hit returns the same kernel without calling make_spec.
  const jit::Kernel& again = jit::get_kernel("test.fill.7.launch", [&]() -> jit::KernelSpec {
    ADD_FAILURE() << "make_spec called on a hit";
    return spec;
  }, stream_);
  EXPECT_EQ(&again, &kernel);
  bool listed = false;
  for (const auto& record : jit::loaded_kernels()) listed |= record.key == "test.fill.7.launch";
  EXPECT_TRUE(listed);
}

TEST_F(RuntimeGpu, ClusterPdlAndLargeDynamicSharedMemory) {
  const int blocks = 8;
  int* out = device_ints(2 * blocks);
  const jit::Kernel& kernel = jit::get_kernel("test.cluster_rank", [] { return cluster_spec(); }, stream_);
  jit::LaunchConfig config;
  config.grid[0] = blocks;
  config.block[0] = 128;
  config.cluster[0] = 2;
  config.shared_bytes = 200 * 1024;  // beyond the 48 KiB default: needs the opt-in attribute
  config.pdl = true;
  unsigned shared_words = config.shared_bytes / 4;
  void* args[] = {&out, &shared_words};
  jit::launch(kernel, config, args, stream_);
  CUDART_OK(cudaStreamSynchronize(stream_));
  std::vector<int> host = to_host(out, 2 * blocks);
  for (int b = 0; b < blocks; ++b) {
    EXPECT_EQ(host[2 * b], b % 2) << "cluster rank of block " << b;
    EXPECT_EQ(host[2 * b + 1], b * 10) << "shared memory of block " << b;
  }
  config.grid[0] = 3;  // not a multiple of the cluster
  EXPECT_THROW(jit::launch(kernel, config, args, stream_), Error);
}

TEST_F(RuntimeGpu, CompilingDuringCaptureThrowsCaptureErrorAndLeavesTheCaptureValid) {
  jit::KernelSpec spec = fill_spec(11, unique_tag("capture"));
  CUDART_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  bool threw = false;
  try {
    jit::get_kernel("test.fill.11.capture", [&] { return spec; }, stream_);
  } catch (const Error& e) {
    threw = true;
    EXPECT_EQ(e.code(), ErrorCode::kCaptureError);
    EXPECT_NE(std::string(e.what()).find("is being captured into a CUDA graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("warm up"), std::string::npos) << e.what();
  }
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  EXPECT_TRUE(threw);
  EXPECT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  if (graph) cudaGraphDestroy(graph);
  // After the capture, the same call compiles.
  const jit::Kernel& kernel = jit::get_kernel("test.fill.11.capture", [&] { return spec; }, stream_);
  EXPECT_FALSE(kernel.record.from_disk);
}

TEST_F(RuntimeGpu, CachedBinaryLoadsAndLaunchesDuringCapture) {
  const int n = 300;
  int* out = device_ints(n);
  jit::KernelSpec spec = fill_spec(13, unique_tag("cached capture"));
  jit::compile_or_load_binary(spec);  // on disk, not in memory
  const jit::JitStats before = jit::jit_stats();
  CUDART_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  const jit::Kernel* kernel = nullptr;
  try {
    kernel = &jit::get_kernel("test.fill.13.cached", [&] { return spec; }, stream_);
    launch_fill(*kernel, out, n, stream_);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  cudaGraph_t graph = nullptr;
  CUDART_OK(cudaStreamEndCapture(stream_, &graph));
  ASSERT_NE(kernel, nullptr);
  EXPECT_TRUE(kernel->record.from_disk);
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
  cudaGraphExec_t exec = nullptr;
  CUDART_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDART_OK(cudaGraphLaunch(exec, stream_));
  CUDART_OK(cudaStreamSynchronize(stream_));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::vector<int> host = to_host(out, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], i + 13) << "at " << i;
}

TEST_F(RuntimeGpu, FreshMapLoadsFromDiskWithoutCompiling) {
  const int n = 256;
  int* out = device_ints(n);
  jit::KernelSpec spec = fill_spec(17, unique_tag("fresh map"));
  jit::get_kernel("test.fill.17.fresh", [&] { return spec; }, stream_);
  CUDART_OK(cudaStreamSynchronize(stream_));
  jit::unload_all_kernels();
  EXPECT_TRUE(jit::loaded_kernels().empty());
  const jit::JitStats before = jit::jit_stats();
  const jit::Kernel& kernel = jit::get_kernel("test.fill.17.fresh", [&] { return spec; }, stream_);
  EXPECT_TRUE(kernel.record.from_disk);
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
  EXPECT_EQ(jit::jit_stats().disk_hits, before.disk_hits + 1);
  launch_fill(kernel, out, n, stream_);
  CUDART_OK(cudaStreamSynchronize(stream_));
  std::vector<int> host = to_host(out, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], i + 17) << "at " << i;
}

TEST_F(RuntimeGpu, DriverCallFailuresNameTheCall) {
  try {
    jit::check(CUDA_ERROR_INVALID_VALUE, "cuExampleCall");
    FAIL() << "check accepted an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCudaError);
    const std::string message = e.what();
    EXPECT_NE(message.find("cuExampleCall failed: CUDA_ERROR_INVALID_VALUE (invalid argument)"), std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace moegemm
