// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the tokenizer.json reader (parse_tokenizer_json): the
// input is the file's text. A file that is read is then made a tokenizer,
// which encodes a fixed text with added tokens, white space, digits and
// ill-formed bytes, and decodes it back. Every outcome must be a
// zerodp::Error (a refused file) or a working tokenizer; a crash, a
// sanitizer report, another exception type (e.g. a JSON library exception
// leaking) or a round trip that loses bytes is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    zerodp::text::BpeVocab vocab =
        zerodp::text::parse_tokenizer_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const bool exact = vocab.normalizer == zerodp::text::Normalizer::kNone && !vocab.pre.add_prefix_space;
    zerodp::text::BpeTokenizer tokenizer(std::move(vocab));
    const std::string text = "Hello <|endoftext|> world's 12345\r\n\t \xff\xfe e\xcc\x81 \xe6\x97\xa5  ";
    const std::string back = tokenizer.decode(tokenizer.encode(text));
    // Without a normalizer or a prefix space the bytes come back exactly
    // (added tokens decode to their content, the rest byte for byte); NFC
    // may change them, and ByteLevel's add_prefix_space adds spaces.
    if (exact && back != text) std::abort();
  } catch (const zerodp::Error&) {
    // A refused file: the expected outcome for most inputs.
  }
  return 0;
}
