// The on-disk kernel cache, without a GPU: keys, files, corruption, races between threads and processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "moegemm/error.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/kernel_sources.hpp"
#include "runtime/sha256.hpp"
#include "test_jit_support.hpp"

namespace moegemm {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Every entry of the cache's kernels folder: only whole .cubin and .json files may be left.
std::vector<std::string> entries(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(folder + "/kernels", ignored)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

class JitDiskCache : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(folder_.path().empty()); }
  test::ScopedCacheFolder folder_;
};

TEST_F(JitDiskCache, FirstCallCompilesAndWritesSecondReadsTheFile) {
  jit::KernelSpec spec = test::sm90a_probe_spec(5, "first-second");
  const std::string path = jit::cache_file_path(folder_.path(), jit::disk_key(spec));
  ASSERT_FALSE(fs::exists(path));

  jit::JitStats before = jit::jit_stats();
  jit::CompiledBinary compiled = jit::compile_or_load_binary(spec);
  jit::JitStats after_first = jit::jit_stats();
  EXPECT_EQ(after_first.compiles, before.compiles + 1);
  EXPECT_EQ(after_first.disk_writes, before.disk_writes + 1);
  EXPECT_FALSE(compiled.from_disk);
  ASSERT_TRUE(fs::exists(path));
  const std::string sidecar = path.substr(0, path.size() - 6) + ".json";
  ASSERT_TRUE(fs::exists(sidecar));
  const std::string json = read_bytes(sidecar);
  EXPECT_NE(json.find("\"name\": \"jit_probe_5\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"registers\": " + std::to_string(compiled.usage.registers)), std::string::npos) << json;

  jit::CompiledBinary loaded = jit::compile_or_load_binary(spec);
  jit::JitStats after_second = jit::jit_stats();
  EXPECT_EQ(after_second.compiles, after_first.compiles) << "the second call must not run NVRTC";
  EXPECT_EQ(after_second.disk_hits, after_first.disk_hits + 1);
  EXPECT_TRUE(loaded.from_disk);
  EXPECT_EQ(loaded.cubin, compiled.cubin);
  EXPECT_EQ(loaded.lowered_name, compiled.lowered_name);
  EXPECT_EQ(loaded.usage.registers, compiled.usage.registers);
  EXPECT_EQ(loaded.usage.static_shared_bytes, compiled.usage.static_shared_bytes);
  EXPECT_TRUE(loaded.usage.known);
  EXPECT_DOUBLE_EQ(loaded.compile_ms, compiled.compile_ms);
}

TEST_F(JitDiskCache, CorruptShortOrForeignFilesAreRecompiled) {
  jit::KernelSpec spec = test::sm90a_probe_spec(6, "corrupt");
  const std::string path = jit::cache_file_path(folder_.path(), jit::disk_key(spec));
  const jit::CompiledBinary good = jit::compile_or_load_binary(spec);
  const std::string intact = read_bytes(path);
  ASSERT_GT(intact.size(), good.cubin.size());

  std::string flipped_bytes = intact;
  flipped_bytes[flipped_bytes.size() / 2] ^= 0x20;
  const std::string flipped = flipped_bytes;
  const std::string truncated = intact.substr(0, intact.size() - 100);
  const std::string extended = intact + "x";
  jit::KernelSpec other = test::sm90a_probe_spec(6, "another key");
  jit::compile_or_load_binary(other);
  const std::string foreign = read_bytes(jit::cache_file_path(folder_.path(), jit::disk_key(other)));

  for (const std::string* damaged : {&flipped, &truncated, &extended, &foreign}) {
    write_bytes(path, *damaged);
    jit::JitStats before = jit::jit_stats();
    jit::CompiledBinary again = jit::compile_or_load_binary(spec);
    jit::JitStats after = jit::jit_stats();
    EXPECT_EQ(after.disk_rejects, before.disk_rejects + 1);
    EXPECT_EQ(after.compiles, before.compiles + 1);
    EXPECT_FALSE(again.from_disk);
    EXPECT_EQ(again.cubin, good.cubin);
    // The bad file was replaced by an intact one.
    auto reread = jit::read_cache_file(path, jit::disk_key(spec));
    ASSERT_TRUE(reread.has_value());
    EXPECT_EQ(reread->cubin, good.cubin);
  }
}

TEST_F(JitDiskCache, RecordsRejectEveryTruncation) {
  jit::CompiledBinary binary;
  binary.cubin.assign(300, 'c');
  binary.lowered_name = "_Z1kv";
  binary.usage = {12, 34, 56, 7, 8, true};
  binary.compile_ms = 12.5;
  const std::string record = jit::encode_cache_record("key", "name", binary);
  auto decoded = jit::decode_cache_record(record, "key");
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->cubin, binary.cubin);
  EXPECT_EQ(decoded->lowered_name, "_Z1kv");
  EXPECT_EQ(decoded->usage.registers, 12);
  EXPECT_EQ(decoded->usage.static_shared_bytes, 34);
  EXPECT_EQ(decoded->usage.local_bytes, 56);
  EXPECT_EQ(decoded->usage.spill_store_bytes, 7);
  EXPECT_EQ(decoded->usage.spill_load_bytes, 8);
  EXPECT_DOUBLE_EQ(decoded->compile_ms, 12.5);
  EXPECT_FALSE(jit::decode_cache_record(record, "other key").has_value());
  for (std::size_t length = 0; length < record.size(); ++length) {
    EXPECT_FALSE(jit::decode_cache_record(record.substr(0, length), "key").has_value()) << length;
  }
  for (std::size_t at = 0; at < record.size(); at += 7) {
    std::string damaged = record;
    damaged[at] ^= 1;
    EXPECT_FALSE(jit::decode_cache_record(damaged, "key").has_value()) << at;
  }
}

TEST_F(JitDiskCache, KeyFollowsSourceAndNameExpression) {
  jit::KernelSpec spec = test::sm90a_probe_spec(3, "key");
  const std::string key = jit::disk_key(spec);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(jit::disk_key(spec), key);

  jit::KernelSpec one_char = spec;
  one_char.source.back() = ' ';
  EXPECT_NE(jit::disk_key(one_char), key);
  jit::KernelSpec other_instance = spec;
  other_instance.name_expression = "moegemm::kernels::jit_probe<4>";
  EXPECT_NE(jit::disk_key(other_instance), key);
  jit::KernelSpec renamed = spec;
  renamed.name = "another human name";
  EXPECT_EQ(jit::disk_key(renamed), key) << "the human name does not change what is compiled";

  EXPECT_EQ(jit::kernel_sources().hash.size(), 64u);
  EXPECT_EQ(&jit::kernel_sources(), &jit::kernel_sources()) << "read once";
}

TEST_F(JitDiskCache, BeforeCompileRunsOnlyWhenNvrtcMust) {
  jit::KernelSpec spec = test::sm90a_probe_spec(7, "hook");
  int calls = 0;
  auto forbid = [&] {
    ++calls;
    throw Error(ErrorCode::kCaptureError, "compiling is forbidden here");
  };
  EXPECT_THROW(jit::compile_or_load_binary(spec, forbid), Error);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(fs::exists(jit::cache_file_path(folder_.path(), jit::disk_key(spec))));
  jit::compile_or_load_binary(spec);
  jit::CompiledBinary cached = jit::compile_or_load_binary(spec, forbid);  // from disk: the hook stays silent
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(cached.from_disk);
}

TEST_F(JitDiskCache, ConcurrentThreadsGetIdenticalBytesAndLeaveNoPartialFile) {
  jit::KernelSpec spec = test::sm90a_probe_spec(8, "threads");
  constexpr int kThreads = 4;
  std::vector<jit::CompiledBinary> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = jit::compile_or_load_binary(spec); });
  }
  for (auto& t : threads) t.join();
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(results[i].cubin, results[0].cubin) << "thread " << i;
  for (const auto& name : entries(folder_.path())) {
    EXPECT_TRUE(name.size() > 6 && (name.ends_with(".cubin") || name.ends_with(".json"))) << name;
    EXPECT_NE(name[0], '.') << "temporary file left behind: " << name;
  }
  auto on_disk = jit::read_cache_file(jit::cache_file_path(folder_.path(), jit::disk_key(spec)), jit::disk_key(spec));
  ASSERT_TRUE(on_disk.has_value());
  EXPECT_EQ(on_disk->cubin, results[0].cubin);
}

TEST_F(JitDiskCache, ConcurrentProcessesGetIdenticalBytes) {
  jit::KernelSpec spec = test::sm90a_probe_spec(9, "processes");
  constexpr int kChildren = 3;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child reports the SHA-256 of what it got through a file; it never returns into the test framework.
      int code = 1;
      try {
        jit::CompiledBinary binary = jit::compile_or_load_binary(spec);
        std::ofstream out(folder_.path() + "/child-" + std::to_string(i) + ".txt");
        out << jit::to_hex(jit::sha256(binary.cubin.data(), binary.cubin.size()));
        code = out.good() ? 0 : 1;
      } catch (...) {
        code = 2;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  jit::CompiledBinary mine = jit::compile_or_load_binary(spec);
  const std::string expected = jit::to_hex(jit::sha256(mine.cubin.data(), mine.cubin.size()));
  for (int i = 0; i < kChildren; ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(children[i], &status, 0), children[i]);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << i;
    EXPECT_EQ(read_bytes(folder_.path() + "/child-" + std::to_string(i) + ".txt"), expected) << "child " << i;
  }
  for (const auto& name : entries(folder_.path())) EXPECT_NE(name[0], '.') << "temporary file left: " << name;
  auto on_disk = jit::read_cache_file(jit::cache_file_path(folder_.path(), jit::disk_key(spec)), jit::disk_key(spec));
  ASSERT_TRUE(on_disk.has_value());
  EXPECT_EQ(on_disk->cubin, mine.cubin);
}

TEST_F(JitDiskCache, DiskCacheCanBeTurnedOff) {
  test::ScopedEnv off("MOEGEMM_JIT_DISK_CACHE", "0");
  EXPECT_EQ(jit::cache_folder(), "");
  jit::KernelSpec spec = test::sm90a_probe_spec(10, "off");
  jit::JitStats before = jit::jit_stats();
  jit::compile_or_load_binary(spec);
  jit::compile_or_load_binary(spec);
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles + 2);
  EXPECT_TRUE(entries(folder_.path()).empty());
}

TEST(JitCacheFolder, FollowsTheEnvironmentInOrder) {
  test::ScopedEnv enabled("MOEGEMM_JIT_DISK_CACHE", std::nullopt);
  {
    test::ScopedEnv own("MOEGEMM_CACHE_DIR", "/srv/cache-a");
    test::ScopedEnv xdg("XDG_CACHE_HOME", "/srv/xdg");
    EXPECT_EQ(jit::cache_folder(), "/srv/cache-a");
  }
  {
    test::ScopedEnv own("MOEGEMM_CACHE_DIR", std::nullopt);
    test::ScopedEnv xdg("XDG_CACHE_HOME", "/srv/xdg");
    EXPECT_EQ(jit::cache_folder(), "/srv/xdg/moegemm");
  }
  {
    test::ScopedEnv own("MOEGEMM_CACHE_DIR", std::nullopt);
    test::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    test::ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(jit::cache_folder(), "/home/someone/.cache/moegemm");
  }
  EXPECT_EQ(jit::cache_file_path("/srv/c", "ab12"), "/srv/c/kernels/ab12.cubin");
}

TEST(JitPublish, CreatesFoldersAndReplacesAtomically) {
  test::TempFolder folder;
  const std::string path = folder.path() + "/a/b/kernels/x.cubin";
  ASSERT_TRUE(jit::publish_file(path, "first"));
  EXPECT_EQ(read_bytes(path), "first");
  ASSERT_TRUE(jit::publish_file(path, "second"));
  EXPECT_EQ(read_bytes(path), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(folder.path() + "/a/b/kernels"), fs::directory_iterator{}), 1);
  EXPECT_FALSE(jit::publish_file("/proc/moegemm-cannot-write-here/x.cubin", "x"));
}

}  // namespace
}  // namespace moegemm
