#include "runtime/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "runtime/sha256.hpp"

namespace moegemm::jit {
namespace {

constexpr char kMagic[8] = {'M', 'O', 'E', 'G', 'E', 'M', 'M', 'K'};
constexpr std::uint32_t kFormat = 1;
constexpr std::size_t kHeaderSize = sizeof(kMagic) + 4 + 8 + 32;

class Writer {
 public:
  void u32(std::uint32_t v) { integer(v, 4); }
  void u64(std::uint64_t v) { integer(v, 8); }
  void i32(std::int32_t v) { integer(static_cast<std::uint32_t>(v), 4); }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  }
  void field(const void* data, std::size_t size) {
    u64(size);
    out_.append(static_cast<const char*>(data), size);
  }
  void field(const std::string& text) { field(text.data(), text.size()); }
  std::string& bytes() { return out_; }

 private:
  void integer(std::uint64_t v, int size) {
    for (int i = 0; i < size; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Reads what Writer wrote; every read is bounds-checked and ok() turns false on the first short one.
class Reader {
 public:
  Reader(const char* data, std::size_t size) : data_(data), size_(size) {}
  std::uint64_t u64() { return integer(8); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(integer(4)); }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  double f64() {
    std::uint64_t bits = u64();
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  std::string field() {
    std::uint64_t size = u64();
    if (!ok_ || size > size_ - pos_) {
      ok_ = false;
      return {};
    }
    std::string text(data_ + pos_, size);
    pos_ += size;
    return text;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == size_; }

 private:
  std::uint64_t integer(int size) {
    if (!ok_ || size_ - pos_ < static_cast<std::size_t>(size)) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) v |= std::uint64_t(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += size;
    return v;
  }
  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool make_folders(const std::string& path) {
  for (std::size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool write_all(int fd, const std::string& contents) {
  std::size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string cache_folder() {
  if (env("MOEGEMM_JIT_DISK_CACHE") == "0") return {};
  std::string folder = env("MOEGEMM_CACHE_DIR");
  if (!folder.empty()) return folder;
  folder = env("XDG_CACHE_HOME");
  if (!folder.empty()) return folder + "/moegemm";
  folder = env("HOME");
  if (!folder.empty()) return folder + "/.cache/moegemm";
  return {};
}

bool cache_folder_writable(const std::string& folder) {
  const std::string kernels = folder + "/kernels";
  return make_folders(kernels) && access(kernels.c_str(), W_OK) == 0;
}

std::string cache_file_path(const std::string& folder, const std::string& key) {
  return folder + "/kernels/" + key + ".cubin";
}

std::string encode_cache_record(const std::string& key, const std::string& name, const CompiledBinary& binary) {
  Writer body;
  body.field(key);
  body.field(name);
  body.field(binary.lowered_name);
  body.i32(binary.usage.registers);
  body.i32(binary.usage.static_shared_bytes);
  body.i32(binary.usage.local_bytes);
  body.i32(binary.usage.spill_store_bytes);
  body.i32(binary.usage.spill_load_bytes);
  body.u32(binary.usage.known ? 1 : 0);
  body.f64(binary.compile_ms);
  body.field(binary.cubin.data(), binary.cubin.size());
  Digest digest = sha256(body.bytes().data(), body.bytes().size());

  Writer record;
  record.bytes().append(kMagic, sizeof(kMagic));
  record.u32(kFormat);
  record.u64(body.bytes().size());
  record.bytes().append(reinterpret_cast<const char*>(digest.data()), digest.size());
  record.bytes() += body.bytes();
  return std::move(record.bytes());
}

std::optional<CompiledBinary> decode_cache_record(const std::string& bytes, const std::string& key) {
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) return std::nullopt;
  Reader header(bytes.data() + sizeof(kMagic), kHeaderSize - sizeof(kMagic));
  if (header.u32() != kFormat) return std::nullopt;
  if (header.u64() != bytes.size() - kHeaderSize) return std::nullopt;
  const char* body = bytes.data() + kHeaderSize;
  std::size_t body_size = bytes.size() - kHeaderSize;
  Digest digest = sha256(body, body_size);
  if (std::memcmp(digest.data(), bytes.data() + kHeaderSize - 32, 32) != 0) return std::nullopt;

  Reader reader(body, body_size);
  if (reader.field() != key) return std::nullopt;
  CompiledBinary binary;
  reader.field();  // the human name, for people reading the folder
  binary.lowered_name = reader.field();
  binary.usage.registers = reader.i32();
  binary.usage.static_shared_bytes = reader.i32();
  binary.usage.local_bytes = reader.i32();
  binary.usage.spill_store_bytes = reader.i32();
  binary.usage.spill_load_bytes = reader.i32();
  binary.usage.known = reader.u32() == 1;
  binary.compile_ms = reader.f64();
  std::string cubin = reader.field();
  if (!reader.ok() || !reader.at_end() || cubin.empty() || binary.lowered_name.empty()) return std::nullopt;
  binary.cubin.assign(cubin.begin(), cubin.end());
  binary.from_disk = true;
  return binary;
}

std::optional<CompiledBinary> read_cache_file(const std::string& path, const std::string& key) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(chunk, static_cast<std::size_t>(n));
  }
  close(fd);
  return decode_cache_record(bytes, key);
}

bool publish_file(const std::string& path, const std::string& contents) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || !make_folders(path.substr(0, slash))) return false;
  // Unique within the folder: process id, a per-process counter and the thread, so racing writers (threads or
  // processes) never share a temporary file; rename(2) then replaces the target atomically.
  static std::atomic<unsigned long> counter{0};
  std::string temp = path.substr(0, slash + 1) + ".tmp-" + std::to_string(getpid()) + "-" +
                     std::to_string(counter.fetch_add(1)) + "-" +
                     std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "-" +
                     path.substr(slash + 1);
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write_all(fd, contents) && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (ok) ok = rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) unlink(temp.c_str());
  return ok;
}

}  // namespace moegemm::jit
