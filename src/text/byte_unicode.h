// SPDX-License-Identifier: Apache-2.0
// GPT-2's byte-to-unicode table: the 256 byte values as printable code
// points, so encoder.json and vocab.bpe can write tokens (byte strings) as
// text. The printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for
// themselves; the other 68 (controls, space, 0x7F..0xA0, 0xAD) become
// U+0100 + n in byte order (space is U+0120 'Ġ', newline U+010A 'Ċ').
// Thread-safety: pure functions over a constant table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zerodp::text {

// The code point that stands for `byte` in GPT-2's vocabulary files.
char32_t byte_to_unicode(uint8_t byte);

// The byte a code point of the vocabulary files stands for; -1 for a code
// point that stands for none.
int unicode_to_byte(char32_t c);

// A token as the vocabulary files write it -> the bytes it stands for;
// false (and `bytes` unspecified) when a character is not in the table or
// the token is empty.
bool byte_level_decode(std::string_view written, std::string& bytes);

}  // namespace zerodp::text
