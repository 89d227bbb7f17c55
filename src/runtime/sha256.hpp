// SHA-256 (FIPS 180-4), for the on-disk kernel cache: its keys name files and its digests check their contents.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moegemm::jit {

using Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // Adds the text and a separator, so that ("ab", "c") and ("a", "bc") hash differently.
  void update_field(std::string_view text);
  Digest finish();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

Digest sha256(const void* data, std::size_t size);
std::string to_hex(const Digest& digest);

}  // namespace moegemm::jit
