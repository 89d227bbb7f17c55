// SHA-256 against the FIPS 180-4 example vectors: the disk cache's keys and checksums rest on it.
#include <gtest/gtest.h>

#include <string>

#include "runtime/sha256.hpp"

namespace moegemm {
namespace {

std::string hex_of(const std::string& text) { return jit::to_hex(jit::sha256(text.data(), text.size())); }

TEST(JitHash, Sha256MatchesStandardVectors) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_of(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(JitHash, IncrementalUpdatesEqualOneShot) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('A' + i % 53);
  for (std::size_t split : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 999u}) {
    jit::Sha256 hasher;
    hasher.update(text.substr(0, split));
    hasher.update(text.substr(split));
    EXPECT_EQ(jit::to_hex(hasher.finish()), hex_of(text)) << "split at " << split;
  }
}

TEST(JitHash, FieldsDoNotRunTogether) {
  jit::Sha256 a, b;
  a.update_field("ab");
  a.update_field("c");
  b.update_field("a");
  b.update_field("bc");
  EXPECT_NE(jit::to_hex(a.finish()), jit::to_hex(b.finish()));
}

}  // namespace
}  // namespace moegemm
