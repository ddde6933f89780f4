// SPDX-License-Identifier: Apache-2.0
#include "model/llmc_io.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace zerodp::model {
namespace {

constexpr size_t kHeaderInts = 256;
constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);
using Header = std::array<int32_t, kHeaderInts>;

// Opens path, checks its size is at least a header, and reads the header.
std::ifstream open_with_header(const std::string& path, Header& h, uintmax_t& file_size) {
  std::error_code ec;
  file_size = std::filesystem::file_size(path, ec);
  ZDP_CHECK(!ec, InputFileError, "[load] cannot read {}: {}", path, ec.message());
  ZDP_CHECK(file_size >= kHeaderBytes, InputFileError, "[load] {} is {} bytes, shorter than the {}-byte header", path,
            file_size, kHeaderBytes);
  std::ifstream in(path, std::ios::binary);
  ZDP_CHECK(in.good(), InputFileError, "[load] cannot open {}", path);
  in.read(reinterpret_cast<char*>(h.data()), kHeaderBytes);
  ZDP_CHECK(in.good(), InputFileError, "[load] {}: reading the header failed", path);
  return in;
}

void read_exact(std::ifstream& in, void* dst, size_t bytes, const std::string& path, const char* what) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  ZDP_CHECK(in.good() && size_t(in.gcount()) == bytes, InputFileError, "[load] {}: truncated while reading {}", path,
            what);
}

void write_all(std::ofstream& out, const void* src, size_t bytes, const std::string& path) {
  out.write(static_cast<const char*>(src), static_cast<std::streamsize>(bytes));
  ZDP_CHECK(out.good(), IoError, "[save] writing {} failed", path);
}

// GptConfig from header[2..7], checked before any size is computed from it.
GptConfig config_from_header(const Header& h, const std::string& path) {
  GptConfig c{h[2], h[3], h[7], h[4], h[5], h[6]};
  try {
    c.validate();
  } catch (const ConfigError& e) {
    ZDP_THROW(InputFileError, "[load] {}: header describes an invalid model: {}", path, e.message());
  }
  return c;
}

// For each llm.c tensor in file order: its size per layer and where it sits
// inside a block unit; the embedding and ln_f tensors are handled apart.
struct Stacked {
  size_t per_layer;
  size_t block_offset;
};
std::array<Stacked, 12> stacked_tensors(const GptConfig& c) {
  const size_t C = c.channels;
  const BlockLayout b = block_layout(c.channels);
  return {{{C, b.ln1w},
           {C, b.ln1b},
           {3 * C * C, b.qkvw},
           {3 * C, b.qkvb},
           {C * C, b.attprojw},
           {C, b.attprojb},
           {C, b.ln2w},
           {C, b.ln2b},
           {4 * C * C, b.fcw},
           {4 * C, b.fcb},
           {4 * C * C, b.fcprojw},
           {C, b.fcprojb}}};
}

template <bool kToFlat>
void permute(const GptConfig& c, std::span<const float> src, std::span<float> dst) {
  const size_t n = gpt_num_params(c);
  ZDP_CHECK(src.size() == n && dst.size() == n, ShapeError,
            "[llmc] parameter buffers have {} and {} elements, expected {}", src.size(), dst.size(), n);
  for (const LlmcPiece& p : llmc_pieces(c)) {
    const size_t from = kToFlat ? p.file : p.flat;
    const size_t to = kToFlat ? p.flat : p.file;
    std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(from), p.count,
                dst.begin() + static_cast<std::ptrdiff_t>(to));
  }
}

// Opens an llm.c model file and checks magic, version, header and size.
std::ifstream open_llmc_model(const std::string& path, GptConfig& config) {
  Header h{};
  uintmax_t size = 0;
  std::ifstream in = open_with_header(path, h, size);
  ZDP_CHECK(h[0] == kLlmcModelMagic, InputFileError, "[load] {}: bad magic {} (an llm.c model file starts with {})",
            path, h[0], kLlmcModelMagic);
  ZDP_CHECK(h[1] == kLlmcModelVersionFp32, InputFileError,
            "[load] {}: version {} is not supported; zerodp reads fp32 model files (version {})", path, h[1],
            kLlmcModelVersionFp32);
  config = config_from_header(h, path);
  const size_t n = gpt_num_params(config);
  const uintmax_t want = kHeaderBytes + uintmax_t(n) * sizeof(float);
  ZDP_CHECK(size == want, InputFileError, "[load] {}: file is {} bytes but its header ({}) needs {} ({} parameters)",
            path, size, config.describe(), want, n);
  return in;
}

}  // namespace

std::vector<LlmcPiece> llmc_pieces(const GptConfig& c) {
  const size_t emb = embedding_unit_params(c);
  const size_t block = block_layout(c.channels).count;
  const size_t L = c.layers;
  const size_t n = gpt_num_params(c);
  std::vector<LlmcPiece> pieces;
  // wte, wpe: the same place in both orders; so is ln_f at the very end.
  pieces.push_back({0, 0, emb});
  size_t file_offset = emb;
  for (const Stacked& t : stacked_tensors(c)) {
    for (size_t l = 0; l < L; ++l)
      pieces.push_back({emb + l * block + t.block_offset, file_offset + l * t.per_layer, t.per_layer});
    file_offset += L * t.per_layer;
  }
  pieces.push_back({n - 2 * size_t(c.channels), n - 2 * size_t(c.channels), 2 * size_t(c.channels)});
  std::sort(pieces.begin(), pieces.end(), [](const LlmcPiece& a, const LlmcPiece& b) { return a.flat < b.flat; });
  return pieces;
}

void llmc_to_flat(const GptConfig& c, std::span<const float> llmc, std::span<float> flat) {
  permute<true>(c, llmc, flat);
}
void flat_to_llmc(const GptConfig& c, std::span<const float> flat, std::span<float> llmc) {
  permute<false>(c, flat, llmc);
}

LlmcModelReader::LlmcModelReader(const std::string& path) : path_(path), in_(open_llmc_model(path, config_)) {
  pieces_ = llmc_pieces(config_);
}

void LlmcModelReader::read(size_t first, std::span<float> out) {
  const size_t n = gpt_num_params(config_);
  ZDP_CHECK(first <= n && out.size() <= n - first, ShapeError,
            "[load] {}: elements [{}, {}) lie past its {} parameters", path_, first, first + out.size(), n);
  // The last piece starting at or before `first`, then on in flat order.
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), first,
                             [](size_t at, const LlmcPiece& p) { return at < p.flat; });
  --it;
  size_t done = 0;
  while (done < out.size()) {
    const size_t at = first + done;
    const size_t skip = at - it->flat;
    const size_t count = std::min(it->count - skip, out.size() - done);
    in_.seekg(static_cast<std::streamoff>(kHeaderBytes + (it->file + skip) * sizeof(float)));
    read_exact(in_, out.data() + done, count * sizeof(float), path_, "parameters");
    done += count;
    ++it;
  }
}

LlmcModel load_llmc_model(const std::string& path) {
  LlmcModelReader reader(path);
  LlmcModel m;
  m.config = reader.config();
  m.params.resize(gpt_num_params(m.config));
  reader.read(0, m.params);
  return m;
}

std::array<int32_t, 256> llmc_model_header(const GptConfig& c) {
  Header h{};
  h[0] = kLlmcModelMagic;
  h[1] = kLlmcModelVersionFp32;
  h[2] = c.max_seq_len;
  h[3] = c.vocab;
  h[4] = c.layers;
  h[5] = c.heads;
  h[6] = c.channels;
  h[7] = c.padded_vocab;
  return h;
}

void save_llmc_model(const std::string& path, const GptConfig& c, std::span<const float> params) {
  c.validate();
  const size_t n = gpt_num_params(c);
  ZDP_CHECK_EQ(params.size(), n, ShapeError, "[save] parameter count");
  const Header h = llmc_model_header(c);
  std::vector<float> llmc(n);
  flat_to_llmc(c, params, llmc);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ZDP_CHECK(out.good(), IoError, "[save] cannot create {}", path);
  write_all(out, h.data(), kHeaderBytes, path);
  write_all(out, llmc.data(), n * sizeof(float), path);
  out.close();
  ZDP_CHECK(!out.fail(), IoError, "[save] closing {} failed", path);
}

std::vector<uint16_t> read_token_shard(const std::string& path) {
  Header h{};
  uintmax_t size = 0;
  std::ifstream in = open_with_header(path, h, size);
  ZDP_CHECK(h[0] == kLlmcShardMagic, InputFileError, "[load] {}: bad magic {} (an llm.c token shard starts with {})",
            path, h[0], kLlmcShardMagic);
  ZDP_CHECK(h[1] == kLlmcShardVersion, InputFileError,
            "[load] {}: token shard version {} is not supported (expected {})", path, h[1], kLlmcShardVersion);
  ZDP_CHECK(h[2] >= 0, InputFileError, "[load] {}: negative token count {}", path, h[2]);
  const uintmax_t want = kHeaderBytes + uintmax_t(h[2]) * sizeof(uint16_t);
  ZDP_CHECK(size == want, InputFileError, "[load] {}: file is {} bytes but its header says {} tokens ({} bytes)", path,
            size, h[2], want);
  std::vector<uint16_t> tokens(static_cast<size_t>(h[2]));
  read_exact(in, tokens.data(), tokens.size() * sizeof(uint16_t), path, "tokens");
  return tokens;
}

void write_token_shard(const std::string& path, std::span<const uint16_t> tokens) {
  ZDP_CHECK(tokens.size() <= size_t(INT32_MAX), ShapeError, "[save] {} tokens do not fit one shard", tokens.size());
  Header h{};
  h[0] = kLlmcShardMagic;
  h[1] = kLlmcShardVersion;
  h[2] = static_cast<int32_t>(tokens.size());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ZDP_CHECK(out.good(), IoError, "[save] cannot create {}", path);
  write_all(out, h.data(), kHeaderBytes, path);
  write_all(out, tokens.data(), tokens.size() * sizeof(uint16_t), path);
  out.close();
  ZDP_CHECK(!out.fail(), IoError, "[save] closing {} failed", path);
}

TokenShard read_tokens(const std::string& path) {
  Header h{};
  uintmax_t size = 0;
  std::ifstream in = open_with_header(path, h, size);
  const bool wide = h[0] == kLlmcShard32Magic;
  ZDP_CHECK(h[0] == kLlmcShardMagic || wide, InputFileError,
            "[load] {}: bad magic {} (an llm.c token shard starts with {}, or {} with uint32 tokens)", path, h[0],
            kLlmcShardMagic, kLlmcShard32Magic);
  const int32_t version = wide ? kLlmcShard32Version : kLlmcShardVersion;
  ZDP_CHECK(h[1] == version, InputFileError, "[load] {}: token shard version {} is not supported (expected {})", path,
            h[1], version);
  ZDP_CHECK(h[2] >= 0, InputFileError, "[load] {}: negative token count {}", path, h[2]);
  ZDP_CHECK(h[3] >= 0, InputFileError, "[load] {}: negative tokenizer vocab {} in header[3]", path, h[3]);
  const size_t width = wide ? sizeof(uint32_t) : sizeof(uint16_t);
  const uintmax_t want = kHeaderBytes + uintmax_t(h[2]) * width;
  ZDP_CHECK(size == want, InputFileError, "[load] {}: file is {} bytes but its header says {} tokens ({} bytes)", path,
            size, h[2], want);
  TokenShard shard;
  shard.made_by = {h[3], static_cast<uint32_t>(h[4])};
  shard.tokens.resize(static_cast<size_t>(h[2]));
  if (wide) {
    std::vector<uint32_t> raw(shard.tokens.size());
    read_exact(in, raw.data(), raw.size() * width, path, "tokens");
    for (size_t i = 0; i < raw.size(); ++i) {
      ZDP_CHECK(raw[i] <= uint32_t(INT32_MAX), InputFileError, "[load] {}: token {} is {}, above 2^31-1", path, i,
                raw[i]);
      shard.tokens[i] = static_cast<int32_t>(raw[i]);
    }
  } else {
    std::vector<uint16_t> raw(shard.tokens.size());
    read_exact(in, raw.data(), raw.size() * width, path, "tokens");
    shard.tokens.assign(raw.begin(), raw.end());
  }
  return shard;
}

void write_tokens(const std::string& path, std::span<const int32_t> tokens, ShardTokenizer made_by) {
  ZDP_CHECK(tokens.size() <= size_t(INT32_MAX), ShapeError, "[save] {} tokens do not fit one shard", tokens.size());
  const bool wide = made_by.vocab > 65536;
  Header h{};
  h[0] = wide ? kLlmcShard32Magic : kLlmcShardMagic;
  h[1] = wide ? kLlmcShard32Version : kLlmcShardVersion;
  h[2] = static_cast<int32_t>(tokens.size());
  h[3] = made_by.vocab;
  h[4] = static_cast<int32_t>(made_by.fingerprint);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ZDP_CHECK(out.good(), IoError, "[save] cannot create {}", path);
  write_all(out, h.data(), kHeaderBytes, path);
  if (wide) {
    const std::vector<uint32_t> raw(tokens.begin(), tokens.end());
    write_all(out, raw.data(), raw.size() * sizeof(uint32_t), path);
  } else {
    const std::vector<uint16_t> raw(tokens.begin(), tokens.end());
    write_all(out, raw.data(), raw.size() * sizeof(uint16_t), path);
  }
  out.close();
  ZDP_CHECK(!out.fail(), IoError, "[save] closing {} failed", path);
}

DebugState read_debug_state(const std::string& path, const GptConfig& c) {
  Header h{};
  uintmax_t size = 0;
  std::ifstream in = open_with_header(path, h, size);
  ZDP_CHECK(h[0] == kDebugStateMagic, InputFileError, "[load] {}: bad magic {} (a debug state starts with {})", path,
            h[0], kDebugStateMagic);
  ZDP_CHECK(h[1] == kDebugStateVersion, InputFileError, "[load] {}: debug state version {} (expected {})", path, h[1],
            kDebugStateVersion);
  DebugState s;
  s.batch = h[2];
  s.seq = h[3];
  s.vocab = h[4];
  s.padded_vocab = h[5];
  ZDP_CHECK(s.batch >= 1 && s.seq >= 1 && s.batch <= 65536 && s.seq <= 65536, InputFileError,
            "[load] {}: bad batch shape {} x {}", path, s.batch, s.seq);
  ZDP_CHECK(s.vocab == c.vocab && s.padded_vocab == c.padded_vocab, InputFileError,
            "[load] {}: vocab {} / {} does not match the model's {} / {}", path, s.vocab, s.padded_vocab, c.vocab,
            c.padded_vocab);
  const size_t bt = size_t(s.batch) * s.seq;
  const size_t n = gpt_num_params(c);
  const uintmax_t want = kHeaderBytes + bt * 8 + bt * size_t(s.padded_vocab) * 4 + 4 + n * 4;
  ZDP_CHECK(size == want, InputFileError, "[load] {}: file is {} bytes, expected {} for this model and batch", path,
            size, want);
  s.tokens.resize(bt);
  s.targets.resize(bt);
  s.logits.resize(bt * s.padded_vocab);
  read_exact(in, s.tokens.data(), bt * 4, path, "tokens");
  read_exact(in, s.targets.data(), bt * 4, path, "targets");
  read_exact(in, s.logits.data(), s.logits.size() * 4, path, "logits");
  read_exact(in, &s.loss, 4, path, "loss");
  std::vector<float> llmc(n);
  read_exact(in, llmc.data(), n * 4, path, "gradients");
  s.grads.resize(n);
  llmc_to_flat(c, llmc, s.grads);
  return s;
}

}  // namespace zerodp::model
