// The shape of a GPT model as plan needs it: Φ (the parameter count), the
// units the engine schedules (embeddings, each block, final layernorm + tied
// head) and the largest of them (stage 3 gathers the current and the
// prefetched unit), and the largest single module (DeepSpeed's estimator's
// "largest layer").
//
// GPT-2 style: tied token embedding / LM head, learned position embedding,
// pre-LN blocks with biases, GELU MLP of width 4C, a final layernorm:
//   Φ = V*C + T*C + L*(12C^2 + 13C) + 2C
// (per block: ln1 2C, qkv 3C^2+3C, attention projection C^2+C, ln2 2C,
// fc 4C^2+4C, fc projection 4C^2+C). gpt2-124m with V = 50304: 124,475,904.
//
// Shapes come from a JSON model config, {"type":"gpt","layers":12,"heads":12,
// "channels":768,"vocab":50304,"context":1024}, or a preset name. The presets
// here are plan's own small list; when src/model grows its preset registry,
// find_preset() is the one function to point at it.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::plan {

struct GptShape {
  int layers = 0;    // L
  int heads = 0;     // H
  int channels = 0;  // C
  int vocab = 0;     // V (padded, as stored)
  int context = 0;   // T, the longest sequence (rows of the position embedding)

  // Throws ConfigError unless every field is positive and C % H == 0.
  void validate() const;

  uint64_t num_params() const;        // Φ
  uint64_t embedding_params() const;  // wte + wpe: V*C + T*C
  uint64_t block_params() const;      // 12C^2 + 13C
  uint64_t final_params() const;      // final layernorm: 2C (the head is tied to wte)

  // A unit of the engine's schedule and the elements stage 3 must gather to
  // run it (the unit itself: the tied LM head is a second op on the
  // embedding unit, which the engine gathers again, whole).
  struct Unit {
    std::string name;
    uint64_t owned_params = 0;     // parameters this unit owns in the flat buffer
    uint64_t gathered_params = 0;  // parameters it needs resident to run
  };
  std::vector<Unit> units() const;

  // max over units of gathered_params: the size of each of stage 3's gather
  // buffers and of the fp32 compute copy.
  uint64_t largest_unit_params() const;

  // The largest single module's parameters (weight + bias), as DeepSpeed's
  // model_to_params counts "largest_layer_params": max(wte V*C, wpe T*C,
  // fc 4C^2+4C, ...).
  uint64_t largest_module_params() const;
};

// Parses a JSON model config (the text of the object). ConfigError on a
// missing/unknown key, a wrong type or a bad value, naming the key.
GptShape parse_gpt_shape_json(std::string_view json_text);

struct ModelPreset {
  std::string_view name;
  std::string_view description;
  GptShape shape;
};

// plan's built-in presets (gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m, ...).
const std::vector<ModelPreset>& model_presets();
std::optional<GptShape> find_preset(std::string_view name);

// --model's argument: inline JSON (starts with '{'), a preset name, or the
// path of a JSON file. ConfigError names the presets when nothing matches.
GptShape resolve_model(std::string_view spec);

}  // namespace zerodp::plan
