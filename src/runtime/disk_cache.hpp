// The on-disk kernel cache: <folder>/kernels/<key>.cubin files, each a checked record of one compiled binary,
// published atomically so that concurrent processes never see a partial file.
#pragma once

#include <optional>
#include <string>

#include "runtime/nvrtc_compiler.hpp"

namespace moegemm::jit {

// $MOEGEMM_CACHE_DIR, else $XDG_CACHE_HOME/moegemm, else $HOME/.cache/moegemm (read at each call: only misses
// of the in-memory map come here). Empty when none is set or MOEGEMM_JIT_DISK_CACHE=0.
std::string cache_folder();

// Creates <folder>/kernels if needed; true when this process can write files there.
bool cache_folder_writable(const std::string& folder);

// <folder>/kernels/<key>.cubin
std::string cache_file_path(const std::string& folder, const std::string& key);

// A record's bytes: a header (magic, format, body length, SHA-256 of the body), then the body (key, names,
// resource usage, compile time, CUBIN).
std::string encode_cache_record(const std::string& key, const std::string& name, const CompiledBinary& binary);

// The binary in a record, or nothing when the bytes are not a complete, intact record for key.
std::optional<CompiledBinary> decode_cache_record(const std::string& bytes, const std::string& key);

// The binary cached under path, or nothing (no file, a short or corrupt one, another key's).
std::optional<CompiledBinary> read_cache_file(const std::string& path, const std::string& key);

// Writes contents to path through a unique temporary file in the same folder (write, fsync, rename), creating
// the folder first. False when anything fails; the temporary file is removed then.
bool publish_file(const std::string& path, const std::string& contents);

}  // namespace moegemm::jit
