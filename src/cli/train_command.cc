// SPDX-License-Identifier: Apache-2.0
// zerodp train: flags (and an optional DeepSpeed-style --config file) into a
// TrainConfig, then train::run_training. Flags given on the command line
// override the file; the file overrides the defaults.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "plan/quantity.h"
#include "train/ds_config.h"
#include "train/resume_config.h"
#include "train/settings.h"
#include "train/trainer.h"

namespace zerodp::cli {
namespace {

// A generated flag's storage: its setting's type (train::ValueType).
using FlagValue = std::variant<bool, int, int64_t, uint32_t, uint64_t, double, std::string>;

struct TrainFlags {
  train::TrainConfig c;
  std::string config_path, backend = "thread", max_memory;
  double loss_scale = 0.0;
  std::vector<double> betas, adafactor_eps;
  std::string lion_momentum_dtype = "fp32", lion_momentum_rounding = "nearest";
  bool no_prefetch = false, no_overlap = false, quantize_weights = false, quantize_grads = false;
  int quantize_grads_bits = 8;
  std::deque<FlagValue> setting_values;  // the flags of train::settings() (a deque: stable addresses)
  // Applied after the config file, for the flags that were given.
  std::vector<std::pair<CLI::Option*, std::function<void(train::TrainConfig&)>>> overrides;
};

template <typename T>
CLI::Option* flag(CLI::App* cmd, TrainFlags& f, const std::string& name, T& var, const std::string& help,
                  std::function<void(train::TrainConfig&)> apply, bool show_default = true) {
  CLI::Option* opt = cmd->add_option(name, var, help);
  if (show_default) opt->capture_default_str();
  f.overrides.emplace_back(opt, std::move(apply));
  return opt;
}

// Names separated by spaces, on lines of at most about 90 columns.
std::string wrapped(const std::vector<std::string>& names) {
  std::string out, line;
  for (const std::string& name : names) {
    if (!line.empty() && line.size() + name.size() > 90) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + name;
  }
  return out + line;
}

// The setting a flag sets, as TrainConfig::sources names it: the flag
// without dashes ("--seq-len" -> "seq-len"; "--no-overlap" -> "overlap").
std::string setting_of(const std::string& flag) {
  std::string name = flag.substr(flag.find_first_not_of('-'));
  if (name.rfind("no-", 0) == 0) name = name.substr(3);
  return name;
}

// A setting's default as its flag's storage.
FlagValue flag_value(train::ValueType type, const nlohmann::json& v) {
  switch (type) {
    case train::ValueType::kBool:
      return v.get<bool>();
    case train::ValueType::kInt:
      return v.get<int>();
    case train::ValueType::kInt64:
      return v.get<int64_t>();
    case train::ValueType::kUint32:
      return v.get<uint32_t>();
    case train::ValueType::kUint64:
      return v.get<uint64_t>();
    case train::ValueType::kDouble:
      return v.get<double>();
    case train::ValueType::kString:
      return v.get<std::string>();
    case train::ValueType::kPair:
      break;
  }
  ZDP_THROW(ShapeError, "[train] a flag of two numbers is declared by hand, not from its setting's row");
}

// The flags of the settings the registry declares (train/settings.h): their
// spelling, --help text, default and what they set, from the rows.
void add_setting_flags(CLI::App* cmd, TrainFlags& f) {
  const train::TrainConfig defaults;
  for (const train::SettingRow& row : train::settings()) {
    if (row.flag.spelling.empty()) continue;
    FlagValue& value = f.setting_values.emplace_back(flag_value(row.type, row.get(defaults)));
    // The help ends with the DeepSpeed key that sets it too.
    std::string help(row.flag.help);
    if (!row.flag.ds.path.empty()) help += fmt::format("\n[--config: {}]", row.flag.ds.path);
    CLI::Option* opt =
        std::visit([&](auto& v) { return cmd->add_option(std::string(row.flag.spelling), v, help); }, value);
    if (row.flag.show_default) opt->capture_default_str();
    f.overrides.emplace_back(opt, [&row, &value](train::TrainConfig& c) {
      std::visit([&](const auto& v) { train::set_from_flag(row, c, nlohmann::json(v)); }, value);
    });
  }
}

void run(TrainFlags& f) {
  train::TrainConfig c;  // defaults
  if (!f.config_path.empty()) train::apply_deepspeed_config_file(f.config_path, c);
  for (auto& [opt, apply] : f.overrides) {
    if (opt->count() == 0) continue;
    // The source first: a setting's own check names the flag (TrainConfig::spelled).
    c.sources[setting_of(opt->get_name())] = "flag " + opt->get_name();
    apply(c);
  }
  const train::TrainOutcome outcome = train::run_training(c);
  if (outcome.interrupted_signal != 0) {
    // Saved and told how to resume; the shell and the scheduler see the signal's status.
    (void)std::fflush(stdout);
    std::exit(128 + outcome.interrupted_signal);  // NOLINT(concurrency-mt-unsafe): every rank has finished
  }
}

// Where the ranks run.
void add_layout_flags(CLI::App* cmd, TrainFlags& f) {
  train::TrainConfig& d = f.c;  // bound storage, pre-filled with the defaults
  flag(cmd, f, "--backend", f.backend, "thread (ranks as threads, no launcher) or mpi (run under mpirun -np N)",
       [&f](auto& c) { c.backend = comm::parse_backend(f.backend); });
  flag(cmd, f, "--ranks", d.ranks, "Number of ranks (thread: default = CPU cores; mpi: what mpirun started)",
       [&f](auto& c) {
         // 0 means "one per core" only as the default; a user's 0 is a mistake.
         ZDP_CHECK(f.c.ranks >= 1, ConfigError, "[train] --ranks {} must be at least 1", f.c.ranks);
         c.ranks = f.c.ranks;
       });
}

// The optimizer's flags that are not a registry row's own (one value sets several fields).
void add_optimizer_flags(CLI::App* cmd, TrainFlags& f) {
  flag(
      cmd, f, "--betas", f.betas,
      "AdamW/Adam/adam8bit/Lion betas B1,B2 (default 0.9,0.999; Lion 0.9,0.99: the paper's); Lion's update\n"
      "is the sign of B1*m + (1-B1)*g and its momentum decays by B2",
      [&f](auto& c) {
        ZDP_CHECK(f.betas.size() == 2, ConfigError, "[train] --betas needs two numbers B1,B2, e.g. --betas 0.9,0.99");
        c.engine.optimizer.adam.beta1 = c.engine.optimizer.lion.beta1 = f.betas[0];
        c.engine.optimizer.adam.beta2 = c.engine.optimizer.lion.beta2 = f.betas[1];
      },
      false)
      ->delimiter(',');
  flag(cmd, f, "--lion-momentum-dtype", f.lion_momentum_dtype,
       "Lion: the momentum's storage, fp32 or bf16 (K = 6 with bf16: rounded each step by\n"
       "--lion-momentum-rounding)",
       [&f](auto& c) {
         ZDP_CHECK(f.lion_momentum_dtype == "fp32" || f.lion_momentum_dtype == "bf16", ConfigError,
                   "[train] --lion-momentum-dtype {}: use fp32 or bf16", f.lion_momentum_dtype);
         c.engine.optimizer.lion.bf16_momentum = f.lion_momentum_dtype == "bf16";
         c.engine.optimizer.lion.momentum_rounding = c.engine.optimizer.lion.bf16_momentum
                                                         ? optim::parse_rounding_mode(f.lion_momentum_rounding)
                                                         : optim::RoundingMode::kNearest;
       });
  flag(cmd, f, "--lion-momentum-rounding", f.lion_momentum_rounding,
       "Lion with --lion-momentum-dtype bf16: how the new momentum is rounded to bf16, nearest\n"
       "(ties to even) or stochastic (unbiased; random bits from the element and the step, so the\n"
       "same at every N and stage); docs/optim.md",
       [&f](auto& c) {
         ZDP_CHECK(
             c.engine.optimizer.lion.bf16_momentum, ConfigError,
             "[train] --lion-momentum-rounding rounds a bf16 momentum; add --lion-momentum-dtype bf16 or drop it");
         c.engine.optimizer.lion.momentum_rounding = optim::parse_rounding_mode(f.lion_momentum_rounding);
       });
  flag(
      cmd, f, "--adafactor-eps", f.adafactor_eps,
      "Adafactor: E1,E2 (default 1e-30,1e-3): E1 added to g^2, E2 the least parameter scale",
      [&f](auto& c) {
        ZDP_CHECK(f.adafactor_eps.size() == 2, ConfigError,
                  "[train] --adafactor-eps needs two numbers E1,E2, e.g. --adafactor-eps 1e-30,1e-3");
        c.engine.optimizer.adafactor.eps1 = f.adafactor_eps[0];
        c.engine.optimizer.adafactor.eps2 = f.adafactor_eps[1];
      },
      false)
      ->delimiter(',');
  flag(cmd, f, "--loss-scale", f.loss_scale, "fp16: a static loss scale (0 = dynamic, starting at 2^16)",
       [&f](auto& c) {
         ZDP_CHECK(f.loss_scale >= 0 && std::isfinite(f.loss_scale), ConfigError,
                   "[train] --loss-scale {} (fp16.loss_scale in --config) must be >= 0 (0: dynamic)", f.loss_scale);
         if (f.loss_scale > 0) {
           c.engine.loss_scaler.mode = optim::LossScaleMode::kStatic;
           c.engine.loss_scaler.initial_scale = f.loss_scale;
         }
       });
}

// Validation, metrics and the sample.
void add_report_flags(CLI::App* cmd, TrainFlags& f) {
  train::TrainConfig& d = f.c;  // bound storage, pre-filled with the defaults
  flag(cmd, f, "--eval-every", d.eval_every, "Validation loss every K steps (0 = only at the end)",
       [&f](auto& c) { c.eval_every = f.c.eval_every; });
  flag(cmd, f, "--eval-batches", d.eval_batches, "Micro-batches per rank in one validation pass",
       [&f](auto& c) { c.eval_batches = f.c.eval_batches; });
  flag(cmd, f, "--metrics", d.metrics_path, "Write JSON Lines metrics (one record per step) to this file",
       [&f](auto& c) { c.metrics_path = f.c.metrics_path; });
  flag(cmd, f, "--sample-tokens", d.sample_tokens, "Tokens to generate after training (0 = none)",
       [&f](auto& c) { c.sample_tokens = f.c.sample_tokens; });
  flag(
      cmd, f, "--prompt", d.prompt,
      "The sample's start (default: a held-out sum on the embedded corpus, else a\n"
      "new document); text, through --tokenizer for GPT-2 ids. With chat data: a user\n"
      "message in the data's template, which the sample answers as the assistant\n"
      "(default: the first validation record's)",
      [&f](auto& c) { c.prompt = f.c.prompt; }, false);
  flag(cmd, f, "--temperature", d.temperature, "The sample's temperature (0 = greedy)",
       [&f](auto& c) { c.temperature = f.c.temperature; });
  flag(cmd, f, "--top-k", d.top_k, "The sample draws from the k likeliest tokens (0 = all)",
       [&f](auto& c) { c.top_k = f.c.top_k; });
  flag(cmd, f, "--held-out", d.held_out,
       "Embedded data: unseen sums answered at each evaluation and at the end\n"
       "(0 = none). The sample and these answers run on rank 0 from one fp32 copy of the model",
       [&f](auto& c) { c.held_out = f.c.held_out; });
}

// Timeouts, the memory limit, checkpoints and starting weights.
void add_checkpoint_flags(CLI::App* cmd, TrainFlags& f) {
  train::TrainConfig& d = f.c;  // bound storage, pre-filled with the defaults
  flag(cmd, f, "--comm-timeout", d.comm_timeout_s, "Seconds a collective waits for its peers before failing",
       [&f](auto& c) { c.comm_timeout_s = f.c.comm_timeout_s; });
  flag(cmd, f, "--checkpoint-timeout", d.checkpoint_timeout_s,
       "Seconds a collective inside a checkpoint save or load waits for its peers\n"
       "(their file I/O; at least --comm-timeout)",
       [&f](auto& c) { c.checkpoint_timeout_s = f.c.checkpoint_timeout_s; });
  flag(cmd, f, "--max-memory", f.max_memory,
       "Refuse to start when this process's planned memory (its thread ranks and its\n"
       "baseline) exceeds this, e.g. 20GB; default: this machine's memory or the cgroup's\n"
       "limit if smaller (shared among the Open MPI processes on it)",
       [&f](auto& c) { c.max_memory_bytes = static_cast<double>(plan::parse_bytes(f.max_memory, "--max-memory")); });
  flag(cmd, f, "--save", d.save_dir,
       "Save checkpoints under this folder (DIR/step-N, DIR/latest); at the end,\n"
       "and every --save-every steps",
       [&f](auto& c) { c.save_dir = f.c.save_dir; });
  flag(cmd, f, "--resume", d.resume_dir,
       "Resume from a checkpoint folder (or a --save folder: its latest), saved at\n"
       "any number of ranks and any stage; it continues the saved run: model, data, batch, optimizer,\n"
       "schedule, seed and --steps come from the checkpoint unless given",
       [&f](auto& c) { c.resume_dir = f.c.resume_dir; });
  flag(
      cmd, f, "--resume-override", d.resume_overrides,
      "With --resume: settings that may differ from the checkpoint's (e.g. data,lr); without it a\n"
      "contradicting flag is refused. Names:\n" +
          wrapped(train::overridable_settings()),
      [&f](auto& c) { c.resume_overrides = f.c.resume_overrides; }, false)
      ->delimiter(',');
  flag(cmd, f, "--init-from", d.init_from,
       "Start from these weights instead of --seed's (fresh optimizer state): an\n"
       "llm.c model file (model.bin, fp32), zerodp's model.safetensors, a Hugging Face\n"
       "GPT-2 model.safetensors (F32; its config.json beside it is read), or a Hugging\n"
       "Face Llama/Qwen2 directory (config.json and F32/BF16/F16 safetensors, sharded or\n"
       "not; without --model it trains that shape), e.g. what 'zerodp ckpt consolidate'\n"
       "wrote; told apart by content. It must hold --model's shape",
       [&f](auto& c) { c.init_from = f.c.init_from; });
  flag(cmd, f, "--save-every", d.save_every, "Save every S steps (0 = only at the end)",
       [&f](auto& c) { c.save_every = f.c.save_every; });
  flag(cmd, f, "--keep-last", d.keep_last, "Keep only the K newest checkpoints (0 = all)",
       [&f](auto& c) { c.keep_last = f.c.keep_last; });
}

// On/off switches: activation checkpointing, prefetch, overlap, compressed collectives.
void add_switch_flags(CLI::App* cmd, TrainFlags& f) {
  train::TrainConfig& d = f.c;  // bound storage, pre-filled with the defaults
  auto* ckpt = cmd->add_flag("--activation-checkpointing", d.activation_checkpointing,
                             "Recompute each block's forward in backward instead of keeping its activations");
  f.overrides.emplace_back(ckpt, [&f](auto& c) { c.activation_checkpointing = f.c.activation_checkpointing; });
  auto* np = cmd->add_flag("--no-prefetch", f.no_prefetch, "Stage 3: do not prefetch the next unit's parameters");
  f.overrides.emplace_back(np, [](auto& c) { c.engine.prefetch = false; });
  auto* no = cmd->add_flag("--no-overlap", f.no_overlap, "Run collectives on the compute thread (no overlap)");
  f.overrides.emplace_back(no, [](auto& c) { c.engine.overlap = false; });
  auto* qw =
      cmd->add_flag("--quantize-weights", f.quantize_weights,
                    "Stage 3: all-gather the parameters as int8 blocks (--quantize-block) with an fp32 scale each\n"
                    "(ZeRO++ qwZ; about 1/4 of fp32's bytes, 1/2 of bf16's). Master weights and the optimizer\n"
                    "stay fp32 and exact; the losses are not the unquantized run's bits (docs/comm.md). It can\n"
                    "delay a small model's early loss drop: gpt-10m ended 6-22% behind at 2400 steps, and within\n"
                    "0.8% (two seeds, with the gradients too) with --quantize-delay 400 or 800 (docs/scale.md)");
  f.overrides.emplace_back(qw, [](auto& c) { c.engine.quantize_weights = comm::Quantization::kInt8; });
  auto* qg = cmd->add_flag("--quantize-grads", f.quantize_grads,
                           "Stages 1-3: reduce-scatter the gradients as int8 blocks (--quantize-block) with an fp32\n"
                           "scale each (ZeRO++ qgZ), summed in fp32 in rank order; see --quantize-grads-bits");
  f.overrides.emplace_back(qg, [&f](auto& c) {
    c.engine.quantize_grads = f.quantize_grads_bits == 4 ? comm::Quantization::kInt4 : comm::Quantization::kInt8;
  });
  flag(cmd, f, "--quantize-grads-bits", f.quantize_grads_bits,
       "Code width of --quantize-grads: 8 or 4 (int4: half the bytes, coarser)", [&f](auto& c) {
         ZDP_CHECK(f.quantize_grads_bits == 8 || f.quantize_grads_bits == 4, ConfigError,
                   "[train] --quantize-grads-bits {} must be 8 or 4", f.quantize_grads_bits);
         ZDP_CHECK(c.engine.quantize_grads != comm::Quantization::kNone, ConfigError,
                   "[train] --quantize-grads-bits needs --quantize-grads (or zero_optimization."
                   "zero_quantized_gradients in --config): add it");
         c.engine.quantize_grads = f.quantize_grads_bits == 4 ? comm::Quantization::kInt4 : comm::Quantization::kInt8;
       });
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  TrainFlags& f = *flags;
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a language model (GPT-2 or the Llama family: zerodp model list) with ZeRO. With no options: the default "
      "tiny GPT on the embedded arithmetic corpus, one thread\n"
      "rank per core, ZeRO stage 3 in bf16, 2-3 minutes on 2 cores; then the memory/communication summary\n"
      "and a generated sample. Flags override --config; --config overrides the defaults.");
  cmd->add_option("--config", f.config_path,
                  "DeepSpeed-style JSON config (train_batch_size, train_micro_batch_size_per_gpu,\n"
                  "gradient_accumulation_steps, zero_optimization, fp16, bf16, optimizer, scheduler,\n"
                  "gradient_clipping, steps_per_print); see docs/train.md")
      ->check(CLI::ExistingFile);

  add_setting_flags(cmd, f);
  add_layout_flags(cmd, f);
  add_optimizer_flags(cmd, f);
  add_report_flags(cmd, f);
  add_checkpoint_flags(cmd, f);
  add_switch_flags(cmd, f);
  cmd->callback([flags] { run(*flags); });
}

}  // namespace zerodp::cli
