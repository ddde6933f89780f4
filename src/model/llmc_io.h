// SPDX-License-Identifier: Apache-2.0
// llm.c interoperability: GPT-2 model files, token shards, and the debug
// state file the torch reference fixture uses.
//
// Model file (llm.c, fp32): int32 header[256] = {20240326, 3, maxT, V, L, NH,
// C, Vp, 0...}, then fp32 tensors in llm.c's order, each stacked over layers:
// wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb,
// fcprojw, fcprojb, lnfw, lnfb. zerodp's flat order groups by unit instead
// (gpt_config.h); load and save permute between the two.
// Token shard (llm.c): int32 header[256] = {20240520, 1, count, 0...}, then
// count uint16 tokens; llm.c's Llama 3 shards are {20240801, 7, count, ...}
// then uint32 tokens. zerodp writes the first for a vocabulary of up to
// 65,536 tokens and the second above, and records the tokenizer that made
// the tokens in header[3] (its vocab size) and header[4] (its fingerprint,
// text::BpeTokenizer::fingerprint); 0 there (llm.c's shards, zerodp's
// before) means not recorded.
// Debug state (zerodp's fixture format, after llm.c's): int32 header[256] =
// {20240327, 2, B, T, V, Vp, 0...}, then int32 tokens[B*T], int32
// targets[B*T], fp32 logits[B*T*Vp], fp32 loss, fp32 grads[Φ] in llm.c's
// file order.
// Every reader checks magic, version, header values and the exact file size
// before reading, and throws IoError naming the file and the problem; a
// malformed file never crashes or over-reads.
// Thread-safety: functions on distinct files are independent.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "model/gpt_config.h"

namespace zerodp::model {

inline constexpr int32_t kLlmcModelMagic = 20240326;
inline constexpr int32_t kLlmcModelVersionFp32 = 3;
inline constexpr int32_t kLlmcShardMagic = 20240520;
inline constexpr int32_t kLlmcShardVersion = 1;
inline constexpr int32_t kLlmcShard32Magic = 20240801;
inline constexpr int32_t kLlmcShard32Version = 7;
inline constexpr int32_t kDebugStateMagic = 20240327;
inline constexpr int32_t kDebugStateVersion = 2;

struct LlmcModel {
  GptConfig config;
  std::vector<float> params;  // zerodp flat order, gpt_num_params(config) elements
};

// The 256-int header of an llm.c fp32 model file for `config`.
std::array<int32_t, 256> llmc_model_header(const GptConfig& config);

// Reads the whole file (the thread ranks of --init-from use LlmcModelReader).
LlmcModel load_llmc_model(const std::string& path);

// One contiguous run of parameters: `count` elements at `flat` in zerodp's
// order and at `file` in llm.c's (element offsets after the header).
struct LlmcPiece {
  size_t flat = 0, file = 0, count = 0;
};
// Every piece of a model, sorted by flat offset; they tile both orders.
std::vector<LlmcPiece> llmc_pieces(const GptConfig& config);

// An llm.c model file, checked once at open (magic, version, header, exact
// size: InputFileError), read a slice at a time in zerodp's flat order, so a
// rank reads just the parameters it holds.
// Thread-safety: one reader per thread (it owns a file position).
class LlmcModelReader {
 public:
  explicit LlmcModelReader(const std::string& path);
  const GptConfig& config() const { return config_; }
  // Fills `out` with flat parameters [first, first + out.size()).
  void read(size_t first, std::span<float> out);

 private:
  std::string path_;
  GptConfig config_;
  std::ifstream in_;
  std::vector<LlmcPiece> pieces_;
};
void save_llmc_model(const std::string& path, const GptConfig& config, std::span<const float> params);

std::vector<uint16_t> read_token_shard(const std::string& path);
void write_token_shard(const std::string& path, std::span<const uint16_t> tokens);

// The tokenizer a shard records; {0, 0} when it records none.
struct ShardTokenizer {
  int32_t vocab = 0;
  uint32_t fingerprint = 0;
  bool recorded() const { return vocab != 0 || fingerprint != 0; }
};
struct TokenShard {
  std::vector<int32_t> tokens;
  ShardTokenizer made_by;
};
// Either format (uint16 or uint32 tokens), checked as read_token_shard is.
TokenShard read_tokens(const std::string& path);
// uint16 tokens when made_by.vocab <= 65536, else uint32 (llm.c's Llama 3
// format). REQUIRES every token in [0, made_by.vocab).
void write_tokens(const std::string& path, std::span<const int32_t> tokens, ShardTokenizer made_by);

struct DebugState {
  int batch = 0, seq = 0, vocab = 0, padded_vocab = 0;
  std::vector<int32_t> tokens, targets;  // [B*T]
  std::vector<float> logits;             // [B*T*Vp]
  float loss = 0;
  std::vector<float> grads;  // zerodp flat order (converted on load)
};
DebugState read_debug_state(const std::string& path, const GptConfig& config);

// Permutations between llm.c's file order and zerodp's flat order.
void llmc_to_flat(const GptConfig& config, std::span<const float> llmc, std::span<float> flat);
void flat_to_llmc(const GptConfig& config, std::span<const float> flat, std::span<float> llmc);

}  // namespace zerodp::model
