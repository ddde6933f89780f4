// SPDX-License-Identifier: Apache-2.0
#include "core/dtype.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace zerodp {

Dtype Dtype::parse(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "fp32" || lower == "float32") return fp32();
  if (lower == "fp16" || lower == "float16") return fp16();
  if (lower == "bf16" || lower == "bfloat16") return bf16();
  ZDP_THROW(ConfigError, "[dtype] unknown dtype '{}': use fp32, fp16 or bf16", name);
}

std::string_view Dtype::name() const {
  switch (kind_) {
    case Kind::kFp32:
      return "fp32";
    case Kind::kFp16:
      return "fp16";
    case Kind::kBf16:
      return "bf16";
  }
  return "?";
}

}  // namespace zerodp
