// SPDX-License-Identifier: Apache-2.0
// Reading encoder.json and vocab.bpe: a small vocabulary of our own, and
// the refusal of missing and malformed files (InputFileError naming the
// file and the fix), and the lookup of --tokenizer gpt2 / DIR.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/byte_unicode.h"
#include "text/gpt2_vocab.h"
#include "text/tokenizer_lookup.h"
#include "text/utf8.h"

namespace {

namespace fs = std::filesystem;
using namespace zerodp::text;

// encoder.json of the 256 bytes (in byte order), then `extra` tokens.
std::string encoder_json(const std::vector<std::string>& extra) {
  std::string json = "{";
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    std::string key = utf8_encode(byte_to_unicode(static_cast<uint8_t>(b)));
    if (key == "\"" || key == "\\") key = "\\" + key;
    json += id ? ", \"" : "\"";
    json += key;
    json += "\": " + std::to_string(id);
    ++id;
  }
  for (const auto& e : extra) {
    json += ", \"" + e + "\": " + std::to_string(id);
    ++id;
  }
  return json + "}";
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "." + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& file, const std::string& content) const {
    std::ofstream(path / file, std::ios::binary) << content;
  }
};

// A vocabulary where "a b" -> "ab", "ab c" -> "abc", "Ġ a" -> "Ġa".
void write_small_vocab(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / kEncoderFile, std::ios::binary) << encoder_json({"ab", "abc", "\u0120a", "<|endoftext|>"});
  std::ofstream(dir / kMergesFile, std::ios::binary) << "#version: 0.2\na b\nab c\n\u0120 a\n";
}

std::string refusal(const std::string& dir) {
  try {
    load_gpt2_vocab(dir);
  } catch (const zerodp::InputFileError& e) {
    return e.message();
  }
  return "(no error)";
}

TEST(Gpt2Vocab, ASmallVocabularyEncodes) {
  TempDir d("zerodp_vocab_small");
  write_small_vocab(d.path);
  BpeTokenizer t(load_gpt2_vocab(d.path.string()));
  EXPECT_EQ(t.vocab_size(), 260);
  EXPECT_EQ(t.end_of_text(), 259);
  EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{257}));
  EXPECT_EQ(t.encode("abcab a"), (std::vector<int32_t>{257, 256, 258}));
  EXPECT_EQ(t.encode("xab"), (std::vector<int32_t>{'x', 256}));
  EXPECT_EQ(t.decode(t.encode("abc ab a\n")), "abc ab a\n");
}

TEST(Gpt2Vocab, MissingAndMalformedFilesAreRefusedWithTheFix) {
  TempDir d("zerodp_vocab_bad");
  EXPECT_NE(refusal(d.path.string()).find("encoder.json does not exist"), std::string::npos);
  EXPECT_NE(refusal(d.path.string()).find("scripts/setup"), std::string::npos);
  d.write(kEncoderFile, encoder_json({"ab"}));
  EXPECT_NE(refusal(d.path.string()).find("vocab.bpe does not exist"), std::string::npos);
  d.write(kEncoderFile, "{\"a\": 0,");
  EXPECT_NE(refusal(d.path.string()).find("is not JSON"), std::string::npos);
  d.write(kEncoderFile, "[1, 2]");
  EXPECT_NE(refusal(d.path.string()).find("not a JSON object"), std::string::npos);
  d.write(kEncoderFile, "{\"a\": 0, \"b\": 5}");
  EXPECT_NE(refusal(d.path.string()).find("must be 0..1 once each"), std::string::npos);
  d.write(kEncoderFile, "{\"a\": \"zero\"}");
  EXPECT_NE(refusal(d.path.string()).find("is not an integer"), std::string::npos);
  d.write(kEncoderFile, "{\"a b\": 0}");  // a raw space is outside the byte table
  EXPECT_NE(refusal(d.path.string()).find("outside GPT-2's byte table"), std::string::npos);
  d.write(kEncoderFile, "{\"a\": 0}");
  d.write(kMergesFile, "#version: 0.2\n");
  EXPECT_NE(refusal(d.path.string()).find("has no token for the byte 0"), std::string::npos);
  d.write(kEncoderFile, encoder_json({"ab"}));
  d.write(kMergesFile, "#version: 0.2\n");
  EXPECT_NE(refusal(d.path.string()).find("holds no merges"), std::string::npos);
  d.write(kMergesFile, "#version: 0.2\na b c\n");
  EXPECT_NE(refusal(d.path.string()).find("vocab.bpe:2: a merge line is two tokens"), std::string::npos);
  d.write(kMergesFile, "#version: 0.2\na b\nb c\n");
  EXPECT_NE(refusal(d.path.string()).find("vocab.bpe:3: the merge 'b c'"), std::string::npos);
}

std::string lookup_refusal(const std::string& spec, const std::string& exe_dir) {
  try {
    return "found " + find_tokenizer_dir(spec, exe_dir);
  } catch (const zerodp::ConfigError& e) {
    return e.message();
  }
}

TEST(TokenizerLookup, Gpt2IsSearchedInOrderAndNamedWhenMissing) {
  TempDir env("zerodp_lookup_env"), prefix("zerodp_lookup_prefix");
  const fs::path exe_dir = prefix.path / "bin";
  const fs::path beside = exe_dir / "share/zerodp/gpt2", installed = prefix.path / "share/zerodp/gpt2",
                 from_env = env.path / "gpt2";
  ::setenv(kDataDirVariable, env.path.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): one thread
  const std::string missing = lookup_refusal("gpt2", exe_dir.string());
  EXPECT_NE(missing.find(from_env.string() + ", " + beside.string() + ", " + installed.string()), std::string::npos)
      << missing;
  EXPECT_NE(missing.find("run scripts/setup"), std::string::npos) << missing;
  write_small_vocab(installed);
  EXPECT_EQ(lookup_refusal("gpt2", exe_dir.string()), "found " + installed.string());
  write_small_vocab(beside);
  EXPECT_EQ(lookup_refusal("gpt2", exe_dir.string()), "found " + beside.string());
  write_small_vocab(from_env);
  EXPECT_EQ(lookup_refusal("gpt2", exe_dir.string()), "found " + from_env.string());
  ::unsetenv(kDataDirVariable);  // NOLINT(concurrency-mt-unsafe): one thread
  EXPECT_EQ(lookup_refusal("gpt2", exe_dir.string()), "found " + beside.string());
  // A directory is taken as given; the files are checked when loaded.
  EXPECT_EQ(lookup_refusal(env.path.string(), ""), "found " + env.path.string());
  EXPECT_NE(lookup_refusal("gpt3", "").find("'gpt3' is neither 'gpt2', a directory nor a file"), std::string::npos);
  const std::string nowhere = lookup_refusal("gpt2", "");
  EXPECT_NE(nowhere.find("looked in nowhere"), std::string::npos) << nowhere;
}

}  // namespace
