// SPDX-License-Identifier: Apache-2.0
// Quantities a user types and reads: parameter counts ("7.5B", "124M",
// "7.5e9", "124475904") and byte sizes ("32GB", "80GiB"), and the way plan
// prints bytes (GB = 1e9 bytes as the ZeRO paper does, GiB = 2^30 bytes).
//
// Parsing is exact (decimal digits are scaled as integers, never through a
// double), so "7.5B" is exactly 7,500,000,000. Bad input throws ConfigError
// with a one-line message that names the problem and the accepted forms.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zerodp::plan {

inline constexpr double kGB = 1e9;                    // the paper's "GB"
inline constexpr double kGiB = 1024.0 * 1024 * 1024;  // what DeepSpeed prints as "GB"

// "7.5B", "124M", "1T", "350K", "7.5e9", "124475904" -> a positive count.
// Suffixes K/M/B/T (also lowercase, and G for billions) mean 1e3/1e6/1e9/1e12.
// `what` names the option in messages ("--params").
uint64_t parse_count(std::string_view text, std::string_view what = "--params");

// "32GB", "80GiB", "16 GB", "512MiB", "1.5TB", "34359738368B" -> bytes.
// Decimal units KB/MB/GB/TB are powers of 1000, binary KiB/MiB/GiB/TiB
// powers of 1024; units are case-insensitive; a bare number is refused
// (ConfigError naming the ways to write it).
uint64_t parse_bytes(std::string_view text, std::string_view what = "--device-memory");

// A value with `digits` significant digits and no exponent: 31.40625 -> "31.41",
// 120 -> "120", 0.1171875 -> "0.1172".
std::string format_significant(double value, int digits = 4);

// "31.41 GB" (1e9 bytes) and "29.25 GiB" (2^30 bytes).
std::string format_gb(double bytes);
std::string format_gib(double bytes);

// A parameter count the way papers write it: 7.5e9 -> "7.5B", 124475904 ->
// "124.5M", 1e12 -> "1T".
std::string format_count(double count);

// 124475904 -> "124,475,904".
std::string format_thousands(uint64_t value);

}  // namespace zerodp::plan
