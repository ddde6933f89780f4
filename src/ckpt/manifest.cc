// SPDX-License-Identifier: Apache-2.0
#include "ckpt/manifest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "ckpt/crc32c.h"
#include "ckpt/file_io.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormatName = "zerodp-checkpoint";
constexpr const char* kCrcKey = "manifest_crc32c";
constexpr size_t kMaxManifestBytes = 64u << 20;
constexpr int kMaxRanks = 1 << 20;
constexpr size_t kMaxUnits = 1 << 16;
// Bounds the work of checking every shard's size against the layout.
constexpr uint64_t kMaxRankUnits = uint64_t{1} << 26;

const std::set<std::string>& known_tensors() {
  static const std::set<std::string> names = {"master",          "exp_avg",           "exp_avg_sq",
                                              "momentum_buffer", "exp_avg_q8",        "exp_avg_sq_q8",
                                              "exp_avg_absmax",  "exp_avg_sq_absmax", "exp_avg_sq_factored"};
  return names;
}

// Typed, range-checked access to one JSON object, with errors that name the
// manifest file and the field.
class Fields {
 public:
  Fields(const Json& j, const std::string& path, std::string prefix = "")
      : j_(j), path_(path), prefix_(std::move(prefix)) {
    ZDP_CHECK(j_.is_object(), InputFileError, "[ckpt] {}: \"{}\" must be a JSON object: the manifest is corrupt", path_,
              prefix_.empty() ? "(top level)" : prefix_);
  }

  const Json& at(const char* key) const {
    const auto it = j_.find(key);
    ZDP_CHECK(it != j_.end(), InputFileError, "[ckpt] {}: field \"{}{}\" is missing: the manifest is corrupt", path_,
              prefix_, key);
    return *it;
  }
  bool has(const char* key) const { return j_.contains(key); }

  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const Json& v = at(key);
    ZDP_CHECK(v.is_number_integer(), InputFileError, "[ckpt] {}: field \"{}{}\" must be an integer, got {}", path_,
              prefix_, key, v.dump());
    int64_t x = 0;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      ZDP_CHECK(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), InputFileError,
                "[ckpt] {}: field \"{}{}\" = {} is out of range", path_, prefix_, key, u);
      x = static_cast<int64_t>(u);
    } else {
      x = v.get<int64_t>();
    }
    ZDP_CHECK(x >= lo && x <= hi, InputFileError, "[ckpt] {}: field \"{}{}\" = {} is outside [{}, {}]", path_, prefix_,
              key, x, lo, hi);
    return x;
  }
  uint64_t unsigned_integer(const char* key) const {
    const Json& v = at(key);
    ZDP_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), InputFileError,
              "[ckpt] {}: field \"{}{}\" must be a non-negative integer, got {}", path_, prefix_, key, v.dump());
    return v.get<uint64_t>();
  }
  double number(const char* key) const {
    const Json& v = at(key);
    ZDP_CHECK(v.is_number(), InputFileError, "[ckpt] {}: field \"{}{}\" must be a number, got {}", path_, prefix_, key,
              v.dump());
    const double x = v.get<double>();
    ZDP_CHECK(std::isfinite(x), InputFileError, "[ckpt] {}: field \"{}{}\" must be finite", path_, prefix_, key);
    return x;
  }
  std::string string(const char* key) const {
    const Json& v = at(key);
    ZDP_CHECK(v.is_string(), InputFileError, "[ckpt] {}: field \"{}{}\" must be a string, got {}", path_, prefix_, key,
              v.dump());
    return v.get<std::string>();
  }
  bool boolean(const char* key) const {
    const Json& v = at(key);
    ZDP_CHECK(v.is_boolean(), InputFileError, "[ckpt] {}: field \"{}{}\" must be true or false, got {}", path_, prefix_,
              key, v.dump());
    return v.get<bool>();
  }
  const Json& array(const char* key, size_t max_size) const {
    const Json& v = at(key);
    ZDP_CHECK(v.is_array(), InputFileError, "[ckpt] {}: field \"{}{}\" must be an array", path_, prefix_, key);
    ZDP_CHECK(v.size() <= max_size, InputFileError, "[ckpt] {}: field \"{}{}\" has {} entries, more than {}", path_,
              prefix_, key, v.size(), max_size);
    return v;
  }
  Fields object(const char* key) const { return Fields(at(key), path_, prefix_ + key + "."); }

 private:
  const Json& j_;
  const std::string& path_;
  std::string prefix_;
};

Json optimizer_json(const optim::OptimizerConfig& c) {
  Json j;
  j["kind"] = std::string(optim::optimizer_kind_name(c.kind));
  if (c.kind == optim::OptimizerKind::kSgd) {
    j["momentum"] = c.sgd.momentum;
    j["weight_decay"] = c.sgd.weight_decay;
    j["nesterov"] = c.sgd.nesterov;
  } else if (c.kind == optim::OptimizerKind::kLion) {
    j["beta1"] = c.lion.beta1;
    j["beta2"] = c.lion.beta2;
    j["weight_decay"] = c.lion.weight_decay;
    if (c.lion.bf16_momentum) j["momentum_dtype"] = "bf16";
    if (c.lion.momentum_rounding != optim::RoundingMode::kNearest) {
      j["momentum_rounding"] = std::string(optim::rounding_mode_name(c.lion.momentum_rounding));
    }
  } else if (c.kind == optim::OptimizerKind::kAdafactor) {
    const optim::AdafactorConfig& a = c.adafactor;
    j["beta1"] = a.beta1;
    j["eps"] = Json::array({a.eps1, a.eps2});
    j["clip_threshold"] = a.clip_threshold;
    j["decay_rate"] = a.decay_rate;
    j["weight_decay"] = a.weight_decay;
    j["scale_parameter"] = a.scale_parameter;
    j["relative_step"] = a.relative_step;
    j["warmup_init"] = a.warmup_init;
  } else {
    j["beta1"] = c.adam.beta1;
    j["beta2"] = c.adam.beta2;
    j["eps"] = c.adam.eps;
    j["weight_decay"] = c.adam.weight_decay;
    if (c.kind == optim::OptimizerKind::kAdam8bit) {
      // Which units keep fp32 moments (optim::unit_optimizer_config).
      j["fp32_embedding"] = c.adam.fp32_embedding;
      j["min_8bit_size"] = c.adam.min_8bit_size;
    }
  }
  return j;
}

optim::OptimizerConfig optimizer_from(const Fields& f, const std::string& path) {
  optim::OptimizerConfig c;
  const std::string kind = f.string("kind");
  ZDP_CHECK(
      kind == "adamw" || kind == "adam" || kind == "sgd" || kind == "lion" || kind == "adam8bit" || kind == "adafactor",
      InputFileError, "[ckpt] {}: optimizer kind \"{}\" is not adamw, adam, sgd, lion, adam8bit or adafactor", path,
      kind);
  c.kind = optim::parse_optimizer_kind(kind);
  // An "lr" here (written before a run had one learning rate) is not read:
  // the rate is the engine record's lr_schedule (engine_ckpt/).
  if (c.kind == optim::OptimizerKind::kSgd) {
    c.sgd = {
        .momentum = f.number("momentum"), .weight_decay = f.number("weight_decay"), .nesterov = f.boolean("nesterov")};
  } else if (c.kind == optim::OptimizerKind::kLion) {
    c.lion = {.beta1 = f.number("beta1"), .beta2 = f.number("beta2"), .weight_decay = f.number("weight_decay")};
    if (f.has("momentum_dtype")) {
      const std::string dtype = f.string("momentum_dtype");
      ZDP_CHECK(dtype == "bf16" || dtype == "fp32", InputFileError,
                "[ckpt] {}: optimizer momentum_dtype \"{}\" is not fp32 or bf16", path, dtype);
      c.lion.bf16_momentum = dtype == "bf16";
    }
    if (f.has("momentum_rounding")) {
      const std::string rounding = f.string("momentum_rounding");
      ZDP_CHECK((rounding == "stochastic" || rounding == "nearest") && c.lion.bf16_momentum, InputFileError,
                "[ckpt] {}: optimizer momentum_rounding \"{}\" is not nearest or stochastic of a bf16 momentum", path,
                rounding);
      c.lion.momentum_rounding = optim::parse_rounding_mode(rounding);
    }
  } else if (c.kind == optim::OptimizerKind::kAdafactor) {
    const Json& eps = f.array("eps", 2);
    ZDP_CHECK(eps.size() == 2 && eps[0].is_number() && eps[1].is_number(), InputFileError,
              "[ckpt] {}: optimizer.eps must be two numbers [eps1, eps2]", path);
    c.adafactor = {.beta1 = f.number("beta1"),
                   .eps1 = eps[0].get<double>(),
                   .eps2 = eps[1].get<double>(),
                   .clip_threshold = f.number("clip_threshold"),
                   .decay_rate = f.number("decay_rate"),
                   .weight_decay = f.number("weight_decay"),
                   .scale_parameter = f.boolean("scale_parameter"),
                   .relative_step = f.boolean("relative_step"),
                   .warmup_init = f.boolean("warmup_init")};
  } else {
    c.adam = {.beta1 = f.number("beta1"),
              .beta2 = f.number("beta2"),
              .eps = f.number("eps"),
              .weight_decay = f.number("weight_decay")};
    if (c.kind == optim::OptimizerKind::kAdam8bit) {
      // Absent before zerodp kept any unit in fp32: every unit 8-bit.
      c.adam.fp32_embedding = f.has("fp32_embedding") && f.boolean("fp32_embedding");
      c.adam.min_8bit_size = f.has("min_8bit_size") ? f.unsigned_integer("min_8bit_size") : 0;
    }
  }
  return c;
}

Json scaler_json(const optim::LossScalerState& s) {
  Json j;
  j["scale"] = s.scale;
  j["iteration"] = s.iteration;
  j["last_overflow_iteration"] = s.last_overflow_iteration;
  j["hysteresis_left"] = s.hysteresis_left;
  j["floor_overflows"] = s.floor_overflows;
  j["total_overflows"] = s.total_overflows;
  return j;
}

optim::LossScalerState scaler_from(const Fields& f) {
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 2;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  optim::LossScalerState s;
  s.scale = f.number("scale");
  s.iteration = f.integer("iteration", 0, kBig);
  s.last_overflow_iteration = f.integer("last_overflow_iteration", -1, kBig);
  s.hysteresis_left = static_cast<int>(f.integer("hysteresis_left", 0, kIntMax));
  s.floor_overflows = static_cast<int>(f.integer("floor_overflows", 0, kIntMax));
  s.total_overflows = f.integer("total_overflows", 0, kBig);
  return s;
}

uint32_t body_crc(const Json& j) {
  const std::string body = j.dump();
  return crc32c(body.data(), body.size());
}

}  // namespace

std::vector<size_t> Manifest::unit_counts() const {
  std::vector<size_t> counts;
  counts.reserve(units.size());
  for (const auto& u : units) counts.push_back(u.count);
  return counts;
}

std::vector<TensorLayout> Manifest::tensor_layouts() const {
  std::vector<TensorLayout> out;
  for (const std::string& t : tensors) out.push_back(tensor_layout(t));
  return out;
}

int Manifest::tensor_index(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::vector<uint32_t>> Manifest::unit_tensors() const {
  std::vector<std::vector<uint32_t>> out;
  out.reserve(units.size());
  for (const UnitEntry& u : units) out.push_back(u.tensors);
  return out;
}

bool Manifest::per_unit_tensors() const {
  return std::any_of(units.begin(), units.end(), [](const UnitEntry& u) { return !u.tensors.empty(); });
}

bool Manifest::holds(size_t unit, size_t tensor) const {
  return unit < units.size() && tensor < tensors.size() && unit_holds(std::span(&units[unit].tensors, 1), 0, tensor);
}

std::vector<std::string> Manifest::tensors_of(size_t unit) const {
  std::vector<std::string> out;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (unit_holds(std::span(&units.at(unit).tensors, 1), 0, t)) out.push_back(tensors[t]);
  }
  return out;
}

std::string manifest_to_json(const Manifest& m) {
  Json j;
  j["format"] = kFormatName;
  j["format_version"] = m.format_version;
  j["save_id"] = m.save_id;
  j["created_by"] = m.created_by;
  j["model"] = Json::parse(m.model_json);
  j["model_kind"] = m.model_kind;
  j["model_description"] = m.model_description;
  j["num_params"] = m.num_params;
  Json units = Json::array();
  for (const auto& u : m.units) {
    Json entry{{"name", u.name}, {"count", u.count}};
    if (!u.tensors.empty()) entry["tensors"] = u.tensors;  // version 3: the unit holds these
    units.push_back(entry);
  }
  j["units"] = units;
  j["ranks"] = m.ranks;
  j["stage"] = stage_number(m.stage);
  j["dtype"] = std::string(m.dtype.name());
  j["tensors"] = m.tensors;
  j["optimizer"] = optimizer_json(m.optimizer);
  j["engine"] = m.engine_json.empty() ? Json::object() : Json::parse(m.engine_json);
  j["chunk_bytes"] = m.chunk_bytes;
  j["steps"] = m.steps;
  j["optimizer_steps"] = m.optimizer_steps;
  j["loss_scaler"] = scaler_json(m.scaler);
  j["seed"] = m.seed;
  j["data_position"] = Json{{"step", m.data_step}, {"seed", m.seed}};
  Json meta = Json::object();
  for (const auto& [k, v] : m.metadata) meta[k] = v;
  j["metadata"] = meta;
  Json shards = Json::array();
  for (const auto& s : m.shards) shards.push_back(Json{{"file", s.file}, {"bytes", s.bytes}, {"crc32c", s.crc32c}});
  j["shards"] = shards;
  j[kCrcKey] = body_crc(j);
  return j.dump(2) + "\n";
}

Manifest manifest_from_json(std::string_view text, const std::string& path) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    ZDP_THROW(InputFileError, "[ckpt] {}: not valid JSON ({}): the manifest is corrupt", path, e.what());
  }
  const Fields f(j, path);
  ZDP_CHECK(f.has("format") && f.string("format") == kFormatName, InputFileError,
            "[ckpt] {}: not a zerodp checkpoint manifest (\"format\" is not \"{}\")", path, kFormatName);
  const int64_t version = f.integer("format_version", 1, std::numeric_limits<uint32_t>::max());
  ZDP_CHECK(version <= kFormatVersion, ConfigError,
            "[ckpt] {}: checkpoint format version {} is newer than this zerodp reads (up to {}): load it with a newer "
            "zerodp",
            path, version, kFormatVersion);
  {
    const uint32_t stored = static_cast<uint32_t>(f.integer(kCrcKey, 0, std::numeric_limits<uint32_t>::max()));
    Json body = j;
    body.erase(kCrcKey);
    const uint32_t computed = body_crc(body);
    ZDP_CHECK(stored == computed, InputFileError,
              "[ckpt] {}: the manifest fails its CRC32C (stored {:#010x}, computed {:#010x}): it is corrupt", path,
              stored, computed);
  }

  Manifest m;
  m.format_version = static_cast<uint32_t>(version);
  m.save_id = f.unsigned_integer("save_id");
  m.created_by = f.string("created_by");
  ZDP_CHECK(f.at("model").is_object(), InputFileError, "[ckpt] {}: field \"model\" must be an object", path);
  m.model_json = f.at("model").dump();
  {
    const std::string kind = f.string("model_kind");
    const bool named = !kind.empty() && kind.size() <= 64 && std::all_of(kind.begin(), kind.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
    });
    ZDP_CHECK(named, InputFileError,
              "[ckpt] {}: model_kind \"{}\" is not a model family's name (lower-case letters, digits, '-', '_', '.')",
              path, kind);
    const auto& model = f.at("model");
    ZDP_CHECK(model.contains("kind") && model.at("kind").is_string() && model.at("kind").get<std::string>() == kind,
              InputFileError, "[ckpt] {}: model_kind \"{}\" disagrees with the model's \"kind\" {}", path, kind,
              model.contains("kind") ? model.at("kind").dump() : std::string("(missing)"));
    m.model_kind = kind;
  }
  m.model_description = f.string("model_description");
  m.num_params = f.unsigned_integer("num_params");
  uint64_t total = 0;
  for (const auto& u : f.array("units", kMaxUnits)) {
    const Fields uf(u, path, "units[].");
    UnitEntry e{.name = uf.string("name"), .count = static_cast<size_t>(uf.integer("count", 0, int64_t{1} << 48))};
    if (uf.has("tensors")) {
      // Checked against the tensor list below.
      for (const auto& t : uf.array("tensors", 16)) {
        ZDP_CHECK(t.is_number_unsigned() && t.get<uint64_t>() < 16, InputFileError,
                  "[ckpt] {}: unit \"{}\" lists tensor index {}, not a small unsigned integer", path, e.name, t.dump());
        e.tensors.push_back(t.get<uint32_t>());
      }
    }
    total += e.count;
    m.units.push_back(std::move(e));
  }
  ZDP_CHECK(!m.units.empty(), InputFileError, "[ckpt] {}: the manifest lists no units", path);
  ZDP_CHECK(total == m.num_params, InputFileError, "[ckpt] {}: unit counts sum to {} but num_params is {}", path, total,
            m.num_params);
  m.ranks = static_cast<int>(f.integer("ranks", 1, kMaxRanks));
  m.stage = static_cast<Stage>(f.integer("stage", 0, stage_number(Stage::k3)));
  {
    const std::string dtype = f.string("dtype");
    ZDP_CHECK(dtype == "fp32" || dtype == "fp16" || dtype == "bf16", InputFileError,
              "[ckpt] {}: dtype \"{}\" is not fp32, fp16 or bf16", path, dtype);
    m.dtype = Dtype::parse(dtype);
  }
  for (const auto& t : f.array("tensors", 16)) {
    ZDP_CHECK(t.is_string() && known_tensors().count(t.get<std::string>()) > 0, InputFileError,
              "[ckpt] {}: tensor name {} is not one of master, exp_avg, exp_avg_sq, momentum_buffer, exp_avg_q8, "
              "exp_avg_sq_q8, exp_avg_absmax, exp_avg_sq_absmax, exp_avg_sq_factored",
              path, t.dump());
    const std::string name = t.get<std::string>();
    ZDP_CHECK(m.tensor_index(name) < 0, InputFileError, "[ckpt] {}: tensor \"{}\" is listed twice", path, name);
    m.tensors.push_back(name);
  }
  ZDP_CHECK(!m.tensors.empty() && m.tensors[0] == "master", InputFileError,
            "[ckpt] {}: the first tensor must be \"master\"", path);
  ZDP_CHECK(format_version_for(m.tensors) <= m.format_version, InputFileError,
            "[ckpt] {}: 8-bit state tensors in a version {} manifest (they are version 2's)", path, m.format_version);
  for (const UnitEntry& u : m.units) {
    if (u.tensors.empty()) continue;
    ZDP_CHECK(m.format_version >= 3, InputFileError,
              "[ckpt] {}: unit \"{}\" lists its own tensors in a version {} manifest (that is version 3's)", path,
              u.name, m.format_version);
    bool ascending = u.tensors[0] == 0;
    for (size_t i = 0; i < u.tensors.size(); ++i) {
      ascending = ascending && u.tensors[i] < m.tensors.size() && (i == 0 || u.tensors[i - 1] < u.tensors[i]);
    }
    ZDP_CHECK(ascending, InputFileError,
              "[ckpt] {}: unit \"{}\"'s tensors [{}] are not ascending indices into the {} tensors, master (0) "
              "first",
              path, u.name, fmt::join(u.tensors, ", "), m.tensors.size());
  }
  m.optimizer = optimizer_from(f.object("optimizer"), path);
  ZDP_CHECK(f.at("engine").is_object(), InputFileError, "[ckpt] {}: field \"engine\" must be an object", path);
  m.engine_json = f.at("engine").dump();
  const int64_t chunk = f.integer("chunk_bytes", 4, kMaxChunkBytes);
  ZDP_CHECK(valid_chunk_bytes(static_cast<uint64_t>(chunk)), InputFileError,
            "[ckpt] {}: chunk_bytes {} is not a multiple of 4", path, chunk);
  m.chunk_bytes = static_cast<uint32_t>(chunk);
  m.steps = f.integer("steps", 0, std::numeric_limits<int64_t>::max() / 2);
  m.optimizer_steps = f.integer("optimizer_steps", 0, m.steps);
  m.scaler = scaler_from(f.object("loss_scaler"));
  m.seed = f.unsigned_integer("seed");
  m.data_step = f.object("data_position").integer("step", 0, std::numeric_limits<int64_t>::max() / 2);
  const Json& meta = f.at("metadata");
  ZDP_CHECK(meta.is_object(), InputFileError, "[ckpt] {}: field \"metadata\" must be an object", path);
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    ZDP_CHECK(it.value().is_string(), InputFileError, "[ckpt] {}: metadata \"{}\" must be a string", path, it.key());
    m.metadata[it.key()] = it.value().get<std::string>();
  }
  const Json& shards = f.array("shards", kMaxRanks);
  ZDP_CHECK(shards.size() == static_cast<size_t>(m.ranks), InputFileError,
            "[ckpt] {}: {} shard files listed for {} ranks", path, shards.size(), m.ranks);
  for (size_t r = 0; r < shards.size(); ++r) {
    const Fields sf(shards[r], path, "shards[].");
    ShardFileInfo s{.file = sf.string("file"),
                    .bytes = sf.unsigned_integer("bytes"),
                    .crc32c = static_cast<uint32_t>(sf.integer("crc32c", 0, std::numeric_limits<uint32_t>::max()))};
    // Only the names zerodp writes: a manifest can never point outside its directory.
    ZDP_CHECK(s.file == shard_file_name(static_cast<int>(r), m.ranks), InputFileError,
              "[ckpt] {}: shard {} is named \"{}\", expected \"{}\"", path, r, s.file,
              shard_file_name(static_cast<int>(r), m.ranks));
    m.shards.push_back(std::move(s));
  }
  // Every size must be the layout's, so nothing downstream trusts a size (or
  // allocates for a Φ) that the files cannot back.
  ZDP_CHECK(static_cast<uint64_t>(m.ranks) * m.units.size() <= kMaxRankUnits, InputFileError,
            "[ckpt] {}: {} ranks x {} units is more than this reader handles", path, m.ranks, m.units.size());
  const std::vector<TensorLayout> layouts = m.tensor_layouts();
  for (int r = 0; r < m.ranks; ++r) {
    uint64_t size = kFileHeaderBytes;
    for (size_t u = 0; u < m.units.size(); ++u) {
      for (size_t t = 0; t < layouts.size(); ++t) {
        const TensorLayout& l = layouts[t];
        const uint64_t n = m.holds(u, t) ? record_range(m.units[u].count, m.ranks, r, l).count : 0;
        size += kRecordHeaderBytes + 4ull * num_chunks(n, m.chunk_bytes, l.value_bytes) + uint64_t{l.value_bytes} * n;
      }
    }
    ZDP_CHECK(m.shards[r].bytes == size, InputFileError,
              "[ckpt] {}: shard {} is listed with {} bytes but its layout takes {}: the manifest is inconsistent", path,
              r, m.shards[r].bytes, size);
  }
  return m;
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = join_path(dir, kManifestName);
  return manifest_from_json(read_small_file(path, kMaxManifestBytes), path);
}

void write_manifest(const std::string& dir, const Manifest& manifest) {
  write_file_atomically(join_path(dir, kManifestName), manifest_to_json(manifest));
}

}  // namespace zerodp::ckpt
