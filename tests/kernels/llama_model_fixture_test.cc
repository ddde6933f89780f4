// SPDX-License-Identifier: Apache-2.0
// The Llama family's kernels composed into a whole model, against the tiny
// models of tools/make_llama_fixture.py (tests/model/fixtures/llama_tiny_*:
// Hugging Face config and weights, PyTorch's logits, loss and every
// gradient). This is the block of docs/llama.md written out with the
// kernels alone, forward and backward, in the order a model unit runs them:
// it proves the kernels fit together (layouts, accumulate-or-overwrite) and
// that the fixtures are what the model code will be held to. Tolerance: the
// loss within 1e-5 relative, each tensor within 1e-5 of its scale (the GPT
// fixture's rule, docs/models.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/gqa_attention.h"
#include "kernels/linear.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax_xent.h"
#include "kernels/swiglu.h"
#include "safetensors_fixture.h"

namespace zerodp::kernels {
namespace {

using testing::SafetensorsFixture;
using testing::scaled_max_diff;
using Vec = std::vector<float>;

struct Config {
  int vocab, hidden, layers, heads, kv_heads, head_dim, mlp, max_position;
  bool tied;
  float eps;
  RopeConfig rope;
};

Config read_config(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  Config c{};
  c.vocab = j.at("vocab_size");
  c.hidden = j.at("hidden_size");
  c.layers = j.at("num_hidden_layers");
  c.heads = j.at("num_attention_heads");
  c.kv_heads = j.at("num_key_value_heads");
  c.head_dim = j.at("head_dim");
  c.mlp = j.at("intermediate_size");
  c.max_position = j.at("max_position_embeddings");
  c.tied = j.at("tie_word_embeddings");
  c.eps = j.at("rms_norm_eps").get<float>();
  c.rope.head_dim = c.head_dim;
  c.rope.theta = j.at("rope_theta");
  const auto& rs = j.at("rope_scaling");
  if (!rs.is_null()) {
    EXPECT_EQ(rs.at("rope_type"), "llama3");
    c.rope.scaling = RopeScaling::kLlama3;
    c.rope.factor = rs.at("factor");
    c.rope.low_freq_factor = rs.at("low_freq_factor");
    c.rope.high_freq_factor = rs.at("high_freq_factor");
    c.rope.original_max_position = rs.at("original_max_position_embeddings");
  }
  return c;
}

// What one layer's forward keeps for its backward.
struct LayerActs {
  Vec x, n1, rstd1, q, k, v, att, y, h, n2, rstd2, gate, up, m;
};

void run_model(const std::string& name) {
  const std::string dir = std::string(ZERODP_MODEL_FIXTURE_DIR) + "/llama_tiny_" + name;
  const Config c = read_config(dir);
  const SafetensorsFixture w(dir + "/model.safetensors");
  const SafetensorsFixture ref(dir + "/reference.safetensors");
  const auto& ids = ref.i32("input_ids");
  const auto& targets = ref.i32("targets");
  const int B = static_cast<int>(ref.shape("input_ids")[0]), T = static_cast<int>(ref.shape("input_ids")[1]);
  const int N = B * T, C = c.hidden, F = c.mlp, V = c.vocab, d = c.head_dim;
  const int Dq = c.heads * d, Dkv = c.kv_heads * d;
  const GqaShape gs{B, T, c.heads, c.kv_heads, d};
  const RopeTable table = make_rope_table(c.rope, c.max_position);
  auto W = [&](const std::string& n) -> const Vec& { return w.f32(n); };
  auto bias = [&](const std::string& n) -> std::span<const float> {
    return w.has(n) ? std::span<const float>(w.f32(n)) : std::span<const float>();
  };
  const std::string head_name = c.tied ? "model.embed_tokens.weight" : "lm_head.weight";

  // ---- forward
  Vec x(size_t(N) * C);
  for (int i = 0; i < N; ++i) {
    std::copy_n(W("model.embed_tokens.weight").begin() + size_t(ids[i]) * C, C, x.begin() + size_t(i) * C);
  }
  std::vector<LayerActs> acts(c.layers);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerActs& a = acts[l];
    a.x = x;
    a.n1.resize(x.size());
    a.rstd1.resize(N);
    rmsnorm_forward(a.n1, a.rstd1, a.x, W(p + "input_layernorm.weight"), N, C, c.eps);
    a.q.resize(size_t(N) * Dq);
    a.k.resize(size_t(N) * Dkv);
    a.v.resize(size_t(N) * Dkv);
    linear_forward(a.q, a.n1, W(p + "self_attn.q_proj.weight"), bias(p + "self_attn.q_proj.bias"), {N, C, Dq});
    linear_forward(a.k, a.n1, W(p + "self_attn.k_proj.weight"), bias(p + "self_attn.k_proj.bias"), {N, C, Dkv});
    linear_forward(a.v, a.n1, W(p + "self_attn.v_proj.weight"), bias(p + "self_attn.v_proj.bias"), {N, C, Dkv});
    rope_forward(a.q, a.q, table, {}, {B, T, c.heads, d});  // in place: backward needs only the rotated q, k
    rope_forward(a.k, a.k, table, {}, {B, T, c.kv_heads, d});
    a.att.resize(size_t(B) * c.heads * T * T);
    a.y.resize(a.q.size());
    gqa_attention_forward(a.y, a.att, a.q, a.k, a.v, {}, gs);
    a.h.resize(x.size());
    linear_forward(a.h, a.y, W(p + "self_attn.o_proj.weight"), {}, {N, Dq, C});
    for (size_t i = 0; i < x.size(); ++i) a.h[i] += a.x[i];
    a.n2.resize(x.size());
    a.rstd2.resize(N);
    rmsnorm_forward(a.n2, a.rstd2, a.h, W(p + "post_attention_layernorm.weight"), N, C, c.eps);
    a.gate.resize(size_t(N) * F);
    a.up.resize(a.gate.size());
    a.m.resize(a.gate.size());
    linear_forward(a.gate, a.n2, W(p + "mlp.gate_proj.weight"), {}, {N, C, F});
    linear_forward(a.up, a.n2, W(p + "mlp.up_proj.weight"), {}, {N, C, F});
    swiglu_forward(a.m, a.gate, a.up);
    linear_forward(x, a.m, W(p + "mlp.down_proj.weight"), {}, {N, F, C});
    for (size_t i = 0; i < x.size(); ++i) x[i] += a.h[i];
  }
  Vec xf(x.size()), rstdf(N);
  rmsnorm_forward(xf, rstdf, x, W("model.norm.weight"), N, C, c.eps);
  Vec logits(size_t(N) * V), losses(N);
  linear_forward(logits, xf, W(head_name), {}, {N, C, V});
  EXPECT_LT(scaled_max_diff(logits, ref.f32("logits")), 1e-5) << name;
  const XentShape xs{N, V, V};
  const float loss = softmax_xent_forward(logits, losses, targets, xs);
  EXPECT_NEAR(loss, ref.f32("loss")[0], 1e-5 * ref.f32("loss")[0]) << name;

  // ---- backward (every weight gradient accumulates from zero)
  std::map<std::string, Vec> g;
  for (const std::string& n : w.names()) g[n].assign(w.f32(n).size(), 0.0f);
  auto G = [&](const std::string& n) -> std::span<float> { return g.at(n); };
  auto gbias = [&](const std::string& n) -> std::span<float> {
    return g.count(n) ? std::span<float>(g.at(n)) : std::span<float>();
  };
  Vec& dlogits = logits;
  softmax_xent_backward(dlogits, targets, 1.0f / N, xs);
  Vec dxf(x.size()), dx(x.size(), 0.0f);
  linear_backward(dxf, G(head_name), {}, dlogits, xf, W(head_name), {N, C, V}, false);
  rmsnorm_backward(dx, G("model.norm.weight"), dxf, x, W("model.norm.weight"), rstdf, N, C);
  Vec dm(size_t(N) * F), dgate(dm.size()), dup(dm.size()), dn(x.size()), dh(x.size());
  Vec dy(size_t(N) * Dq), dq(dy.size()), dk(size_t(N) * Dkv), dv(dk.size()), scratch(size_t(T) * T);
  for (int l = c.layers - 1; l >= 0; --l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const LayerActs& a = acts[l];
    // x_out = h + down(m)
    dh = dx;
    linear_backward(dm, G(p + "mlp.down_proj.weight"), {}, dx, a.m, W(p + "mlp.down_proj.weight"), {N, F, C}, false);
    swiglu_backward(dgate, dup, dm, a.gate, a.up);
    linear_backward(dn, G(p + "mlp.gate_proj.weight"), {}, dgate, a.n2, W(p + "mlp.gate_proj.weight"), {N, C, F},
                    false);
    linear_backward(dn, G(p + "mlp.up_proj.weight"), {}, dup, a.n2, W(p + "mlp.up_proj.weight"), {N, C, F}, true);
    rmsnorm_backward(dh, G(p + "post_attention_layernorm.weight"), dn, a.h, W(p + "post_attention_layernorm.weight"),
                     a.rstd2, N, C);
    // h = x + o(attn(rope(q), rope(k), v))
    dx = dh;
    linear_backward(dy, G(p + "self_attn.o_proj.weight"), {}, dh, a.y, W(p + "self_attn.o_proj.weight"), {N, Dq, C},
                    false);
    gqa_attention_backward(dq, dk, dv, scratch, dy, a.q, a.k, a.v, a.att, {}, gs);
    rope_backward(dq, dq, table, {}, {B, T, c.heads, d});
    rope_backward(dk, dk, table, {}, {B, T, c.kv_heads, d});
    linear_backward(dn, G(p + "self_attn.q_proj.weight"), gbias(p + "self_attn.q_proj.bias"), dq, a.n1,
                    W(p + "self_attn.q_proj.weight"), {N, C, Dq}, false);
    linear_backward(dn, G(p + "self_attn.k_proj.weight"), gbias(p + "self_attn.k_proj.bias"), dk, a.n1,
                    W(p + "self_attn.k_proj.weight"), {N, C, Dkv}, true);
    linear_backward(dn, G(p + "self_attn.v_proj.weight"), gbias(p + "self_attn.v_proj.bias"), dv, a.n1,
                    W(p + "self_attn.v_proj.weight"), {N, C, Dkv}, true);
    rmsnorm_backward(dx, G(p + "input_layernorm.weight"), dn, a.x, W(p + "input_layernorm.weight"), a.rstd1, N, C);
  }
  // embedding: rows of the (possibly tied) table gather the token gradients
  Vec& demb = g.at("model.embed_tokens.weight");
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < C; ++k) demb[size_t(ids[i]) * C + k] += dx[size_t(i) * C + k];
  }
  for (const auto& [n, grad] : g) {
    EXPECT_LT(scaled_max_diff(grad, ref.f32("grad." + n)), 1e-5) << name << " " << n;
  }
  EXPECT_EQ(g.size(),
            size_t(c.tied ? 2 : 3) + size_t(c.layers) * (w.has("model.layers.0.self_attn.q_proj.bias") ? 12 : 9));
}

TEST(LlamaModelFixture, TiedLlamaWithGroupsOfTwo) { run_model("llama"); }
TEST(LlamaModelFixture, UntiedQwen2WithBiasesMultiQueryAndLlama3Rope) { run_model("qwen2"); }

}  // namespace
}  // namespace zerodp::kernels
