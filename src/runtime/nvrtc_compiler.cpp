#include "runtime/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "moegemm/error.hpp"
#include "runtime/kernel_sources.hpp"

namespace moegemm::jit {
namespace {

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value && *value && std::string(value) != "0";
}

// Owns one nvrtcProgram and turns NVRTC failures into Errors naming the kernel.
class Program {
 public:
  Program(const std::string& name, const std::string& source) : name_(name) {
    const auto& headers = kernel_sources().files;  // built in, or MOEGEMM_KERNEL_DIR's
    std::vector<const char*> texts, names;
    texts.reserve(headers.size());
    names.reserve(headers.size());
    for (const auto& header : headers) {
      texts.push_back(header.text.c_str());
      names.push_back(header.name.c_str());
    }
    std::string file_name = name + ".cu";
    check(nvrtcCreateProgram(&program_, source.c_str(), file_name.c_str(), static_cast<int>(headers.size()),
                             texts.data(), names.data()),
          "nvrtcCreateProgram");
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  void add_name(const std::string& expression) {
    check(nvrtcAddNameExpression(program_, expression.c_str()), "nvrtcAddNameExpression");
  }

  void compile(const std::vector<std::string>& options) {
    std::vector<const char*> argv;
    for (const auto& option : options) argv.push_back(option.c_str());
    nvrtcResult result = nvrtcCompileProgram(program_, static_cast<int>(argv.size()), argv.data());
    log_ = read_log();
    if (result != NVRTC_SUCCESS) {
      std::string flags;
      for (const auto& option : options) flags += " " + option;
      throw Error(ErrorCode::kCompileError, "kernel " + name_ + ": NVRTC " + nvrtcGetErrorString(result) +
                                                " (options:" + flags + ")\n" + log_);
    }
  }

  std::string lowered(const std::string& expression) {
    const char* lowered_name = nullptr;
    check(nvrtcGetLoweredName(program_, expression.c_str(), &lowered_name), "nvrtcGetLoweredName");
    return lowered_name;
  }

  std::vector<char> cubin() {
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(program_, &size), "nvrtcGetCUBINSize");
    std::vector<char> bytes(size);
    check(nvrtcGetCUBIN(program_, bytes.data()), "nvrtcGetCUBIN");
    return bytes;
  }

  std::string ptx() {
    std::size_t size = 0;
    check(nvrtcGetPTXSize(program_, &size), "nvrtcGetPTXSize");
    std::string text(size, '\0');
    check(nvrtcGetPTX(program_, text.data()), "nvrtcGetPTX");
    if (!text.empty() && text.back() == '\0') text.pop_back();
    return text;
  }

  const std::string& log() const { return log_; }

 private:
  std::string read_log() {
    std::size_t size = 0;
    if (nvrtcGetProgramLogSize(program_, &size) != NVRTC_SUCCESS || size == 0) return {};
    std::string text(size, '\0');
    if (nvrtcGetProgramLog(program_, text.data()) != NVRTC_SUCCESS) return {};
    if (text.back() == '\0') text.pop_back();
    return text;
  }

  void check(nvrtcResult result, const char* call) {
    if (result == NVRTC_SUCCESS) return;
    throw Error(ErrorCode::kCompileError,
                "kernel " + name_ + ": " + call + " failed: " + nvrtcGetErrorString(result) +
                    (log_.empty() ? "" : "\n" + log_));
  }

  std::string name_;
  nvrtcProgram program_ = nullptr;
  std::string log_;
};

void dump_source(const std::string& name, const std::string& source) {
  const char* folder = std::getenv("MOEGEMM_JIT_DUMP_DIR");
  if (!folder || !*folder) return;
  std::string file_name;
  for (char c : name) file_name.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_');
  std::ofstream out(std::string(folder) + "/" + file_name + ".cu", std::ios::binary | std::ios::trunc);
  out << source;
}

// The integer written just before position `end` in line (skipping spaces), or -1.
int number_before(const std::string& line, std::size_t end) {
  while (end > 0 && line[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end) return -1;
  return std::atoi(line.substr(begin, end - begin).c_str());
}

void read_field(const std::string& line, const char* phrase, int& field, bool& found) {
  std::size_t at = line.find(phrase);
  if (at == std::string::npos) return;
  int value = number_before(line, at);
  if (value >= 0) {
    field = value;
    found = true;
  }
}

}  // namespace

const std::vector<std::string>& compile_options() {
  static const std::vector<std::string> kOptions = [] {
    std::vector<std::string> options = {
        "-std=c++20",
        std::string("--gpu-architecture=") + kGpuArch,
        "-default-device",
        "--dopt=on",
        "--ptxas-options=-O3",
        "--ptxas-options=-v",
        "-DNDEBUG",
    };
    if (env_flag("MOEGEMM_JIT_LINEINFO")) options.push_back("-lineinfo");
    // One extra macro for kernel experiments (A/B of a code path in one process); part of the disk key.
    if (const char* define = std::getenv("MOEGEMM_JIT_DEFINE"); define && *define) {
      options.push_back(std::string("-D") + define);
    }
    // Extra assembler options for experiments (e.g. "--register-usage-level=10"); part of the disk key.
    if (const char* ptxas = std::getenv("MOEGEMM_JIT_PTXAS"); ptxas && *ptxas) {
      options.push_back(std::string("--ptxas-options=") + ptxas);
    }
    return options;
  }();
  return kOptions;
}

const std::string& nvrtc_version() {
  static const std::string kVersion = [] {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return kVersion;
}

CompiledBinary compile_cubin(const std::string& name, const std::string& source, const std::string& name_expression) {
  dump_source(name, source);
  auto start = std::chrono::steady_clock::now();
  Program program(name, source);
  program.add_name(name_expression);
  program.compile(compile_options());
  CompiledBinary binary;
  binary.lowered_name = program.lowered(name_expression);
  binary.cubin = program.cubin();
  binary.log = program.log();
  binary.usage = parse_ptxas_report(binary.log, binary.lowered_name);
  binary.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return binary;
}

std::string compile_ptx(const std::string& name, const std::string& source, const std::string& name_expression) {
  Program program(name, source);
  program.add_name(name_expression);
  std::vector<std::string> options;
  for (const auto& option : compile_options()) {
    if (option.rfind("--ptxas-options", 0) == 0) continue;  // no assembler runs for a virtual target
    if (option.rfind("--gpu-architecture=", 0) == 0) {
      options.push_back("--gpu-architecture=compute_90a");
    } else {
      options.push_back(option);
    }
  }
  program.compile(options);
  return program.ptx();
}

ResourceUsage parse_ptxas_report(const std::string& log, const std::string& lowered_name) {
  ResourceUsage usage;
  // ptxas reports each entry as "Compiling entry function '<name>' for 'sm_90a'", then its properties, until the
  // next entry; only the lines of the requested entry are read.
  const std::string start_marker = "Compiling entry function '" + lowered_name + "'";
  std::size_t begin = log.find(start_marker);
  if (begin == std::string::npos) return usage;
  std::size_t end = log.find("Compiling entry function", begin + start_marker.size());
  if (end == std::string::npos) end = log.size();
  bool found_registers = false, found_other = false;
  std::size_t pos = begin;
  while (pos < end) {
    std::size_t line_end = log.find('\n', pos);
    if (line_end == std::string::npos || line_end > end) line_end = end;
    std::string line = log.substr(pos, line_end - pos);
    read_field(line, " registers", usage.registers, found_registers);
    read_field(line, " bytes smem", usage.static_shared_bytes, found_other);
    read_field(line, " bytes stack frame", usage.local_bytes, found_other);
    read_field(line, " bytes spill stores", usage.spill_store_bytes, found_other);
    read_field(line, " bytes spill loads", usage.spill_load_bytes, found_other);
    pos = line_end + 1;
  }
  usage.known = found_registers;
  return usage;
}

}  // namespace moegemm::jit
