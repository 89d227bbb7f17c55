// The kernel sources the JIT compiles with: the ones built into the library, or a folder's (MOEGEMM_KERNEL_DIR),
// so that a kernel variant can be compiled and measured without rebuilding the library (docs/jit.md).
#pragma once

#include <string>
#include <vector>

namespace moegemm::jit {

// One kernel file as NVRTC sees it: its #include name (relative to kernels/, '/'-separated) and its text.
struct SourceFile {
  std::string name;
  std::string text;
};

struct KernelSourceSet {
  std::string origin;             // "built in", or the folder the files were read from
  std::vector<SourceFile> files;  // sorted by name
  std::string hash;               // hex SHA-256 over the names and texts: part of every disk key
};

// The files built into the library (cmake/EmbedKernels.cmake).
KernelSourceSet built_in_sources();

// Every .cuh, .h and .hpp file under folder. Throws Error (kInvalidArgument), naming MOEGEMM_KERNEL_DIR, the
// folder and the rule, when it is not a folder, lacks sm90/gemm.cuh (the file every kernel includes), or holds a
// file shared with the host code (host_shared_sources) whose text differs from the built-in one: the library's
// host code was compiled with those (parameter and shared-memory layouts, the scheduler), so only device-only
// files may differ.
KernelSourceSet read_kernel_folder(const std::string& folder);

// The built-in files the host code also compiles: the roots it includes and everything they include.
std::vector<std::string> host_shared_sources();

// The set NVRTC compiles with: the built-in one, or, while MOEGEMM_KERNEL_DIR names a folder, that folder's, read
// once per process for each value the variable takes (a kernel already loaded keeps the sources it was built from).
const KernelSourceSet& kernel_sources();

}  // namespace moegemm::jit
