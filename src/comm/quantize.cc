// SPDX-License-Identifier: Apache-2.0
#include "comm/quantize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "comm/shard.h"
#include "core/convert.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

constexpr float kCanonicalNan = std::bit_cast<float>(0x7FC00000u);

uint64_t blocks_of(uint64_t count, uint32_t block) { return (count + block - 1) / block; }

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

int8_t code_of(float x, float scale, int qmax) {
  if (!(scale > 0.0f)) return 0;  // zero (or underflowed) scale, or NaN
  const float q = std::nearbyint(x / scale);
  return static_cast<int8_t>(std::clamp(q, static_cast<float>(-qmax), static_cast<float>(qmax)));
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

uint64_t quantized_bytes(uint64_t count, QuantFormat f) {
  if (f.codes == Quantization::kNone) return 0;
  // Every packing path sizes its bytes here first, so a block not offered
  // (0 would divide by zero) is refused before anything is read or written.
  ZDP_CHECK(quant_block_offered(f.block), ShapeError,
            "[quantize] blocks of {} elements are not offered; use a power of two from {} to {}", f.block,
            kMinQuantBlock, kMaxQuantBlock);
  return blocks_of(count, f.block) * sizeof(float) + code_bytes(count, f.codes);
}

void quantize(ConstBuffer in, QuantFormat f, std::span<std::byte> out) {
  const Quantization q = f.codes;
  ZDP_CHECK(q != Quantization::kNone, ShapeError, "[quantize] no quantization format given");
  ZDP_CHECK(out.size() == quantized_bytes(in.count, f), ShapeError,
            "[quantize] {} elements pack into {} bytes as {}, but the output has {}", in.count,
            quantized_bytes(in.count, f), quantization_name(q), out.size());
  const int qmax = quantization_max_code(q);
  const size_t block = f.block;
  const size_t blocks = blocks_of(in.count, f.block);
  std::byte* scales = out.data();
  std::byte* codes = out.data() + blocks * sizeof(float);
  if (q == Quantization::kInt4) std::fill(codes, codes + code_bytes(in.count, q), std::byte{0});
  std::array<float, kMaxQuantBlock> x{};
  for (size_t b = 0; b < blocks; ++b) {
    const size_t first = b * block;
    const size_t n = std::min(block, in.count - first);
    const ConstBuffer part = in.slice(first, n);
    convert(part.data, part.dtype, x.data(), Dtype::fp32(), n);
    const float scale = block_scale({x.data(), n}, qmax);
    std::memcpy(scales + b * sizeof(float), &scale, sizeof(float));
    for (size_t j = 0; j < n; ++j) {
      const int8_t c = code_of(x[j], scale, qmax);
      const size_t i = first + j;
      if (q == Quantization::kInt8) {
        codes[i] = static_cast<std::byte>(c);
      } else {
        const auto nibble = static_cast<uint8_t>(static_cast<uint8_t>(c) & 0x0F);
        codes[i / 2] |= static_cast<std::byte>(i % 2 == 0 ? nibble : static_cast<uint8_t>(nibble << 4));
      }
    }
  }
}

void dequantize(std::span<const std::byte> packed, size_t count, QuantFormat f, size_t first, std::span<float> out) {
  const Quantization q = f.codes;
  ZDP_CHECK(q != Quantization::kNone, ShapeError, "[dequantize] no quantization format given");
  ZDP_CHECK(packed.size() == quantized_bytes(count, f), ShapeError,
            "[dequantize] {} elements are packed in {} bytes as {}, but the input has {}", count,
            quantized_bytes(count, f), quantization_name(q), packed.size());
  ZDP_CHECK(first % f.block == 0 && first + out.size() <= count, ShapeError,
            "[dequantize] elements [{}, {}) are not a block-aligned part of {}", first, first + out.size(), count);
  const std::byte* scales = packed.data();
  const std::byte* codes = packed.data() + blocks_of(count, f.block) * sizeof(float);
  for (size_t j = 0; j < out.size(); ++j) {
    const size_t i = first + j;
    const float scale = load_scale(scales, i / f.block);
    out[j] = static_cast<float>(load_code(codes, i, q)) * scale;
  }
}

void dequantize_into(std::span<const std::byte> packed, QuantFormat f, Buffer out) {
  if (out.dtype == Dtype::fp32()) {
    dequantize(packed, out.count, f, 0, {static_cast<float*>(out.data), out.count});
    return;
  }
  // A chunk of whole blocks at a time (kMaxQuantBlock is a multiple of every block).
  std::array<float, kMaxQuantBlock> x{};
  for (size_t first = 0; first < out.count; first += x.size()) {
    const size_t n = std::min(x.size(), out.count - first);
    dequantize(packed, out.count, f, first, {x.data(), n});
    const Buffer part = out.slice(first, n);
    convert(x.data(), Dtype::fp32(), part.data, part.dtype, n);
  }
}

uint64_t all_gather_quantized_scratch(uint64_t count, int ranks, QuantFormat f) {
  uint64_t total = 0;
  for (int k = 0; k < ranks; ++k) total += quantized_bytes(shard_range(count, ranks, k).count, f);
  return total;
}

uint64_t reduce_scatter_quantized_scratch(uint64_t count, int ranks, int rank, QuantFormat f) {
  const uint64_t own = quantized_bytes(shard_range(count, ranks, rank).count, f);
  return all_gather_quantized_scratch(count, ranks, f) + static_cast<uint64_t>(ranks) * own +
         sizeof(float) * (static_cast<uint64_t>(ranks) + 1) * kReduceChunk;
}

uint64_t max_quantized_scratch(std::span<const uint64_t> counts, int ranks, int rank, QuantFormat gather,
                               QuantFormat reduce) {
  uint64_t most = 0;
  for (const uint64_t c : counts) {
    if (gather.codes != Quantization::kNone) most = std::max(most, all_gather_quantized_scratch(c, ranks, gather));
    if (reduce.codes != Quantization::kNone)
      most = std::max(most, reduce_scatter_quantized_scratch(c, ranks, rank, reduce));
  }
  return most;
}

}  // namespace zerodp::comm
