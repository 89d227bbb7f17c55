// The FP8 quantizers: one scale per 128-element group, in the layouts the SM90 kernels read (see reference.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "moegemm/recipe.hpp"
#include "moegemm/reference.hpp"
#include "reference/checks.hpp"
#include "reference/parallel.hpp"

namespace moegemm::reference {
namespace {

using detail::parallel_for;
using detail::require;

std::size_t to_size(std::int64_t x) { return static_cast<std::size_t>(x); }

void check_floor(float amax_floor) {
  // A zero floor would give an all-zero group the scale 0 and the values 0 / 0 = NaN.
  require(std::isfinite(amax_floor) && amax_floor > 0.0f, "amax_floor", "must be finite and > 0", amax_floor);
}

void check_matrix(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols) {
  require(groups >= 0, "groups", "must be >= 0", groups);
  require(rows >= 0, "rows", "must be >= 0", rows);
  require(cols >= 0, "cols", "must be >= 0", cols);
  require(x != nullptr || groups * rows * cols == 0, "x", "must not be null for a non-empty input", x);
}

// The scale of a group whose largest magnitude is amax, computed in float as the anchor does.
float group_scale(float amax, float amax_floor) { return std::max(amax, amax_floor) / kE4m3Max; }

std::uint8_t encode(float x, float scale) { return float_to_e4m3(x / scale, Fp8Saturation::kFinite); }

}  // namespace

PerTokenFp8 per_token_cast_grouped(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                   float amax_floor) {
  check_matrix(x, groups, rows, cols);
  check_floor(amax_floor);
  PerTokenFp8 q;
  q.groups = groups;
  q.rows = rows;
  q.cols = cols;
  q.scale_col_stride = tma_aligned_size(rows, sizeof(float));
  q.scale_group_stride = q.scale_col_stride * q.scale_blocks();
  q.values.resize(to_size(groups * rows * cols));
  q.scales.assign(to_size(groups * q.scale_group_stride), 0.0f);
  const std::int64_t blocks = q.scale_blocks();
  parallel_for(groups * rows, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t flat_row = begin; flat_row < end; ++flat_row) {
      const std::int64_t g = flat_row / rows;
      const std::int64_t r = flat_row % rows;
      const float* row = x + flat_row * cols;
      std::uint8_t* out = q.values.data() + flat_row * cols;
      for (std::int64_t kb = 0; kb < blocks; ++kb) {
        const std::int64_t k0 = kb * kScaleBlock;
        const std::int64_t k1 = std::min(cols, k0 + kScaleBlock);
        float amax = 0.0f;
        for (std::int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(row[k]));
        const float scale = group_scale(amax, amax_floor);
        for (std::int64_t k = k0; k < k1; ++k) out[k] = encode(row[k], scale);
        q.scales[to_size(g * q.scale_group_stride + kb * q.scale_col_stride + r)] = scale;
      }
    }
  });
  return q;
}

PerTokenFp8 per_token_cast(const float* x, std::int64_t rows, std::int64_t cols, float amax_floor) {
  return per_token_cast_grouped(x, 1, rows, cols, amax_floor);
}

PerBlockFp8 per_block_cast_grouped(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                   float amax_floor) {
  check_matrix(x, groups, rows, cols);
  check_floor(amax_floor);
  PerBlockFp8 q;
  q.groups = groups;
  q.rows = rows;
  q.cols = cols;
  q.values.resize(to_size(groups * rows * cols));
  const std::int64_t row_blocks = q.row_blocks();
  const std::int64_t col_blocks = q.col_blocks();
  q.scales.assign(to_size(groups * row_blocks * col_blocks), 0.0f);
  parallel_for(groups * row_blocks, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t flat_block_row = begin; flat_block_row < end; ++flat_block_row) {
      const std::int64_t g = flat_block_row / row_blocks;
      const std::int64_t r0 = (flat_block_row % row_blocks) * kScaleBlock;
      const std::int64_t r1 = std::min(rows, r0 + kScaleBlock);
      const float* matrix = x + g * rows * cols;
      std::uint8_t* out = q.values.data() + g * rows * cols;
      for (std::int64_t kb = 0; kb < col_blocks; ++kb) {
        const std::int64_t k0 = kb * kScaleBlock;
        const std::int64_t k1 = std::min(cols, k0 + kScaleBlock);
        float amax = 0.0f;
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(matrix[r * cols + k]));
        const float scale = group_scale(amax, amax_floor);
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t k = k0; k < k1; ++k) out[r * cols + k] = encode(matrix[r * cols + k], scale);
        q.scales[to_size(flat_block_row * col_blocks + kb)] = scale;
      }
    }
  });
  return q;
}

PerBlockFp8 per_block_cast(const float* x, std::int64_t rows, std::int64_t cols, float amax_floor) {
  return per_block_cast_grouped(x, 1, rows, cols, amax_floor);
}

PerChannelFp8 per_channel_cast(const float* x, std::int64_t tokens, std::int64_t channels, float amax_floor) {
  check_matrix(x, 1, tokens, channels);
  check_floor(amax_floor);
  require(tokens % kScaleBlock == 0, "tokens", "must be a multiple of 128", tokens);
  PerChannelFp8 q;
  q.tokens = tokens;
  q.channels = channels;
  q.values.resize(to_size(tokens * channels));
  const std::int64_t token_blocks = tokens / kScaleBlock;
  q.scales.assign(to_size(token_blocks * channels), 0.0f);
  parallel_for(channels, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t tb = 0; tb < token_blocks; ++tb) {
      const std::int64_t t0 = tb * kScaleBlock;
      for (std::int64_t c = begin; c < end; ++c) {
        float amax = 0.0f;
        for (std::int64_t t = t0; t < t0 + kScaleBlock; ++t) amax = std::max(amax, std::fabs(x[t * channels + c]));
        const float scale = group_scale(amax, amax_floor);
        for (std::int64_t t = t0; t < t0 + kScaleBlock; ++t)
          q.values[to_size(t * channels + c)] = encode(x[t * channels + c], scale);
        q.scales[to_size(tb * channels + c)] = scale;
      }
    }
  });
  return q;
}

PerTokenFp8 to_k_major(const PerChannelFp8& q) {
  PerTokenFp8 out;
  out.rows = q.channels;
  out.cols = q.tokens;
  out.scale_col_stride = tma_aligned_size(q.channels, sizeof(float));
  out.scale_group_stride = out.scale_col_stride * out.scale_blocks();
  out.values.resize(q.values.size());
  out.scales.assign(to_size(out.scale_group_stride), 0.0f);
  for (std::int64_t t = 0; t < q.tokens; ++t)
    for (std::int64_t c = 0; c < q.channels; ++c)
      out.values[to_size(c * q.tokens + t)] = q.values[to_size(t * q.channels + c)];
  for (std::int64_t tb = 0; tb < out.scale_blocks(); ++tb)
    for (std::int64_t c = 0; c < q.channels; ++c)
      out.scales[to_size(tb * out.scale_col_stride + c)] = q.scale(tb, c);
  return out;
}

KGroupedFp8 k_grouped_per_channel_cast(const float* x, const std::vector<std::int64_t>& ks, std::int64_t channels,
                                       float amax_floor) {
  std::int64_t total_k = 0;
  for (const std::int64_t k : ks) {
    require(k >= 0 && k % kScaleBlock == 0, "ks", "every entry must be >= 0 and a multiple of 128", k);
    total_k += k;
  }
  // Experts' token counts are multiples of 128, so no 128-token scale group straddles two experts: quantizing
  // the whole tokens-first tensor at once gives every expert its own scales.
  const PerChannelFp8 whole = per_channel_cast(x, total_k, channels, amax_floor);
  KGroupedFp8 q;
  q.ks = ks;
  q.channels = channels;
  q.scale_col_stride = tma_aligned_size(channels, sizeof(float));
  q.values.resize(whole.values.size());
  q.scales.assign(to_size(q.scale_col_stride * (total_k / kScaleBlock)), 0.0f);
  std::int64_t k_offset = 0;
  for (const std::int64_t k : ks) {
    std::uint8_t* block = q.values.data() + channels * k_offset;
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t t = 0; t < k; ++t) block[c * k + t] = whole.values[to_size((k_offset + t) * channels + c)];
    k_offset += k;
  }
  for (std::int64_t tb = 0; tb < total_k / kScaleBlock; ++tb)
    for (std::int64_t c = 0; c < channels; ++c) q.scales[to_size(tb * q.scale_col_stride + c)] = whole.scale(tb, c);
  return q;
}

std::vector<double> dequantize(const PerTokenFp8& q) {
  require(q.values.size() == to_size(q.groups * q.rows * q.cols), "q.values", "must hold groups * rows * cols codes",
          q.values.size());
  require(q.scale_col_stride >= q.rows && q.scale_group_stride >= q.scale_col_stride * q.scale_blocks(),
          "q.scale_col_stride", "must be >= rows, with scale_group_stride >= scale_col_stride * ceil(cols / 128)",
          q.scale_col_stride);
  require(q.groups == 0 || q.scales.size() >= to_size((q.groups - 1) * q.scale_group_stride +
                                                      q.scale_col_stride * q.scale_blocks()),
          "q.scales", "must cover every (group, row, block)", q.scales.size());
  std::vector<double> out(q.values.size());
  for (std::int64_t g = 0; g < q.groups; ++g)
    for (std::int64_t r = 0; r < q.rows; ++r)
      for (std::int64_t k = 0; k < q.cols; ++k) {
        const std::size_t at = to_size((g * q.rows + r) * q.cols + k);
        out[at] = static_cast<double>(e4m3_to_float(q.values[at])) * q.scale(g, r, k / kScaleBlock);
      }
  return out;
}

std::vector<double> dequantize(const PerBlockFp8& q) {
  require(q.values.size() == to_size(q.groups * q.rows * q.cols), "q.values", "must hold groups * rows * cols codes",
          q.values.size());
  require(q.scales.size() == to_size(q.groups * q.row_blocks() * q.col_blocks()), "q.scales",
          "must hold groups * ceil(rows / 128) * ceil(cols / 128) scales", q.scales.size());
  std::vector<double> out(q.values.size());
  for (std::int64_t g = 0; g < q.groups; ++g)
    for (std::int64_t r = 0; r < q.rows; ++r)
      for (std::int64_t k = 0; k < q.cols; ++k) {
        const std::size_t at = to_size((g * q.rows + r) * q.cols + k);
        out[at] = static_cast<double>(e4m3_to_float(q.values[at])) * q.scale(g, r / kScaleBlock, k / kScaleBlock);
      }
  return out;
}

std::vector<double> dequantize(const PerChannelFp8& q) {
  require(q.tokens % kScaleBlock == 0, "q.tokens", "must be a multiple of 128", q.tokens);
  require(q.values.size() == to_size(q.tokens * q.channels), "q.values", "must hold tokens * channels codes",
          q.values.size());
  require(q.scales.size() == to_size(q.tokens / kScaleBlock * q.channels), "q.scales",
          "must hold tokens / 128 * channels scales", q.scales.size());
  std::vector<double> out(q.values.size());
  for (std::int64_t t = 0; t < q.tokens; ++t)
    for (std::int64_t c = 0; c < q.channels; ++c) {
      const std::size_t at = to_size(t * q.channels + c);
      out[at] = static_cast<double>(e4m3_to_float(q.values[at])) * q.scale(t / kScaleBlock, c);
    }
  return out;
}

std::vector<double> dequantize(const KGroupedFp8& q) {
  std::int64_t total_k = 0;
  for (const std::int64_t k : q.ks) {
    require(k >= 0 && k % kScaleBlock == 0, "q.ks", "every entry must be >= 0 and a multiple of 128", k);
    total_k += k;
  }
  require(q.values.size() == to_size(total_k * q.channels), "q.values", "must hold sum(ks) * channels codes",
          q.values.size());
  require(q.scale_col_stride >= q.channels, "q.scale_col_stride", "must be >= channels", q.scale_col_stride);
  require(q.scales.size() >= to_size(total_k / kScaleBlock * q.scale_col_stride), "q.scales",
          "must hold sum(ks) / 128 * scale_col_stride scales", q.scales.size());
  std::vector<double> out(q.values.size());
  std::int64_t k_offset = 0;
  for (const std::int64_t k : q.ks) {
    for (std::int64_t c = 0; c < q.channels; ++c)
      for (std::int64_t t = 0; t < k; ++t) {
        const std::size_t at = to_size(q.channels * k_offset + c * k + t);
        out[at] = static_cast<double>(e4m3_to_float(q.values[at])) * q.scale(c, (k_offset + t) / kScaleBlock);
      }
    k_offset += k;
  }
  return out;
}

}  // namespace moegemm::reference
