// The compile check: sm_90a kernels go through the library's NVRTC path on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "moegemm/error.hpp"
#include "runtime/embedded_sources.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "test_jit_support.hpp"

namespace moegemm {
namespace {

std::uint64_t little_endian(const std::vector<char>& bytes, std::size_t offset, int size) {
  std::uint64_t v = 0;
  for (int i = 0; i < size; ++i) v |= std::uint64_t(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

bool contains(const std::vector<char>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

TEST(JitCompile, Sm90aKernelWithEmbeddedHeaderBecomesASm90aCubin) {
  jit::KernelSpec spec = test::sm90a_probe_spec();
  jit::CompiledBinary binary = jit::compile_cubin(spec.name, spec.source, spec.name_expression);

  const std::vector<char>& cubin = binary.cubin;
  ASSERT_GE(cubin.size(), 64u);
  EXPECT_EQ(std::memcmp(cubin.data(), "\x7f" "ELF", 4), 0);
  EXPECT_EQ(cubin[4], 2) << "ELF64";
  EXPECT_EQ(little_endian(cubin, 18, 2), 190u) << "e_machine must be EM_CUDA";
  const std::uint64_t flags = little_endian(cubin, 48, 4);
  EXPECT_EQ((flags >> 8) & 0xff, 90u) << "e_flags name the SM version; got 0x" << std::hex << flags;
  // The toolkit note records the target with its suffix; sm_90 and sm_90a share the e_flags SM field.
  EXPECT_TRUE(contains(cubin, "sm_90a"));

  EXPECT_EQ(binary.lowered_name.rfind("_ZN7moegemm7kernels9jit_probeILi3EEEvPf", 0), 0u) << binary.lowered_name;
  EXPECT_TRUE(contains(cubin, binary.lowered_name));
  EXPECT_TRUE(binary.usage.known) << binary.log;
  EXPECT_GT(binary.usage.registers, 0);
  EXPECT_LE(binary.usage.registers, 255);
  // An 8-byte barrier and a 512-byte array, at least.
  EXPECT_GE(binary.usage.static_shared_bytes, 520);
  EXPECT_EQ(binary.usage.spill_store_bytes, 0);
  EXPECT_EQ(binary.usage.spill_load_bytes, 0);
  EXPECT_NE(binary.log.find("ptxas"), std::string::npos);
  EXPECT_GT(binary.compile_ms, 0.0);
  EXPECT_FALSE(binary.from_disk);
}

TEST(JitCompile, SyntaxErrorThrowsCompileErrorWithTheLog) {
  const std::string source = "#include \"common/platform.cuh\"\n"
                             "template <int N> __global__ void broken(int* x) { x[0] = N }\n";
  try {
    jit::compile_cubin("broken_kernel", source, "broken<1>");
    FAIL() << "a kernel with a syntax error compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompileError);
    const std::string message = e.what();
    EXPECT_NE(message.find("broken_kernel"), std::string::npos) << message;
    EXPECT_NE(message.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << message;
    EXPECT_NE(message.find("expected a \";\""), std::string::npos) << message;
  }
}

TEST(JitCompile, MissingIncludeIsACompileError) {
  try {
    jit::compile_cubin("missing_include", "#include \"common/no_such_file.cuh\"\n", "x");
    FAIL() << "an unknown include compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompileError);
    EXPECT_NE(std::string(e.what()).find("no_such_file.cuh"), std::string::npos) << e.what();
  }
}

TEST(JitCompile, EveryEmbeddedFileIsAnIncludableHeader) {
  const auto& sources = jit::embedded_sources();
  ASSERT_FALSE(sources.empty());
  std::string source;
  for (const auto& file : sources) source += "#include \"" + std::string(file.name) + "\"\n";
  source += "template <int N> __global__ void touch(int* out) { out[0] = moegemm::kernels::ceil_div(N, 2); }\n";
  jit::CompiledBinary binary = jit::compile_cubin("all_headers", source, "touch<5>");
  EXPECT_FALSE(binary.cubin.empty());
}

TEST(JitCompile, PtxFallbackEmitsPtxForCompute90a) {
  jit::KernelSpec spec = test::sm90a_probe_spec();
  const std::string ptx = jit::compile_ptx(spec.name, spec.source, spec.name_expression);
  EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos) << ptx.substr(0, 400);
  EXPECT_NE(ptx.find("wgmma.fence.sync.aligned"), std::string::npos);
  EXPECT_NE(ptx.find(".entry _ZN7moegemm7kernels9jit_probeILi3EEEvPf"), std::string::npos);
}

TEST(JitCompile, OptionsAreStrictAndPrecise) {
  const auto& options = jit::compile_options();
  auto has = [&](const std::string& o) { return std::find(options.begin(), options.end(), o) != options.end(); };
  EXPECT_TRUE(has("-std=c++20"));
  EXPECT_TRUE(has("-default-device"));
  EXPECT_TRUE(has("--ptxas-options=-v"));
  EXPECT_TRUE(has("--gpu-architecture=sm_90a"));
  EXPECT_FALSE(has("--use_fast_math"));
  EXPECT_NE(jit::nvrtc_version().find('.'), std::string::npos) << jit::nvrtc_version();
}

TEST(JitCompile, PtxasReportIsReadForTheRequestedEntryOnly) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z5firstv' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z5firstv\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n"
      "ptxas info    : Compiling entry function '_Z6secondv' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z6secondv\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers\n";
  jit::ResourceUsage first = jit::parse_ptxas_report(log, "_Z5firstv");
  EXPECT_TRUE(first.known);
  EXPECT_EQ(first.registers, 40);
  EXPECT_EQ(first.static_shared_bytes, 2048);
  EXPECT_EQ(first.local_bytes, 16);
  EXPECT_EQ(first.spill_store_bytes, 8);
  EXPECT_EQ(first.spill_load_bytes, 4);
  jit::ResourceUsage second = jit::parse_ptxas_report(log, "_Z6secondv");
  EXPECT_TRUE(second.known);
  EXPECT_EQ(second.registers, 168);
  EXPECT_EQ(second.static_shared_bytes, 0);
  EXPECT_EQ(second.spill_store_bytes, 0);
  jit::ResourceUsage missing = jit::parse_ptxas_report(log, "_Z5thirdv");
  EXPECT_FALSE(missing.known);
  EXPECT_EQ(missing.registers, 0);
}

TEST(JitCompile, DumpDirReceivesTheSourceBeforeCompiling) {
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  test::ScopedEnv dump("MOEGEMM_JIT_DUMP_DIR", folder.path());
  jit::KernelSpec spec = test::sm90a_probe_spec(4);
  jit::compile_cubin(spec.name, spec.source, spec.name_expression);
  std::ifstream in(folder.path() + "/jit_probe_4.cu");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, spec.source);
}

}  // namespace
}  // namespace moegemm
