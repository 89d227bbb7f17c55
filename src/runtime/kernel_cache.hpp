// Kernels by key: an in-memory map (the hot path), then the on-disk cache, then NVRTC.
//
// get_kernel(key, make_spec, stream) returns the kernel for key in the calling thread's context. key is a short
// string that fully determines the source (the caller builds it from the config); a hit costs one map lookup
// under a mutex and no hashing. On a miss, make_spec() gives the source, whose disk key (SHA-256 of the source,
// the kernel files (built in, or MOEGEMM_KERNEL_DIR's), NVRTC's version, the options, the arch and the library
// version) names the file.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/nvrtc_compiler.hpp"

namespace moegemm::jit {

struct KernelSpec {
  std::string name;             // human name, for messages and the cache folder ("fp8_gemm_1d2d_128x128x128_s5")
  std::string source;           // the translation unit, which #includes embedded kernel files by name
  std::string name_expression;  // the kernel to lower, e.g. "moegemm::kernels::fp8_gemm<128, 128, 5>"
};

// What get_kernel loaded; listed by loaded_kernels() for tools.
struct KernelRecord {
  std::string key;
  std::string name;
  std::string lowered_name;
  std::string disk_key;   // hex SHA-256
  std::string disk_path;  // empty when the disk cache is off
  ResourceUsage usage;
  double compile_ms = 0;  // NVRTC time (when compiled by an earlier process, the time it took there)
  double load_ms = 0;     // disk read (if any) and module load in this process
  bool from_disk = false;
};

class Kernel {
 public:
  KernelRecord record;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;

  // Raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to at least bytes (never lowers it: another thread
  // may rely on a larger value). Cheap when already large enough.
  void require_dynamic_shared(unsigned bytes) const;

 private:
  mutable std::mutex attribute_mutex_;
  mutable std::atomic<unsigned> dynamic_shared_limit_{48 * 1024};  // what every function allows without opt-in
};

// The disk key of a spec (64 hex digits).
std::string disk_key(const KernelSpec& spec);

// The compile and disk part of a miss, usable without a driver: the cached binary for spec if an intact one is
// on disk, else NVRTC's, which is then published to disk. before_compile (if set) runs only when NVRTC must run,
// and may throw to forbid it. Counted in jit_stats().
CompiledBinary compile_or_load_binary(const KernelSpec& spec, const std::function<void()>& before_compile = {});

// A kernel's file in the disk cache, as precompile_to_disk left it.
struct CachedKernelFile {
  std::string path;
  bool from_disk = false;  // the file was there already: nothing was compiled
  double compile_ms = 0;   // NVRTC time (for a file found on disk: when it was compiled)
  ResourceUsage usage;     // ptxas's report (registers, spills), kept in the file
};

// The warm-up half of a miss (moegemm::precompile_*): the kernel of spec in the disk cache, compiled now unless an
// intact file is there, so that a later get_kernel, even during a graph capture, only loads it. Needs no driver.
// Throws Error(kUnsupported) when there is no cache folder (MOEGEMM_JIT_DISK_CACHE=0, or no MOEGEMM_CACHE_DIR,
// XDG_CACHE_HOME or HOME) or the file could not be written: a precompiled kernel would not outlive the process.
CachedKernelFile precompile_to_disk(const KernelSpec& spec);

// The kernel for key in the calling thread's context (the primary context of device 0 is made current when none
// is). Compiling while stream is being captured throws Error(kCaptureError); loading a cached file does not.
const Kernel& get_kernel(const std::string& key, const std::function<KernelSpec()>& make_spec, void* stream);

std::vector<KernelRecord> loaded_kernels();

// Unloads every module and empties the in-memory map, as in a fresh process. Only when no launch of these
// kernels is pending: every reference get_kernel returned becomes invalid. For tests and tools.
void unload_all_kernels();

struct JitStats {
  std::uint64_t compiles = 0;       // NVRTC runs
  std::uint64_t disk_hits = 0;      // intact files used instead of compiling
  std::uint64_t disk_rejects = 0;   // files found but short, corrupt or of another key (then recompiled)
  std::uint64_t disk_writes = 0;    // files published
  std::uint64_t module_loads = 0;
};
JitStats jit_stats();

}  // namespace moegemm::jit
