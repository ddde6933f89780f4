// SPDX-License-Identifier: Apache-2.0
#include "ckpt/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace zerodp::ckpt {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// table[k][b]: the CRC of byte b followed by k zero bytes (slicing-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  }
  return t;
}
constexpr auto kTables = make_tables();

// Both paths work on the "raw" register (no pre/post inversion).
uint32_t raw_portable(uint32_t c, const unsigned char* p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian: byte 0 is the low byte
    const uint32_t lo = static_cast<uint32_t>(w) ^ c;
    const uint32_t hi = static_cast<uint32_t>(w >> 32);
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^ kTables[4][lo >> 24] ^
        kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^ kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t raw_hardware(uint32_t c, const unsigned char* p, size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
bool detect_hardware() { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t raw_hardware(uint32_t c, const unsigned char* p, size_t n) { return raw_portable(c, p, n); }
bool detect_hardware() { return false; }
#endif

const bool kHardware = detect_hardware();

// a * b modulo the polynomial, in the reflected representation the register
// uses (bit 31 is x^0, bit 0 is x^31).
uint32_t multiply_mod_poly(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if ((a & bit) != 0) product ^= b;
    b = (b & 1u) != 0 ? (b >> 1) ^ kPoly : b >> 1;  // b * x
  }
  return product;
}

// x^(8 bytes) modulo the polynomial, by squaring.
uint32_t x_to_bytes(uint64_t bytes) {
  uint32_t power = 1u << 31;   // x^0
  uint32_t square = 1u << 23;  // x^8
  for (; bytes != 0; bytes >>= 1) {
    if ((bytes & 1u) != 0) power = multiply_mod_poly(power, square);
    square = multiply_mod_poly(square, square);
  }
  return power;
}

}  // namespace

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  return multiply_mod_poly(x_to_bytes(size_b), crc_a) ^ crc_b;
}

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const uint32_t raw = kHardware ? raw_hardware(~crc, p, size) : raw_portable(~crc, p, size);
  return ~raw;
}

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size) {
  return ~raw_portable(~crc, static_cast<const unsigned char*>(data), size);
}

bool crc32c_hardware() { return kHardware; }

}  // namespace zerodp::ckpt
