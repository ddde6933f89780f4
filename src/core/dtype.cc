#include "core/dtype.h"

#include "core/error.h"

namespace zerodp {

Dtype Dtype::parse(std::string_view name) {
  if (name == "fp32" || name == "float32") return fp32();
  if (name == "fp16" || name == "float16") return fp16();
  if (name == "bf16" || name == "bfloat16") return bf16();
  ZDP_THROW(ConfigError, "[dtype] unknown dtype '{}': use fp32, fp16 or bf16", name);
}

std::string_view Dtype::name() const {
  switch (kind_) {
    case Kind::kFp32: return "fp32";
    case Kind::kFp16: return "fp16";
    case Kind::kBf16: return "bf16";
  }
  return "?";
}

}  // namespace zerodp
