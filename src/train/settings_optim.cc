// SPDX-License-Identifier: Apache-2.0
// The rows of the optimizer's and the schedule's settings (train/settings.h).
#include <string>

#include "train/settings_rows.h"

namespace zerodp::train::rows {
namespace {

using optim::OptimizerKind;

OptimizerKind kind(const TrainConfig& c) { return c.engine.optimizer.kind; }
bool adafactor(const TrainConfig& c) { return kind(c) == OptimizerKind::kAdafactor; }
bool lion(const TrainConfig& c) { return kind(c) == OptimizerKind::kLion; }
bool adam_family(const TrainConfig& c) {
  return kind(c) == OptimizerKind::kAdamW || kind(c) == OptimizerKind::kAdam || kind(c) == OptimizerKind::kAdam8bit;
}
bool scheduled(const TrainConfig& c) { return c.engine.lr_schedule.kind != optim::LrScheduleKind::kConstant; }

}  // namespace

namespace {

// The optimizer's kind and the hyperparameters the families share.
void add_optimizer_kind_rows(std::vector<SettingRow>& out) {
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
               "--relative-step, --warmup-init, --weight-decay); docs/optim.md",
       .ds = {.path = "optimizer.type"}},
      [](const TrainConfig& c) { return std::string(optim::optimizer_kind_name(kind(c))); },
      [](TrainConfig& c, const std::string& v) { c.engine.optimizer.kind = optim::parse_optimizer_kind(v); }, always));
  // Adafactor's relative steps (before "lr": an explicit lr is Adafactor's
  // only without them).
  out.push_back(kept<bool>(
      "relative-step",
      {.spelling = "--relative-step",
       .help = "Adafactor: step size min(1e-2, 1/sqrt(t)) (the schedule is not read); false: --lr's, scheduled",
       .ds = {.path = "optimizer.params.relative_step", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.relative_step; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.relative_step = v; }, when(adafactor)));
  // The run's one learning rate: the schedule's peak (each step's rate is
  // the schedule's at that step). Adafactor's relative steps do not read it.
  out.push_back(kept<double>(
      kLrSetting,
      {.spelling = "--lr",
       .help = "Peak learning rate (Lion: 3-10x below AdamW's, e.g. 3e-4; Adafactor: only with\n"
               "--relative-step false, as Hugging Face's)",
       .ds = {.path = "optimizer.params.lr", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.lr_schedule.max_lr; },
      [](TrainConfig& c, double v) { c.engine.lr_schedule.max_lr = v; },
      when([](const TrainConfig& c) { return !adafactor(c) || !c.engine.optimizer.adafactor.relative_step; }),
      within({.hint = "e.g. 1.5e-3"})));
  out.push_back(kept<double>(
      "momentum",
      {.spelling = "--momentum",
       .help = "SGD momentum (0: plain SGD, no state)",
       .ds = {.path = "optimizer.params.momentum", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.sgd.momentum; },
      [](TrainConfig& c, double v) { c.engine.optimizer.sgd.momentum = v; },
      when([](const TrainConfig& c) { return kind(c) == OptimizerKind::kSgd; }),
      within({.hi = 1, .hi_open = true, .hint = "e.g. 0.9 (0: plain SGD)"})));
  // The betas of the run's kind ("optimizer" is set before them).
  out.push_back(kept<Pair>(
      "betas", {.ds = {.path = "optimizer.params.betas", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) {
        const optim::OptimizerConfig& o = c.engine.optimizer;
        return lion(c) ? Pair{o.lion.beta1, o.lion.beta2} : Pair{o.adam.beta1, o.adam.beta2};
      },
      [](TrainConfig& c, const Pair& v) {
        optim::OptimizerConfig& o = c.engine.optimizer;
        o.adam.beta1 = o.lion.beta1 = v[0];
        o.adam.beta2 = o.lion.beta2 = v[1];
      },
      when([](const TrainConfig& c) { return lion(c) || adam_family(c); }),
      within({.hi = 1, .hi_open = true, .hint = "e.g. 0.9,0.999 (Lion: 0.9,0.99)"})));
  out.push_back(kept<double>(
      "eps",
      {.spelling = "--eps",
       .help = "AdamW/Adam/adam8bit: epsilon, added to the root of the second moment",
       .ds = {.path = "optimizer.params.eps", .direct = true, .auto_derived = true, .applies = adam_family}},
      [](const TrainConfig& c) { return c.engine.optimizer.adam.eps; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adam.eps = v; }, when(adam_family),
      within({.hint = "e.g. 1e-8"})));
}

// Adafactor's own hyperparameters.
void add_adafactor_rows(std::vector<SettingRow>& out) {
  out.push_back(kept<bool>(
      "scale-parameter",
      {.spelling = "--scale-parameter",
       .help = "Adafactor: scale the step by the parameter tensor's RMS (at least E2)",
       .ds = {.path = "optimizer.params.scale_parameter", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.scale_parameter; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.scale_parameter = v; }, when(adafactor)));
  out.push_back(kept<bool>(
      "warmup-init",
      {.spelling = "--warmup-init",
       .help = "Adafactor: relative step min(1e-6*t, 1/sqrt(t))",
       .ds = {.path = "optimizer.params.warmup_init", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.warmup_init; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adafactor.warmup_init = v; }, when(adafactor)));
  out.push_back(kept<double>(
      "beta1",
      {.spelling = "--beta1",
       .help = "Adafactor: a first moment m with this decay (0: none, HF's None; K + 4)",
       .ds = {.path = "optimizer.params.beta1", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.beta1; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.beta1 = v; }, when(adafactor),
      within({.hi = 1, .hi_open = true, .hint = "e.g. 0.9 (0: no first moment)"})));
  out.push_back(kept<double>(
      "decay-rate",
      {.spelling = "--decay-rate",
       .help = "Adafactor: the second moment's decay b2t = 1 - t^decay_rate",
       .ds = {.path = "optimizer.params.decay_rate", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.decay_rate; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.decay_rate = v; }, when(adafactor),
      within({.lo = -1, .hi = 0, .hi_open = true, .hint = "e.g. -0.8"})));
  out.push_back(kept<double>(
      "clip-threshold",
      {.spelling = "--clip-threshold",
       .help = "Adafactor: an update's largest RMS (update clipping)",
       .ds = {.path = "optimizer.params.clip_threshold", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adafactor.clip_threshold; },
      [](TrainConfig& c, double v) { c.engine.optimizer.adafactor.clip_threshold = v; }, when(adafactor),
      within({.lo_open = true, .hint = "e.g. 1.0"})));
  out.push_back(kept<Pair>(
      "adafactor-eps", {.ds = {.path = "optimizer.params.eps", .direct = true, .applies = adafactor}},
      [](const TrainConfig& c) {
        return Pair{c.engine.optimizer.adafactor.eps1, c.engine.optimizer.adafactor.eps2};
      },
      [](TrainConfig& c, const Pair& v) {
        c.engine.optimizer.adafactor.eps1 = v[0];
        c.engine.optimizer.adafactor.eps2 = v[1];
      },
      when(adafactor), within({.hint = "e.g. 1e-30,1e-3"})));
}

// Weight decay, and the state the optimizer keeps (Lion's and 8-bit Adam's choices).
void add_optimizer_state_rows(std::vector<SettingRow>& out) {
  // The run's kind's ("optimizer" is set before it); a resume sets every kind's.
  out.push_back(kept<double>(
      "weight-decay",
      {.spelling = "--weight-decay",
       .help = "Weight decay (decoupled for AdamW, adam8bit, Lion and Adafactor, L2 for Adam/SGD)",
       .ds = {.path = "optimizer.params.weight_decay", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return optim::config_weight_decay(c.engine.optimizer); },
      [](TrainConfig& c, double v) {
        optim::OptimizerConfig& o = c.engine.optimizer;
        o.adam.weight_decay = o.sgd.weight_decay = o.lion.weight_decay = o.adafactor.weight_decay = v;
      },
      always, within({.hint = "(0 turns it off)"})));
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
               "as bitsandbytes advises (true: its rare rows' v would underflow the 8-bit map and spike the loss)",
       .ds = {.path = "optimizer.params.fp32_embedding", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adam.fp32_embedding; },
      [](TrainConfig& c, bool v) { c.engine.optimizer.adam.fp32_embedding = v; }, when(adam8bit)));
  out.push_back(kept<uint64_t>(
      "adam8bit-min-8bit-size",
      {.spelling = "--adam8bit-min-8bit-size",
       .help = "adam8bit: units of fewer elements keep AdamW's fp32 moments (bitsandbytes' min_8bit_size,\n"
               "per unit here; 0: every unit 8-bit)",
       .ds = {.path = "optimizer.params.min_8bit_size", .direct = true}},
      [](const TrainConfig& c) { return c.engine.optimizer.adam.min_8bit_size; },
      [](TrainConfig& c, uint64_t v) { c.engine.optimizer.adam.min_8bit_size = v; }, when(adam8bit)));
}

}  // namespace

// The optimizer and its hyperparameters: each shown for the optimizers that
// read it, in one order that suits every optimizer's list.
void add_optimizer_rows(std::vector<SettingRow>& out) {
  add_optimizer_kind_rows(out);
  add_adafactor_rows(out);
  add_optimizer_state_rows(out);
}

// The learning-rate schedule and clipping.
void add_schedule_rows(std::vector<SettingRow>& out) {
  out.push_back(kept<std::string>(
      "schedule",
      {.spelling = "--schedule",
       .help = "LR schedule: constant, warmup, warmup-linear or warmup-cosine",
       .ds = {.path = "scheduler.type"}},
      [](const TrainConfig& c) { return std::string(optim::lr_schedule_kind_name(c.engine.lr_schedule.kind)); },
      [](TrainConfig& c, const std::string& v) { c.engine.lr_schedule.kind = optim::parse_lr_schedule_kind(v); },
      always));
  out.push_back(kept<int64_t>(
      "warmup",
      {.spelling = "--warmup",
       .help = "Warm-up steps of the schedule",
       .ds = {.path = "scheduler.params.warmup_num_steps", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.lr_schedule.warmup_steps; },
      [](TrainConfig& c, int64_t v) { c.engine.lr_schedule.warmup_steps = v; }, when(scheduled), within({})));
  // Not a record of its own: the checkpoint keeps it in its schedule's
  // detail (resume_config.cc), which a resume restores unless given.
  out.push_back(engine<std::string>(
      "warmup-type",
      {.spelling = "--warmup-type",
       .help = "The warm-up's shape: linear, or log (DeepSpeed's default for a --config schedule)",
       .ds = {.path = "scheduler.params.warmup_type"}},
      [](const TrainConfig& c) {
        return std::string(c.engine.lr_schedule.warmup_type == optim::WarmupType::kLog ? "log" : "linear");
      },
      [](TrainConfig& c, const std::string& v) { c.engine.lr_schedule.warmup_type = optim::parse_warmup_type(v); },
      when(scheduled)));
  out.push_back(kept<double>(
      "min-lr-ratio",
      {.spelling = "--min-lr-ratio",
       .help = "warmup-cosine: final LR as a fraction of the peak",
       .ds = {.path = "scheduler.params.cos_min_ratio", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.lr_schedule.cos_min_ratio; },
      [](TrainConfig& c, double v) { c.engine.lr_schedule.cos_min_ratio = v; },
      when([](const TrainConfig& c) { return c.engine.lr_schedule.kind == optim::LrScheduleKind::kWarmupCosine; }),
      within({.hi = 1})));
  // The warm-up's start, only DeepSpeed's scheduler sets (no flag; a
  // checkpoint keeps it in its schedule's record): shown when not 0.
  out.push_back(engine<double>(
      "warmup-min-lr", {.ds = {.path = "scheduler.params.warmup_min_lr", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.lr_schedule.min_lr; },
      [](TrainConfig& c, double v) { c.engine.lr_schedule.min_lr = v; },
      when([](const TrainConfig& c) { return scheduled(c) && c.engine.lr_schedule.min_lr != 0.0; }), within({})));
  out.push_back(engine<double>(
      "warmup-min-ratio", {.ds = {.path = "scheduler.params.warmup_min_ratio", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.lr_schedule.warmup_min_ratio; },
      [](TrainConfig& c, double v) { c.engine.lr_schedule.warmup_min_ratio = v; },
      when([](const TrainConfig& c) { return scheduled(c) && c.engine.lr_schedule.warmup_min_ratio != 0.0; }),
      within({.hi = 1})));
  out.push_back(derived("schedule-steps", [](const SettingRow&, const TrainConfig& c, int) -> std::optional<Shown> {
    const optim::LrScheduleConfig& lr = c.engine.lr_schedule;
    if (!scheduled(c) || lr.kind == optim::LrScheduleKind::kWarmup) return std::nullopt;
    return Shown{lr.total_steps > 0 ? lr.total_steps : c.steps,
                 lr.total_steps > 0 && lr.total_steps != c.steps ? c.source_of("schedule") : "the run's steps"};
  }));
  out.push_back(kept<double>(
      "clip",
      {.spelling = "--clip",
       .help = "Global gradient-norm clipping (0 = off)",
       .ds = {.path = "gradient_clipping", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.clip_norm; }, [](TrainConfig& c, double v) { c.engine.clip_norm = v; },
      always, within({.hint = "(0 turns clipping off)"})));
}

}  // namespace zerodp::train::rows
