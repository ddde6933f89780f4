// SPDX-License-Identifier: Apache-2.0
// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78): the
// checksum of every checkpoint record and file (docs/checkpoint-format.md).
//
// crc32c("123456789") == 0xE3069283. The value is the plain CRC (initial
// ~0, final xor ~0), so crc32c_extend(crc32c(a), b) == crc32c(a + b) and a
// file's checksum can be computed while it is streamed. Uses the SSE4.2
// crc32 instruction when the CPU has it (checked at run time) and a
// slicing-by-8 table otherwise; both give the same values.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace zerodp::ckpt {

// The CRC of `data` continued from `crc` (the CRC of what came before; 0 for
// nothing).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }
inline uint32_t crc32c(std::span<const std::byte> data) { return crc32c(data.data(), data.size()); }

// The CRC of a + b from the CRCs of its parts and b's length in bytes: the
// whole file's checksum from the parts that pipeline stages write of one
// shard file (checkpoint.h). A CRC is affine in its input, so
// crc(a + b) == crc(a) * x^(8 len(b)) + crc(b), modulo the polynomial;
// the power takes log2(len) multiplications.
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);

// The portable table version, for tests of the hardware path.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size);
// Whether crc32c_extend uses the SSE4.2 instruction on this CPU.
bool crc32c_hardware();

}  // namespace zerodp::ckpt
