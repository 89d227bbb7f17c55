#include "runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

#include "config_option.hpp"
#include "device_kernels.hpp"
#include "lt_baseline.hpp"
#include "moegemm/error.hpp"
#include "problem.hpp"

namespace moegemm::bench {
namespace {

// Larger than the H200's 60 MB L2 several times over: every timed call starts with a cold cache.
constexpr std::size_t kFlushBytes = 256ull << 20;
constexpr std::int64_t kMinCheckedRows = 8;

// The rows the float64 reference recomputes: all of them when that stays within the budget, else the first and
// last rows of every expert first, then random rows, until the budget is spent.
std::vector<std::size_t> rows_to_check(const Problem& p, double budget, std::uint64_t seed) {
  const auto cost = [&](std::size_t i) { return static_cast<double>(std::max<std::int64_t>(p.jobs[i].k, 1)) * p.n; };
  std::vector<std::size_t> all(p.jobs.size());
  std::iota(all.begin(), all.end(), 0);
  double total = 0;
  for (std::size_t i : all) total += cost(i);
  if (total <= budget) return all;
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  std::stable_partition(all.begin(), all.end(), [&](std::size_t i) { return p.boundary[i] != 0; });
  std::vector<std::size_t> chosen;
  double spent = 0;
  for (std::size_t i : all) {
    if (spent + cost(i) > budget && static_cast<std::int64_t>(chosen.size()) >= kMinCheckedRows) break;
    chosen.push_back(i);
    spent += cost(i);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

// On the tool's (non-blocking) stream and synchronised: a plain cudaMemcpy would not order with it.
template <typename T>
DeviceBuffer upload(const std::vector<T>& host, cudaStream_t stream) {
  DeviceBuffer buffer(host.size() * sizeof(T));
  CUDA_CHECK(cudaMemcpyAsync(buffer.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return buffer;
}

// The float64 reference of the selected rows, computed once per case and compared with each checked output.
class Reference {
 public:
  Reference(const Problem& p, std::vector<std::size_t> rows, cudaStream_t stream)
      : problem_(p), rows_(std::move(rows)), stream_(stream) {
    if (rows_.empty()) return;
    values_.allocate(rows_.size() * static_cast<std::size_t>(p.n) * sizeof(double));
    DeviceBuffer jobs = upload(select(p.jobs), stream);
    reference_rows(p.ref, jobs.get<RefJob>(), static_cast<std::int64_t>(rows_.size()), values_.get<double>(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // Compares the output currently in D, read through `jobs` (the problem's own or a baseline's layout).
  void compare(const std::vector<RefJob>& jobs, bool scan, Check* out) const {
    const Problem& p = problem_;
    out->threshold = p.threshold;
    out->rows_checked = static_cast<std::int64_t>(rows_.size());
    out->rows_valid = static_cast<std::int64_t>(p.jobs.size());
    DiffSums sums_host;
    ScanCounts counts_host;
    DeviceBuffer sums = upload(std::vector<DiffSums>{sums_host}, stream_);
    DeviceBuffer counts = upload(std::vector<ScanCounts>{counts_host}, stream_);
    if (!rows_.empty()) {
      DeviceBuffer selected = upload(select(jobs), stream_);
      diff_rows(p.ref, selected.get<RefJob>(), static_cast<std::int64_t>(rows_.size()), values_.get<double>(),
                sums.get<DiffSums>(), stream_);
    }
    DeviceBuffer kinds;
    if (scan) {
      kinds = upload(p.row_kinds, stream_);
      scan_output(p.d, p.d_f32, p.d_rows, p.n, kinds.get<std::int8_t>(), counts.get<ScanCounts>(), stream_);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    CUDA_CHECK(cudaMemcpyAsync(&sums_host, sums.get(), sizeof(sums_host), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaMemcpyAsync(&counts_host, counts.get(), sizeof(counts_host), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    // calc_diff of the anchor's tests: 1 - 2 sum(x y) / sum(x^2 + y^2), 0 when both are all zero.
    out->diff = sums_host.xx_yy == 0 ? 0.0 : 1.0 - 2.0 * sums_host.xy / sums_host.xx_yy;
    out->nan_checked = sums_host.nan;
    out->nan_valid = counts_host.nan_valid;
    out->nonzero_pad = counts_host.nonzero_pad;
    out->touched = counts_host.touched;
    std::string why;
    if (!(out->diff < p.threshold))
      why += "diff " + std::to_string(out->diff) + " >= " + std::to_string(p.threshold) + "; ";
    if (out->nan_checked != 0) why += std::to_string(out->nan_checked) + " NaN in checked rows; ";
    if (out->nan_valid != 0) why += std::to_string(out->nan_valid) + " unwritten (NaN) valid elements; ";
    if (out->nonzero_pad != 0) why += std::to_string(out->nonzero_pad) + " non-zero padding elements; ";
    if (out->touched != 0) why += std::to_string(out->touched) + " elements written outside the experts' rows; ";
    out->status = why.empty() ? "PASS" : "FAIL";
    out->detail = why;
  }

 private:
  std::vector<RefJob> select(const std::vector<RefJob>& jobs) const {
    std::vector<RefJob> out;
    out.reserve(rows_.size());
    for (std::size_t i : rows_) out.push_back(jobs[i]);
    return out;
  }
  const Problem& problem_;
  std::vector<std::size_t> rows_;
  cudaStream_t stream_;
  DeviceBuffer values_;
};

void poison_output(const Problem& p, cudaStream_t stream) { poison(p.d, p.d_rows * p.n, p.d_f32 ? 4 : 2, stream); }

}  // namespace

Runner::Runner(const RunSettings& settings) : settings_(settings) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (cublasLtCreate(&lt_) != CUBLAS_STATUS_SUCCESS) throw CudaFailure("cublasLtCreate failed");
  workspace_.allocate(kLtWorkspaceBytes);
  flush_.allocate(kFlushBytes);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  sampler_ = std::make_unique<ClockSampler>(device);
  if (settings_.kernel_time) kernel_timer_ = std::make_unique<KernelTimer>();
}

Runner::~Runner() {
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

namespace {

// The median of sorted, non-empty values.
double median_of_sorted(const std::vector<double>& v) {
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

// The median, min and max of the timed calls' microseconds.
void fill_timing(std::vector<double> us, Timing* out) {
  std::sort(us.begin(), us.end());
  out->median_us = median_of_sorted(us);
  out->min_us = us.front();
  out->max_us = us.back();
  out->status = "ok";
}

// One implementation's calls to time, and where its timing goes.
struct TimedCall {
  std::function<void(cudaStream_t)> call;
  Timing* out;
};

// The kernel time of each timed call (--kernel-time): `spans` holds the loop's kernels in the order they ran, and
// `per_call[j]` kernels belong to each call of implementation j, round after round. Any other count (a kernel the
// flush launched, say) leaves the timings without kernel time, saying why.
void fill_kernel_times(const std::vector<KernelSpan>& spans, const std::vector<int>& per_call, int iters,
                       const std::vector<Timing*>& outs) {
  std::size_t expected = 0;
  for (int n : per_call) expected += static_cast<std::size_t>(n) * iters;
  if (std::find(per_call.begin(), per_call.end(), 0) != per_call.end()) {
    for (Timing* t : outs) t->kernel_status = "no kernel recorded for a call";
    return;
  }
  if (spans.size() != expected) {
    for (Timing* t : outs) {
      t->kernel_status = std::to_string(spans.size()) + " kernels recorded, " + std::to_string(expected) + " expected";
    }
    return;
  }
  std::vector<std::vector<double>> us(outs.size());
  std::size_t next = 0;
  for (int i = 0; i < iters; ++i) {
    for (std::size_t j = 0; j < outs.size(); ++j) {
      const KernelSpan& first = spans[next];
      next += static_cast<std::size_t>(per_call[j]);
      us[j].push_back(1e-3 * static_cast<double>(spans[next - 1].end_ns - first.start_ns));
    }
  }
  for (std::size_t j = 0; j < outs.size(); ++j) {
    std::sort(us[j].begin(), us[j].end());
    outs[j]->kernel_median_us = median_of_sorted(us[j]);
    outs[j]->kernel_min_us = us[j].front();
    outs[j]->kernel_status = "ok";
  }
}

// Warm-up calls of each implementation, then `iters` rounds of one call of each in turn, every call after an L2
// flush and between its own pair of events; the median per implementation. With one implementation this is the
// default timing; with several (--interleave) they alternate call by call, so that clock changes under load (the
// power cap, docs/results/2026-12-03-rtg-tall-and-power.md) reach all of them alike. With a kernel timer, one more
// call of each first counts its kernels, and the timed loop's kernels are recorded.
void time_calls(const std::vector<TimedCall>& calls, cudaStream_t stream, const RunSettings& settings, void* flush,
                ClockSampler& sampler, KernelTimer* kernels) {
  if (calls.empty()) return;
  const int iters = std::max(settings.iters, 1);
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(iters) * calls.size(), nullptr);
  struct Destroy {
    std::vector<cudaEvent_t>& events;
    ~Destroy() {
      for (cudaEvent_t e : events) {
        if (e != nullptr) cudaEventDestroy(e);
      }
    }
  } destroy{events};
  for (cudaEvent_t& e : events) CUDA_CHECK(cudaEventCreate(&e));
  for (const TimedCall& t : calls) {
    for (int i = 0; i < settings.warmup; ++i) t.call(stream);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const bool record_kernels = kernels != nullptr && kernels->available();
  std::vector<int> kernels_per_call(calls.size(), 0);
  if (record_kernels) {
    for (std::size_t j = 0; j < calls.size(); ++j) {
      kernels->start();
      calls[j].call(stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      kernels_per_call[j] = static_cast<int>(kernels->stop().size());
    }
    kernels->start();
  }
  auto event = [&](std::size_t j, int i, int end) { return events[(j * iters + i) * 2 + end]; };
  std::vector<std::vector<double>> host_us(calls.size());
  sampler.start();
  for (int i = 0; i < iters; ++i) {
    for (std::size_t j = 0; j < calls.size(); ++j) {
      CUDA_CHECK(cudaMemsetAsync(flush, (i + static_cast<int>(j)) & 0xff, kFlushBytes, stream));
      CUDA_CHECK(cudaEventRecord(event(j, i, 0), stream));
      const auto host_start = std::chrono::steady_clock::now();
      calls[j].call(stream);
      host_us[j].push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start).count());
      CUDA_CHECK(cudaEventRecord(event(j, i, 1), stream));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const ClockSample clock = sampler.stop();
  const std::vector<KernelSpan> spans = record_kernels ? kernels->stop() : std::vector<KernelSpan>{};
  std::vector<Timing*> outs;
  for (std::size_t j = 0; j < calls.size(); ++j) {
    calls[j].out->clock = clock;
    outs.push_back(calls[j].out);
    std::vector<double> us(static_cast<std::size_t>(iters));
    for (int i = 0; i < iters; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, event(j, i, 0), event(j, i, 1)));
      us[i] = 1e3 * ms;
    }
    fill_timing(std::move(us), calls[j].out);
    std::sort(host_us[j].begin(), host_us[j].end());
    calls[j].out->host_median_us = median_of_sorted(host_us[j]);
  }
  if (record_kernels) {
    fill_kernel_times(spans, kernels_per_call, iters, outs);
  } else if (kernels != nullptr) {
    for (Timing* t : outs) t->kernel_status = "unavailable: " + kernels->unavailable();
  }
}

// True when the device still runs work. A sticky error (an illegal address) fails every later call of the process;
// any other error is cleared by cudaGetLastError.
bool device_usable() {
  if (cudaDeviceSynchronize() == cudaSuccess) return true;
  cudaGetLastError();
  return cudaDeviceSynchronize() == cudaSuccess;
}

// One call, synchronised: errors of the launch and of the execution surface here, not in a timed loop.
void first_call(const LtGemm& gemm, cudaStream_t stream) {
  gemm.run(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// The baseline's output on a poisoned D against the reference rows (its own layout of D: `jobs`).
void check_baseline(const LtGemm& gemm, const Problem& p, const Reference& reference, const std::vector<RefJob>& jobs,
                    cudaStream_t stream, Check* out) {
  poison_output(p, stream);
  gemm.run(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  reference.compare(jobs, false, out);
}

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2e", v);
  return buf;
}

std::string shape_of(const Case& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k);
}

}  // namespace

void Runner::note_failure(const std::string& failure) {
  if (context_error_.empty() && !device_usable()) context_error_ = failure;
}

const ProbeVerdict& Runner::probe(const BaselineSpec& spec) {
  auto it = probes_.find(spec.probe_key);
  if (it == probes_.end()) {
    it = probes_.emplace(spec.probe_key, run_probe(spec)).first;
    std::cerr << "moegemm-bench: " << spec.probe_key << (it->second.ok ? " PASS" : " FAIL") << " on the "
              << it->second.detail << "\n";
  }
  return it->second;
}

ProbeVerdict Runner::run_probe(const BaselineSpec& spec) {
  ProbeVerdict verdict;
  const std::string where = "probe " + shape_of(spec.probe);
  try {
    std::unique_ptr<Problem> probe = make_problem(spec.probe, std::nullopt, stream_);
    const BaselineSpec* twin = nullptr;
    for (const BaselineSpec& b : probe->baselines) {
      if (b.name == spec.name) twin = &b;
    }
    if (twin == nullptr || !twin->unavailable.empty() || twin->check_jobs.empty()) {
      verdict.detail = where + ": the probe has no checkable " + spec.name;
      return verdict;
    }
    LtGemm gemm;
    std::string why;
    if (!gemm.prepare(lt_, twin->lt, workspace_.get(), &why)) {
      verdict.detail = where + ": " + why;
      return verdict;
    }
    first_call(gemm, stream_);
    std::vector<std::size_t> all_rows(probe->jobs.size());
    std::iota(all_rows.begin(), all_rows.end(), 0);
    const Reference reference(*probe, all_rows, stream_);
    Check check;
    check_baseline(gemm, *probe, reference, twin->check_jobs, stream_, &check);
    verdict.ok = check.status == "PASS";
    verdict.detail = where + ": calc_diff " + scientific(check.diff);
    if (!verdict.ok) verdict.detail += " (" + check.detail + ")";
  } catch (const std::exception& e) {
    verdict.ok = false;
    verdict.detail = where + ": " + e.what();
    note_failure(verdict.detail);
  }
  return verdict;
}

CaseResult Runner::run(const Case& c) {
  CaseResult result;
  // Every timing of the row: this runner's stream, settings, L2 flush buffer, clock sampler and kernel timer.
  auto time = [&](const std::vector<TimedCall>& calls) {
    time_calls(calls, stream_, settings_, flush_.get(), *sampler_, kernel_timer_.get());
  };
  result.c = c;
  result.moegemm.name = "moegemm";
  if (settings_.print_config) result.plan = planned_config(c);
  std::unique_ptr<Problem> problem;
  try {
    problem = make_problem(c, forced_config(c, settings_.config, settings_.raster_band), stream_);
  } catch (const std::exception& e) {
    result.error = std::string("setup: ") + e.what();
    note_failure(result.error);
    cudaGetLastError();  // an allocation failure is not sticky: later rows may still fit
    return result;
  }
  Problem& p = *problem;
  result.note = p.note;
  result.flops = p.flops;
  result.bytes = p.bytes;
  try {
    std::unique_ptr<Reference> reference;
    auto ensure_reference = [&]() -> const Reference& {
      if (!reference)
        reference = std::make_unique<Reference>(p, rows_to_check(p, settings_.check_budget, c.seed), stream_);
      return *reference;
    };

    // --interleave: the implementations that passed their first call and checks, timed together after the loop
    // below (their entries are pushed with status "pending" and filled then). Each baseline pushes at most one entry,
    // so with this reserve the entries' addresses stay valid while the loop pushes.
    std::vector<TimedCall> deferred;
    std::vector<std::unique_ptr<LtGemm>> deferred_gemms;
    result.baselines.reserve(p.baselines.size());

    // moegemm: the first call compiles (JIT) and must succeed before anything is measured.
    try {
      p.call(stream_);
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      if (settings_.check) {
        if (p.in_place_c != nullptr) {
          // D is the call's C: it starts from C's values (an unwritten element then fails, as C + A B^T differs).
          load_in_place_c(p, stream_);
        } else {
          poison_output(p, stream_);
        }
        p.call(stream_);
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        ensure_reference().compare(p.jobs, true, &result.check);
      }
      if (settings_.interleave) {
        result.moegemm.status = "pending";
        deferred.push_back({p.call, &result.moegemm});
      } else {
        time({{p.call, &result.moegemm}});
      }
    } catch (const moegemm::Error& e) {
      result.moegemm.status = e.code() == moegemm::ErrorCode::kUnsupported ? "not built" : "error";
      result.moegemm.detail = e.what();
      note_failure(std::string("moegemm: ") + e.what());
      if (context_lost()) throw CudaFailure(result.moegemm.detail);
    }

    // A baseline says nothing about moegemm: its failures are reported in its cell and never fail the row. Each one
    // is called once (synchronised) before it is timed, and a checkable one must match the reference first.
    for (const BaselineSpec& spec : p.baselines) {
      Timing timing;
      timing.name = spec.name;
      auto not_available = [&](const std::string& why) {
        timing.status = "n/a";
        timing.detail = why;
        result.baselines.push_back(timing);
      };
      if (!spec.unavailable.empty()) {
        not_available(spec.unavailable);
        continue;
      }
      if (!spec.probe_key.empty()) {
        const ProbeVerdict& verdict = probe(spec);
        if (context_lost()) throw CudaFailure("the CUDA context was lost in the " + spec.name + " probe");
        if (!verdict.ok) {
          not_available("wrong result (" + verdict.detail + ")");
          continue;
        }
      }
      auto owned = std::make_unique<LtGemm>();
      LtGemm& gemm = *owned;
      std::string why;
      if (!gemm.prepare(lt_, spec.lt, workspace_.get(), &why)) {
        not_available(why);
        continue;
      }
      try {
        first_call(gemm, stream_);
        if (settings_.check && !spec.check_jobs.empty()) {
          check_baseline(gemm, p, ensure_reference(), spec.check_jobs, stream_, &result.baseline_check);
          result.baseline_check.detail = spec.name + ": " + result.baseline_check.detail;
          if (result.baseline_check.status != "PASS") {
            not_available("wrong result (" + result.baseline_check.detail + ")");
            continue;
          }
        }
        const LtGemm* kept = owned.get();
        const auto call = [kept](cudaStream_t s) { kept->run(s); };
        if (settings_.interleave) {
          timing.status = "pending";
          deferred_gemms.push_back(std::move(owned));
          result.baselines.push_back(timing);
          deferred.push_back({call, &result.baselines.back()});
          continue;
        }
        time({{call, &timing}});
      } catch (const CudaFailure& e) {
        timing.status = "error";
        timing.detail = e.what();
        note_failure(spec.name + ": " + e.what());
        if (context_lost()) {
          result.baselines.push_back(timing);
          break;
        }
      }
      result.baselines.push_back(timing);
    }
    if (!deferred.empty()) {
      auto fail_all = [&](const std::string& why) {
        for (TimedCall& t : deferred) {
          t.out->status = "error";
          t.out->detail = "interleaved timing: " + why;
        }
      };
      if (context_lost()) {
        fail_all("not run, the CUDA context was lost");
      } else {
        try {
          time(deferred);
        } catch (const std::exception& e) {
          fail_all(e.what());
          note_failure(std::string("interleaved timing: ") + e.what());
        }
      }
    }
  } catch (const std::exception& e) {
    result.error = e.what();
    note_failure(result.error);
  }
  return result;
}

}  // namespace moegemm::bench
