// SPDX-License-Identifier: Apache-2.0
#include "train/settings.h"

#include <fmt/format.h>

#include <array>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace zerodp::train {
namespace {

using nlohmann::json;
using optim::OptimizerKind;

// A row whose value has the type T in a TrainConfig's terms and T's JSON
// form in a checkpoint's record. `set` may be null (no resume sets it).
template <typename T>
using Get = T (*)(const TrainConfig&);
// Scalars by value, strings and pairs by reference.
template <typename T>
using Param = std::conditional_t<std::is_scalar_v<T>, T, const T&>;
template <typename T>
using Set = void (*)(TrainConfig&, Param<T>);

template <typename T>
SettingRow row(std::string_view name, ResumePolicy resume, DefaultFrom defaults, Get<T> get, Set<T> set, ShowFn show) {
  SettingRow r;
  r.name = name;
  r.resume = resume;
  r.defaults = defaults;
  r.get = [get](const TrainConfig& c) { return json(get(c)); };
  if (set != nullptr) r.set = [set](TrainConfig& c, const json& v) { set(c, v.get<T>()); };
  r.show = std::move(show);
  return r;
}

// A setting no checkpoint records and no config file sets.
template <typename T>
SettingRow own(std::string_view name, Get<T> get, ShowFn show) {
  return row<T>(name, ResumePolicy::kNotRecorded, DefaultFrom::kZerodp, get, nullptr, std::move(show));
}
// A setting no checkpoint records, whose default a config file's replaces.
template <typename T>
SettingRow engine(std::string_view name, Get<T> get, ShowFn show) {
  return row<T>(name, ResumePolicy::kNotRecorded, DefaultFrom::kRun, get, nullptr, std::move(show));
}
// A setting the checkpoint records and a resume must keep, whose default
// a config file's replaces.
template <typename T>
SettingRow kept(std::string_view name, Get<T> get, Set<T> set, ShowFn show) {
  return row<T>(name, ResumePolicy::kMustMatch, DefaultFrom::kRun, get, set, std::move(show));
}
// A value only the effective configuration shows, derived from others.
SettingRow derived(std::string_view name, ShowFn show) {
  SettingRow r;
  r.name = name;
  r.show = std::move(show);
  return r;
}

// The effective configuration shows the value always, or for runs that use it.
std::optional<Shown> always(const SettingRow& r, const TrainConfig& c, int /*ranks*/) { return Shown{r.get(c), ""}; }
ShowFn when(bool (*used)(const TrainConfig&)) {
  return [used](const SettingRow& r, const TrainConfig& c, int /*ranks*/) -> std::optional<Shown> {
    if (!used(c)) return std::nullopt;
    return Shown{r.get(c), ""};
  };
}

OptimizerKind kind(const TrainConfig& c) { return c.engine.optimizer.kind; }
bool adafactor(const TrainConfig& c) { return kind(c) == OptimizerKind::kAdafactor; }
bool lion(const TrainConfig& c) { return kind(c) == OptimizerKind::kLion; }
bool adam_family(const TrainConfig& c) {
  return kind(c) == OptimizerKind::kAdamW || kind(c) == OptimizerKind::kAdam || kind(c) == OptimizerKind::kAdam8bit;
}
bool scheduled(const TrainConfig& c) { return c.engine.lr_schedule.kind != optim::LrScheduleKind::kConstant; }
bool compressed(const TrainConfig& c) {
  return c.engine.quantize_weights != comm::Quantization::kNone || c.engine.quantize_grads != comm::Quantization::kNone;
}

// A saved "none" / "int8" / "int4".
comm::Quantization quantization_of(const std::string& name) {
  for (const auto q : {comm::Quantization::kNone, comm::Quantization::kInt8, comm::Quantization::kInt4}) {
    if (comm::quantization_name(q) == name) return q;
  }
  ZDP_THROW(InputFileError, "[train] the checkpoint records an unknown quantization '{}'", name);
}

std::string loss_scale_text(const optim::LossScalerConfig& s) {
  if (s.mode == optim::LossScaleMode::kStatic) return fmt::format("static {:g}", s.initial_scale);
  return fmt::format("dynamic from {:g} (window {}, hysteresis {}, min {:g})", s.initial_scale, s.window, s.hysteresis,
                     s.min_scale);
}

using Pair = std::array<double, 2>;

// The data, the batch, the run's length and seed.
void add_run_rows(std::vector<SettingRow>& out) {
  constexpr auto kMust = ResumePolicy::kMustMatch;
  constexpr auto kOwn = DefaultFrom::kZerodp;
  out.push_back(row<std::string>(
      "model", kMust, kOwn, [](const TrainConfig& c) { return c.model; },
      [](TrainConfig& c, const std::string& v) { c.model = v; }, always));
  out.push_back(row<std::string>(
      "data", kMust, kOwn, [](const TrainConfig& c) { return c.data; },
      [](TrainConfig& c, const std::string& v) { c.data = v; },
      [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
        return Shown{c.data.empty() ? std::string("embedded arithmetic corpus") : c.data, ""};
      }));
  out.push_back(row<std::string>(
      "val-data", kMust, kOwn, [](const TrainConfig& c) { return c.val_data; },
      [](TrainConfig& c, const std::string& v) { c.val_data = v; },
      when([](const TrainConfig& c) { return !c.val_data.empty(); })));
  out.push_back(row<std::string>(
      "tokenizer", kMust, kOwn, [](const TrainConfig& c) { return c.tokenizer; },
      [](TrainConfig& c, const std::string& v) { c.tokenizer = v; },
      when([](const TrainConfig& c) { return !c.tokenizer.empty(); })));
  // --steps may always grow: it says how far to train, not how.
  out.push_back(row<int>(
      "steps", ResumePolicy::kMayChange, kOwn, [](const TrainConfig& c) { return c.steps; },
      [](TrainConfig& c, int v) { c.steps = v; }, always));
  out.push_back(row<uint64_t>(
      "seed", kMust, kOwn, [](const TrainConfig& c) { return c.seed; }, [](TrainConfig& c, uint64_t v) { c.seed = v; },
      always));
  out.push_back(derived("ranks", [](const SettingRow&, const TrainConfig& c, int ranks) -> std::optional<Shown> {
    const std::string from = c.sources.count("ranks") > 0       ? c.sources.at("ranks")
                             : c.backend == comm::Backend::kMpi ? "mpirun -np"
                                                                : "zerodp default: one per core";
    const std::string backend =
        c.source_kind("backend") == SourceKind::kDetected
            ? fmt::format("{} backend ({})", comm::backend_name(c.backend), c.sources.at("backend"))
            : fmt::format("{} backend", comm::backend_name(c.backend));
    return Shown{ranks, fmt::format("{}, {}", from, backend)};
  }));
  out.push_back(engine<int>(
      "stage", [](const TrainConfig& c) { return stage_number(c.engine.stage); }, always));
  out.push_back(engine<std::string>(
      "precision", [](const TrainConfig& c) { return std::string(c.engine.dtype.name()); }, always));
  out.push_back(kept<int>(
      "micro-batch", [](const TrainConfig& c) { return c.micro_batch; },
      [](TrainConfig& c, int v) { c.micro_batch = v; }, always));
  out.push_back(kept<int>(
      "grad-accum", [](const TrainConfig& c) { return c.engine.grad_accum; },
      [](TrainConfig& c, int v) {
        c.engine.grad_accum = v;
        c.grad_accum_given = true;
      },
      always));
  out.push_back(row<int>(
      "seq-len", kMust, kOwn, [](const TrainConfig& c) { return c.seq_len; },
      [](TrainConfig& c, int v) { c.seq_len = v; }, always));
  out.push_back(
      derived("train-batch-size", [](const SettingRow&, const TrainConfig& c, int ranks) -> std::optional<Shown> {
        const int64_t batch = static_cast<int64_t>(c.micro_batch) * c.engine.grad_accum * ranks;
        return Shown{batch, c.train_batch_size > 0 ? c.source_of("train-batch-size")
                                                   : fmt::format("derived: micro-batch {} x grad-accum {} x {} ranks",
                                                                 c.micro_batch, c.engine.grad_accum, ranks)};
      }));
}

// The optimizer and its hyperparameters: each shown for the optimizers that
// read it, in one order that suits every optimizer's list.
void add_optimizer_rows(std::vector<SettingRow>& out) {
  out.push_back(kept<std::string>(
      "optimizer", [](const TrainConfig& c) { return std::string(optim::optimizer_kind_name(kind(c))); },
      [](TrainConfig& c, const std::string& v) { c.engine.optimizer.kind = optim::parse_optimizer_kind(v); }, always));
  // Adafactor's relative steps (before "lr": an explicit lr is Adafactor's
  // only without them).
  out.push_back(kept<bool>(
      "relative-step", [](const TrainConfig& c) { return c.engine.optimizer.adafactor.relative_step; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.relative_step = v; }, when(adafactor)));
  // One learning rate: the schedule's peak, and every optimizer's.
  out.push_back(kept<double>(
      "lr", [](const TrainConfig& c) { return c.engine.lr_schedule.max_lr; },
      [](TrainConfig& c, double v) {
        optim::OptimizerConfig& o = c.engine.optimizer;
        c.engine.lr_schedule.max_lr = o.adam.lr = o.sgd.lr = o.lion.lr = v;
        if (!o.adafactor.relative_step) o.adafactor.lr = v;
      },
      [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
        if (adafactor(c) && c.engine.optimizer.adafactor.relative_step) return std::nullopt;
        return Shown{optim::config_lr(c.engine.optimizer), ""};
      }));
  out.push_back(kept<double>(
      "momentum", [](const TrainConfig& c) { return c.engine.optimizer.sgd.momentum; },
      [](TrainConfig& c, double v) { c.engine.optimizer.sgd.momentum = v; },
      when([](const TrainConfig& c) { return kind(c) == OptimizerKind::kSgd; })));
  // The betas of the run's kind ("optimizer" is set before them).
  out.push_back(kept<Pair>(
      "betas",
      [](const TrainConfig& c) {
        const optim::OptimizerConfig& o = c.engine.optimizer;
        return lion(c) ? Pair{o.lion.beta1, o.lion.beta2} : Pair{o.adam.beta1, o.adam.beta2};
      },
      [](TrainConfig& c, const Pair& v) {
        optim::OptimizerConfig& o = c.engine.optimizer;
        o.adam.beta1 = o.lion.beta1 = v[0];
        o.adam.beta2 = o.lion.beta2 = v[1];
      },
      when([](const TrainConfig& c) { return lion(c) || adam_family(c); })));
  out.push_back(kept<double>(
      "eps", [](const TrainConfig& c) { return c.engine.optimizer.adam.eps; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adam.eps = v; }, when(adam_family)));
  out.push_back(kept<bool>(
      "scale-parameter", [](const TrainConfig& c) { return c.engine.optimizer.adafactor.scale_parameter; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.scale_parameter = v; }, when(adafactor)));
  out.push_back(kept<bool>(
      "warmup-init", [](const TrainConfig& c) { return c.engine.optimizer.adafactor.warmup_init; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.warmup_init = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "beta1", [](const TrainConfig& c) { return c.engine.optimizer.adafactor.beta1; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.beta1 = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "decay-rate", [](const TrainConfig& c) { return c.engine.optimizer.adafactor.decay_rate; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.decay_rate = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "clip-threshold", [](const TrainConfig& c) { return c.engine.optimizer.adafactor.clip_threshold; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.clip_threshold = v; }, when(adafactor)));
  out.push_back(kept<Pair>(
      "adafactor-eps",
      [](const TrainConfig& c) {
        return Pair{c.engine.optimizer.adafactor.eps1, c.engine.optimizer.adafactor.eps2};
      },
      [](TrainConfig& c, const Pair& v) {
        c.engine.optimizer.adafactor.eps1 = v[0];
        c.engine.optimizer.adafactor.eps2 = v[1];
      },
      when(adafactor)));
  // The run's kind's ("optimizer" is set before it); a resume sets every kind's.
  out.push_back(kept<double>(
      "weight-decay", [](const TrainConfig& c) { return optim::config_weight_decay(c.engine.optimizer); },
      [](TrainConfig& c, double v) {
        optim::OptimizerConfig& o = c.engine.optimizer;
        o.adam.weight_decay = o.sgd.weight_decay = o.lion.weight_decay = o.adafactor.weight_decay = v;
      },
      always));
  out.push_back(kept<std::string>(
      "lion-momentum-dtype",
      [](const TrainConfig& c) { return std::string(c.engine.optimizer.lion.bf16_momentum ? "bf16" : "fp32"); },
      [](TrainConfig& c, const std::string& v) { c.engine.optimizer.lion.bf16_momentum = v == "bf16"; }, when(lion)));
  // (A checkpoint from before stochastic rounding has no such field: its
  // bf16 momentum was rounded to nearest, LionConfig's default.)
  out.push_back(kept<std::string>(
      "lion-momentum-rounding",
      [](const TrainConfig& c) {
        return std::string(optim::rounding_mode_name(c.engine.optimizer.lion.momentum_rounding));
      },
      [](TrainConfig& c, const std::string& v) {
        c.engine.optimizer.lion.momentum_rounding = optim::parse_rounding_mode(v);
      },
      when([](const TrainConfig& c) { return lion(c) && c.engine.optimizer.lion.bf16_momentum; })));
  auto adam8bit = [](const TrainConfig& c) { return kind(c) == OptimizerKind::kAdam8bit; };
  out.push_back(kept<bool>(
      "adam8bit-fp32-embedding", [](const TrainConfig& c) { return c.engine.optimizer.adam.fp32_embedding; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adam.fp32_embedding = v; }, when(adam8bit)));
  out.push_back(kept<uint64_t>(
      "adam8bit-min-8bit-size", [](const TrainConfig& c) { return c.engine.optimizer.adam.min_8bit_size; },
      [](TrainConfig& c, uint64_t v) { c.engine.optimizer.adam.min_8bit_size = v; }, when(adam8bit)));
}

// The learning-rate schedule and clipping.
void add_schedule_rows(std::vector<SettingRow>& out) {
  out.push_back(kept<std::string>(
      "schedule",
      [](const TrainConfig& c) { return std::string(optim::lr_schedule_kind_name(c.engine.lr_schedule.kind)); },
      [](TrainConfig& c, const std::string& v) { c.engine.lr_schedule.kind = optim::parse_lr_schedule_kind(v); },
      always));
  out.push_back(kept<int64_t>(
      "warmup", [](const TrainConfig& c) { return c.engine.lr_schedule.warmup_steps; },
      [](TrainConfig& c, int64_t v) { c.engine.lr_schedule.warmup_steps = v; }, when(scheduled)));
  out.push_back(derived("warmup-type", [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
    if (!scheduled(c)) return std::nullopt;
    return Shown{c.engine.lr_schedule.warmup_type == optim::WarmupType::kLog ? "log" : "linear",
                 c.source_of("schedule")};
  }));
  out.push_back(kept<double>(
      "min-lr-ratio", [](const TrainConfig& c) { return c.engine.lr_schedule.cos_min_ratio; },
      [](TrainConfig& c, double v) { c.engine.lr_schedule.cos_min_ratio = v; },
      when([](const TrainConfig& c) { return c.engine.lr_schedule.kind == optim::LrScheduleKind::kWarmupCosine; })));
  out.push_back(derived("schedule-steps", [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
    const optim::LrScheduleConfig& lr = c.engine.lr_schedule;
    if (!scheduled(c) || lr.kind == optim::LrScheduleKind::kWarmup) return std::nullopt;
    return Shown{lr.total_steps > 0 ? lr.total_steps : c.steps,
                 lr.total_steps > 0 && lr.total_steps != c.steps ? c.source_of("schedule") : "the run's steps"};
  }));
  out.push_back(kept<double>(
      "clip", [](const TrainConfig& c) { return c.engine.clip_norm; },
      [](TrainConfig& c, double v) { c.engine.clip_norm = v; }, always));
}

// The engine's precision and collectives, and the run's logging.
void add_engine_rows(std::vector<SettingRow>& out) {
  out.push_back(engine<std::string>(
      "loss-scale", [](const TrainConfig& c) { return loss_scale_text(c.engine.loss_scaler); },
      when([](const TrainConfig& c) { return c.engine.dtype == Dtype::fp16(); })));
  out.push_back(engine<size_t>(
      "bucket", [](const TrainConfig& c) { return c.engine.bucket_elements; },
      when([](const TrainConfig& c) { return traits(c.engine.stage).reduce == GradReduce::kAllReduce; })));
  out.push_back(engine<bool>(
      "overlap", [](const TrainConfig& c) { return c.engine.overlap; }, always));
  out.push_back(engine<bool>(
      "prefetch", [](const TrainConfig& c) { return c.engine.prefetch; },
      when([](const TrainConfig& c) { return traits(c.engine.stage).gathers_on_acquire; })));
  // The compressed collectives change the trajectory: a resume keeps them.
  out.push_back(kept<std::string>(
      "quantize-weights",
      [](const TrainConfig& c) { return std::string(comm::quantization_name(c.engine.quantize_weights)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_weights = quantization_of(v); },
      when([](const TrainConfig& c) { return c.engine.quantize_weights != comm::Quantization::kNone; })));
  out.push_back(kept<std::string>(
      "quantize-grads",
      [](const TrainConfig& c) { return std::string(comm::quantization_name(c.engine.quantize_grads)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_grads = quantization_of(v); },
      when([](const TrainConfig& c) { return c.engine.quantize_grads != comm::Quantization::kNone; })));
  out.push_back(kept<uint32_t>(
      "quantize-block", [](const TrainConfig& c) { return c.engine.quantize_block; },
      [](TrainConfig& c, uint32_t v) { c.engine.quantize_block = v; }, when(compressed)));
  out.push_back(kept<std::string>(
      "quantize-rounding",
      [](const TrainConfig& c) { return std::string(rounding_mode_name(c.engine.quantize_rounding)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_rounding = parse_rounding_mode(v); },
      when(compressed)));
  out.push_back(kept<int64_t>(
      "quantize-delay", [](const TrainConfig& c) { return c.engine.quantize_delay; },
      [](TrainConfig& c, int64_t v) { c.engine.quantize_delay = v; }, when(compressed)));
  out.push_back(engine<int>(
      "shard-group-size", [](const TrainConfig& c) { return c.engine.shard_group_size; },
      when([](const TrainConfig& c) { return c.engine.shard_group_size > 0; })));
  out.push_back(engine<int>(
      "log-every", [](const TrainConfig& c) { return c.log_every; }, always));
  out.push_back(engine<bool>(
      "activation-checkpointing", [](const TrainConfig& c) { return c.activation_checkpointing; }, always));
}

std::vector<SettingRow> build_settings() {
  std::vector<SettingRow> out;
  add_run_rows(out);
  add_optimizer_rows(out);
  add_schedule_rows(out);
  add_engine_rows(out);
  return out;
}

}  // namespace

const std::vector<SettingRow>& settings() {
  static const std::vector<SettingRow> all = build_settings();
  return all;
}

const SettingRow* find_setting(std::string_view name) {
  for (const SettingRow& r : settings()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string setting_source(const SettingRow& row, const TrainConfig& c) {
  const std::string name(row.name);
  if (row.defaults == DefaultFrom::kRun) return c.source_of(name);
  const auto it = c.sources.find(name);
  return it == c.sources.end() ? "zerodp default" : it->second;
}

}  // namespace zerodp::train
