#include "runtime/kernel_cache.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "moegemm/error.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_sources.hpp"
#include "runtime/sha256.hpp"

namespace moegemm::jit {
namespace {

struct Counters {
  std::atomic<std::uint64_t> compiles{0}, disk_hits{0}, disk_rejects{0}, disk_writes{0}, module_loads{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

bool verbose() {
  const char* value = std::getenv("MOEGEMM_JIT_VERBOSE");
  return value && *value && std::string(value) != "0";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A readable description next to each binary; nothing reads it back.
std::string sidecar_json(const KernelSpec& spec, const std::string& key, const CompiledBinary& binary) {
  std::ostringstream os;
  os << "{\n  \"name\": " << json_string(spec.name) << ",\n  \"name_expression\": " << json_string(spec.name_expression)
     << ",\n  \"lowered_name\": " << json_string(binary.lowered_name) << ",\n  \"disk_key\": \"" << key
     << "\",\n  \"arch\": \"" << kGpuArch << "\",\n  \"nvrtc\": \"" << nvrtc_version() << "\",\n  \"moegemm\": \""
     << MOEGEMM_VERSION << "\",\n  \"options\": [";
  const auto& options = compile_options();
  for (std::size_t i = 0; i < options.size(); ++i) os << (i ? ", " : "") << json_string(options[i]);
  os << "],\n  \"registers\": " << binary.usage.registers << ",\n  \"static_shared_bytes\": "
     << binary.usage.static_shared_bytes << ",\n  \"stack_bytes\": " << binary.usage.local_bytes
     << ",\n  \"spill_store_bytes\": " << binary.usage.spill_store_bytes << ",\n  \"spill_load_bytes\": "
     << binary.usage.spill_load_bytes << ",\n  \"compile_ms\": " << binary.compile_ms << "\n}\n";
  return os.str();
}

std::string usage_text(const ResourceUsage& usage) {
  std::ostringstream os;
  os << usage.registers << " registers, spills " << usage.spill_store_bytes << "/" << usage.spill_load_bytes
     << " bytes, stack " << usage.local_bytes << " bytes, static smem " << usage.static_shared_bytes << " bytes";
  return os.str();
}

struct ObtainedBinary {
  CompiledBinary binary;
  std::string disk_key;
  std::string disk_path;
};

ObtainedBinary obtain_binary(const KernelSpec& spec, const std::function<void()>& before_compile) {
  ObtainedBinary out;
  out.disk_key = disk_key(spec);
  std::string folder = cache_folder();
  if (!folder.empty()) {
    out.disk_path = cache_file_path(folder, out.disk_key);
    if (access(out.disk_path.c_str(), F_OK) == 0) {
      if (auto cached = read_cache_file(out.disk_path, out.disk_key)) {
        counters().disk_hits++;
        out.binary = std::move(*cached);
        return out;
      }
      counters().disk_rejects++;
    }
  }
  if (before_compile) before_compile();
  counters().compiles++;
  out.binary = compile_cubin(spec.name, spec.source, spec.name_expression);
  if (out.disk_path.empty()) return out;
  // Another process may have published the same key meanwhile: then its file is used, so that every user of
  // the key runs identical bytes.
  if (auto winner = read_cache_file(out.disk_path, out.disk_key)) {
    winner->log = std::move(out.binary.log);
    out.binary = std::move(*winner);
    out.binary.from_disk = false;
    return out;
  }
  if (publish_file(out.disk_path, encode_cache_record(out.disk_key, spec.name, out.binary))) {
    counters().disk_writes++;
    std::string sidecar = out.disk_path.substr(0, out.disk_path.size() - 6) + ".json";
    publish_file(sidecar, sidecar_json(spec, out.disk_key, out.binary));
  } else if (verbose()) {
    std::fprintf(stderr, "moegemm jit: could not write %s; the disk cache is skipped for %s\n",
                 out.disk_path.c_str(), spec.name.c_str());
  }
  return out;
}

// What a capture error tells the caller to do.
constexpr const char* kWarmUpHint =
    "call the same GEMM once before capture to warm up, or precompile it (moegemm::precompile_*)";

[[noreturn]] void throw_capture_error(const std::string& name, void* stream, const std::string& detail) {
  char stream_text[32];
  std::snprintf(stream_text, sizeof(stream_text), "%p", stream);
  throw Error(ErrorCode::kCaptureError, "kernel " + name + " is not compiled yet and stream " + stream_text +
                                            " is being captured into a CUDA graph" + detail + ": " + kWarmUpHint);
}

void forbid_compile_during_capture(const std::string& name, void* stream) {
  const Driver& d = driver();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult result = d.cuStreamIsCapturing(static_cast<CUstream>(stream), &status);
  // The legacy default stream answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while another stream is captured.
  if (result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) throw_capture_error(name, stream, " (implicitly)");
  check(result, "cuStreamIsCapturing");
  if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) throw_capture_error(name, stream, "");
}

bool is_capture_error(CUresult result) {
  switch (result) {
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return true;
    default: return false;
  }
}

std::unique_ptr<Kernel> load_module(const std::string& key, const KernelSpec& spec, ObtainedBinary&& obtained,
                                    CUcontext context) {
  const Driver& d = driver();
  auto start = std::chrono::steady_clock::now();
  auto kernel = std::make_unique<Kernel>();
  kernel->context = context;
  {
    // Module loads are "potentially unsafe" calls during a global-mode capture of any stream; they touch no
    // stream, so the calling thread relaxes its mode for them.
    RelaxedCaptureScope relaxed;
    CUresult loaded = d.cuModuleLoadData(&kernel->module, obtained.binary.cubin.data());
    if (is_capture_error(loaded)) {
      throw Error(ErrorCode::kCaptureError, "kernel " + spec.name +
                                                ": cuModuleLoadData failed during stream capture (" +
                                                describe_result(loaded) + "): " + kWarmUpHint);
    }
    check(loaded, "cuModuleLoadData");
    CUresult found = d.cuModuleGetFunction(&kernel->function, kernel->module, obtained.binary.lowered_name.c_str());
    if (found != CUDA_SUCCESS) {
      d.cuModuleUnload(kernel->module);
      check(found, "cuModuleGetFunction");
    }
  }
  counters().module_loads++;
  ResourceUsage usage = obtained.binary.usage;
  if (!usage.known) {  // ptxas's report was missing: the driver knows registers and static shared memory
    check(d.cuFuncGetAttribute(&usage.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel->function), "cuFuncGetAttribute");
    check(d.cuFuncGetAttribute(&usage.static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel->function),
          "cuFuncGetAttribute");
    check(d.cuFuncGetAttribute(&usage.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kernel->function),
          "cuFuncGetAttribute");
  }
  KernelRecord& record = kernel->record;
  record.key = key;
  record.name = spec.name;
  record.lowered_name = obtained.binary.lowered_name;
  record.disk_key = obtained.disk_key;
  record.disk_path = obtained.disk_path;
  record.usage = usage;
  record.compile_ms = obtained.binary.compile_ms;
  record.from_disk = obtained.binary.from_disk;
  record.load_ms = ms_since(start);
  return kernel;
}

void print_record(const KernelRecord& record, double total_ms) {
  if (record.from_disk) {
    std::fprintf(stderr, "moegemm jit: %s loaded from disk in %.1f ms (compiled in %.1f ms earlier), %s [%s]\n",
                 record.name.c_str(), total_ms, record.compile_ms, usage_text(record.usage).c_str(),
                 record.disk_path.c_str());
  } else {
    std::fprintf(stderr, "moegemm jit: %s compiled in %.1f ms (%.1f ms in total), %s [%s]\n", record.name.c_str(),
                 record.compile_ms, total_ms, usage_text(record.usage).c_str(),
                 record.disk_path.empty() ? "not cached on disk" : record.disk_path.c_str());
  }
}

// Kernels of one key, one per context that asked for it (usually one).
struct Registry {
  std::mutex mutex;
  std::condition_variable built;
  std::unordered_map<std::string, std::vector<std::unique_ptr<Kernel>>> kernels;
  std::set<std::pair<CUcontext, std::string>> building;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: modules may be used by static objects' destructors
  return *r;
}

const Kernel* find_kernel(Registry& r, const std::string& key, CUcontext context) {
  auto it = r.kernels.find(key);
  if (it == r.kernels.end()) return nullptr;
  for (const auto& kernel : it->second) {
    if (kernel->context == context) return kernel.get();
  }
  return nullptr;
}

}  // namespace

void Kernel::require_dynamic_shared(unsigned bytes) const {
  if (bytes <= dynamic_shared_limit_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(attribute_mutex_);
  if (bytes <= dynamic_shared_limit_.load(std::memory_order_relaxed)) return;
  RelaxedCaptureScope relaxed;
  check(driver().cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
        "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  dynamic_shared_limit_.store(bytes, std::memory_order_release);
}

std::string disk_key(const KernelSpec& spec) {
  Sha256 hasher;
  hasher.update_field("moegemm kernel cache key 1");
  hasher.update_field(MOEGEMM_VERSION);
  hasher.update_field(nvrtc_version());
  hasher.update_field(kGpuArch);
  for (const auto& option : compile_options()) hasher.update_field(option);
  hasher.update_field(kernel_sources().hash);  // built in, or MOEGEMM_KERNEL_DIR's
  hasher.update_field(spec.name_expression);
  hasher.update_field(spec.source);
  return to_hex(hasher.finish());
}

CompiledBinary compile_or_load_binary(const KernelSpec& spec, const std::function<void()>& before_compile) {
  auto start = std::chrono::steady_clock::now();
  ObtainedBinary obtained = obtain_binary(spec, before_compile);
  if (verbose()) {
    KernelRecord record;
    record.name = spec.name;
    record.usage = obtained.binary.usage;
    record.compile_ms = obtained.binary.compile_ms;
    record.from_disk = obtained.binary.from_disk;
    record.disk_path = obtained.disk_path;
    print_record(record, ms_since(start));
  }
  return std::move(obtained.binary);
}

CachedKernelFile precompile_to_disk(const KernelSpec& spec) {
  const std::string folder = cache_folder();
  if (folder.empty()) {
    throw Error(ErrorCode::kUnsupported,
                "precompile " + spec.name +
                    ": no disk cache (MOEGEMM_JIT_DISK_CACHE=0, or no MOEGEMM_CACHE_DIR, XDG_CACHE_HOME or HOME): a "
                    "precompiled kernel would not be kept");
  }
  if (!cache_folder_writable(folder)) {  // checked first: compiling takes seconds
    throw Error(ErrorCode::kUnsupported,
                "precompile " + spec.name + ": the cache folder " + folder + "/kernels cannot be written");
  }
  const ObtainedBinary obtained = obtain_binary(spec, {});
  if (obtained.disk_path.empty() || access(obtained.disk_path.c_str(), R_OK) != 0) {
    throw Error(ErrorCode::kUnsupported, "precompile " + spec.name + ": could not write " + obtained.disk_path +
                                             " (is the cache folder writable?)");
  }
  CachedKernelFile out;
  out.path = obtained.disk_path;
  out.from_disk = obtained.binary.from_disk;
  out.compile_ms = obtained.binary.compile_ms;
  out.usage = obtained.binary.usage;
  return out;
}

const Kernel& get_kernel(const std::string& key, const std::function<KernelSpec()>& make_spec, void* stream) {
  CUcontext context = ensure_context();
  Registry& r = registry();
  {
    std::unique_lock<std::mutex> lock(r.mutex);
    for (;;) {
      if (const Kernel* kernel = find_kernel(r, key, context)) return *kernel;
      // One thread builds a key; the others wait for it instead of compiling the same kernel again.
      if (r.building.insert({context, key}).second) break;
      r.built.wait(lock);
    }
  }
  auto finish_building = [&] {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.building.erase({context, key});
    r.built.notify_all();
  };
  try {
    auto start = std::chrono::steady_clock::now();
    KernelSpec spec = make_spec();
    ObtainedBinary obtained = obtain_binary(spec, [&] { forbid_compile_during_capture(spec.name, stream); });
    std::unique_ptr<Kernel> kernel = load_module(key, spec, std::move(obtained), context);
    if (verbose()) print_record(kernel->record, ms_since(start));
    const Kernel* result = kernel.get();
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.kernels[key].push_back(std::move(kernel));
      r.building.erase({context, key});
    }
    r.built.notify_all();
    return *result;
  } catch (...) {
    finish_building();
    throw;
  }
}

std::vector<KernelRecord> loaded_kernels() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<KernelRecord> records;
  for (const auto& [key, kernels] : r.kernels) {
    for (const auto& kernel : kernels) records.push_back(kernel->record);
  }
  return records;
}

void unload_all_kernels() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.kernels.empty()) {
    const Driver& d = driver();
    for (const auto& [key, kernels] : r.kernels) {
      for (const auto& kernel : kernels) d.cuModuleUnload(kernel->module);
    }
  }
  r.kernels.clear();
}

JitStats jit_stats() {
  Counters& c = counters();
  return JitStats{c.compiles.load(), c.disk_hits.load(), c.disk_rejects.load(), c.disk_writes.load(),
                  c.module_loads.load()};
}

}  // namespace moegemm::jit
