// moegemm-bench: times moegemm's GEMMs against cuBLASLt in one run and checks every output against a float64
// reference on the GPU. docs/benchmarking.md describes the columns and the method.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config_option.hpp"
#include "moegemm/device.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "runtime/kernel_sources.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "suites.hpp"

namespace {

using namespace moegemm::bench;

constexpr int kExitFailed = 1;
constexpr int kExitNoDevice = 2;
constexpr int kExitUsage = 64;

struct Options {
  std::vector<std::string> suites = {"dense", "contiguous", "masked"};
  ShapeOverride shape;
  RunSettings settings;
  unsigned long long seed = 1;
  std::string json_path;
  std::string commit;
  std::string rows;  // keep only rows whose label contains this text (empty: all)
  int segment_alignment = 0;  // --segment-alignment (0: the default 128)
  bool list = false;
  bool precompile = false;
  int jobs = 0;  // --jobs: --precompile's compile threads (0: one per hardware thread)
  bool probe = false;
};

const char* kUsage =
    "usage: moegemm-bench [--suite LIST] [--m M --n N --k K] [--groups G --expected-m E] [--iters N]\n"
    "                     [--warmup N] [--seed S] [--check | --no-check] [--check-budget MACS]\n"
    "                     [--config BMxBNxSTAGES] [--print-config] [--json FILE] [--commit SHA]\n"
    "                     [--rows TEXT] [--interleave] [--kernel-time] [--max-sms N] [--list] [--precompile]\n"
    "                     [--probe] [--segment-alignment N] [--l2-persisting-mb N]\n"
    "  --suite LIST     comma-separated: dense, contiguous, masked, wgrad, kgrouped, bf16, all\n"
    "                   (default dense,contiguous,masked)\n"
    "  --m/--n/--k      one custom shape instead of a suite's list (dense, wgrad, bf16: m n k;\n"
    "                   contiguous, masked: --groups --expected-m --n --k; kgrouped: --groups --m --n\n"
    "                   --expected-m, the expected K per expert)\n"
    "  --iters N        timed calls per measurement, median reported (default 30)\n"
    "  --warmup N       untimed calls before timing (default 3)\n"
    "  --interleave     time moegemm and the baselines call by call in turn, each call after its own L2\n"
    "                   flush, so that all run at the same clocks (default: each in a block of its own)\n"
    "  --kernel-time    also report each implementation's kernel time (GPU start of its first kernel to\n"
    "                   end of its last, CUPTI records), which leaves out the launch and event overhead\n"
    "                   that the CUDA-event time includes (the way a profiler measures; needs libcupti)\n"
    "  --max-sms N      moegemm's calls keep to N SMs (moegemm::set_num_sms: the planner plans for N and\n"
    "                   the kernels launch at most N CTAs); the baselines use the whole device\n"
    "  --l2-persisting-mb N  set aside N MiB of L2 for persisting accesses (cudaLimitPersistingL2CacheSize, at\n"
    "                   most the device's persistingL2CacheMaxSize) for the whole run; by default left unchanged\n"
    "  --check-budget   float64 multiply-adds per check; rows are sampled beyond it (default 1e9)\n"
    "  --config C       force the kernel configuration C = BMxBNxSTAGES (e.g. 128x192x4: block_m 128,\n"
    "                   block_n 192, 4 stages, cluster 1x1; BMxBNxSTAGESxCMxCN sets the cluster too,\n"
    "                   BMxBNxSTAGESxCMxCNxKS also the K split)\n"
    "                   on every moegemm call of the run\n"
    "  --band N         force the tile order's rasterisation band (N m-blocks per band; docs/scheduler.md) on\n"
    "                   every moegemm call, on --config's configuration or else on the planner's for each row\n"
    "  --segment-alignment N  contiguous rows in the group-ends form start each expert's rows at multiples of\n"
    "                   N (a power of two from 1 to 1024; 1: tokens packed with no padding rows) instead of 128\n"
    "  --print-config   show the planner's configuration for each row (with --list: no GPU needed)\n"
    "  --rows TEXT      run only the suite rows whose label contains TEXT (e.g. \"G=32 exp=192\"); a row\n"
    "                   keeps the inputs it has in the whole suite. With a custom shape: the shape takes the\n"
    "                   layout, majors, D type and C of the first row whose label contains TEXT (e.g. --suite\n"
    "                   bf16 --rows expK --groups 8 --m 4096 --n 2048 --expected-m 4096: BF16 k-grouped)\n"
    "  --list           print the rows that would run and exit (needs no GPU)\n"
    "  --precompile     compile each row's kernels (--config's where given) into the disk cache\n"
    "                   (moegemm::precompile_all), print them and\n"
    "                   exit (needs no GPU; exit 1 when a kernel does not compile or spills over 64 bytes)\n"
    "  --jobs N         --precompile's compile threads: each distinct kernel of the rows compiled once, up to N\n"
    "                   at a time (default: one per hardware thread)\n"
    "  --probe          print the device and exit: 0 with a usable GPU, 2 without\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

long long to_integer(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty()) {
    throw std::invalid_argument(flag + ": must be an integer, got " + value);
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--suite" || arg == "--suites") {
      o.suites = split(value());
      if (o.suites.size() == 1 && o.suites[0] == "all") o.suites = known_suites();
    } else if (arg == "--m") {
      o.shape.m = to_integer(arg, value());
    } else if (arg == "--n") {
      o.shape.n = to_integer(arg, value());
    } else if (arg == "--k") {
      o.shape.k = to_integer(arg, value());
    } else if (arg == "--groups") {
      o.shape.groups = static_cast<int>(to_integer(arg, value()));
    } else if (arg == "--expected-m") {
      o.shape.expected = to_integer(arg, value());
    } else if (arg == "--iters") {
      o.settings.iters = static_cast<int>(to_integer(arg, value()));
      if (o.settings.iters < 1) throw std::invalid_argument("--iters: must be at least 1");
    } else if (arg == "--warmup") {
      o.settings.warmup = static_cast<int>(to_integer(arg, value()));
      if (o.settings.warmup < 0) throw std::invalid_argument("--warmup: must not be negative");
    } else if (arg == "--seed") {
      o.seed = static_cast<unsigned long long>(to_integer(arg, value()));
    } else if (arg == "--check") {
      o.settings.check = true;
    } else if (arg == "--no-check") {
      o.settings.check = false;
    } else if (arg == "--check-budget") {
      o.settings.check_budget = std::stod(value());
    } else if (arg == "--config") {
      o.settings.config = parse_config(value());
    } else if (arg == "--segment-alignment") {
      o.segment_alignment = static_cast<int>(to_integer(arg, value()));
      if (!moegemm::is_valid_segment_alignment(o.segment_alignment)) {
        throw std::invalid_argument("--segment-alignment: must be a power of two from 1 to 1024");
      }
    } else if (arg == "--band") {
      o.settings.raster_band = static_cast<int>(to_integer(arg, value()));
      if (o.settings.raster_band < 1) throw std::invalid_argument("--band: must be at least 1");
    } else if (arg == "--interleave") {
      o.settings.interleave = true;
    } else if (arg == "--kernel-time") {
      o.settings.kernel_time = true;
    } else if (arg == "--max-sms") {
      o.settings.max_sms = static_cast<int>(to_integer(arg, value()));
      if (o.settings.max_sms < 1) throw std::invalid_argument("--max-sms: must be at least 1");
    } else if (arg == "--l2-persisting-mb") {
      o.settings.l2_persisting_mb = static_cast<int>(to_integer(arg, value()));
      if (o.settings.l2_persisting_mb < 0) throw std::invalid_argument("--l2-persisting-mb: must be at least 0");
    } else if (arg == "--print-config") {
      o.settings.print_config = true;
    } else if (arg == "--json") {
      o.json_path = value();
    } else if (arg == "--commit") {
      o.commit = value();
    } else if (arg == "--rows") {
      o.rows = value();
    } else if (arg == "--list") {
      o.list = true;
    } else if (arg == "--precompile") {
      o.precompile = true;
    } else if (arg == "--jobs") {
      o.jobs = static_cast<int>(to_integer(arg, value()));
      if (o.jobs < 1) throw std::invalid_argument("--jobs: must be at least 1");
    } else if (arg == "--probe") {
      o.probe = true;
    } else {
      throw std::invalid_argument(arg + ": unknown option (see --help)");
    }
  }
  return o;
}

// Empty when a usable (compute capability 9.0) device is present, else the reason. moegemm::device_info() decides,
// as for the library's own calls; the properties for the run's record then come from the runtime the tool links.
std::string device_problem(cudaDeviceProp* prop) {
  const moegemm::DeviceInfo info = moegemm::device_info();
  if (!info.available) return info.reason;
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = cudaGetDeviceProperties(prop, device);
  if (status != cudaSuccess) return std::string("the CUDA runtime cannot use ") + info.name + ": " +
                                    cudaGetErrorString(status);
  return {};
}

RunInfo run_info(const Options& o, const cudaDeviceProp& prop, int argc, char** argv) {
  RunInfo info;
  info.device_name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.l2_bytes = prop.l2CacheSize;
  int device = 0;
  cudaGetDevice(&device);
  if (cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, device) != cudaSuccess) info.clock_khz = 0;
  if (cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) {
    info.memory_clock_khz = 0;
  }
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);
  info.cublaslt_version = static_cast<long long>(cublasLtGetVersion());
  info.commit = o.commit;
  // Throws, naming the rule, for a bad MOEGEMM_KERNEL_DIR.
  const moegemm::jit::KernelSourceSet& sources = moegemm::jit::kernel_sources();
  info.kernel_sources = sources.origin;
  info.kernel_sources_hash = sources.hash;
  info.seed = o.seed;
  info.settings = o.settings;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) info.command_line += ' ';
    info.command_line += argv[i];
  }
  return info;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<Case> cases;
  try {
    options = parse(argc, argv);
    for (const std::string& suite : options.suites) {
      // With a custom shape, --rows picks the suite row whose layout it takes (its label then shows the new shape).
      for (Case& c : build_suite(suite, options.shape, options.seed, options.rows)) {
        if (options.segment_alignment > 0 && c.group_ends) {
          // The flag sets every group-ends row's alignment: the suite's own packed twins would repeat them.
          if (c.segment_alignment != 128) continue;
          c.segment_alignment = options.segment_alignment;
        }
        if (options.shape.any() || c.label().find(options.rows) != std::string::npos) cases.push_back(std::move(c));
      }
    }
    if (options.segment_alignment > 0 &&
        std::none_of(cases.begin(), cases.end(), [](const Case& c) { return c.group_ends; })) {
      throw std::invalid_argument("--segment-alignment: no chosen row uses the group-ends form (contiguous rows "
                                  "labelled \"ends\")");
    }
    if (cases.empty()) throw std::invalid_argument("--rows: no row of the chosen suites contains \"" + options.rows + "\"");
    if (options.settings.max_sms > 0) moegemm::set_num_sms(options.settings.max_sms);
  } catch (const std::exception& e) {
    std::cerr << "moegemm-bench: " << e.what() << "\n";
    return kExitUsage;
  }
  if (options.precompile) {
    // The kernels of every row's call, as the planner picks them for this machine's SM count (or 132). A planned
    // kernel that spills beyond the compile tests' budget (tests/cpu/test_kernel_compile.cpp) fails its row.
    constexpr int kSpillBudget = moegemm::jit::kSpillBudgetBytes;
    int compiled = 0, cached = 0, failed = 0;
    std::set<std::string> kernels;
    // Every row's kernels at once, each compiled once on --jobs threads; the rows below then find them in the cache
    // (a refused batch leaves each row to compile, and report, its own).
    std::map<std::string, bool> batch_found;  // kernel -> found in the cache by the batch
    try {
      moegemm::WarmupQueries queries;
      for (const Case& c : cases) {
        add_warmup_query(c, queries, forced_config(c, options.settings.config, options.settings.raster_band));
      }
      for (const moegemm::PrecompiledKernel& k : moegemm::precompile_all(queries, options.jobs)) {
        batch_found[k.name] = k.from_disk;
      }
    } catch (const std::exception& e) {
      std::cout << "precompile: the rows' batch was refused (" << e.what() << "); compiling row by row\n";
      batch_found.clear();
    }
    for (const Case& c : cases) {
      try {
        bool spills = false;
        const auto forced = forced_config(c, options.settings.config, options.settings.raster_band);
        for (const moegemm::PrecompiledKernel& k : precompile_row(c, forced)) {
          const auto batch = batch_found.find(k.name);
          const bool from_disk = batch != batch_found.end() ? batch->second : k.from_disk;
          std::cout << c.suite << ": " << c.label() << " | " << k.name << (from_disk ? " cached" : " compiled")
                    << " (" << static_cast<int>(k.compile_ms) << " ms, " << k.registers << " registers, "
                    << k.spill_bytes << " bytes spilled)\n";
          if (kernels.insert(k.name).second) (from_disk ? cached : compiled) += 1;
          spills = spills || k.spill_bytes > kSpillBudget;
        }
        if (spills) {
          std::cout << c.suite << ": " << c.label() << " | FAILED: a kernel spills more than " << kSpillBudget
                    << " bytes per thread (the compile tests' budget)\n";
          ++failed;
        }
      } catch (const std::exception& e) {
        std::cout << c.suite << ": " << c.label() << " | FAILED: " << e.what() << "\n";
        ++failed;
      }
    }
    std::cout << cases.size() << " cases, " << kernels.size() << " kernels (" << compiled << " compiled, " << cached
              << " found in the cache), " << failed << " rows failed\n";
    return failed == 0 ? 0 : 1;
  }
  if (options.list) {
    for (const Case& c : cases) {
      std::cout << c.suite << ": " << c.label();
      const auto plan = options.settings.print_config ? planned_config(c) : std::nullopt;
      if (plan) std::cout << " | plan " << plan->to_string();
      std::cout << "\n";
    }
    std::cout << cases.size() << " cases\n";
    return 0;
  }

  cudaDeviceProp prop{};
  const std::string problem = device_problem(&prop);
  if (!problem.empty()) {
    std::cout << "moegemm-bench: no CUDA device: " << problem << "\n";
    return kExitNoDevice;
  }
  RunInfo info;
  try {
    info = run_info(options, prop, argc, argv);
  } catch (const std::exception& e) {  // a bad MOEGEMM_KERNEL_DIR
    std::cerr << "moegemm-bench: " << e.what() << "\n";
    return kExitFailed;
  }
  if (options.probe) {
    std::cout << "moegemm-bench: " << info.device_name << ", " << info.sm_count << " SMs, compute capability "
              << info.cc_major << "." << info.cc_minor << ", driver " << info.driver_version << ", runtime "
              << info.runtime_version << "\n";
    return 0;
  }
  // --l2-persisting-mb: the set-aside, capped at the device's maximum, for the whole process.
  size_t l2_persisting_bytes = 0;
  if (options.settings.l2_persisting_mb >= 0) {
    l2_persisting_bytes = std::min(static_cast<size_t>(options.settings.l2_persisting_mb) << 20,
                                   static_cast<size_t>(prop.persistingL2CacheMaxSize));
    if (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, l2_persisting_bytes) != cudaSuccess) {
      std::cerr << "moegemm-bench: --l2-persisting-mb: cudaDeviceSetLimit failed\n";
      return kExitFailed;
    }
  }
  std::cerr << "moegemm-bench: " << info.device_name << ", " << info.sm_count << " SMs, seed " << options.seed << ", "
            << options.settings.iters << " timed calls per measurement, check "
            << (options.settings.check ? "on" : "off");
  if (options.settings.interleave) std::cerr << ", implementations interleaved call by call";
  if (options.settings.max_sms > 0) std::cerr << ", moegemm on at most " << options.settings.max_sms << " SMs";
  if (options.settings.l2_persisting_mb >= 0) {
    std::cerr << ", " << (l2_persisting_bytes >> 20) << " MiB of L2 set aside for persisting accesses";
  }
  if (options.settings.config) {
    std::cerr << ", every moegemm call forced to " << compact_config(*options.settings.config);
  }
  std::cerr << "\n";

  std::vector<CaseResult> results;
  std::map<std::string, ProbeVerdict> probes;
  bool context_lost = false;
  try {
    Runner runner(options.settings);
    info.clock_sampling = runner.clock_sampling();
    info.kernel_timing = runner.kernel_timing();
    if (options.settings.kernel_time) std::cerr << "moegemm-bench: kernel time " << info.kernel_timing << "\n";
    for (const Case& c : cases) {
      results.push_back(runner.run(c));
      print_progress(std::cerr, results.back());
      if (runner.context_lost()) {
        // Every later CUDA call of this process would fail: report what ran, and say what did not.
        context_lost = true;
        std::cerr << "moegemm-bench: the CUDA context is lost (" << runner.context_error() << "); "
                  << cases.size() - results.size() << " rows not run\n";
        break;
      }
    }
    probes = runner.probes();
  } catch (const std::exception& e) {
    std::cerr << "moegemm-bench: " << e.what() << "\n";
    return kExitFailed;
  }

  bool any_failed = context_lost;
  for (const CaseResult& r : results) any_failed = any_failed || r.failed();
  if (!options.json_path.empty()) {
    std::ofstream json(options.json_path);
    write_json(json, info, results, probes);
    if (!json) {
      std::cerr << "moegemm-bench: cannot write " << options.json_path << "\n";
      any_failed = true;
    }
  }
  std::cout << "moegemm-bench: seed " << options.seed << ", device " << info.device_name << "\n";
  if (info.kernel_sources != "built in") std::cout << "kernel sources: " << info.kernel_sources << "\n";
  print_tables(std::cout, results, probes);
  if (context_lost) {
    std::cout << "the CUDA context was lost: " << cases.size() - results.size() << " rows not run\n";
  }
  return any_failed ? kExitFailed : 0;
}
