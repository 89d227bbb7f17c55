#include "moegemm/error.hpp"

#include <cstring>

namespace moegemm {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNoDevice: return "no CUDA device";
    case ErrorCode::kCudaError: return "CUDA error";
    case ErrorCode::kCompileError: return "compile error";
    case ErrorCode::kCaptureError: return "stream capture error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error("moegemm: " + std::string(to_string(code)) + ": " + message), code_(code) {}

std::string Error::message() const {
  const std::size_t prefix = std::strlen("moegemm: ") + std::strlen(to_string(code_)) + std::strlen(": ");
  return std::string(what()).substr(prefix);
}

}  // namespace moegemm
