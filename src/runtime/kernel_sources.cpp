#include "runtime/kernel_sources.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

#include "moegemm/error.hpp"
#include "runtime/embedded_sources.hpp"
#include "runtime/sha256.hpp"

namespace moegemm::jit {
namespace {

constexpr const char* kVariable = "MOEGEMM_KERNEL_DIR";
// The kernel headers the library's host code includes (src/: parameters, TMA descriptors, the scheduler);
// a CPU test checks this list against the #include lines of src/.
constexpr const char* kHostRoots[] = {"sm90/gemm_params.cuh", "sm90/tma_descriptor.cuh", "common/scheduler.cuh"};

void sort_and_hash(KernelSourceSet& set) {
  std::sort(set.files.begin(), set.files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  Sha256 hasher;
  for (const auto& file : set.files) {
    hasher.update_field(file.name);
    hasher.update_field(file.text);
  }
  set.hash = to_hex(hasher.finish());
}

[[noreturn]] void folder_error(const std::string& folder, const std::string& rule) {
  throw Error(ErrorCode::kInvalidArgument, std::string(kVariable) + "=" + folder + ": " + rule);
}

bool is_kernel_file(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".cuh" || ext == ".h" || ext == ".hpp";
}

// The quoted #include names of a text: lines `#include "name"` (spaces allowed around the #). Parsed by hand: the
// standard library's regular expressions crashed inside torch's Python where a toolchain mixed libstdc++ copies.
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  std::string line;
  const auto skip_blanks = [&](std::size_t at) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    return at;
  };
  while (std::getline(lines, line)) {
    std::size_t at = skip_blanks(0);
    if (at >= line.size() || line[at] != '#') continue;
    at = skip_blanks(at + 1);
    if (line.compare(at, 7, "include") != 0) continue;
    at = skip_blanks(at + 7);
    if (at >= line.size() || line[at] != '"') continue;
    const std::size_t close = line.find('"', at + 1);
    if (close != std::string::npos) names.push_back(line.substr(at + 1, close - at - 1));
  }
  return names;
}

// The built-in file of that name, or null.
const EmbeddedSource* find_embedded(const std::string& name) {
  for (const auto& source : embedded_sources()) {
    if (name == source.name) return &source;
  }
  return nullptr;
}

}  // namespace

KernelSourceSet built_in_sources() {
  KernelSourceSet set;
  set.origin = "built in";
  for (const auto& source : embedded_sources())
    set.files.push_back({source.name, std::string(source.text, source.size)});
  sort_and_hash(set);
  return set;
}

std::vector<std::string> host_shared_sources() {
  std::set<std::string> shared;
  std::vector<std::string> pending(std::begin(kHostRoots), std::end(kHostRoots));
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    const EmbeddedSource* source = find_embedded(name);
    if (source == nullptr || !shared.insert(name).second) continue;
    for (auto& included : quoted_includes(std::string(source->text, source->size))) {
      pending.push_back(std::move(included));
    }
  }
  return {shared.begin(), shared.end()};
}

KernelSourceSet read_kernel_folder(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(folder, error))
    folder_error(folder, "not a folder (it must hold the kernel sources, as kernels/ does)");
  KernelSourceSet set;
  set.origin = folder;
  for (fs::recursive_directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (!it->is_regular_file() || !is_kernel_file(it->path())) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) folder_error(folder, "cannot read " + it->path().string());
    set.files.push_back({fs::relative(it->path(), folder).generic_string(), text.str()});
  }
  if (error) folder_error(folder, "cannot list it: " + error.message());
  sort_and_hash(set);
  auto find = [&](const std::string& name) -> const SourceFile* {
    for (const auto& file : set.files) {
      if (file.name == name) return &file;
    }
    return nullptr;
  };
  if (find("sm90/gemm.cuh") == nullptr)
    folder_error(folder, "no sm90/gemm.cuh in it (it must hold the kernel sources, as kernels/ does)");
  for (const std::string& name : host_shared_sources()) {
    const SourceFile* mine = find(name);
    const EmbeddedSource* theirs = find_embedded(name);  // every host-shared name is a built-in file
    if (mine == nullptr || mine->text != std::string_view(theirs->text, theirs->size)) {
      folder_error(folder, name +
                               (mine == nullptr ? " is missing" : " differs from the one this library was built with") +
                               "; the host code shares it (parameter and shared-memory layouts, the scheduler), so a "
                               "kernel folder may change device-only files alone: rebuild the library to change it");
    }
  }
  return set;
}

const KernelSourceSet& kernel_sources() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<KernelSourceSet>> sets;  // by the variable's value; "" built in
  const char* value = std::getenv(kVariable);
  const std::string folder = value != nullptr ? value : "";
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = sets[folder];
  if (!slot) slot = std::make_unique<KernelSourceSet>(folder.empty() ? built_in_sources() : read_kernel_folder(folder));
  return *slot;
}

}  // namespace moegemm::jit
