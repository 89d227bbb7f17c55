// NVRTC: one kernel translation unit -> an sm_90a CUBIN, with its resource usage read from ptxas's report.
// Needs no GPU and no driver, so every kernel configuration can be compile-checked on any machine.
#pragma once

#include <string>
#include <vector>

namespace moegemm::jit {

struct ResourceUsage {
  int registers = 0;            // per thread
  int static_shared_bytes = 0;  // __shared__ arrays; dynamic shared memory comes on top at launch
  int local_bytes = 0;          // stack frame per thread
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  bool known = false;           // ptxas's report for the entry function was found and read
};

// Spilled bytes per thread a shipped kernel may have (ptxas's spill stores): the compile checks, the precompile test
// and `moegemm-bench --precompile` hold every kernel to it.
inline constexpr int kSpillBudgetBytes = 64;

struct CompiledBinary {
  std::vector<char> cubin;
  std::string lowered_name;  // the mangled symbol of the kernel's name expression
  std::string log;           // NVRTC's log, ptxas's report included
  ResourceUsage usage;
  double compile_ms = 0;     // time NVRTC took (for a binary read from disk: when it was compiled)
  bool from_disk = false;
};

// The target every kernel is compiled for.
inline constexpr const char* kGpuArch = "sm_90a";

// The options of every compilation: C++20, sm_90a, functions __device__ by default, full optimisation, precise
// math, ptxas's verbose report; -lineinfo when MOEGEMM_JIT_LINEINFO=1 (read once per process).
const std::vector<std::string>& compile_options();

// "13.0", from nvrtcVersion.
const std::string& nvrtc_version();

// Compiles source (which may #include any embedded kernel file by its name under kernels/) and lowers
// name_expression (e.g. "moegemm::kernels::fill<3>"). NVRTC errors throw Error(kCompileError) with the log;
// name is the human name used in messages. With MOEGEMM_JIT_DUMP_DIR set, the source is written there first,
// so a compilation that crashes NVRTC can be reproduced with nvcc or ptxas.
CompiledBinary compile_cubin(const std::string& name, const std::string& source, const std::string& name_expression);

// The same translation unit as PTX for compute_90a: for diagnostics, when NVRTC's built-in assembler fails and
// the ptxas binary should say why (ptxas -arch=sm_90a -v file.ptx).
std::string compile_ptx(const std::string& name, const std::string& source, const std::string& name_expression);

// Reads ptxas's -v report for one entry function ("Used 168 registers", "1032 bytes smem", "0 bytes stack
// frame, 0 bytes spill stores, 0 bytes spill loads"). Unknown fields stay 0; known says whether it was found.
ResourceUsage parse_ptxas_report(const std::string& log, const std::string& lowered_name);

}  // namespace moegemm::jit
