// SPDX-License-Identifier: Apache-2.0
// Hugging Face GPT-2 export and the --init-from reader: the HF layout's names,
// shapes and Conv1D orientation (checked against a mapping written out by
// hand here, not the library's table), every flat range read back from each
// of the three formats, the refusals, and the committed fixture
// (tools/make_hf_fixture.py): its weights load bitwise, zerodp's logits match
// torch's, and HF -> zerodp -> HF gives the same bytes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_test_util.h"
#include "ckpt/offline.h"
#include "kernels/linear.h"
#include "model/gpt.h"
#include "model/gpt_family.h"
#include "model/gpt_workspace.h"
#include "model/llmc_io.h"
#include "weights/consolidate.h"
#include "weights/export_format.h"
#include "weights/hf_format.h"
#include "weights/model_record.h"
#include "weights/weights_reader.h"

namespace zerodp::weights::testing::hf {
namespace {

// The checkpoints these tests export come from ckpt and its test helpers.
using namespace zerodp::ckpt;           // NOLINT(google-build-using-namespace)
using namespace zerodp::ckpt::testing;  // NOLINT(google-build-using-namespace)

const std::string kFixture = ZERODP_HF_FIXTURE_DIR;

// HF's tensors put into zerodp's flat order, written out by hand: Conv1D
// weights [in, out] become Linear weights [out, in]; wte's padded rows are 0.
std::vector<float> hf_to_flat(const model::GptConfig& g, const Safetensors& s, const std::string& p = "transformer.") {
  const size_t C = g.channels;
  std::vector<float> flat(model::gpt_num_params(g), 0.0f);
  auto put = [&](size_t at, const std::vector<float>& t) { std::copy(t.begin(), t.end(), flat.begin() + long(at)); };
  // `w` is [in, out]; flat gets [out, in].
  auto put_t = [&](size_t at, const std::vector<float>& w, size_t in, size_t out) {
    ASSERT_EQ(w.size(), in * out);
    for (size_t o = 0; o < out; ++o) {
      for (size_t i = 0; i < in; ++i) flat[at + o * in + i] = w[i * out + o];
    }
  };
  put(0, tensor(s, p + "wte.weight"));
  put(size_t(g.padded_vocab) * C, tensor(s, p + "wpe.weight"));
  const model::BlockLayout b = model::block_layout(g.channels);
  for (int l = 0; l < g.layers; ++l) {
    const size_t u = model::embedding_unit_params(g) + size_t(l) * b.count;
    const std::string h = p + "h." + std::to_string(l) + ".";
    put(u + b.ln1w, tensor(s, h + "ln_1.weight"));
    put(u + b.ln1b, tensor(s, h + "ln_1.bias"));
    put_t(u + b.qkvw, tensor(s, h + "attn.c_attn.weight"), C, 3 * C);
    put(u + b.qkvb, tensor(s, h + "attn.c_attn.bias"));
    put_t(u + b.attprojw, tensor(s, h + "attn.c_proj.weight"), C, C);
    put(u + b.attprojb, tensor(s, h + "attn.c_proj.bias"));
    put(u + b.ln2w, tensor(s, h + "ln_2.weight"));
    put(u + b.ln2b, tensor(s, h + "ln_2.bias"));
    put_t(u + b.fcw, tensor(s, h + "mlp.c_fc.weight"), C, 4 * C);
    put(u + b.fcb, tensor(s, h + "mlp.c_fc.bias"));
    put_t(u + b.fcprojw, tensor(s, h + "mlp.c_proj.weight"), 4 * C, C);
    put(u + b.fcprojb, tensor(s, h + "mlp.c_proj.bias"));
  }
  put(flat.size() - 2 * C, tensor(s, p + "ln_f.weight"));
  put(flat.size() - C, tensor(s, p + "ln_f.bias"));
  return flat;
}

const model::GptConfig kSmall{
    .max_seq_len = 8, .vocab = 50, .padded_vocab = 64, .layers = 2, .heads = 2, .channels = 8};

// Distinct values everywhere but wte's padded rows, which stay 0 (as
// training keeps them: no token and no logit reaches them).
std::vector<float> distinct_params(const model::GptConfig& g) {
  std::vector<float> flat(model::gpt_num_params(g));
  std::mt19937 gen(7);
  std::normal_distribution<float> dist;
  for (auto& x : flat) x = dist(gen);
  std::fill(flat.begin() + long(g.vocab) * g.channels, flat.begin() + long(g.padded_vocab) * g.channels, 0.0f);
  return flat;
}

model::ModelConfig gpt_model(const model::GptConfig& g) { return model::gpt_model_config("custom", g); }

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::vector<float> read_all(GptWeightsReader& r) {
  std::vector<float> out(model::gpt_num_params(r.config()));
  r.read(0, out);
  return out;
}

TEST(HfExport, NamesShapesAndConv1dOrientation) {
  TempDir dir;
  const model::GptConfig& g = kSmall;
  const std::vector<float> flat = distinct_params(g);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  // Default slices (each matrix in one block) and tiny ones (qkvw's 24 rows
  // in blocks of 5, wte in slices of 40): the same bytes.
  const std::vector<ExportTensor> tensors = hf_gpt2_tensors(g);
  const uint64_t big = write_safetensors(dir / "a/model.safetensors", tensors, flat, {{"format", "pt"}});
  const uint64_t small = write_safetensors(dir / "b/model.safetensors", tensors, flat, {{"format", "pt"}}, "", 40);
  EXPECT_EQ(read_bytes(dir / "a/model.safetensors"), read_bytes(dir / "b/model.safetensors"));
  EXPECT_LE(small, 4u * (40 + 40));  // a block of whole rows <= the slice, plus one column of it
  EXPECT_GT(big, small);

  const Safetensors s = parse_safetensors(dir / "a/model.safetensors");
  EXPECT_EQ(s.header.size(), 1u + 2 + 12 * g.layers + 2);
  EXPECT_EQ(s.header.at("__metadata__"), nlohmann::json({{"format", "pt"}}));
  EXPECT_EQ(s.header.at("transformer.wte.weight").at("shape"), nlohmann::json({50, 8}));  // unpadded
  EXPECT_EQ(s.header.at("transformer.wpe.weight").at("shape"), nlohmann::json({8, 8}));
  EXPECT_EQ(s.header.at("transformer.h.1.attn.c_attn.weight").at("shape"), nlohmann::json({8, 24}));
  EXPECT_EQ(s.header.at("transformer.h.1.attn.c_attn.bias").at("shape"), nlohmann::json({24}));
  EXPECT_EQ(s.header.at("transformer.h.0.attn.c_proj.weight").at("shape"), nlohmann::json({8, 8}));
  EXPECT_EQ(s.header.at("transformer.h.0.mlp.c_fc.weight").at("shape"), nlohmann::json({8, 32}));
  EXPECT_EQ(s.header.at("transformer.h.0.mlp.c_proj.weight").at("shape"), nlohmann::json({32, 8}));
  EXPECT_EQ(s.header.at("transformer.ln_f.bias").at("shape"), nlohmann::json({8}));
  EXPECT_FALSE(s.header.contains("lm_head.weight"));
  EXPECT_TRUE(bitwise_equal(hf_to_flat(g, s), flat));
  // One element by hand: c_attn.weight[i][o] is qkvw[o][i] (o = 2C + 3: v).
  const model::BlockLayout b = model::block_layout(8);
  const size_t u1 = model::embedding_unit_params(g) + b.count;
  EXPECT_EQ(tensor(s, "transformer.h.1.attn.c_attn.weight")[5 * 24 + 19], flat[u1 + b.qkvw + 19 * 8 + 5]);

  const nlohmann::json c = nlohmann::json::parse(hf_gpt2_config_json(g));
  EXPECT_EQ(c.at("model_type"), "gpt2");
  EXPECT_EQ(c.at("architectures"), nlohmann::json({"GPT2LMHeadModel"}));
  EXPECT_EQ(c.at("activation_function"), "gelu_new");
  EXPECT_EQ(c.at("layer_norm_epsilon"), 1e-5);
  EXPECT_EQ(c.at("n_embd"), 8);
  EXPECT_EQ(c.at("n_head"), 2);
  EXPECT_EQ(c.at("n_layer"), 2);
  EXPECT_EQ(c.at("n_positions"), 8);
  EXPECT_EQ(c.at("n_ctx"), 8);
  EXPECT_EQ(c.at("vocab_size"), 50);
  EXPECT_EQ(c.at("tie_word_embeddings"), true);
  EXPECT_TRUE(c.at("eos_token_id").is_null());  // only GPT-2's own vocabulary has <|endoftext|> = 50256
}

// Each format read back through every kind of range: whole, one element at
// a time across tensor boundaries, and ragged chunks like a rank's.
TEST(HfImport, EveryFormatReadsBackEveryRange) {
  TempDir dir;
  const model::GptConfig& g = kSmall;
  const std::vector<float> flat = distinct_params(g);
  model::save_llmc_model(dir / "model.bin", g, flat);
  write_safetensors(dir / "zerodp.safetensors", export_tensors(gpt_model(g)), flat,
                    {{"model", model_config_json(gpt_model(g))}});
  fs::create_directories(dir / "hf");
  std::vector<std::string> written;
  write_hf_gpt2(
      dir / "hf", g,
      [&](size_t at, std::span<float> out) { std::copy_n(flat.begin() + long(at), out.size(), out.begin()); }, {},
      written);
  EXPECT_EQ(written, (std::vector<std::string>{"model.safetensors", "config.json"}));
  fs::create_directories(dir / "bare");  // GPT2Model's names, no config.json
  write_safetensors(dir / "bare/weights", hf_gpt2_tensors(g, ""), flat, {{"format", "pt"}});

  const struct {
    std::string path;
    WeightsFormat format;
  } files[] = {{dir / "model.bin", WeightsFormat::kLlmc},
               {dir / "zerodp.safetensors", WeightsFormat::kZerodpSafetensors},
               {dir / "hf/model.safetensors", WeightsFormat::kHfSafetensors},
               {dir / "bare/weights", WeightsFormat::kHfSafetensors}};
  for (const auto& f : files) {
    GptWeightsReader r(f.path, g);
    EXPECT_EQ(r.format(), f.format) << f.path;
    // The memory plan's load_scratch: an HF file's transpose cache holds a
    // whole Conv1D matrix this small (c_fc's 4C x C, the largest, as the
    // MLP's c_proj) and the file run of its 4C rows; the others read in place.
    const uint64_t C = g.channels;
    EXPECT_EQ(r.scratch_bytes(), f.format == WeightsFormat::kHfSafetensors ? 4 * (4 * C * C + 4 * C) : 0) << f.path;
    EXPECT_TRUE(bitwise_equal(read_all(r), flat)) << f.path;
    std::vector<float> one(1), got(flat.size());
    for (size_t i = flat.size(); i-- > 0;) {  // backwards: every cache miss
      r.read(i, one);
      got[i] = one[0];
    }
    EXPECT_TRUE(bitwise_equal(got, flat)) << f.path;
    for (size_t chunk : {7u, 100u, 333u}) {
      for (size_t at = 0; at < flat.size(); at += chunk) {
        std::span<float> part = std::span<float>(got).subspan(at, std::min(chunk, flat.size() - at));
        r.read(at, part);
      }
      EXPECT_TRUE(bitwise_equal(got, flat)) << f.path << " in chunks of " << chunk;
    }
  }
  EXPECT_NE(GptWeightsReader(dir / "hf/model.safetensors", g).description().find("config.json"), std::string::npos);
  EXPECT_NE(GptWeightsReader(dir / "bare/weights", g).description().find("heads as --model's"), std::string::npos);
}

// GPT-2's Hugging Face layout through the writer and reader every family
// shares (hf_checkpoint.h): BF16 and F16, in one file and in shards with
// an index, read from the directory as the rounded values at every range,
// through the 16-bit transpose cache the memory plan counts.
TEST(HfImport, Bf16AndF16ShardsReadAsTheirValues) {
  const model::GptConfig& g = kSmall;
  const std::vector<float> flat = distinct_params(g);
  const PieceReader read = [&](size_t at, std::span<float> out) {
    std::copy_n(flat.begin() + long(at), out.size(), out.begin());
  };
  for (Dtype dtype : {Dtype::bf16(), Dtype::fp16()}) {
    for (uint64_t shard_bytes : {uint64_t{0}, uint64_t{2000}}) {
      SCOPED_TRACE(fmt::format("{} in shards of {} bytes", dtype.name(), shard_bytes));
      TempDir dir;
      std::vector<std::string> written;
      write_hf_gpt2(dir.path(), g, read, {.dtype = dtype, .max_shard_bytes = shard_bytes}, written);
      EXPECT_EQ(fs::exists(dir / "model.safetensors.index.json"), shard_bytes > 0);
      EXPECT_GT(written.size(), shard_bytes > 0 ? 3u : 1u);
      const std::vector<char> config = read_bytes(dir / "config.json");
      EXPECT_NE(std::string(config.begin(), config.end()).find(dtype == Dtype::bf16() ? "bfloat16" : "float16"),
                std::string::npos);
      std::vector<float> want = flat;
      for (float& f : want)
        f = dtype == Dtype::bf16() ? bfloat16_to_float(float_to_bfloat16(f)) : half_to_float(float_to_half(f));
      GptWeightsReader r(dir.path(), g);
      EXPECT_EQ(r.format(), WeightsFormat::kHfSafetensors);
      EXPECT_TRUE(bitwise_equal(read_all(r), want));
      std::vector<float> one(1), got(flat.size());
      for (size_t i = flat.size(); i-- > 0;) {  // backwards: every cache miss
        r.read(i, one);
        got[i] = one[0];
      }
      EXPECT_TRUE(bitwise_equal(got, want));
      // F32's transpose cache and run, and the 2-byte values of the largest
      // read in one go: wte's V x C (up to the cache's size), past 4C rows.
      const uint64_t C = g.channels, V = g.vocab;
      EXPECT_EQ(r.scratch_bytes(), 4 * (4 * C * C + 4 * C) + 2 * std::max(V * C, 4 * C));
    }
  }
}

// Expects `what` thrown with a message that has every needle and no newline.
template <typename E>
void expect_refused(const std::function<void()>& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "not refused";
  } catch (const E& e) {
    for (const auto& n : needles) EXPECT_NE(e.message().find(n), std::string::npos) << e.message();
    EXPECT_EQ(e.message().find('\n'), std::string::npos) << e.message();
  }
}

TEST(HfImport, Refusals) {
  TempDir dir;
  const model::GptConfig& g = kSmall;
  const std::vector<float> flat = distinct_params(g);
  fs::create_directories(dir / "hf");
  const PieceReader read = [&](size_t at, std::span<float> out) {
    std::copy_n(flat.begin() + long(at), out.size(), out.begin());
  };
  std::vector<std::string> written;
  write_hf_gpt2(dir / "hf", g, read, {}, written);
  const std::string hf = dir / "hf/model.safetensors";

  // Another model than --model: ConfigError naming the file, both models and the --model that fits.
  model::GptConfig wider = g;
  wider.layers = 3;
  expect_refused<ConfigError>([&] { GptWeightsReader(hf, wider); },
                              {hf, "Hugging Face GPT-2 safetensors", "L=2", "L=3", "--model '{\"kind\":\"gpt\""});
  model::GptConfig vocab = g;
  vocab.vocab = 60;
  expect_refused<ConfigError>([&] { GptWeightsReader(hf, vocab); }, {"V=50", "V=60"});

  // Truncated, extended, not a weights file at all.
  auto bytes = read_bytes(hf);
  write_bytes(dir / "short.safetensors", {bytes.begin(), bytes.end() - 4});
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "short.safetensors", g); },
                                 {"short.safetensors", "truncated"});
  auto longer = bytes;
  longer.push_back(0);
  write_bytes(dir / "long.safetensors", longer);
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "long.safetensors", g); }, {"appended"});
  write_bytes(dir / "text.txt", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "text.txt", g); }, {"text.txt", "not a weights file"});
  write_bytes(dir / "empty", {});
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "empty", g); }, {"not a weights file"});
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "missing", g); }, {"missing"});
  // A safetensors file of something else (an optimizer state's names).
  write_safetensors(dir / "exp_avg.safetensors", export_tensors(gpt_model(g)), flat, {}, "exp_avg.");
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "exp_avg.safetensors", g); },
                                 {"without GPT weights zerodp knows"});
  // A tensor of the wrong shape; a missing one; another dtype.
  std::vector<ExportTensor> tensors = hf_gpt2_tensors(g);
  tensors[4].shape = {24, 8};
  write_safetensors(dir / "shape.safetensors", tensors, flat, {});
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "shape.safetensors", g); },
                                 {"transformer.h.0.attn.c_attn.weight", "[24, 8]", "[8, 24]"});
  tensors = hf_gpt2_tensors(g);
  tensors.erase(tensors.begin() + 10);
  write_safetensors(dir / "less.safetensors", tensors, flat, {});
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "less.safetensors", g); }, {"has no tensor"});
  // Found by safetensors_fuzz: a file without the position embedding (HF) or
  // zerodp's, which the readers took the shapes from, was std::out_of_range.
  for (const char* missing : {"wpe.weight", "wpe"}) {
    tensors = std::string(missing) == "wpe" ? export_tensors(gpt_model(g)) : hf_gpt2_tensors(g);
    const size_t before = tensors.size();
    std::erase_if(tensors, [&](const ExportTensor& t) { return t.name.ends_with(missing); });
    ASSERT_EQ(tensors.size() + 1, before) << missing;
    write_safetensors(dir / "without.safetensors", tensors, flat, {});
    expect_refused<InputFileError>([&] { GptWeightsReader(dir / "without.safetensors", g); },
                                   {"without.safetensors", "has no tensor", missing});
  }
  std::string text(bytes.begin() + 8, bytes.end());
  const size_t f32 = text.find("F32");
  ASSERT_NE(f32, std::string::npos);
  auto f16 = bytes;
  std::memcpy(f16.data() + 8 + f32, "F16", 3);  // F16: the byte range no longer matches the shape
  write_bytes(dir / "f16.safetensors", f16);
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "f16.safetensors", g); }, {"data_offsets"});
  auto i32 = bytes;
  std::memcpy(i32.data() + 8 + f32, "I32", 3);
  write_bytes(dir / "i32.safetensors", i32);
  expect_refused<InputFileError>([&] { GptWeightsReader(dir / "i32.safetensors", g); }, {"is I32", "reads F32"});

  // config.json: disagreeing with the tensors, or a model zerodp does not compute.
  nlohmann::json c = nlohmann::json::parse(hf_gpt2_config_json(g));
  c["n_embd"] = 16;
  write_text(dir / "hf/config.json", c.dump());
  expect_refused<InputFileError>([&] { GptWeightsReader(hf, g); }, {"config.json", "n_embd", "16"});
  c = nlohmann::json::parse(hf_gpt2_config_json(g));
  c["activation_function"] = "relu";
  write_text(dir / "hf/config.json", c.dump());
  expect_refused<InputFileError>([&] { GptWeightsReader(hf, g); }, {"activation_function", "relu"});
  c = nlohmann::json::parse(hf_gpt2_config_json(g));
  c["layer_norm_epsilon"] = 1e-6;
  write_text(dir / "hf/config.json", c.dump());
  expect_refused<InputFileError>([&] { GptWeightsReader(hf, g); }, {"layer_norm_epsilon"});
  write_text(dir / "hf/config.json", "{not json");
  expect_refused<InputFileError>([&] { GptWeightsReader(hf, g); }, {"not valid JSON"});
  // heads come from config.json when it is there.
  c = nlohmann::json::parse(hf_gpt2_config_json(g));
  c["n_head"] = 4;
  write_text(dir / "hf/config.json", c.dump());
  expect_refused<ConfigError>([&] { GptWeightsReader(hf, g); }, {"NH=4", "NH=2"});
}

// consolidate writes OUT/hf/ from the shards: the same bytes as from the
// master weights, through buffers no larger than a piece plus a column.
TEST(HfExport, ConsolidateWritesTheHfLayout) {
  TempDir dir;
  const model::GptConfig& g = kSmall;
  const std::vector<float> master = save_trained_gpt(g, 3, 3, Dtype::fp32(), dir / "ckpt");
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out");
  ASSERT_EQ(r.files.size(), 4u);  // model.safetensors, model.bin, hf/model.safetensors, hf/config.json
  EXPECT_EQ(r.files[2], dir / "out/hf/model.safetensors");
  EXPECT_LE(r.stream_buffer_bytes, 4 * (largest_piece(export_tensors(gpt_model(g))) + 4 * 8));
  fs::create_directories(dir / "flat");
  std::vector<std::string> written;
  write_hf_gpt2(
      dir / "flat", g,
      [&](size_t at, std::span<float> out) { std::copy_n(master.begin() + long(at), out.size(), out.begin()); }, {},
      written);
  EXPECT_EQ(read_bytes(dir / "out/hf/model.safetensors"), read_bytes(dir / "flat/model.safetensors"));
  EXPECT_EQ(read_bytes(dir / "out/hf/config.json"), read_bytes(dir / "flat/config.json"));
  EXPECT_TRUE(bitwise_equal(hf_to_flat(g, parse_safetensors(dir / "out/hf/model.safetensors")), master));

  const ConsolidateResult without = consolidate(dir / "ckpt", dir / "out2", {.llmc = false, .hf = false});
  EXPECT_EQ(without.files.size(), 1u);
  EXPECT_FALSE(fs::exists(dir / "out2/hf"));
}

// ---- the committed fixture (tools/make_hf_fixture.py) ----

struct Reference {
  model::GptConfig config;
  std::vector<int32_t> tokens;
  std::vector<double> logits;  // [T, V], torch in float64 from the fp32 weights
};

Reference load_reference() {
  std::ifstream in(kFixture + "/logits.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  Reference r;
  const auto& m = j.at("model");
  r.config = {m.at("max_seq_len"), m.at("vocab"), m.at("padded_vocab"),
              m.at("layers"),      m.at("heads"), m.at("channels")};
  r.tokens = j.at("tokens").get<std::vector<int32_t>>();
  for (const auto& row : j.at("logits")) {
    for (double x : row) r.logits.push_back(x);
  }
  return r;
}

// (a) The fixture, loaded through --init-from's reader by 2 ranks at stage
// 3, gives bitwise the weights of its tensors; (c) saved and consolidated
// again, the HF files are the fixture's bytes.
TEST(HfFixture, LoadsBitwiseAndRoundTripsToTheSameBytes) {
  TempDir dir;
  const Reference ref = load_reference();
  const model::GptConfig& g = ref.config;
  const std::vector<float> want = hf_to_flat(g, parse_safetensors(kFixture + "/model.safetensors"));
  const model::Gpt gpt(g);
  std::vector<float> loaded;
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(gpt, comm, test_config(3), kSeed, 1, 4);
    GptWeightsReader reader(kFixture + "/model.safetensors", g);
    EXPECT_EQ(reader.format(), WeightsFormat::kHfSafetensors);
    engine.load_params([&](size_t first, std::span<float> out) { reader.read(first, out); });
    auto p = engine.gather_params();
    if (comm.rank() == 0) loaded = p;
    save(engine, dir / "ckpt");
  });
  EXPECT_TRUE(bitwise_equal(loaded, want));
  consolidate(dir / "ckpt", dir / "out");
  EXPECT_EQ(read_bytes(dir / "out/hf/model.safetensors"), read_bytes(kFixture + "/model.safetensors"));
  EXPECT_EQ(read_bytes(dir / "out/hf/config.json"), read_bytes(kFixture + "/config.json"));
  // zerodp's own formats of the same weights load to the same bits.
  for (const char* f : {"model.safetensors", "model.bin"}) {
    GptWeightsReader r(dir / (std::string("out/") + f), g);
    EXPECT_TRUE(bitwise_equal(read_all(r), want)) << f;
  }
}

// (b) zerodp's forward on the fixture's tokens against torch's logits.
// Tolerance: max |zerodp - torch| <= 1e-5 x max |torch logit| (and 1e-5
// absolute at least). zerodp computes in fp32 with sums of at most 4C = 64
// terms; fp32 rounding is 6e-8 relative per operation, so the two layers'
// GEMMs, softmax and layernorms stay orders of magnitude below this; a wrong
// orientation, split or epsilon moves logits by far more (1e-2 or worse).
TEST(HfFixture, LogitsMatchTorch) {
  const Reference ref = load_reference();
  const model::GptConfig& g = ref.config;
  GptWeightsReader reader(kFixture + "/model.safetensors", g);
  const std::vector<float> params = read_all(reader);
  const model::Gpt m(g);
  const int T = static_cast<int>(ref.tokens.size());
  auto base = m.make_workspace(1, T, false);
  auto& ws = dynamic_cast<model::GptWorkspace&>(*base);
  std::vector<int32_t> targets(T, 0);
  model::Batch b;
  b.tokens = ref.tokens;
  b.targets = targets;
  ws.set_batch(b);
  model::forward_all(m, params, ws);
  const size_t V = g.vocab, Vp = g.padded_vocab, C = g.channels;
  std::vector<float> logits(size_t(T) * Vp);
  kernels::linear_forward(logits, ws.lnf(), std::span<const float>(params).first(Vp * C), {},
                          {T, g.channels, g.padded_vocab});
  ASSERT_EQ(ref.logits.size(), size_t(T) * V);
  double diff = 0, scale = 0;
  for (int t = 0; t < T; ++t) {
    for (size_t v = 0; v < V; ++v) {
      const double want = ref.logits[t * V + v];
      diff = std::max(diff, std::abs(double(logits[t * Vp + v]) - want));
      scale = std::max(scale, std::abs(want));
    }
  }
  EXPECT_GT(scale, 0.1);  // logits that say something
  EXPECT_LE(diff, std::max(1e-5, 1e-5 * scale));
  std::printf("HF fixture vs torch: max |logit difference| %.3g (max |logit| %.3g, %d tokens x %zu)\n", diff, scale, T,
              V);
}

}  // namespace
}  // namespace zerodp::weights::testing::hf
