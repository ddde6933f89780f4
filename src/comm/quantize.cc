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

// One block's scale: absmax / qmax, NaN when the block is not finite. The
// absmax is taken over the values' bit patterns with the sign cleared: for
// non-negative floats the integer order is the float order, and an
// infinity or NaN is any pattern from 0x7F800000 up, so one integer max
// finds both (and vectorises at every level, where a float max with NaN
// semantics does not).
float block_scale(std::span<const float> x, int qmax) {
  uint32_t most = 0;
  for (const float v : x) most = std::max(most, std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu);
  if (most >= 0x7F800000u) return kCanonicalNan;
  return std::bit_cast<float>(most) / static_cast<float>(qmax);
}

int8_t clamp_code(float q, int qmax) {
  return static_cast<int8_t>(std::clamp(q, static_cast<float>(-qmax), static_cast<float>(qmax)));
}

// Round half to even of |t| < 2^22: t + 1.5 * 2^23 lies in [2^23, 2^24),
// where the fp32 step is 1, so the addition itself rounds t to a whole
// number (in the default rounding mode, as std::nearbyint does) and the
// subtraction is exact. A call to nearbyint is a library call where the
// level has no round instruction (SSE2), which keeps the loop scalar.
constexpr float kRoundingShift = 0x1.8p23f;
float round_half_even(float t) { return (t + kRoundingShift) - kRoundingShift; }

// Nearest codes of a block: clamp(nearbyint(x / scale), -qmax, qmax), as
// the format says. Clamping before rounding gives the same codes (qmax is
// whole) and keeps t inside round_half_even's range. A zero (underflowed)
// or NaN scale codes every element 0.
void nearest_codes(const float* x, size_t n, float scale, int qmax, int8_t* out) {
  if (!(scale > 0.0f)) {
    std::fill(out, out + n, int8_t{0});
    return;
  }
  const auto hi = static_cast<float>(qmax);
  for (size_t j = 0; j < n; ++j) out[j] = static_cast<int8_t>(round_half_even(std::clamp(x[j] / scale, -hi, hi)));
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

// Sign-extends a 4-bit two's complement value.
int8_t from_nibble(uint8_t nibble) { return static_cast<int8_t>(static_cast<int>(nibble ^ 8u) - 8); }

// The int4 codes of elements [first, first + n) times `scale`, into
// o[0, n): pack_nibbles undone, a byte (two elements) at a time.
void unpack_nibbles(const std::byte* codes, uint64_t first, uint64_t n, float scale, float* o) {
  const auto value = [scale](uint8_t nibble) { return static_cast<float>(from_nibble(nibble)) * scale; };
  uint64_t j = 0;
  if (first % 2 == 1 && n > 0) {
    o[0] = value(static_cast<uint8_t>(codes[first / 2]) >> 4);
    j = 1;
  }
  const std::byte* pairs = codes + (first + j) / 2;
  const uint64_t whole = (n - j) / 2;
  for (uint64_t k = 0; k < whole; ++k) {
    const auto byte = static_cast<uint8_t>(pairs[k]);
    o[j + 2 * k] = value(byte & 0x0F);
    o[j + 2 * k + 1] = value(byte >> 4);
  }
  if (j + 2 * whole < n) o[n - 1] = value(static_cast<uint8_t>(pairs[whole]) & 0x0F);
}

// ORs the int4 codes c[0, n) of elements [first, first + n) into their
// nibbles (element 2i low, 2i+1 high) of zeroed `codes`. A block may start
// or end inside a byte: its neighbour's nibble is kept.
void pack_nibbles(const int8_t* c, uint64_t first, uint64_t n, std::byte* codes) {
  const auto nibble = [](int8_t v) { return static_cast<uint8_t>(static_cast<uint8_t>(v) & 0x0F); };
  uint64_t j = 0;
  if (first % 2 == 1 && n > 0) {
    codes[first / 2] |= static_cast<std::byte>(nibble(c[0]) << 4);
    j = 1;
  }
  std::byte* pairs = codes + (first + j) / 2;
  const uint64_t whole = (n - j) / 2;
  for (uint64_t k = 0; k < whole; ++k) {
    pairs[k] = static_cast<std::byte>(nibble(c[j + 2 * k]) | static_cast<uint8_t>(nibble(c[j + 2 * k + 1]) << 4));
  }
  if (j + 2 * whole < n) pairs[whole] |= static_cast<std::byte>(nibble(c[n - 1]));
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
  std::array<float, kMaxQuantBlock> widened{};
  std::array<int8_t, kMaxQuantBlock> block_codes{};
  for_each_block(r, f.block, 0, r.count, [&](uint64_t b, uint64_t first, uint64_t n) {
    const ConstBuffer part = in.slice(first, n);
    const float* x = static_cast<const float*>(part.data);
    if (part.dtype != Dtype::fp32()) {
      convert(part.data, part.dtype, widened.data(), Dtype::fp32(), n);
      x = widened.data();
    }
    const float scale = block_scale({x, n}, qmax);
    std::memcpy(scales + b * sizeof(float), &scale, sizeof(float));
    // int8 codes go straight to the output; int4's are packed after.
    int8_t* c = q == Quantization::kInt8 ? reinterpret_cast<int8_t*>(codes + first) : block_codes.data();
    if (f.rounding == RoundingMode::kNearest) {
      nearest_codes(x, n, scale, qmax, c);
    } else {
      for (size_t j = 0; j < n; ++j) {
        c[j] = stochastic_code_of(x[j], scale, qmax, mix64(key + (r.offset + first + j + 1) * kGoldenGamma));
      }
    }
    if (q == Quantization::kInt4) pack_nibbles(block_codes.data(), first, n, codes);
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
    const uint64_t stop = std::min(block_first + n, end);
    float* o = out.data() + (block_first - first);
    if (q == Quantization::kInt8) {
      const auto* c = reinterpret_cast<const int8_t*>(codes) + block_first;
      for (uint64_t i = 0; i < stop - block_first; ++i) o[i] = static_cast<float>(c[i]) * scale;
    } else {
      unpack_nibbles(codes, block_first, stop - block_first, scale, o);
    }
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
