// SPDX-License-Identifier: Apache-2.0
// Model families: the one interface through which zerodp knows a kind of
// model. A family (GPT-2, the MLP, a user's own) registers its name, its
// config schema (JSON in and out), its presets and its planner facts; the
// engine, the checkpoint format, the planner and the CLI reach a model only
// through this registry and model::Model, never by naming a family.
//
//   ModelSpec      one family's validated configuration: it builds the
//                  model, counts Φ without building, writes the schema's
//                  JSON (what a checkpoint records) and answers the
//                  planner's questions (activation bytes).
//   Family         the family's entry: name, schema line, from_json,
//                  presets. register_family() adds one; gpt and mlp are
//                  built in (model/gpt_family.h, model/mlp_family.h,
//                  model/llama_family.h).
//   ModelConfig    a named spec (a preset's name, or "custom"): what
//                  `--model` resolves to and Model::config() returns.
//
// A family's own code reads its own spec back with ModelConfig::as<Spec>().
// Thread-safety: the registry is guarded by a mutex; a family may be
// registered from any thread, once, before models of it are resolved.
// Specs are immutable and shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/activation_estimate.h"

namespace zerodp::model {

class Model;

class ModelSpec {
 public:
  virtual ~ModelSpec() = default;

  // The family's name, as "kind" in the schema: "gpt", "mlp", ...
  virtual std::string kind() const = 0;
  // The config in the family's schema, "kind" first; the family's from_json
  // reads it back to an equal spec (checkpoints record this).
  virtual nlohmann::ordered_json to_json() const = 0;
  virtual std::unique_ptr<Model> build() const = 0;
  // Φ, computed without building the model.
  virtual size_t num_params() const = 0;
  // One line: the shape and Φ.
  virtual std::string describe() const = 0;
  // The activation and scratch bytes one rank's workspace holds (what its
  // Workspace::total_bytes() reports), term by term; nullopt where the
  // family does not say, and the planner then refuses to plan its
  // activations by name.
  virtual std::optional<ActivationEstimate> estimate_activations(const ActivationConfig& config) const;
};

using SpecPtr = std::shared_ptr<const ModelSpec>;

struct Preset {
  std::string name;
  SpecPtr spec;
};

struct Family {
  std::string kind;    // "gpt"; lower case letters, digits, '-', '_' and '.'
  std::string schema;  // one line naming the keys, for errors and `zerodp model list`
  // A JSON object whose "kind" is this family's, as a validated spec
  // (ConfigError naming the key and what is accepted).
  std::function<SpecPtr(const nlohmann::json&)> from_json;
  std::vector<Preset> presets = {};  // in the order `zerodp model list` prints them
};

// Adds a family. ConfigError when its kind is malformed or taken, when it
// has no from_json, or when a preset's name is taken by another preset.
void register_family(Family family);
// The family named `kind`, or null.
const Family* find_family(std::string_view kind);
// Every family in registration order (the built-in ones first).
std::vector<const Family*> families();
// The families zerodp is built with (model/builtin_families.cc: GPT-2, the
// MLP), which the registry adds before any other.
std::vector<Family> builtin_families();

struct ModelConfig {
  std::string name;  // preset name, or "custom"
  SpecPtr spec;      // null only in a default-constructed config

  // spec->kind(), or "" without a spec.
  std::string kind() const;
  // The spec as the family's own type, or null when it is another family's.
  template <class Spec>
  const Spec* as() const {
    return dynamic_cast<const Spec*>(spec.get());
  }
};

}  // namespace zerodp::model
