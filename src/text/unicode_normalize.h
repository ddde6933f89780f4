// SPDX-License-Identifier: Apache-2.0
// Unicode normalization for tokenizer.json's "NFC" normalizer (Qwen2's),
// done by utf8proc. Ill-formed UTF-8 is kept byte for byte between the
// normalized runs of well-formed text, so any bytes can be encoded.
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace zerodp::text {

// `text` in Normalization Form C (canonical decomposition, then canonical
// composition). ASCII comes back unchanged without a copy of work.
std::string nfc(std::string_view text);

}  // namespace zerodp::text
