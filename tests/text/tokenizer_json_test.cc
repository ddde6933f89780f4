// SPDX-License-Identifier: Apache-2.0
// tokenizer.json: the hand-made tiny_tokenizer.json (256 byte tokens, ten
// merges, four added tokens, NFC, Llama 3's Split regex, ByteLevel) read
// from disk; merges in both spellings and their ranks; added tokens;
// ignore_merges; ByteLevel's prefix space and GPT-2 regex; every refusal in
// one line; the Split regex and NFC on their own. The id-for-id check
// against the reference on real files is tokenizer_json_matches_reference.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/documents.h"
#include "text/regex_split.h"
#include "text/tokenizer_json.h"
#include "text/tokenizer_lookup.h"
#include "text/unicode_normalize.h"

namespace {

namespace fs = std::filesystem;
using namespace zerodp::text;
using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

const std::string kFixture = std::string(ZERODP_TEXT_TEST_DIR) + "/tiny_tokenizer.json";

// The fixture's extra tokens, after the 256 bytes.
constexpr int32_t kAb = 256, kAbc = 257, kSpaceA = 258, kHello = 262, kSpaceHello = 263, k12 = 264, k123 = 265;
constexpr int32_t kEndOfText = 266, kImStart = 267, kImStartX = 268, kTool = 269;

Json fixture() {
  std::ifstream in(kFixture, std::ios::binary);
  EXPECT_TRUE(in.good()) << kFixture;
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str());
}

BpeTokenizer make(const Json& j) { return BpeTokenizer(parse_tokenizer_json(j.dump(), "test.json")); }

std::string refusal(const Json& j) {
  try {
    parse_tokenizer_json(j.dump(), "test.json");
  } catch (const zerodp::InputFileError& e) {
    EXPECT_EQ(e.message().find('\n'), std::string::npos) << "not one line: " << e.message();
    return e.message();
  }
  return "(no error)";
}

TEST(TokenizerJson, TheFixtureLoadsFromDiskAndEncodes) {
  BpeTokenizer t(load_tokenizer_json(kFixture));
  EXPECT_EQ(t.vocab_size(), 270);
  EXPECT_EQ(t.source(), kFixture);
  EXPECT_EQ(t.end_of_text(), kEndOfText);
  EXPECT_EQ(t.document_start(), kEndOfText);
  EXPECT_EQ(t.encode("abc"), (Ids{kAbc}));
  EXPECT_EQ(t.encode("hello"), (Ids{kHello}));
  // Llama 3's regex: a space joins the letters after it; digits go in threes.
  EXPECT_EQ(t.encode("abc hello"), (Ids{kAbc, kSpaceHello}));
  EXPECT_EQ(t.encode("12312"), (Ids{k123, k12}));
  EXPECT_EQ(t.encode("1234"), (Ids{k123, '4'}));
  EXPECT_EQ(t.decode(t.encode("abc hello 1234\n")), "abc hello 1234\n");
  EXPECT_NE(t.describe().find("tokenizer.json BPE from"), std::string::npos);
}

TEST(TokenizerJson, MergesInBothSpellingsGiveTheSameTokenizer) {
  Json strings = fixture(), pairs = fixture();
  Json as_pairs = Json::array();
  for (const Json& m : strings["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    as_pairs.push_back(Json::array({s.substr(0, space), s.substr(space + 1)}));
  }
  pairs["model"]["merges"] = as_pairs;
  BpeTokenizer a = make(strings), b = make(pairs);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  for (const char* text : {"abc hello", "habcab ll 123", " a ab abc"})
    EXPECT_EQ(a.encode(text), b.encode(text)) << text;
}

TEST(TokenizerJson, MergeRanksFollowTheOrder) {
  // "a b" then "b c" makes ab|c; with "b c" first, a|bc.
  Json j = fixture();
  j["model"]["vocab"]["bc"] = 266;
  j["added_tokens"] = Json::array();
  j["model"]["merges"] = Json::array({"a b", "b c"});
  EXPECT_EQ(make(j).encode("abc"), (Ids{kAb, 'c'}));
  j["model"]["merges"] = Json::array({"b c", "a b"});
  EXPECT_EQ(make(j).encode("abc"), (Ids{'a', 266}));
}

TEST(TokenizerJson, AddedTokensAreMatchedFirstAndLongest) {
  BpeTokenizer t = make(fixture());
  EXPECT_EQ(t.encode("ab<|endoftext|>abc"), (Ids{kAb, kEndOfText, kAbc}));
  EXPECT_EQ(t.encode("<|im_start|>xab"), (Ids{kImStartX, kAb}));  // the longer of two that start here
  EXPECT_EQ(t.encode("<|im_start|>ab"), (Ids{kImStart, kAb}));
  EXPECT_EQ(t.encode("<tool>hello"), (Ids{kTool, kHello}));  // non-special added tokens match too
  const Ids partial = t.encode("<|im_start|");               // a partial one is text
  EXPECT_EQ(std::count(partial.begin(), partial.end(), kImStart), 0);
  EXPECT_EQ(t.decode(partial), "<|im_start|");
  EXPECT_EQ(t.decode(Ids{kImStart, kAb, kEndOfText}), "<|im_start|>ab<|endoftext|>");
  // The text around an added token is pre-tokenized on its own: no space joins across it.
  EXPECT_EQ(t.encode(" <tool> hello"), (Ids{' ', kTool, kSpaceHello}));
}

TEST(TokenizerJson, AnIdWithoutATokenDecodesToTheReplacementCharacter) {
  Json j = fixture();
  j["added_tokens"][3]["id"] = 280;  // ids 269..279 have no token
  BpeTokenizer t = make(j);
  EXPECT_EQ(t.vocab_size(), 281);
  EXPECT_EQ(t.encode("<tool>ab"), (Ids{280, kAb}));
  EXPECT_EQ(t.decode(Ids{kAb, 275, 280}), "ab\uFFFD<tool>");
}

TEST(TokenizerJson, NfcComposesBeforeSplitting) {
  BpeTokenizer t = make(fixture());
  EXPECT_EQ(t.decode(t.encode("e\u0301")), "\u00e9");
  Json j = fixture();
  j["normalizer"] = nullptr;
  EXPECT_EQ(make(j).decode(make(j).encode("e\u0301")), "e\u0301");
}

TEST(TokenizerJson, IgnoreMergesTakesAPieceThatIsAToken) {
  // "abc" is a token, but no merge makes it from a|bc: only ignore_merges finds it.
  Json j = fixture();
  j["model"]["vocab"]["bc"] = 266;
  j["added_tokens"] = Json::array();
  j["model"]["merges"] = Json::array({"b c", "a b"});
  EXPECT_EQ(make(j).encode("abc"), (Ids{'a', 266}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(make(j).encode("abc"), (Ids{kAbc}));
}

TEST(TokenizerJson, PlainByteLevelWithPrefixSpaceAndGpt2Regex) {
  Json j = fixture();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  BpeTokenizer t = make(j);
  EXPECT_EQ(t.encode("hello"), (Ids{kSpaceHello}));
  EXPECT_EQ(t.encode("hello a"), (Ids{kSpaceHello, kSpaceA}));
  // GPT-2's regex keeps digit runs whole (no groups of three).
  j["pre_tokenizer"]["add_prefix_space"] = false;
  EXPECT_EQ(make(j).encode("12312"), (Ids{k123, k12}));
  EXPECT_EQ(make(j).encode("1234"), (Ids{k123, '4'}));
}

TEST(TokenizerJson, DigitsSplitsDigitsOffAsSmolLm2Does) {
  // SmolLM2's pre-tokenizer: Digits (individual_digits), then ByteLevel with GPT-2's regex.
  Json j = fixture();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Digits"}, {"individual_digits", true}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}}}};
  EXPECT_EQ(make(j).encode("abc123"), (Ids{kAbc, '1', '2', '3'}));
  j["pre_tokenizer"]["pretokenizers"][0]["individual_digits"] = false;
  EXPECT_EQ(make(j).encode("abc123"), (Ids{kAbc, k123}));
}

TEST(TokenizerJson, DocumentsStartWithBeginOfTextWhereThereIsOne) {
  Json j = fixture();
  j["added_tokens"].push_back({{"id", 270}, {"content", "<|begin_of_text|>"}, {"special", true}});
  BpeTokenizer t = make(j);
  EXPECT_EQ(t.document_start(), 270);
  Ids out;
  encode_documents(t, "ab\n\nabc", out);
  EXPECT_EQ(out, (Ids{270, kAb, '\n', '\n', 270, kAbc}));
}

TEST(TokenizerJson, WhatIsNotImplementedIsRefusedByName) {
  auto with = [](const std::string& pointer, const Json& value) {
    Json j = fixture();
    j[Json::json_pointer(pointer)] = value;
    return refusal(j);
  };
  EXPECT_NE(with("/model/type", "WordPiece").find("the model type 'WordPiece' is not supported"), std::string::npos);
  EXPECT_NE(with("/model/type", "Unigram").find("'Unigram'"), std::string::npos);
  EXPECT_NE(with("/model/byte_fallback", true).find("byte_fallback"), std::string::npos);
  EXPECT_NE(with("/model/dropout", 0.1).find("dropout"), std::string::npos);
  EXPECT_NE(with("/model/continuing_subword_prefix", "##").find("continuing_subword_prefix"), std::string::npos);
  EXPECT_NE(with("/normalizer", Json{{"type", "Lowercase"}}).find("the normalizer 'Lowercase' is not supported"),
            std::string::npos);
  EXPECT_NE(with("/normalizer", Json{{"type", "NFKC"}}).find("'NFKC'"), std::string::npos);
  EXPECT_NE(with("/pre_tokenizer", Json{{"type", "Metaspace"}}).find("the pre-tokenizer 'Metaspace' is not supported"),
            std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/type", "Punctuation").find("the pre-tokenizer 'Punctuation'"),
            std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/behavior", "Removed").find("behavior 'Removed' without invert"),
            std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/invert", true).find("behavior 'Isolated' with invert"),
            std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/pattern", Json{{"String", " "}}).find("is not {\"Regex\""),
            std::string::npos);
  EXPECT_NE(with("/pre_tokenizer/pretokenizers/0/pattern/Regex", "(").find("does not compile"), std::string::npos);
  EXPECT_NE(with("/pre_tokenizer", nullptr).find("there is no pre_tokenizer"), std::string::npos);
  EXPECT_NE(with("/decoder", Json{{"type", "WordPiece"}}).find("the decoder 'WordPiece' is not supported"),
            std::string::npos);
  EXPECT_NE(with("/added_tokens/0/lstrip", true).find("sets lstrip"), std::string::npos);
  EXPECT_NE(with("/added_tokens/0/id", 1000000).find("more than 65536 ids without a token"), std::string::npos);
  EXPECT_NE(with("/model/merges/0", "a zz").find("not in model.vocab"), std::string::npos);
  EXPECT_NE(with("/model/merges/0", "abc").find("is not two tokens and one space"), std::string::npos);
  EXPECT_NE(with("/model/merges/0", Json::array({"a"})).find("neither \"a b\" nor"), std::string::npos);
  EXPECT_NE(with("/model/vocab/a b", 270).find("outside the byte-level table"), std::string::npos);
  EXPECT_NE(with("/model/vocab/a", 1).find("id 1 is given to two tokens"), std::string::npos);
  Json no_byte = fixture();
  no_byte["model"]["vocab"].erase("a");
  no_byte["model"]["vocab"]["zz"] = 'a';  // keeps the ids whole
  no_byte["model"]["merges"] = Json::array();
  EXPECT_NE(refusal(no_byte).find("has no token for the byte 97"), std::string::npos);
  try {
    parse_tokenizer_json("{\"model\": ", "test.json");
    ADD_FAILURE() << "truncated JSON was accepted";
  } catch (const zerodp::InputFileError& e) {
    EXPECT_NE(e.message().find("test.json is not JSON"), std::string::npos);
  }
}

TEST(TokenizerJson, LookupTakesTheFileOrItsDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("zerodp_tokjson." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kFixture, dir / kTokenizerJsonFile);
  EXPECT_EQ(tokenizer_json_path((dir / kTokenizerJsonFile).string()), (dir / kTokenizerJsonFile).string());
  EXPECT_EQ(tokenizer_json_path(dir.string()), (dir / kTokenizerJsonFile).string());
  EXPECT_EQ(tokenizer_json_path("gpt2"), "");
  EXPECT_EQ(load_tokenizer(dir.string())->encode("abc"), (Ids{kAbc}));
  EXPECT_EQ(load_tokenizer((dir / kTokenizerJsonFile).string())->vocab_size(), 270);
  fs::remove_all(dir);
}

TEST(RegexSplit, PiecesTileTheTextAndIllFormedBytesStay) {
  RegexSplit split("\\p{N}{1,3}|\\p{L}+", "test");
  std::vector<std::string_view> pieces;
  const std::string text =
      "ab12345 c\xff\xfe"
      "d";
  split.split(text, pieces);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"ab", "123", "45", " ", "c", "\xff\xfe", "d"}));
  EXPECT_EQ(javascript_white_space("a\\sb[^\\s\\d]\\S"),
            "a[\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
            "\\x{FEFF}]b[^\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
            "\\x{3000}\\x{FEFF}\\d][^\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
            "\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}]");
  // JavaScript's \s: U+FEFF is white space, U+0085 is not.
  RegexSplit spaces("\\s+", "test");
  pieces.clear();
  spaces.split("a\xef\xbb\xbf\xc2\x85", pieces);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"a", "\xef\xbb\xbf", "\xc2\x85"}));
}

TEST(RegexSplit, MatchesOnlyDropsTheTextBetween) {
  RegexSplit split("\\p{L}+", "test");
  std::vector<std::string_view> pieces;
  split.split("ab 12 cd!", pieces, true);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"ab", "cd"}));
  Json j = fixture();
  j["pre_tokenizer"]["pretokenizers"][0] = {
      {"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}, {"behavior", "Removed"}, {"invert", true}};
  EXPECT_EQ(make(j).encode("abc 12 hello"), (Ids{kAbc, kHello}));
}

TEST(Nfc, ComposesAndKeepsIllFormedBytes) {
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(nfc("\u212b"), "\u00c5");  // ANGSTROM SIGN -> A WITH RING
  EXPECT_EQ(nfc("e\u0301\xff"
                "e\u0301"),
            "\u00e9\xff\u00e9");
}

}  // namespace
