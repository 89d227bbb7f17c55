// Static partition of [0, count) over the machine's hardware threads, for the oracle's embarrassingly parallel
// loops. Each index is handled by exactly one thread, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace moegemm::reference::detail {

inline unsigned worker_count() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1u : hardware;
}

// Calls body(begin, end) on disjoint ranges covering [0, count). body must not throw.
template <typename Body>
void parallel_for(std::int64_t count, Body&& body) {
  if (count <= 0) return;
  const std::int64_t workers = std::min<std::int64_t>(worker_count(), count);
  if (workers == 1) {
    body(std::int64_t{0}, count);
    return;
  }
  const std::int64_t chunk = (count + workers - 1) / workers;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(workers));
  for (std::int64_t begin = 0; begin < count; begin += chunk) {
    const std::int64_t end = std::min(count, begin + chunk);
    threads.emplace_back([&body, begin, end] { body(begin, end); });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace moegemm::reference::detail
