// Argument checks of the oracle: a broken rule becomes moegemm::Error(kInvalidArgument, "<argument>: <rule>, got
// <value>"), the library-wide message shape.
#pragma once

#include <string>
#include <type_traits>

#include "moegemm/error.hpp"

namespace moegemm::reference::detail {

template <typename Value>
void require(bool ok, const char* argument, const char* rule, const Value& got) {
  if (ok) return;
  std::string message = std::string(argument) + ": " + rule + ", got ";
  if constexpr (std::is_pointer_v<Value>) {
    message += got == nullptr ? "nullptr" : "a pointer";
  } else {
    message += std::to_string(got);
  }
  throw Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace moegemm::reference::detail
