// moegemm: error reporting. Every failure the library detects surfaces as moegemm::Error, whose message
// names the argument and the rule it broke ("b.data: must be K-major (stride[1] == 1), got stride[1] = 7168").
#pragma once

#include <stdexcept>
#include <string>

namespace moegemm {

enum class ErrorCode : int {
  kInvalidArgument = 1,  // an argument breaks a documented rule (dtype, shape, stride, alignment, layout)
  kUnsupported = 2,      // a valid combination this build does not implement yet
  kNoDevice = 3,         // no CUDA driver or no CUDA device
  kCudaError = 4,        // a CUDA driver call failed
  kCompileError = 5,     // NVRTC rejected a kernel
  kCaptureError = 6,     // a kernel would have to be compiled while the stream is being captured
  kInternal = 7,         // a broken invariant inside the library
};

const char* to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }
  // The message alone: what() without its "moegemm: <code>: " prefix.
  std::string message() const;

 private:
  ErrorCode code_;
};

}  // namespace moegemm
