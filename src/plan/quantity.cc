// SPDX-License-Identifier: Apache-2.0
#include "plan/quantity.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace zerodp::plan {
namespace {

using U128 = unsigned __int128;

// A decimal number split into integer digits and a power of ten:
// "7.5e9" -> digits 75, exponent 8. The rest of the text is the unit.
struct Decimal {
  U128 digits = 0;
  int exponent = 0;
  std::string_view unit;
};

bool parse_decimal(std::string_view text, Decimal& out) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  bool any_digit = false;
  int significant = 0;
  auto take_digit = [&](char c, bool fractional) {
    any_digit = true;
    if (out.digits == 0 && c == '0') {
      if (fractional) --out.exponent;
      return;
    }
    if (significant < 30) {
      out.digits = out.digits * 10 + static_cast<unsigned>(c - '0');
      ++significant;
      if (fractional) --out.exponent;
    } else if (!fractional) {
      ++out.exponent;  // beyond 30 digits: scale instead of storing
    }
  };
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) take_digit(text[i++], false);
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) take_digit(text[i++], true);
  }
  if (!any_digit) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E') && i + 1 < text.size() &&
      (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '+' || text[i + 1] == '-')) {
    size_t j = i + 1;
    int sign = 1;
    if (text[j] == '+' || text[j] == '-') {
      sign = text[j] == '-' ? -1 : 1;
      ++j;
    }
    int value = 0;
    bool exp_digit = false;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) {
      value = std::min(value * 10 + (text[j] - '0'), 1000);
      exp_digit = true;
      ++j;
    }
    if (!exp_digit) return false;
    out.exponent += sign * value;
    i = j;
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t end = text.size();
  while (end > i && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  out.unit = text.substr(i, end - i);
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// digits * 10^exponent * multiplier, rounded to nearest; false when it does
// not fit in uint64 or (when exact is required) is not an integer.
bool scale(const Decimal& d, U128 multiplier, bool require_exact, uint64_t& out) {
  constexpr U128 kMax = std::numeric_limits<uint64_t>::max();
  U128 value = d.digits * multiplier;
  if (d.digits != 0 && value / multiplier != d.digits) return false;
  int e = d.exponent;
  for (; e > 0; --e) {
    if (value > kMax) return false;
    value *= 10;
  }
  if (e < 0) {
    U128 divisor = 1;
    for (; e < 0; ++e) {
      divisor *= 10;
      if (divisor > (U128(1) << 100)) return value == 0;
    }
    const U128 quotient = value / divisor;
    const U128 remainder = value % divisor;
    if (require_exact && remainder != 0) return false;
    value = quotient + (remainder * 2 >= divisor ? 1 : 0);
  }
  if (value > kMax) return false;
  out = static_cast<uint64_t>(value);
  return true;
}

}  // namespace

uint64_t parse_count(std::string_view text, std::string_view what) {
  Decimal d;
  ZDP_CHECK(parse_decimal(text, d), ConfigError,
            "[plan] {} '{}' is not a number: write a count such as 7.5B, 124M, 7.5e9 or 124475904", what, text);
  const std::string unit = lower(d.unit);
  U128 multiplier = 1;
  if (unit.empty()) {
    multiplier = 1;
  } else if (unit == "k") {
    multiplier = 1000;
  } else if (unit == "m") {
    multiplier = 1000000;
  } else if (unit == "b" || unit == "g") {
    multiplier = 1000000000;
  } else if (unit == "t") {
    multiplier = 1000000000000ULL;
  } else {
    ZDP_THROW(ConfigError, "[plan] {} '{}' has an unknown suffix '{}': use K, M, B or T (or a plain number)", what,
              text, d.unit);
  }
  uint64_t value = 0;
  ZDP_CHECK(scale(d, multiplier, /*require_exact=*/true, value), ConfigError,
            "[plan] {} '{}' is not a whole count that fits in 64 bits: write e.g. 7.5B or 124475904", what, text);
  ZDP_CHECK(value > 0, ConfigError, "[plan] {} must be positive, got '{}'", what, text);
  return value;
}

uint64_t parse_bytes(std::string_view text, std::string_view what) {
  Decimal d;
  ZDP_CHECK(parse_decimal(text, d), ConfigError,
            "[plan] {} '{}' is not a size: write e.g. 32GB (1e9 bytes) or 80GiB (2^30 bytes)", what, text);
  const std::string unit = lower(d.unit);
  // A bare number is ambiguous (32 bytes? 32 GB?): a size needs its unit.
  ZDP_CHECK(!unit.empty(), ConfigError,
            "[plan] {} '{}' has no unit: write e.g. {}GB (powers of 1000), {}GiB (powers of 1024) or {}B (bytes)", what,
            text, text, text, text);
  struct Unit {
    const char* name;
    U128 multiplier;
  };
  static constexpr U128 kKi = 1024;
  static const Unit kUnits[] = {
      {"b", 1},
      {"kb", 1000},
      {"mb", 1000000},
      {"gb", 1000000000},
      {"tb", 1000000000000ULL},
      {"kib", kKi},
      {"mib", kKi * kKi},
      {"gib", kKi * kKi * kKi},
      {"tib", kKi * kKi * kKi * kKi},
      {"k", 1000},
      {"m", 1000000},
      {"g", 1000000000},
      {"t", 1000000000000ULL},
  };
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (unit == u.name) found = &u;
  }
  ZDP_CHECK(found != nullptr, ConfigError,
            "[plan] {} '{}' has an unknown unit '{}': use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, "
            "TiB (powers of 1024)",
            what, text, d.unit);
  uint64_t value = 0;
  ZDP_CHECK(scale(d, found->multiplier, /*require_exact=*/false, value), ConfigError,
            "[plan] {} '{}' is too large: give a size below 16 EiB", what, text);
  ZDP_CHECK(value > 0, ConfigError, "[plan] {} must be positive, got '{}'", what, text);
  return value;
}

std::string format_significant(double value, int digits) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  if (value == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  int decimals = std::max(0, digits - 1 - magnitude);
  // Round first, then trim trailing zeros so 120.0 prints as "120".
  std::string s = fmt::format("{:.{}f}", value, decimals);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  return s;
}

std::string format_gb(double bytes) { return format_significant(bytes / kGB) + " GB"; }

std::string format_gib(double bytes) { return format_significant(bytes / kGiB) + " GiB"; }

std::string format_count(double count) {
  struct Suffix {
    double scale;
    const char* name;
  };
  static constexpr Suffix kSuffixes[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const Suffix& s : kSuffixes) {
    if (std::fabs(count) >= s.scale) return format_significant(count / s.scale) + s.name;
  }
  return format_significant(count);
}

std::string format_thousands(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace zerodp::plan
