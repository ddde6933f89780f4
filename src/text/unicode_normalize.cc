// SPDX-License-Identifier: Apache-2.0
#include "text/unicode_normalize.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "text/utf8.h"

namespace zerodp::text {
namespace {

void append_nfc(std::string_view valid, std::string& out) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()), static_cast<utf8proc_ssize_t>(valid.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  ZDP_CHECK(n >= 0, Error, "[tokenizer] NFC normalization failed: {}", utf8proc_errmsg(n));
  out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
}

}  // namespace

std::string nfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t run = 0, at = 0;
  while (at < text.size()) {
    const Utf8Char c = next_code_point(text, at);
    if (!c.valid) {
      if (at > run) append_nfc(text.substr(run, at - run), out);
      out.append(text.substr(at, c.length));
      run = at + c.length;
    }
    at += c.length;
  }
  if (at > run) append_nfc(text.substr(run, at - run), out);
  return out;
}

}  // namespace zerodp::text
