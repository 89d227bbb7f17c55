// Shared by the JIT tests: a scoped environment variable, a scoped temporary folder, a small probe kernel.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "runtime/kernel_cache.hpp"

namespace moegemm::test {

// Sets (or, with nullopt, unsets) an environment variable for the scope; restores the previous value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A fresh folder under the system's temporary folder, removed with everything in it at the end of the scope.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "moegemm-test-XXXXXX").string();
    if (char* made = mkdtemp(pattern.data())) path_ = made;
  }
  ~TempFolder() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A fresh, enabled disk cache for the scope: a new temporary folder as MOEGEMM_CACHE_DIR, MOEGEMM_JIT_DISK_CACHE
// unset. (path() is empty if the folder could not be made.)
class ScopedCacheFolder {
 public:
  const std::string& path() const { return folder_.path(); }

 private:
  TempFolder folder_;
  ScopedEnv cache_dir_{"MOEGEMM_CACHE_DIR", folder_.path()};
  ScopedEnv enabled_{"MOEGEMM_JIT_DISK_CACHE", std::nullopt};
};

// A kernel that only sm_90a accepts (WGMMA fence, setmaxnreg, an mbarrier) and that includes an embedded header.
// `tag` changes the source (and so the disk key) without changing what it does.
inline jit::KernelSpec sm90a_probe_spec(int scale = 3, const std::string& tag = "") {
  jit::KernelSpec spec;
  spec.name = "jit_probe_" + std::to_string(scale);
  spec.name_expression = "moegemm::kernels::jit_probe<" + std::to_string(scale) + ">";
  spec.source = R"(// probe )" + tag + R"(
#include "common/platform.cuh"

namespace moegemm::kernels {

template <int kScale>
__global__ void __launch_bounds__(128, 1) jit_probe(float* out) {
  __shared__ __align__(8) unsigned long long barrier;
  __shared__ float staging[128];
  const unsigned barrier_address = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier_address), "r"(1));
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  staging[threadIdx.x] = static_cast<float>(ceil_div<int>(static_cast<int>(threadIdx.x), 2) * kScale);
  __syncthreads();
  out[threadIdx.x] = staging[(threadIdx.x + 1) % 128];
}

}  // namespace moegemm::kernels
)";
  return spec;
}

}  // namespace moegemm::test
