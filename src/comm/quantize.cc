// SPDX-License-Identifier: Apache-2.0
#include "comm/quantize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "comm/shard.h"
#include "core/convert.h"
#include "core/counter_hash.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

constexpr float kCanonicalNan = std::bit_cast<float>(0x7FC00000u);

uint64_t blocks_of(uint64_t count, uint64_t block) { return (count + block - 1) / block; }

uint64_t code_bytes(uint64_t count, Quantization q) {
  switch (q) {
    case Quantization::kNone:
      return 0;
    case Quantization::kInt8:
      return count;
    case Quantization::kInt4:
      return (count + 1) / 2;
  }
  return 0;
}

// One block's scale: absmax / qmax, NaN when the block is not finite.
float block_scale(std::span<const float> x, int qmax) {
  float absmax = 0.0f;
  for (const float v : x) {
    if (!std::isfinite(v)) return kCanonicalNan;
    absmax = std::max(absmax, std::fabs(v));
  }
  return absmax / static_cast<float>(qmax);
}

int8_t clamp_code(float q, int qmax) {
  return static_cast<int8_t>(std::clamp(q, static_cast<float>(-qmax), static_cast<float>(qmax)));
}

int8_t code_of(float x, float scale, int qmax) {
  if (!(scale > 0.0f)) return 0;  // zero (or underflowed) scale, or NaN
  return clamp_code(std::nearbyint(x / scale), qmax);
}

// Stochastic rounding of x / scale: down, or up with probability equal to
// the remainder (t - floor(t) is exact in fp32), against the uniform draw
// `bits` (its top 24 bits).
int8_t stochastic_code_of(float x, float scale, int qmax, uint64_t bits) {
  if (!(scale > 0.0f)) return 0;
  const float t = x / scale;
  const float down = std::floor(t);
  const float u = static_cast<float>(bits >> 40) * 0x1p-24f;  // exact: 24 bits
  return clamp_code(u < t - down ? down + 1.0f : down, qmax);
}

// Calls fn(first, n) for every piece of r in order (first relative to
// r.offset): r cut at every tensor start strictly inside it.
template <class Fn>
void for_each_piece(const PackedRange& r, Fn fn) {
  const TensorStarts& t = r.tensor_starts;
  uint64_t at = 0;
  for (auto it = std::upper_bound(t.begin(), t.end(), r.offset); it != t.end() && *it < r.offset + r.count; ++it) {
    const uint64_t cut = *it - r.offset;
    if (cut > at) fn(at, cut - at);
    at = std::max(at, cut);
  }
  if (r.count > at) fn(at, r.count - at);
}

// Calls fn(index, first, n) for every block of r that overlaps elements
// [from, to) (relative to r.offset), in order; index counts r's blocks from
// its first.
template <class Fn>
void for_each_block(const PackedRange& r, uint64_t block, uint64_t from, uint64_t to, Fn fn) {
  uint64_t index = 0;
  for_each_piece(r, [&](uint64_t p, uint64_t n) {
    const uint64_t blocks = blocks_of(n, block);
    if (p + n > from && p < to) {
      for (uint64_t j = from > p ? (from - p) / block : 0; j < blocks && p + j * block < to; ++j)
        fn(index + j, p + j * block, std::min(block, n - j * block));
    }
    index += blocks;
  });
}

// Whether element `first` of r starts one of its blocks (or is its end).
bool starts_block(const PackedRange& r, uint64_t block, uint64_t first) {
  if (first == r.count) return true;
  bool starts = false;
  for_each_piece(r, [&](uint64_t p, uint64_t n) {
    if (first >= p && first < p + n) starts = (first - p) % block == 0;
  });
  return starts;
}

float load_scale(const std::byte* scales, size_t block) {
  float s = 0.0f;
  std::memcpy(&s, scales + block * sizeof(float), sizeof(float));
  return s;
}

int8_t load_code(const std::byte* codes, size_t i, Quantization q) {
  if (q == Quantization::kInt8) return static_cast<int8_t>(codes[i]);
  const auto byte = static_cast<uint8_t>(codes[i / 2]);
  const auto nibble = static_cast<uint8_t>((i % 2 == 0) ? (byte & 0x0F) : (byte >> 4));
  // Sign-extend the 4-bit two's complement value.
  return static_cast<int8_t>((nibble & 0x08) != 0 ? static_cast<int>(nibble) - 16 : static_cast<int>(nibble));
}

}  // namespace

std::string_view quantization_name(Quantization q) {
  switch (q) {
    case Quantization::kNone:
      return "none";
    case Quantization::kInt8:
      return "int8";
    case Quantization::kInt4:
      return "int4";
  }
  return "?";
}

int quantization_max_code(Quantization q) { return q == Quantization::kInt4 ? 7 : 127; }

bool quant_block_offered(uint64_t block) {
  return block >= kMinQuantBlock && block <= kMaxQuantBlock && std::has_single_bit(block);
}

uint64_t quantized_blocks(const PackedRange& r, QuantFormat f) {
  ZDP_CHECK(quant_block_offered(f.block), ShapeError,
            "[quantize] blocks of {} elements are not offered; use a power of two from {} to {}", f.block,
            kMinQuantBlock, kMaxQuantBlock);
  ZDP_CHECK(std::is_sorted(r.tensor_starts.begin(), r.tensor_starts.end()), ShapeError,
            "[quantize] the tensor starts are not in ascending order; sort them");
  uint64_t blocks = 0;
  for_each_piece(r, [&](uint64_t, uint64_t n) { blocks += blocks_of(n, f.block); });
  return blocks;
}

uint64_t quantized_bytes(const PackedRange& r, QuantFormat f) {
  if (f.codes == Quantization::kNone) return 0;
  // Every packing path sizes its bytes here first, so a block not offered
  // (0 would divide by zero) is refused before anything is read or written.
  return quantized_blocks(r, f) * sizeof(float) + code_bytes(r.count, f.codes);
}

uint64_t quantized_bytes(uint64_t count, QuantFormat f) { return quantized_bytes(PackedRange{.count = count}, f); }

void quantize(ConstBuffer in, const PackedRange& r, QuantFormat f, std::span<std::byte> out, uint64_t key) {
  const Quantization q = f.codes;
  ZDP_CHECK(q != Quantization::kNone, ShapeError, "[quantize] no quantization format given");
  ZDP_CHECK(in.count == r.count, ShapeError, "[quantize] the input has {} elements but the packed range holds {}",
            in.count, r.count);
  ZDP_CHECK(out.size() == quantized_bytes(r, f), ShapeError,
            "[quantize] {} elements pack into {} bytes as {}, but the output has {}", in.count, quantized_bytes(r, f),
            quantization_name(q), out.size());
  const int qmax = quantization_max_code(q);
  std::byte* scales = out.data();
  std::byte* codes = out.data() + quantized_blocks(r, f) * sizeof(float);
  if (q == Quantization::kInt4) std::fill(codes, codes + code_bytes(in.count, q), std::byte{0});
  std::array<float, kMaxQuantBlock> x{};
  for_each_block(r, f.block, 0, r.count, [&](uint64_t b, uint64_t first, uint64_t n) {
    const ConstBuffer part = in.slice(first, n);
    convert(part.data, part.dtype, x.data(), Dtype::fp32(), n);
    const float scale = block_scale({x.data(), n}, qmax);
    std::memcpy(scales + b * sizeof(float), &scale, sizeof(float));
    for (size_t j = 0; j < n; ++j) {
      const size_t i = first + j;
      const int8_t c = f.rounding == RoundingMode::kNearest
                           ? code_of(x[j], scale, qmax)
                           : stochastic_code_of(x[j], scale, qmax, mix64(key + (r.offset + i + 1) * kGoldenGamma));
      if (q == Quantization::kInt8) {
        codes[i] = static_cast<std::byte>(c);
      } else {
        const auto nibble = static_cast<uint8_t>(static_cast<uint8_t>(c) & 0x0F);
        codes[i / 2] |= static_cast<std::byte>(i % 2 == 0 ? nibble : static_cast<uint8_t>(nibble << 4));
      }
    }
  });
}

void quantize(ConstBuffer in, QuantFormat f, std::span<std::byte> out, uint64_t key) {
  quantize(in, PackedRange{.count = in.count}, f, out, key);
}

uint64_t key_for_rank(uint64_t key, int rank) {
  return mix64(key ^ mix64((static_cast<uint64_t>(rank) + 1) * kGoldenGamma));
}

void dequantize(std::span<const std::byte> packed, const PackedRange& r, QuantFormat f, size_t first,
                std::span<float> out) {
  const Quantization q = f.codes;
  ZDP_CHECK(q != Quantization::kNone, ShapeError, "[dequantize] no quantization format given");
  ZDP_CHECK(packed.size() == quantized_bytes(r, f), ShapeError,
            "[dequantize] {} elements are packed in {} bytes as {}, but the input has {}", r.count,
            quantized_bytes(r, f), quantization_name(q), packed.size());
  ZDP_CHECK(first + out.size() <= r.count && starts_block(r, f.block, first), ShapeError,
            "[dequantize] elements [{}, {}) are not a block-aligned part of {}", first, first + out.size(), r.count);
  const std::byte* scales = packed.data();
  const std::byte* codes = packed.data() + quantized_blocks(r, f) * sizeof(float);
  const uint64_t end = first + out.size();
  for_each_block(r, f.block, first, end, [&](uint64_t b, uint64_t block_first, uint64_t n) {
    const float scale = load_scale(scales, b);
    for (uint64_t i = block_first; i < std::min(block_first + n, end); ++i)
      out[i - first] = static_cast<float>(load_code(codes, i, q)) * scale;
  });
}

void dequantize(std::span<const std::byte> packed, size_t count, QuantFormat f, size_t first, std::span<float> out) {
  dequantize(packed, PackedRange{.count = count}, f, first, out);
}

void dequantize_into(std::span<const std::byte> packed, const PackedRange& r, QuantFormat f, Buffer out) {
  ZDP_CHECK(out.count == r.count, ShapeError, "[dequantize] the output has {} elements but the packed range holds {}",
            out.count, r.count);
  if (out.dtype == Dtype::fp32()) {
    dequantize(packed, r, f, 0, {static_cast<float*>(out.data), out.count});
    return;
  }
  // A run of whole blocks at a time (no block is longer than the chunk).
  std::array<float, kMaxQuantBlock> x{};
  for (size_t first = 0; first < out.count;) {
    const size_t n = whole_blocks(r, f, first, x.size());
    dequantize(packed, r, f, first, {x.data(), n});
    const Buffer part = out.slice(first, n);
    convert(x.data(), Dtype::fp32(), part.data, part.dtype, n);
    first += n;
  }
}

void dequantize_into(std::span<const std::byte> packed, QuantFormat f, Buffer out) {
  dequantize_into(packed, PackedRange{.count = out.count}, f, out);
}

uint64_t whole_blocks(const PackedRange& r, QuantFormat f, uint64_t first, uint64_t most) {
  ZDP_CHECK(most >= f.block && first < r.count && starts_block(r, f.block, first), ShapeError,
            "[quantize] no run of whole blocks of at most {} elements starts at element {} of {}", most, first,
            r.count);
  uint64_t end = first;
  for_each_block(r, f.block, first, std::min(r.count, first + most), [&](uint64_t, uint64_t block_first, uint64_t n) {
    if (block_first + n <= first + most) end = block_first + n;
  });
  return end - first;
}

uint64_t all_gather_quantized_scratch(uint64_t count, int ranks, QuantFormat f, TensorStarts tensors) {
  uint64_t total = 0;
  for (int k = 0; k < ranks; ++k) total += quantized_bytes(shard_part(count, ranks, k, tensors), f);
  return total;
}

uint64_t reduce_scatter_quantized_scratch(uint64_t count, int ranks, int rank, QuantFormat f, TensorStarts tensors) {
  const uint64_t own = quantized_bytes(shard_part(count, ranks, rank, tensors), f);
  return all_gather_quantized_scratch(count, ranks, f, tensors) + static_cast<uint64_t>(ranks) * own +
         sizeof(float) * (static_cast<uint64_t>(ranks) + 1) * kReduceChunk;
}

uint64_t max_quantized_scratch(std::span<const uint64_t> counts, int ranks, int rank, QuantFormat gather,
                               QuantFormat reduce, std::span<const std::vector<uint64_t>> tensors) {
  uint64_t most = 0;
  for (size_t u = 0; u < counts.size(); ++u) {
    const uint64_t c = counts[u];
    const TensorStarts t = u < tensors.size() ? TensorStarts(tensors[u]) : TensorStarts();
    if (gather.codes != Quantization::kNone) most = std::max(most, all_gather_quantized_scratch(c, ranks, gather, t));
    if (reduce.codes != Quantization::kNone)
      most = std::max(most, reduce_scatter_quantized_scratch(c, ranks, rank, reduce, t));
  }
  return most;
}

PackedRange shard_part(uint64_t count, int ranks, int rank, TensorStarts tensors) {
  const ShardRange s = shard_range(count, ranks, rank);
  return {.offset = s.offset, .count = s.count, .tensor_starts = tensors};
}

}  // namespace zerodp::comm
