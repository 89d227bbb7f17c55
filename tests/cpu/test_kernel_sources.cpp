// The kernel sources the JIT compiles with: built in, or a folder's (MOEGEMM_KERNEL_DIR), checked before use.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "moegemm/error.hpp"
#include "runtime/kernel_sources.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "test_jit_support.hpp"

namespace moegemm {
namespace {

// Writes a source set's files under folder, as kernels/ holds them.
void write_files(const std::string& folder, const jit::KernelSourceSet& set) {
  for (const auto& file : set.files) {
    const std::filesystem::path path = std::filesystem::path(folder) / file.name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << file.text;
  }
}

void expect_folder_error(const std::string& folder, const std::string& needle) {
  try {
    jit::read_kernel_folder(folder);
    FAIL() << "accepted " << folder;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string message = e.what();
    EXPECT_NE(message.find("MOEGEMM_KERNEL_DIR=" + folder), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
}

TEST(KernelSources, BuiltInSetIsSortedNamedAndHashed) {
  const jit::KernelSourceSet set = jit::built_in_sources();
  EXPECT_EQ(set.origin, "built in");
  ASSERT_FALSE(set.files.empty());
  std::set<std::string> names;
  for (std::size_t i = 0; i < set.files.size(); ++i) {
    names.insert(set.files[i].name);
    if (i > 0) EXPECT_LT(set.files[i - 1].name, set.files[i].name);
    EXPECT_FALSE(set.files[i].text.empty()) << set.files[i].name;
  }
  EXPECT_TRUE(names.count("sm90/gemm.cuh"));
  EXPECT_EQ(set.hash.size(), 64u);
}

TEST(KernelSources, AFolderWithTheBuiltInFilesHasTheBuiltInHash) {
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const jit::KernelSourceSet built_in = jit::built_in_sources();
  write_files(folder.path(), built_in);
  std::ofstream(std::filesystem::path(folder.path()) / "README.md") << "not a kernel file: ignored\n";
  const jit::KernelSourceSet read = jit::read_kernel_folder(folder.path());
  EXPECT_EQ(read.origin, folder.path());
  ASSERT_EQ(read.files.size(), built_in.files.size());
  for (std::size_t i = 0; i < read.files.size(); ++i) {
    EXPECT_EQ(read.files[i].name, built_in.files[i].name);
    EXPECT_EQ(read.files[i].text, built_in.files[i].text) << read.files[i].name;
  }
  EXPECT_EQ(read.hash, built_in.hash) << "the same files: the same disk keys, so the cache is shared";
}

TEST(KernelSources, AChangedDeviceFileChangesTheHash) {
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const jit::KernelSourceSet built_in = jit::built_in_sources();
  write_files(folder.path(), built_in);
  std::ofstream(std::filesystem::path(folder.path()) / "sm90/gemm.cuh", std::ios::app) << "// a variant\n";
  EXPECT_NE(jit::read_kernel_folder(folder.path()).hash, built_in.hash);
  std::ofstream(std::filesystem::path(folder.path()) / "sm90/extra_piece.cuh") << "#pragma once\n";
  const jit::KernelSourceSet with_extra = jit::read_kernel_folder(folder.path());
  EXPECT_EQ(with_extra.files.size(), built_in.files.size() + 1);
}

TEST(KernelSources, AFolderThatIsNoneIsRefusedByName) {
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  expect_folder_error(folder.path() + "/missing", "not a folder");
  const std::string file = folder.path() + "/plain_file";
  std::ofstream(file) << "x";
  expect_folder_error(file, "not a folder");
  expect_folder_error(folder.path(), "no sm90/gemm.cuh");
}

TEST(KernelSources, HostSharedFilesMustMatchTheBuild) {
  const std::vector<std::string> shared = jit::host_shared_sources();
  for (const char* name : {"sm90/gemm_params.cuh", "common/scheduler.cuh", "common/platform.cuh"}) {
    EXPECT_NE(std::find(shared.begin(), shared.end(), name), shared.end()) << name;
  }
  EXPECT_EQ(std::find(shared.begin(), shared.end(), "sm90/gemm.cuh"), shared.end()) << "device-only";
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  write_files(folder.path(), jit::built_in_sources());
  std::ofstream(std::filesystem::path(folder.path()) / "sm90/gemm_params.cuh", std::ios::app) << "// changed\n";
  expect_folder_error(folder.path(), "sm90/gemm_params.cuh differs from the one this library was built with");
  std::filesystem::remove(std::filesystem::path(folder.path()) / "sm90/gemm_params.cuh");
  expect_folder_error(folder.path(), "sm90/gemm_params.cuh is missing");
}

// Every kernel header src/ includes is host-shared (kHostRoots in src/runtime/kernel_sources.cpp names the roots).
TEST(KernelSources, HostRootsCoverWhatTheLibraryIncludes) {
  const std::vector<std::string> shared = jit::host_shared_sources();
  const std::regex include(R"re(#include "((sm90|common)/[^"]+)")re");
  int seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(MOEGEMM_SOURCE_DIR) + "/src")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), include); it != std::sregex_iterator(); ++it) {
      ++seen;
      EXPECT_NE(std::find(shared.begin(), shared.end(), (*it)[1].str()), shared.end())
          << entry.path() << " includes " << (*it)[1].str() << ", which a kernel folder could then change";
    }
  }
  EXPECT_GT(seen, 0);
}

// The library is loaded into torch's Python too, where std::regex and locales built by one toolchain crashed (a
// second copy of libstdc++ pieces): library code keeps them out.
TEST(KernelSources, LibraryCodeUsesNoRegexOrLocale) {
  for (const char* folder : {"/src", "/reference", "/include", "/python/src"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(MOEGEMM_SOURCE_DIR) + folder)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      for (const char* banned : {"<regex>", "std::regex", "<locale>", "std::locale"}) {
        EXPECT_EQ(text.str().find(banned), std::string::npos) << entry.path() << " uses " << banned;
      }
    }
  }
}

// With the variable set, NVRTC sees the folder's files: a header only the folder has compiles, and the set is
// the folder's; without it, the same source does not compile.
TEST(KernelSources, TheVariableDecidesWhatNvrtcSees) {
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  write_files(folder.path(), jit::built_in_sources());
  std::filesystem::create_directories(std::filesystem::path(folder.path()) / "variant");
  std::ofstream(std::filesystem::path(folder.path()) / "variant/answer.cuh")
      << "#pragma once\nnamespace variant { constexpr int kAnswer = 42; }\n";
  const std::string source =
      "#include \"common/platform.cuh\"\n#include \"variant/answer.cuh\"\n"
      "template <int N> __global__ void answer(int* out) { out[0] = N + variant::kAnswer; }\n";
  {
    test::ScopedEnv dir("MOEGEMM_KERNEL_DIR", folder.path());
    EXPECT_EQ(jit::kernel_sources().origin, folder.path());
    jit::CompiledBinary binary = jit::compile_cubin("kernel_dir_answer", source, "answer<1>");
    EXPECT_FALSE(binary.cubin.empty());
  }
  test::ScopedEnv unset("MOEGEMM_KERNEL_DIR", std::nullopt);
  EXPECT_EQ(jit::kernel_sources().origin, "built in");
  try {
    jit::compile_cubin("kernel_dir_answer", source, "answer<1>");
    FAIL() << "the folder's header compiled without the folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompileError);
    EXPECT_NE(std::string(e.what()).find("variant/answer.cuh"), std::string::npos) << e.what();
  }
}

TEST(KernelSources, ABadFolderFailsTheCompileWithItsRule) {
  test::TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  test::ScopedEnv dir("MOEGEMM_KERNEL_DIR", folder.path() + "/missing");
  try {
    jit::compile_cubin("kernel_dir_missing", "__global__ void k() {}\n", "k");
    FAIL() << "compiled with a missing kernel folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("MOEGEMM_KERNEL_DIR"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moegemm
