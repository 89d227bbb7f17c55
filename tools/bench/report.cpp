#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "config_option.hpp"

namespace moegemm::bench {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2e", v);
  return buf;
}

std::string pad(const std::string& s, std::size_t width, bool left = false) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

// "x <baseline>": baseline time / moegemm time, so > 1 means moegemm is faster (the anchor's "x cuBLAS").
bool speedup(const CaseResult& r, std::size_t baseline, double* out) {
  if (baseline >= r.baselines.size() || !r.moegemm.ok() || !r.baselines[baseline].ok()) return false;
  *out = r.baselines[baseline].median_us / r.moegemm.median_us;
  return true;
}

constexpr std::size_t kPlanWidth = 14;  // "128x192x4 c2x1", "64x16x16 k3"

std::string time_cell(const Timing& t) { return t.ok() ? fixed(t.median_us, 1) : t.status; }
// The timing with its kernel time (--kernel-time) as the median, for the TFLOPS and GB/s of the kernels alone.
Timing with_kernel_time(const Timing& t) {
  Timing k = t;
  k.median_us = t.kernel_median_us;
  k.min_us = t.kernel_min_us;
  return k;
}
// Small-M rows run at a few TFLOPS: keep two significant digits there.
std::string tflops_text(double v) { return fixed(v, v < 10 ? 2 : v < 100 ? 1 : 0); }
std::string tflops_cell(double flops, const Timing& t) { return t.ok() ? tflops_text(tflops(flops, t)) : "-"; }

std::string check_cell(const CaseResult& r) {
  if (!r.error.empty()) return "FAIL (error)";
  if (r.moegemm.status == "error") return "FAIL (error)";
  if (r.check.status == "-") return "-";
  return r.check.status + " " + sci(r.check.diff);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string timing_json(const Timing& t, double flops, double bytes) {
  std::ostringstream os;
  os << "{\"name\": " << json_string(t.name) << ", \"status\": " << json_string(t.status)
     << ", \"detail\": " << json_string(t.detail);
  if (t.ok()) {
    os << ", \"median_us\": " << json_number(t.median_us) << ", \"min_us\": " << json_number(t.min_us)
       << ", \"max_us\": " << json_number(t.max_us) << ", \"host_median_us\": " << json_number(t.host_median_us)
       << ", \"tflops\": " << json_number(tflops(flops, t))
       << ", \"gbps\": " << json_number(gbps(bytes, t));
    if (t.clock.samples > 0) {
      os << ", \"clock\": {\"samples\": " << t.clock.samples
         << ", \"sm_mhz_mean\": " << json_number(t.clock.sm_mhz_mean)
         << ", \"sm_mhz_min\": " << json_number(t.clock.sm_mhz_min)
         << ", \"sm_mhz_max\": " << json_number(t.clock.sm_mhz_max)
         << ", \"power_w_mean\": " << json_number(t.clock.power_w_mean) << "}";
    }
    if (t.kernel_status == "ok") {
      const Timing kernel_only = with_kernel_time(t);
      os << ", \"kernel_median_us\": " << json_number(t.kernel_median_us)
         << ", \"kernel_min_us\": " << json_number(t.kernel_min_us)
         << ", \"kernel_tflops\": " << json_number(tflops(flops, kernel_only))
         << ", \"kernel_gbps\": " << json_number(gbps(bytes, kernel_only));
    } else if (t.kernel_status != "-") {
      os << ", \"kernel_time\": " << json_string(t.kernel_status);
    }
  }
  os << "}";
  return os.str();
}

std::string check_json(const Check& c) {
  std::ostringstream os;
  os << "{\"status\": " << json_string(c.status);
  if (c.status != "-") {
    os << ", \"calc_diff\": " << json_number(c.diff) << ", \"threshold\": " << json_number(c.threshold)
       << ", \"rows_checked\": " << c.rows_checked << ", \"rows_valid\": " << c.rows_valid
       << ", \"nan_in_checked_rows\": " << c.nan_checked << ", \"unwritten_valid\": " << c.nan_valid
       << ", \"nonzero_padding\": " << c.nonzero_pad << ", \"written_outside\": " << c.touched
       << ", \"detail\": " << json_string(c.detail);
  }
  os << "}";
  return os.str();
}

}  // namespace

double tflops(double flops, const Timing& t) { return t.ok() && t.median_us > 0 ? flops / (t.median_us * 1e6) : 0; }
double gbps(double bytes, const Timing& t) { return t.ok() && t.median_us > 0 ? bytes / (t.median_us * 1e3) : 0; }

void print_progress(std::ostream& os, const CaseResult& r) {
  os << "[" << r.c.suite << "] " << r.c.label();
  if (!r.note.empty()) os << " (" << r.note << ")";
  auto kernel_text = [&](const Timing& t) {
    if (!t.ok() || t.kernel_status == "-") return std::string();
    if (t.kernel_status != "ok") return " (kernel time: " + t.kernel_status + ")";
    return " (kernel " + fixed(t.kernel_median_us, 1) + " us, " + fixed(gbps(r.bytes, with_kernel_time(t)), 0) +
           " GB/s)";
  };
  auto host_text = [](const Timing& t) { return ", host " + fixed(t.host_median_us, 1) + " us"; };
  os << ": moegemm " << time_cell(r.moegemm);
  if (r.moegemm.ok()) {
    os << " us " << tflops_text(tflops(r.flops, r.moegemm)) << " TFLOPS" << kernel_text(r.moegemm)
       << host_text(r.moegemm);
  }
  for (const Timing& b : r.baselines) {
    os << ", " << b.name << " " << time_cell(b);
    if (b.ok()) os << " us " << tflops_text(tflops(r.flops, b)) << " TFLOPS" << kernel_text(b) << host_text(b);
    if (!b.ok() && !b.detail.empty()) os << " (" << b.detail << ")";
  }
  if (r.moegemm.ok() && r.moegemm.clock.samples > 0) {
    os << ", SM clock " << fixed(r.moegemm.clock.sm_mhz_mean, 0) << " MHz, " << fixed(r.moegemm.clock.power_w_mean, 0)
       << " W";
  }
  os << ", check " << check_cell(r);
  if (!r.check.detail.empty()) os << " [" << r.check.detail << "]";
  if (r.plan) os << ", plan " << r.plan->to_string();
  if (r.baseline_check.status != "-") {
    os << ", baseline check " << r.baseline_check.status << " " << sci(r.baseline_check.diff);
  }
  if (!r.error.empty()) os << " ERROR: " << r.error;
  os << "\n";
  os.flush();
}

void print_tables(std::ostream& os, const std::vector<CaseResult>& results,
                  const std::map<std::string, ProbeVerdict>& probes) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> by_suite;
  for (const CaseResult& r : results) {
    if (by_suite[r.c.suite].empty()) order.push_back(r.c.suite);
    by_suite[r.c.suite].push_back(&r);
  }
  int failed = 0;
  for (const std::string& suite : order) {
    const auto& rows = by_suite[suite];
    std::vector<std::string> names;
    for (const CaseResult* r : rows) {
      for (std::size_t i = 0; i < r->baselines.size(); ++i) {
        if (names.size() <= i) names.push_back(r->baselines[i].name);
      }
    }
    std::size_t label_width = 20;
    bool any_plan = false, any_kernel = false;
    for (const CaseResult* r : rows) {
      label_width = std::max(label_width, r->c.label().size());
      any_plan = any_plan || r->plan.has_value();
      any_kernel = any_kernel || r->moegemm.kernel_status == "ok";
    }
    os << "\n== " << suite << " ==\n";
    std::string header =
        pad("row", label_width, true) + " | " + pad("moegemm us", 10) + pad("TFLOPS", 8) + pad("GB/s", 7);
    // --kernel-time: moegemm's kernel time and the GB/s it gives (the anchor's tables are kernel times).
    if (any_kernel) header += " | " + pad("kernel us", 10) + pad("GB/s", 7);
    for (const std::string& name : names) header += " | " + pad(name + " us", 17) + pad("TFLOPS", 8);
    for (const std::string& name : names) header += " | " + pad("x " + name.substr(name.find('-') + 1), 7);
    if (any_plan) header += " | " + pad("plan", kPlanWidth, true);
    header += " | check";
    os << header << "\n" << std::string(header.size() + 10, '-') << "\n";
    std::vector<double> log_sum(names.size(), 0.0);
    std::vector<int> count(names.size(), 0);
    for (const CaseResult* r : rows) {
      std::string line = pad(r->c.label(), label_width, true) + " | " + pad(time_cell(r->moegemm), 10) +
                         pad(tflops_cell(r->flops, r->moegemm), 8) +
                         pad(r->moegemm.ok() ? fixed(gbps(r->bytes, r->moegemm), 0) : "-", 7);
      if (any_kernel) {
        const bool have = r->moegemm.ok() && r->moegemm.kernel_status == "ok";
        line += " | " + pad(have ? fixed(r->moegemm.kernel_median_us, 1) : "-", 10) +
                pad(have ? fixed(gbps(r->bytes, with_kernel_time(r->moegemm)), 0) : "-", 7);
      }
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (i < r->baselines.size()) {
          line += " | " + pad(time_cell(r->baselines[i]), 17) + pad(tflops_cell(r->flops, r->baselines[i]), 8);
        } else {
          line += " | " + pad("-", 17) + pad("-", 8);
        }
      }
      for (std::size_t i = 0; i < names.size(); ++i) {
        double s = 0;
        const bool have = speedup(*r, i, &s);
        if (have) {
          log_sum[i] += std::log(s);
          ++count[i];
        }
        line += " | " + pad(have ? fixed(s, 2) : "-", 7);
      }
      if (any_plan) line += " | " + pad(r->plan ? compact_config(*r->plan) : "-", kPlanWidth, true);
      line += " | " + check_cell(*r);
      if (r->failed()) ++failed;
      os << line << "\n";
    }
    int bad_baselines = 0;
    for (const CaseResult* r : rows) bad_baselines += r->baseline_check.status == "FAIL" ? 1 : 0;
    if (bad_baselines > 0) {
      os << "warning: the cuBLASLt output disagrees with the float64 reference in " << bad_baselines
         << " rows (a setup problem of the tool: see the log)\n";
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (count[i] > 0) {
        os << "geomean x " << names[i] << ": " << fixed(std::exp(log_sum[i] / count[i]), 3) << " over " << count[i]
           << " rows\n";
      }
    }
  }
  for (const auto& [key, verdict] : probes) {
    if (!verdict.ok) os << "warning: " << key << " is not timed: its probe failed: " << verdict.detail << "\n";
  }
  os << "\n" << results.size() << " rows, " << failed << " failed\n";
}

void write_json(std::ostream& os, const RunInfo& info, const std::vector<CaseResult>& results,
                const std::map<std::string, ProbeVerdict>& probes) {
  os << "{\n  \"tool\": \"moegemm-bench\",\n  \"command\": " << json_string(info.command_line)
     << ",\n  \"commit\": " << json_string(info.commit)
     << ",\n  \"kernel_sources\": " << json_string(info.kernel_sources)
     << ",\n  \"kernel_sources_hash\": " << json_string(info.kernel_sources_hash) << ",\n  \"seed\": " << info.seed
     << ",\n  \"iters\": " << info.settings.iters << ",\n  \"warmup\": " << info.settings.warmup
     << ",\n  \"interleave\": " << (info.settings.interleave ? "true" : "false")
     << ",\n  \"max_sms\": " << info.settings.max_sms
     << ",\n  \"l2_persisting_mb\": " << info.settings.l2_persisting_mb
     << ",\n  \"check\": " << (info.settings.check ? "true" : "false")
     << ",\n  \"check_budget\": " << json_number(info.settings.check_budget) << ",\n  \"config_override\": "
     << (info.settings.config ? json_string(compact_config(*info.settings.config)) : std::string("null"))
     << ",\n  \"raster_band\": " << info.settings.raster_band
     << ",\n  \"device\": {\"name\": " << json_string(info.device_name) << ", \"sm_count\": " << info.sm_count
     << ", \"compute_capability\": \"" << info.cc_major << "." << info.cc_minor
     << "\", \"clock_khz\": " << info.clock_khz << ", \"memory_clock_khz\": " << info.memory_clock_khz
     << ", \"l2_bytes\": " << info.l2_bytes << ", \"clock_sampling\": " << json_string(info.clock_sampling)
     << ", \"kernel_timing\": " << json_string(info.kernel_timing)
     << "},\n  \"cuda\": {\"runtime\": " << info.runtime_version << ", \"driver\": " << info.driver_version
     << ", \"cublaslt\": " << info.cublaslt_version << "},\n  \"probes\": [";
  bool first_probe = true;
  for (const auto& [key, verdict] : probes) {
    os << (first_probe ? "\n" : ",\n") << "    {\"baseline\": " << json_string(key)
       << ", \"ok\": " << (verdict.ok ? "true" : "false") << ", \"detail\": " << json_string(verdict.detail) << "}";
    first_probe = false;
  }
  os << "],\n  \"results\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    const Case& c = r.c;
    os << (i == 0 ? "\n" : ",\n") << "    {\"suite\": " << json_string(c.suite)
       << ", \"label\": " << json_string(c.label()) << ", \"m\": " << c.m << ", \"n\": " << c.n << ", \"k\": " << c.k
       << ", \"groups\": " << c.groups << ", \"expected\": " << c.expected << ", \"capacity\": " << c.capacity
       << ", \"group_ends\": " << (c.group_ends ? "true" : "false")
       << ", \"segment_alignment\": " << c.segment_alignment << ", \"d\": \"" << (c.d_f32 ? "fp32" : "bf16")
       << "\", \"accumulate\": " << (c.accumulate ? "true" : "false")
       << ", \"in_place\": " << (c.in_place ? "true" : "false")
       << ", \"a_mn_major\": " << (c.a_mn_major ? "true" : "false")
       << ", \"b_mn_major\": " << (c.b_mn_major ? "true" : "false") << ", \"note\": " << json_string(r.note)
       << ", \"flops\": " << json_number(r.flops) << ", \"bytes\": " << json_number(r.bytes)
       << ",\n     \"moegemm\": " << timing_json(r.moegemm, r.flops, r.bytes) << ",\n     \"baselines\": [";
    for (std::size_t b = 0; b < r.baselines.size(); ++b) {
      os << (b == 0 ? "" : ", ") << timing_json(r.baselines[b], r.flops, r.bytes);
    }
    os << "],\n     \"speedup\": {";
    bool first = true;
    for (std::size_t b = 0; b < r.baselines.size(); ++b) {
      double s = 0;
      if (!speedup(r, b, &s)) continue;
      os << (first ? "" : ", ") << json_string(r.baselines[b].name) << ": " << json_number(s);
      first = false;
    }
    os << "},\n     \"check\": " << check_json(r.check)
       << ",\n     \"baseline_check\": " << check_json(r.baseline_check)
       << ",\n     \"plan\": " << (r.plan ? json_string(r.plan->to_string()) : std::string("null"))
       << ",\n     \"failed\": " << (r.failed() ? "true" : "false") << ", \"error\": " << json_string(r.error) << "}";
  }
  os << "\n  ]\n}\n";
}

}  // namespace moegemm::bench
