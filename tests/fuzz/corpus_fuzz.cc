// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the training-data readers: llm.c token shards and
// text files (load_corpus, read_token_shard). The first input byte picks:
//   0: the rest is a text file (.txt) for load_corpus;
//   1: the rest is a whole .bin shard (raw bytes) for load_corpus;
//   2: a shard with a valid magic and version, the next 4 bytes as the token
//      count and the rest as the payload, for read_token_shard (reaches the
//      size checks and the token reads that random bytes never would).
// Every outcome must be a zerodp::Error or a correct read.
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/llmc_io.h"
#include "train/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerodp;
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  ++data;
  --size;
  static const std::string text_path = fuzz::scratch_path("_train.txt");
  static const std::string bin_path = fuzz::scratch_path("_train.bin");
  try {
    if (mode == 0) {
      fuzz::write_file(text_path, data, size);
      (void)train::load_corpus(text_path);
    } else if (mode == 1) {
      fuzz::write_file(bin_path, data, size);
      (void)train::load_corpus(bin_path, bin_path);
    } else {
      std::vector<int32_t> header(256, 0);
      header[0] = model::kLlmcShardMagic;
      header[1] = model::kLlmcShardVersion;
      header[2] = fuzz::take_i32(data, size);
      std::vector<uint8_t> file(reinterpret_cast<const uint8_t*>(header.data()),
                                reinterpret_cast<const uint8_t*>(header.data()) + header.size() * 4);
      file.insert(file.end(), data, data + size);
      fuzz::write_file(bin_path, file.data(), file.size());
      const std::vector<uint16_t> tokens = model::read_token_shard(bin_path);
      if (tokens.size() != static_cast<size_t>(header[2])) __builtin_trap();  // a wrong read
    }
  } catch (const Error&) {
    // Refused: the expected outcome for a malformed file.
  }
  return 0;
}
