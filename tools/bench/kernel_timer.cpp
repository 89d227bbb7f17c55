#include "kernel_timer.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#if MOEGEMM_BENCH_CUPTI
#include <cupti_activity.h>
#endif

namespace moegemm::bench {

#if MOEGEMM_BENCH_CUPTI
namespace {

// The CUPTI entry points used, resolved from the library at run time (the bench links no profiling library).
struct Cupti {
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
};
Cupti cupti;
std::mutex spans_mutex;
std::vector<KernelSpan> spans;
bool instance_made = false;

constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(spans_mutex);
  while (cupti.next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      spans.push_back({kernel->start, kernel->end});
    }
  }
  std::free(buffer);
}

template <typename F>
bool resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

}  // namespace

KernelTimer::KernelTimer() {
  if (instance_made) {
    why_ = "one kernel timer per process";
    return;
  }
  instance_made = true;
  // The toolkit's copy that CMake found first, then the loader's search path.
  void* library = nullptr;
  for (const char* name : {MOEGEMM_BENCH_CUPTI_LIBRARY, "libcupti.so", "libcupti.so.13"}) {
    if (name[0] != '\0' && (library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  }
  if (library == nullptr) {
    why_ = "libcupti.so not found (the CUDA toolkit's CUPTI; add its folder to LD_LIBRARY_PATH)";
    return;
  }
  if (!resolve(library, "cuptiActivityEnable", &cupti.enable) ||
      !resolve(library, "cuptiActivityDisable", &cupti.disable) ||
      !resolve(library, "cuptiActivityRegisterCallbacks", &cupti.register_callbacks) ||
      !resolve(library, "cuptiActivityFlushAll", &cupti.flush_all) ||
      !resolve(library, "cuptiActivityGetNextRecord", &cupti.next_record)) {
    why_ = "libcupti.so lacks an entry point";
    dlclose(library);
    return;
  }
  if (cupti.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
    why_ = "cuptiActivityRegisterCallbacks failed (another profiler attached?)";
    return;
  }
  library_ = library;
}

KernelTimer::~KernelTimer() {
  if (available()) cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // The library stays loaded: CUPTI may still hold its callbacks until the process ends.
}

void KernelTimer::start() {
  if (!available()) return;
  cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard<std::mutex> lock(spans_mutex);
    spans.clear();
  }
  cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

std::vector<KernelSpan> KernelTimer::stop() {
  if (!available()) return {};
  cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<KernelSpan> out;
  {
    std::lock_guard<std::mutex> lock(spans_mutex);
    out.swap(spans);
  }
  std::sort(out.begin(), out.end(), [](const KernelSpan& a, const KernelSpan& b) { return a.start_ns < b.start_ns; });
  return out;
}

#else  // built without CUPTI's headers

KernelTimer::KernelTimer() : why_("built without CUPTI's headers (cupti_activity.h not found by CMake)") {}
KernelTimer::~KernelTimer() = default;
void KernelTimer::start() {}
std::vector<KernelSpan> KernelTimer::stop() { return {}; }

#endif

}  // namespace moegemm::bench
