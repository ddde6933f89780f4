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

using Pair = std::array<double, 2>;

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
constexpr ValueType value_type() {
  if constexpr (std::is_same_v<T, bool>) return ValueType::kBool;
  if constexpr (std::is_same_v<T, int>) return ValueType::kInt;
  if constexpr (std::is_same_v<T, int64_t>) return ValueType::kInt64;
  if constexpr (std::is_same_v<T, uint32_t>) return ValueType::kUint32;
  if constexpr (std::is_same_v<T, uint64_t>) return ValueType::kUint64;
  if constexpr (std::is_same_v<T, double>) return ValueType::kDouble;
  if constexpr (std::is_same_v<T, std::string>) return ValueType::kString;
  static_assert(std::is_same_v<T, Pair> || std::is_arithmetic_v<T> || std::is_same_v<T, std::string>,
                "a setting's value is a bool, an integer, a double, a string or a pair of doubles");
  return ValueType::kPair;
}

template <typename T>
SettingRow row(std::string_view name, FlagSpec flag, ResumePolicy resume, DefaultFrom defaults, Get<T> get, Set<T> set,
               ShowFn show) {
  SettingRow r;
  r.name = name;
  r.flag = flag;
  r.type = value_type<T>();
  r.resume = resume;
  r.defaults = defaults;
  r.get = [get](const TrainConfig& c) { return json(get(c)); };
  if (set != nullptr) r.set = [set](TrainConfig& c, const json& v) { set(c, v.get<T>()); };
  r.show = std::move(show);
  return r;
}

// A setting no checkpoint records, whose default a config file's replaces.
template <typename T>
SettingRow engine(std::string_view name, FlagSpec flag, Get<T> get, Set<T> set, ShowFn show) {
  return row<T>(name, flag, ResumePolicy::kNotRecorded, DefaultFrom::kRun, get, set, std::move(show));
}
// A setting the checkpoint records and a resume must keep, whose default
// a config file's replaces.
template <typename T>
SettingRow kept(std::string_view name, FlagSpec flag, Get<T> get, Set<T> set, ShowFn show) {
  return row<T>(name, flag, ResumePolicy::kMustMatch, DefaultFrom::kRun, get, set, std::move(show));
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

// The data, the batch, the run's length and seed.
void add_run_rows(std::vector<SettingRow>& out) {
  constexpr auto kMust = ResumePolicy::kMustMatch;
  constexpr auto kOwn = DefaultFrom::kZerodp;
  out.push_back(row<std::string>(
      "model", {.spelling = "--model", .help = "Model: a preset (zerodp model list), a .json file or inline JSON"},
      kMust, kOwn, [](const TrainConfig& c) { return c.model; },
      [](TrainConfig& c, const std::string& v) { c.model = v; }, always));
  out.push_back(row<std::string>(
      "data",
      {.spelling = "--data",
       .help = "Training data: a UTF-8 text file (bytes as tokens, or --tokenizer's) or an llm.c\n"
               ".bin token shard, or a quoted glob of them ('fineweb_train_*.bin': sorted, concatenated);\n"
               "default: the embedded arithmetic corpus"},
      kMust, kOwn, [](const TrainConfig& c) { return c.data; },
      [](TrainConfig& c, const std::string& v) { c.data = v; },
      [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
        return Shown{c.data.empty() ? std::string("embedded arithmetic corpus") : c.data, ""};
      }));
  out.push_back(row<std::string>(
      "val-data",
      {.spelling = "--val-data",
       .help = "Validation shard(s) for .bin data (default: 'train' -> 'val' in the name,\n"
               "'_train_' -> '_val_' in a glob, else the last 10%)"},
      kMust, kOwn, [](const TrainConfig& c) { return c.val_data; },
      [](TrainConfig& c, const std::string& v) { c.val_data = v; },
      when([](const TrainConfig& c) { return !c.val_data.empty(); })));
  out.push_back(row<std::string>(
      "tokenizer",
      {.spelling = "--tokenizer",
       .help = "Tokenize --data's text with GPT-2's BPE (vocab 50257): gpt2 (the files\n"
               "scripts/setup installs; $ZERODP_DATA_DIR/gpt2 first) or a directory holding encoder.json\n"
               "and vocab.bpe. With .bin shards (already tokens) it prints the sample as text",
       .show_default = false},
      kMust, kOwn, [](const TrainConfig& c) { return c.tokenizer; },
      [](TrainConfig& c, const std::string& v) { c.tokenizer = v; },
      when([](const TrainConfig& c) { return !c.tokenizer.empty(); })));
  // --steps may always grow: it says how far to train, not how.
  out.push_back(row<int>(
      "steps", {.spelling = "--steps", .help = "Optimizer steps"}, ResumePolicy::kMayChange, kOwn,
      [](const TrainConfig& c) { return c.steps; }, [](TrainConfig& c, int v) { c.steps = v; }, always));
  out.push_back(row<uint64_t>(
      "seed", {.spelling = "--seed", .help = "Seed of the initialisation and the data order"}, kMust, kOwn,
      [](const TrainConfig& c) { return c.seed; }, [](TrainConfig& c, uint64_t v) { c.seed = v; }, always));
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
      "stage",
      {.spelling = "--stage", .help = "ZeRO stage: 0 (plain data parallel), 1 (P_os), 2 (P_os+g), 3 (P_os+g+p)"},
      [](const TrainConfig& c) { return stage_number(c.engine.stage); },
      [](TrainConfig& c, int v) { c.engine.stage = parse_stage(v, "[train] --stage"); }, always));
  out.push_back(engine<std::string>(
      "precision",
      {.spelling = "--precision", .help = "Parameter/gradient dtype: fp32, fp16 (dynamic loss scaling) or bf16"},
      [](const TrainConfig& c) { return std::string(c.engine.dtype.name()); },
      [](TrainConfig& c, const std::string& v) { c.engine.dtype = Dtype::parse(v); }, always));
  out.push_back(kept<int>(
      "micro-batch",
      {.spelling = "--micro-batch",
       .help = "Sequences per rank per micro-batch (default: 26 on the embedded arithmetic corpus, 8 on other data)",
       .show_default = false,
       .count = true},
      [](const TrainConfig& c) { return c.micro_batch; }, [](TrainConfig& c, int v) { c.micro_batch = v; }, always));
  out.push_back(kept<int>(
      "grad-accum", {.spelling = "--grad-accum", .help = "Micro-batches per optimizer step"},
      [](const TrainConfig& c) { return c.engine.grad_accum; },
      [](TrainConfig& c, int v) {
        c.engine.grad_accum = v;
        c.grad_accum_given = true;
      },
      always));
  out.push_back(row<int>(
      "seq-len",
      {.spelling = "--seq-len",
       .help = "Tokens per sequence (default: 20 on the embedded arithmetic corpus, 64 on other data)",
       .show_default = false,
       .count = true},
      kMust, kOwn, [](const TrainConfig& c) { return c.seq_len; }, [](TrainConfig& c, int v) { c.seq_len = v; },
      always));
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
      "optimizer",
      {.spelling = "--optimizer",
       .help = "adamw, adam, sgd (with --momentum: SGD with momentum), lion (sign of a momentum;\n"
               "K = 8 bytes per parameter against AdamW's 12, 6 with --lion-momentum-dtype bf16),\n"
               "adam8bit (AdamW with both moments stored 8-bit, block-wise quantized as bitsandbytes\n"
               "does: K = 6 + 8 bytes per 2048; the token embedding's unit and units under 4096 elements\n"
               "keep fp32 moments, --adam8bit-fp32-embedding, --adam8bit-min-8bit-size;\n"
               "takes AdamW's --lr, --betas, --weight-decay) or adafactor (Hugging Face's Adafactor:\n"
               "factored second moment, no first moment, relative steps; K = 4 + rows and columns;\n"
               "--beta1, --decay-rate, --clip-threshold, --adafactor-eps, --scale-parameter,\n"
               "--relative-step, --warmup-init, --weight-decay); docs/optim.md"},
      [](const TrainConfig& c) { return std::string(optim::optimizer_kind_name(kind(c))); },
      [](TrainConfig& c, const std::string& v) { c.engine.optimizer.kind = optim::parse_optimizer_kind(v); }, always));
  // Adafactor's relative steps (before "lr": an explicit lr is Adafactor's
  // only without them).
  out.push_back(kept<bool>(
      "relative-step",
      {.spelling = "--relative-step",
       .help = "Adafactor: step size min(1e-2, 1/sqrt(t)) (the schedule is not read); false: --lr's, scheduled"},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.relative_step; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.relative_step = v; }, when(adafactor)));
  // One learning rate: the schedule's peak, and every optimizer's.
  out.push_back(kept<double>(
      "lr", {}, [](const TrainConfig& c) { return c.engine.lr_schedule.max_lr; },
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
      "momentum", {.spelling = "--momentum", .help = "SGD momentum (0: plain SGD, no state)"},
      [](const TrainConfig& c) { return c.engine.optimizer.sgd.momentum; },
      [](TrainConfig& c, double v) { c.engine.optimizer.sgd.momentum = v; },
      when([](const TrainConfig& c) { return kind(c) == OptimizerKind::kSgd; })));
  // The betas of the run's kind ("optimizer" is set before them).
  out.push_back(kept<Pair>(
      "betas", {},
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
      "eps", {}, [](const TrainConfig& c) { return c.engine.optimizer.adam.eps; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adam.eps = v; }, when(adam_family)));
  out.push_back(kept<bool>(
      "scale-parameter",
      {.spelling = "--scale-parameter",
       .help = "Adafactor: scale the step by the parameter tensor's RMS (at least E2)"},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.scale_parameter; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.scale_parameter = v; }, when(adafactor)));
  out.push_back(kept<bool>(
      "warmup-init", {.spelling = "--warmup-init", .help = "Adafactor: relative step min(1e-6*t, 1/sqrt(t))"},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.warmup_init; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.warmup_init = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "beta1",
      {.spelling = "--beta1", .help = "Adafactor: a first moment m with this decay (0: none, HF's None; K + 4)"},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.beta1; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.beta1 = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "decay-rate", {.spelling = "--decay-rate", .help = "Adafactor: the second moment's decay b2t = 1 - t^decay_rate"},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.decay_rate; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.decay_rate = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "clip-threshold",
      {.spelling = "--clip-threshold", .help = "Adafactor: an update's largest RMS (update clipping)"},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.clip_threshold; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.clip_threshold = v; }, when(adafactor)));
  out.push_back(kept<Pair>(
      "adafactor-eps", {},
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
      "weight-decay",
      {.spelling = "--weight-decay",
       .help = "Weight decay (decoupled for AdamW, adam8bit, Lion and Adafactor, L2 for Adam/SGD)"},
      [](const TrainConfig& c) { return optim::config_weight_decay(c.engine.optimizer); },
      [](TrainConfig& c, double v) {
        optim::OptimizerConfig& o = c.engine.optimizer;
        o.adam.weight_decay = o.sgd.weight_decay = o.lion.weight_decay = o.adafactor.weight_decay = v;
      },
      always));
  out.push_back(kept<std::string>(
      "lion-momentum-dtype", {},
      [](const TrainConfig& c) { return std::string(c.engine.optimizer.lion.bf16_momentum ? "bf16" : "fp32"); },
      [](TrainConfig& c, const std::string& v) { c.engine.optimizer.lion.bf16_momentum = v == "bf16"; }, when(lion)));
  // (A checkpoint from before stochastic rounding has no such field: its
  // bf16 momentum was rounded to nearest, LionConfig's default.)
  out.push_back(kept<std::string>(
      "lion-momentum-rounding", {},
      [](const TrainConfig& c) {
        return std::string(optim::rounding_mode_name(c.engine.optimizer.lion.momentum_rounding));
      },
      [](TrainConfig& c, const std::string& v) {
        c.engine.optimizer.lion.momentum_rounding = optim::parse_rounding_mode(v);
      },
      when([](const TrainConfig& c) { return lion(c) && c.engine.optimizer.lion.bf16_momentum; })));
  auto adam8bit = [](const TrainConfig& c) { return kind(c) == OptimizerKind::kAdam8bit; };
  out.push_back(kept<bool>(
      "adam8bit-fp32-embedding",
      {.spelling = "--adam8bit-fp32-embedding",
       .help = "adam8bit: keep the token embedding's unit (GPT's, tied to the LM head) in AdamW's fp32 moments,\n"
               "as bitsandbytes advises (true: its rare rows' v would underflow the 8-bit map and spike the loss)"},
      [](const TrainConfig& c) { return c.engine.optimizer.adam.fp32_embedding; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adam.fp32_embedding = v; }, when(adam8bit)));
  out.push_back(kept<uint64_t>(
      "adam8bit-min-8bit-size",
      {.spelling = "--adam8bit-min-8bit-size",
       .help = "adam8bit: units of fewer elements keep AdamW's fp32 moments (bitsandbytes' min_8bit_size,\n"
               "per unit here; 0: every unit 8-bit)"},
      [](const TrainConfig& c) { return c.engine.optimizer.adam.min_8bit_size; },
      [](TrainConfig& c, uint64_t v) { c.engine.optimizer.adam.min_8bit_size = v; }, when(adam8bit)));
}

// The learning-rate schedule and clipping.
void add_schedule_rows(std::vector<SettingRow>& out) {
  out.push_back(kept<std::string>(
      "schedule", {.spelling = "--schedule", .help = "LR schedule: constant, warmup, warmup-linear or warmup-cosine"},
      [](const TrainConfig& c) { return std::string(optim::lr_schedule_kind_name(c.engine.lr_schedule.kind)); },
      [](TrainConfig& c, const std::string& v) { c.engine.lr_schedule.kind = optim::parse_lr_schedule_kind(v); },
      always));
  out.push_back(kept<int64_t>(
      "warmup", {.spelling = "--warmup", .help = "Warm-up steps of the schedule"},
      [](const TrainConfig& c) { return c.engine.lr_schedule.warmup_steps; },
      [](TrainConfig& c, int64_t v) { c.engine.lr_schedule.warmup_steps = v; }, when(scheduled)));
  out.push_back(derived("warmup-type", [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
    if (!scheduled(c)) return std::nullopt;
    return Shown{c.engine.lr_schedule.warmup_type == optim::WarmupType::kLog ? "log" : "linear",
                 c.source_of("schedule")};
  }));
  out.push_back(kept<double>(
      "min-lr-ratio", {.spelling = "--min-lr-ratio", .help = "warmup-cosine: final LR as a fraction of the peak"},
      [](const TrainConfig& c) { return c.engine.lr_schedule.cos_min_ratio; },
      [](TrainConfig& c, double v) { c.engine.lr_schedule.cos_min_ratio = v; },
      when([](const TrainConfig& c) { return c.engine.lr_schedule.kind == optim::LrScheduleKind::kWarmupCosine; })));
  out.push_back(derived("schedule-steps", [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
    const optim::LrScheduleConfig& lr = c.engine.lr_schedule;
    if (!scheduled(c) || lr.kind == optim::LrScheduleKind::kWarmup) return std::nullopt;
    return Shown{lr.total_steps > 0 ? lr.total_steps : c.steps,
                 lr.total_steps > 0 && lr.total_steps != c.steps ? c.source_of("schedule") : "the run's steps"};
  }));
  out.push_back(kept<double>(
      "clip", {.spelling = "--clip", .help = "Global gradient-norm clipping (0 = off)"},
      [](const TrainConfig& c) { return c.engine.clip_norm; }, [](TrainConfig& c, double v) { c.engine.clip_norm = v; },
      always));
}

// The engine's precision and collectives, and the run's logging.
void add_engine_rows(std::vector<SettingRow>& out) {
  out.push_back(engine<std::string>(
      "loss-scale", {}, [](const TrainConfig& c) { return loss_scale_text(c.engine.loss_scaler); }, nullptr,
      when([](const TrainConfig& c) { return c.engine.dtype == Dtype::fp16(); })));
  out.push_back(engine<uint64_t>(
      "bucket", {}, [](const TrainConfig& c) { return static_cast<uint64_t>(c.engine.bucket_elements); }, nullptr,
      when([](const TrainConfig& c) { return traits(c.engine.stage).reduce == GradReduce::kAllReduce; })));
  out.push_back(engine<bool>(
      "overlap", {}, [](const TrainConfig& c) { return c.engine.overlap; }, nullptr, always));
  out.push_back(engine<bool>(
      "prefetch", {}, [](const TrainConfig& c) { return c.engine.prefetch; }, nullptr,
      when([](const TrainConfig& c) { return traits(c.engine.stage).gathers_on_acquire; })));
  // The compressed collectives change the trajectory: a resume keeps them.
  out.push_back(kept<std::string>(
      "quantize-weights", {},
      [](const TrainConfig& c) { return std::string(comm::quantization_name(c.engine.quantize_weights)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_weights = quantization_of(v); },
      when([](const TrainConfig& c) { return c.engine.quantize_weights != comm::Quantization::kNone; })));
  out.push_back(kept<std::string>(
      "quantize-grads", {},
      [](const TrainConfig& c) { return std::string(comm::quantization_name(c.engine.quantize_grads)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_grads = quantization_of(v); },
      when([](const TrainConfig& c) { return c.engine.quantize_grads != comm::Quantization::kNone; })));
  out.push_back(kept<uint32_t>(
      "quantize-block",
      {.spelling = "--quantize-block",
       .help = "Elements per fp32 scale of --quantize-weights and --quantize-grads: a power of two from 32 to\n"
               "2048. Smaller blocks follow the values more closely for more bytes (int8: 1 + 4/B bytes per\n"
               "element; docs/scale.md measures 64 against 256). No DeepSpeed key sets it"},
      [](const TrainConfig& c) { return c.engine.quantize_block; },
      [](TrainConfig& c, uint32_t v) { c.engine.quantize_block = v; }, when(compressed)));
  out.push_back(kept<std::string>(
      "quantize-rounding",
      {.spelling = "--quantize-rounding",
       .help = "How --quantize-weights and --quantize-grads round values to codes: nearest (ties to even; a\n"
               "value gets the same error every step) or stochastic (unbiased: up with probability equal to the\n"
               "remainder, bits keyed by step, unit and element, so runs and resumes repeat). docs/scale.md\n"
               "measures both. No DeepSpeed key sets it"},
      [](const TrainConfig& c) { return std::string(rounding_mode_name(c.engine.quantize_rounding)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_rounding = parse_rounding_mode(v); },
      when(compressed)));
  out.push_back(kept<int64_t>(
      "quantize-delay",
      {.spelling = "--quantize-delay",
       .help = "Optimizer steps to run with the plain collectives before --quantize-weights and\n"
               "--quantize-grads start (TensorFlow's quant_delay): a small model's early training can be\n"
               "delayed by the codes' error, a trained one's barely (docs/scale.md). 0: from the first step.\n"
               "No DeepSpeed key sets it"},
      [](const TrainConfig& c) { return c.engine.quantize_delay; },
      [](TrainConfig& c, int64_t v) { c.engine.quantize_delay = v; }, when(compressed)));
  out.push_back(engine<int>(
      "shard-group-size",
      {.spelling = "--shard-group-size",
       .help = "Hybrid sharding (HSDP / MiCS): partition the model states inside groups of G\n"
               "consecutive ranks (e.g. one host's) as a run of G ranks would, and replicate them across\n"
               "the N/G groups: gathers stay in the group, and only each shard's gradient all-reduce\n"
               "crosses groups. G must divide --ranks; stages 1-3. 0 = all ranks (the flat layout).\n"
               "DeepSpeed's mics_shard_size / zero_hpz_partition_size map here (docs/scale.md)"},
      [](const TrainConfig& c) { return c.engine.shard_group_size; },
      [](TrainConfig& c, int v) { c.engine.shard_group_size = v; },
      when([](const TrainConfig& c) { return c.engine.shard_group_size > 0; })));
  out.push_back(engine<int>(
      "log-every", {.spelling = "--log-every", .help = "A log line every K steps when the output is not a terminal"},
      [](const TrainConfig& c) { return c.log_every; }, [](TrainConfig& c, int v) { c.log_every = v; }, always));
  out.push_back(engine<bool>(
      "activation-checkpointing", {}, [](const TrainConfig& c) { return c.activation_checkpointing; }, nullptr,
      always));
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

void set_from_flag(const SettingRow& row, TrainConfig& c, const json& value) {
  ZDP_CHECK(!row.flag.count || value.get<int64_t>() >= 1, ConfigError, "[train] {} {} must be at least 1",
            row.flag.spelling, value.dump());
  row.set(c, value);
}

std::string setting_source(const SettingRow& row, const TrainConfig& c) {
  const std::string name(row.name);
  if (row.defaults == DefaultFrom::kRun) return c.source_of(name);
  const auto it = c.sources.find(name);
  return it == c.sources.end() ? "zerodp default" : it->second;
}

}  // namespace zerodp::train
