// SPDX-License-Identifier: Apache-2.0
#include "text/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "text/byte_unicode.h"
#include "text/regex_split.h"
#include "text/tokenizer_file.h"
#include "text/utf8.h"

namespace zerodp::text {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxMissingIds = 65536;

constexpr const char* kSupported = "zerodp reads byte-level BPE tokenizers (GPT-2, Llama 3, Qwen2, SmolLM2)";

// The "type" of a component object; "" when it has none.
std::string type_of(const Json& j) {
  if (!j.is_object()) return "";
  const auto t = j.find("type");
  return t != j.end() && t->is_string() ? t->get<std::string>() : "";
}

bool flag(const Json& j, const char* key, bool fallback) {
  const auto v = j.find(key);
  if (v == j.end() || v->is_null()) return fallback;
  return v->is_boolean() ? v->get<bool>() : fallback;
}

bool is_empty_string_or_null(const Json& j, const char* key) {
  const auto v = j.find(key);
  return v == j.end() || v->is_null() || (v->is_string() && v->get<std::string>().empty());
}

void read_normalizer(const Json& n, const std::string& where, BpeVocab& vocab) {
  if (n.is_null()) return;
  std::string type = type_of(n);
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    const Json& steps = n["normalizers"];
    if (steps.empty()) return;
    if (steps.size() == 1) {
      read_normalizer(steps[0], where, vocab);
      return;
    }
    type = "Sequence of " + std::to_string(steps.size());
  }
  ZDP_CHECK(type == "NFC", InputFileError,
            "[tokenizer] {}: the normalizer '{}' is not supported: zerodp implements NFC (Qwen2's) and none", where,
            type.empty() ? n.dump() : type);
  vocab.normalizer = Normalizer::kNfc;
}

void read_step(const Json& step, const std::string& where, bool last, BpeVocab& vocab) {
  const std::string type = type_of(step);
  if (type == "Digits") {
    // Digits as a Split: each run of digits a piece, or each digit with
    // individual_digits (SmolLM2's). A digit is ASCII 0-9, as in the
    // reference (JavaScript's \d); Hugging Face's Rust library takes every
    // numeric code point.
    ZDP_CHECK(!last, InputFileError,
              "[tokenizer] {}: a Digits pre-tokenizer must be followed by ByteLevel: {} with ByteLevel last", where,
              kSupported);
    vocab.pre.splits.push_back({flag(step, "individual_digits", false) ? "[0-9]" : "[0-9]+", false});
    return;
  }
  if (type == "Split") {
    ZDP_CHECK(!last, InputFileError,
              "[tokenizer] {}: a Split pre-tokenizer must be followed by ByteLevel: {} with ByteLevel last", where,
              kSupported);
    const Json* pattern = step.contains("pattern") ? &step["pattern"] : nullptr;
    ZDP_CHECK(
        pattern != nullptr && pattern->is_object() && pattern->contains("Regex") && (*pattern)["Regex"].is_string(),
        InputFileError, "[tokenizer] {}: the Split pre-tokenizer's pattern {} is not {{\"Regex\": \"...\"}}", where,
        pattern ? pattern->dump() : "(none)");
    const auto behavior_json = step.find("behavior");
    const std::string behavior = behavior_json == step.end() || behavior_json->is_null() ? std::string("Isolated")
                                 : behavior_json->is_string() ? behavior_json->get<std::string>()
                                                              : behavior_json->dump();
    const bool invert = flag(step, "invert", false);
    // Isolated keeps the matches and what is between them; Removed with
    // invert keeps the matches alone.
    ZDP_CHECK((behavior == "Isolated" && !invert) || (behavior == "Removed" && invert), InputFileError,
              "[tokenizer] {}: the Split pre-tokenizer's behavior '{}'{} is not supported: zerodp implements "
              "\"Isolated\" (Llama 3's and Qwen2's) and \"Removed\" with invert",
              where, behavior, invert ? " with invert" : " without invert");
    vocab.pre.splits.push_back({(*pattern)["Regex"].get<std::string>(), invert});
    RegexSplit check(vocab.pre.splits.back().regex, where);  // refused here, at load, when it does not compile
    return;
  }
  ZDP_CHECK(type == "ByteLevel", InputFileError, "[tokenizer] {}: the pre-tokenizer '{}' is not supported: {}", where,
            type.empty() ? step.dump() : type, kSupported);
  ZDP_CHECK(last, InputFileError, "[tokenizer] {}: ByteLevel must be the last pre-tokenizer step", where);
  vocab.pre.add_prefix_space = flag(step, "add_prefix_space", false);
  vocab.pre.gpt2_regex = flag(step, "use_regex", true);
}

void read_pre_tokenizer(const Json& p, const std::string& where, BpeVocab& vocab) {
  ZDP_CHECK(!p.is_null(), InputFileError, "[tokenizer] {}: there is no pre_tokenizer: {}, which need ByteLevel", where,
            kSupported);
  if (type_of(p) == "Sequence") {
    const auto steps = p.find("pretokenizers");
    ZDP_CHECK(steps != p.end() && steps->is_array() && !steps->empty(), InputFileError,
              "[tokenizer] {}: the Sequence pre-tokenizer has no \"pretokenizers\" list", where);
    for (size_t i = 0; i < steps->size(); ++i) read_step((*steps)[i], where, i + 1 == steps->size(), vocab);
  } else {
    read_step(p, where, true, vocab);
  }
}

void read_model(const Json& model, const std::string& where, BpeVocab& vocab) {
  ZDP_CHECK(model.is_object(), InputFileError,
            "[tokenizer] {} has no \"model\" object: give a Hugging Face "
            "tokenizer.json",
            where);
  const std::string type = type_of(model);
  ZDP_CHECK(type == "BPE", InputFileError, "[tokenizer] {}: the model type '{}' is not supported: {}", where,
            type.empty() ? "(none)" : type, kSupported);
  ZDP_CHECK(!flag(model, "byte_fallback", false), InputFileError,
            "[tokenizer] {}: BPE with byte_fallback (sentencepiece-style, as Llama 2's) is not supported: {}", where,
            kSupported);
  const auto dropout = model.find("dropout");
  ZDP_CHECK(dropout == model.end() || dropout->is_null() || (dropout->is_number() && dropout->get<double>() == 0.0),
            InputFileError, "[tokenizer] {}: BPE dropout {} is not supported (it makes encoding random)", where,
            dropout == model.end() ? "" : dropout->dump());
  ZDP_CHECK(is_empty_string_or_null(model, "continuing_subword_prefix") &&
                is_empty_string_or_null(model, "end_of_word_suffix"),
            InputFileError,
            "[tokenizer] {}: BPE with a continuing_subword_prefix or end_of_word_suffix is not "
            "supported: {}",
            where, kSupported);
  vocab.ignore_merges = flag(model, "ignore_merges", false);
}

}  // namespace

BpeVocab parse_tokenizer_json(std::string_view json_text, const std::string& where) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    ZDP_THROW(InputFileError, "[tokenizer] {} is not JSON ({}): give a Hugging Face tokenizer.json", where, e.what());
  }
  ZDP_CHECK(root.is_object(), InputFileError,
            "[tokenizer] {} is not a JSON object: give a Hugging Face "
            "tokenizer.json",
            where);
  BpeVocab vocab;
  vocab.dir = vocab.source = where;
  const Json null_json;
  auto member = [&](const char* key) -> const Json& {
    const auto it = root.find(key);
    return it == root.end() ? null_json : *it;
  };
  const Json& model = member("model");
  read_model(model, where, vocab);
  read_normalizer(member("normalizer"), where, vocab);
  read_pre_tokenizer(member("pre_tokenizer"), where, vocab);
  const Json& decoder = member("decoder");
  ZDP_CHECK(decoder.is_null() || type_of(decoder) == "ByteLevel", InputFileError,
            "[tokenizer] {}: the decoder '{}' is not supported: zerodp implements ByteLevel", where,
            type_of(decoder).empty() ? decoder.dump() : type_of(decoder));

  // Added tokens: their content is text, not the byte table's letters.
  std::unordered_map<std::string, int32_t> added_id;
  const Json& added = member("added_tokens");
  ZDP_CHECK(added.is_null() || added.is_array(), InputFileError, "[tokenizer] {}: \"added_tokens\" is not a list",
            where);
  int64_t max_id = -1;
  if (added.is_array()) {
    for (const Json& a : added) {
      ZDP_CHECK(a.is_object() && a.contains("id") && a["id"].is_number_integer() && a.contains("content") &&
                    a["content"].is_string() && !a["content"].get<std::string>().empty(),
                InputFileError, "[tokenizer] {}: an added token {} lacks an integer \"id\" or a non-empty \"content\"",
                where, a.dump());
      AddedToken t{a["content"].get<std::string>(), 0, flag(a, "special", false)};
      const int64_t id = a["id"].get<int64_t>();
      ZDP_CHECK(id >= 0 && id < (int64_t{1} << 31), InputFileError, "[tokenizer] {}: the added token '{}' has id {}",
                where, t.content, id);
      t.id = static_cast<int32_t>(id);
      for (const char* key : {"lstrip", "rstrip", "single_word"}) {
        ZDP_CHECK(!flag(a, key, false), InputFileError,
                  "[tokenizer] {}: the added token '{}' sets {}, which zerodp does not implement", where, t.content,
                  key);
      }
      ZDP_CHECK(added_id.emplace(t.content, t.id).second, InputFileError,
                "[tokenizer] {}: the added token '{}' is listed twice", where, t.content);
      max_id = std::max(max_id, id);
      vocab.added.push_back(std::move(t));
    }
  }

  const auto vocab_json = model.find("vocab");
  ZDP_CHECK(vocab_json != model.end() && vocab_json->is_object() && !vocab_json->empty(), InputFileError,
            "[tokenizer] {}: model.vocab is not a JSON object of token -> id", where);
  for (const auto& [written, id_json] : vocab_json->items()) {
    ZDP_CHECK(id_json.is_number_integer() && id_json.get<int64_t>() >= 0 && id_json.get<int64_t>() < (int64_t{1} << 31),
              InputFileError, "[tokenizer] {}: the id of token '{}' is {}, not an integer in 0..2^31-1", where, written,
              id_json.dump());
    max_id = std::max(max_id, id_json.get<int64_t>());
  }
  // A few ids may have no token (GPT-4o's file skips some); they decode to
  // U+FFFD. Many would be a broken file (and a huge allocation).
  const size_t n = static_cast<size_t>(max_id + 1), listed = vocab_json->size() + vocab.added.size();
  ZDP_CHECK(n <= listed + kMaxMissingIds, InputFileError,
            "[tokenizer] {}: ids go up to {} but there are only {} tokens: more than {} ids without a token", where,
            max_id, listed, kMaxMissingIds);
  vocab.tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  std::string bytes;
  for (const auto& [written, id_json] : vocab_json->items()) {
    const size_t id = static_cast<size_t>(id_json.get<int64_t>());
    ZDP_CHECK(!seen[id], InputFileError, "[tokenizer] {}: id {} is given to two tokens (one is '{}')", where, id,
              written);
    seen[id] = true;
    if (byte_level_decode(written, bytes)) {
      vocab.tokens[id] = bytes;
    } else {
      const auto a = added_id.find(written);
      ZDP_CHECK(a != added_id.end(), InputFileError,
                "[tokenizer] {}: token '{}' has a character outside the byte-level table and is no added token: {}",
                where, written, kSupported);
      vocab.tokens[id] = written;
    }
  }
  for (const AddedToken& t : vocab.added) {
    const size_t id = static_cast<size_t>(t.id);
    ZDP_CHECK(!seen[id] || vocab.tokens[id] == t.content, InputFileError,
              "[tokenizer] {}: the added token '{}' has the id {} of another token of the vocab", where, t.content, id);
    seen[id] = true;
    vocab.tokens[id] = t.content;
  }

  // Merges, by the tokens of model.vocab (not the added ones), rank = order.
  std::unordered_map<std::string, int32_t> id_of;
  id_of.reserve(vocab_json->size());
  for (const auto& [written, id_json] : vocab_json->items()) id_of.emplace(written, id_json.get<int32_t>());
  for (int b = 0; b < 256; ++b) {
    const std::string written = utf8_encode(byte_to_unicode(static_cast<uint8_t>(b)));
    ZDP_CHECK(id_of.count(written) == 1, InputFileError,
              "[tokenizer] {}: model.vocab has no token for the byte {} ('{}'): byte-level BPE needs all 256", where, b,
              written);
  }
  const auto merges = model.find("merges");
  ZDP_CHECK(merges != model.end() && merges->is_array(), InputFileError, "[tokenizer] {}: model.merges is not a list",
            where);
  vocab.merges.reserve(merges->size());
  std::string left, right;
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const Json& m = (*merges)[rank];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      ZDP_CHECK(space != std::string::npos && space > 0 && space + 1 < s.size() &&
                    s.find(' ', space + 1) == std::string::npos,
                InputFileError, "[tokenizer] {}: merge {} '{}' is not two tokens and one space", where, rank, s);
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else {
      ZDP_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), InputFileError,
                "[tokenizer] {}: merge {} {} is neither \"a b\" nor [\"a\", \"b\"]", where, rank, m.dump());
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    }
    const auto l = id_of.find(left), r = id_of.find(right), t = id_of.find(left + right);
    ZDP_CHECK(l != id_of.end() && r != id_of.end() && t != id_of.end(), InputFileError,
              "[tokenizer] {}: merge {} ('{}' '{}') uses or makes a token that is not in model.vocab", where, rank,
              left, right);
    vocab.merges.push_back({l->second, r->second, t->second});
  }
  return vocab;
}

BpeVocab load_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_tokenizer_file(path, "give --tokenizer a Hugging Face tokenizer.json"), path);
}

}  // namespace zerodp::text
