// SPDX-License-Identifier: Apache-2.0
// llm.c model files and token shards: round trips and malformed files.
#include "model/llmc_io.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/gpt.h"

namespace zerodp::model {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("zerodp_llmc_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<char> read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_all(const std::string& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void expect_io_error(const std::string& path, const std::string& needle, bool shard) {
  try {
    if (shard) {
      read_token_shard(path);
    } else {
      load_llmc_model(path);
    }
    ADD_FAILURE() << "no error for " << needle;
  } catch (const IoError& e) {
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
}

TEST(LlmcIo, ModelRoundTripIsBitwise) {
  const GptConfig c{8, 30, 32, 2, 2, 8};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  m.init_params(params, 3);
  for (size_t i = 0; i < params.size(); ++i) params[i] += 1e-3f * float(i % 17);  // biases too
  const std::string p = temp_path("model.bin");
  save_llmc_model(p, c, params);
  EXPECT_EQ(std::filesystem::file_size(p), 1024 + params.size() * 4);
  LlmcModel back = load_llmc_model(p);
  EXPECT_EQ(back.config, c);
  EXPECT_EQ(std::memcmp(back.params.data(), params.data(), params.size() * 4), 0);
  // The file is in llm.c order: right after wte and wpe come ln1w of both layers (all 1 + offsets).
  std::vector<float> llmc(params.size());
  flat_to_llmc(c, params, llmc);
  const size_t emb = embedding_unit_params(c);
  const BlockLayout lay = block_layout(c.channels);
  EXPECT_EQ(llmc[emb + c.channels], params[emb + lay.count + lay.ln1w]);  // layer 1's ln1w[0]
  std::remove(p.c_str());
}

// What --init-from does on each rank: read just a slice, in flat order.
TEST(LlmcIo, ReaderReadsAnySliceInFlatOrder) {
  const GptConfig c{8, 30, 32, 3, 2, 8};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  for (size_t i = 0; i < params.size(); ++i) params[i] = float(i);  // every element tells where it belongs
  const std::string p = temp_path("slices.bin");
  save_llmc_model(p, c, params);
  LlmcModelReader reader(p);
  EXPECT_EQ(reader.config(), c);
  for (size_t first : {size_t{0}, size_t{1}, size_t{255}, params.size() / 3, params.size() - 17}) {
    for (size_t count : {size_t{1}, size_t{16}, size_t{1000}}) {
      if (first + count > params.size()) continue;
      std::vector<float> part(count);
      reader.read(first, part);
      EXPECT_EQ(std::memcmp(part.data(), params.data() + first, count * 4), 0) << first << " + " << count;
    }
  }
  std::vector<float> two(2);
  EXPECT_THROW(reader.read(params.size() - 1, two), ShapeError);
  std::remove(p.c_str());
}

TEST(LlmcIo, MalformedModelFilesGiveClearErrors) {
  const GptConfig c{8, 30, 32, 1, 2, 8};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  const std::string p = temp_path("bad.bin");
  save_llmc_model(p, c, params);
  const auto good = read_all(p);
  auto bytes = good;
  bytes[0] ^= 1;
  write_all(p, bytes);
  expect_io_error(p, "bad magic", false);
  bytes = good;
  bytes[4] = 5;  // version 5 (bf16)
  write_all(p, bytes);
  expect_io_error(p, "version 5", false);
  bytes = good;
  bytes.resize(bytes.size() - 4);
  write_all(p, bytes);
  expect_io_error(p, "needs", false);
  bytes = good;
  bytes.resize(100);
  write_all(p, bytes);
  expect_io_error(p, "header", false);
  bytes = good;
  int32_t heads = 3;  // channels 8 % 3
  std::memcpy(bytes.data() + 5 * 4, &heads, 4);
  write_all(p, bytes);
  expect_io_error(p, "invalid model", false);
  bytes = good;
  int32_t layers = 1 << 30;  // a huge size must not be allocated or read
  std::memcpy(bytes.data() + 4 * 4, &layers, 4);
  write_all(p, bytes);
  expect_io_error(p, "needs", false);
  expect_io_error(temp_path("missing.bin"), "cannot read", false);
  std::remove(p.c_str());
}

TEST(LlmcIo, TokenShards) {
  const std::string p = temp_path("shard.bin");
  std::vector<uint16_t> tokens{0, 1, 50256, 7, 65535};
  write_token_shard(p, tokens);
  EXPECT_EQ(read_token_shard(p), tokens);
  auto good = read_all(p);
  auto bytes = good;
  bytes.pop_back();
  write_all(p, bytes);
  expect_io_error(p, "says 5 tokens", true);
  bytes = good;
  bytes[0] = 0;
  write_all(p, bytes);
  expect_io_error(p, "bad magic", true);
  bytes = good;
  int32_t negative = -3;
  std::memcpy(bytes.data() + 8, &negative, 4);
  write_all(p, bytes);
  expect_io_error(p, "negative", true);
  std::remove(p.c_str());
}

// Either width, with the tokenizer recorded; a shard from before (or from
// llm.c) records none and reads the same.
TEST(LlmcIo, TokenShardsOfAnyTokenizer) {
  const std::string p = temp_path("tokens.bin");
  const std::vector<int32_t> narrow{0, 1, 50256, 65535};
  write_tokens(p, narrow, {50257, 0xdeadbeefu});
  EXPECT_EQ(read_all(p).size(), 1024u + 2 * narrow.size());
  TokenShard shard = read_tokens(p);
  EXPECT_EQ(shard.tokens, narrow);
  EXPECT_EQ(shard.made_by.vocab, 50257);
  EXPECT_EQ(shard.made_by.fingerprint, 0xdeadbeefu);
  EXPECT_EQ(read_token_shard(p), (std::vector<uint16_t>{0, 1, 50256, 65535}));  // still llm.c's GPT-2 format

  const std::vector<int32_t> wide{0, 128000, 151935, 65536};
  write_tokens(p, wide, {151936, 7});
  const auto bytes = read_all(p);
  EXPECT_EQ(bytes.size(), 1024u + 4 * wide.size());
  int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], kLlmcShard32Magic);  // llm.c's Llama 3 format
  EXPECT_EQ(header[1], kLlmcShard32Version);
  shard = read_tokens(p);
  EXPECT_EQ(shard.tokens, wide);
  EXPECT_EQ(shard.made_by.vocab, 151936);
  auto cut = bytes;
  cut.pop_back();
  write_all(p, cut);
  try {
    read_tokens(p);
    ADD_FAILURE() << "a truncated uint32 shard was read";
  } catch (const IoError& e) {
    EXPECT_NE(e.message().find("says 4 tokens"), std::string::npos) << e.message();
  }

  const std::vector<uint16_t> old{5, 6, 7};
  write_token_shard(p, old);
  shard = read_tokens(p);
  EXPECT_EQ(shard.tokens, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_FALSE(shard.made_by.recorded());
  std::remove(p.c_str());
}

}  // namespace
}  // namespace zerodp::model
