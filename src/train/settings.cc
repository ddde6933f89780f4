// SPDX-License-Identifier: Apache-2.0
#include "train/settings.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "comm/mpi.h"
#include "core/error.h"
#include "kernels/compute.h"
#include "train/settings_rows.h"

namespace zerodp::train {
namespace rows {

SettingRow either(std::string_view name, FlagSpec flag, ResumePolicy resume, DefaultFrom defaults,
                  bool TrainConfig::*field, std::string_view off, std::string_view on) {
  SettingRow r;
  r.name = name;
  r.flag = flag;
  r.type = ValueType::kString;
  r.resume = resume;
  r.defaults = defaults;
  r.get = [field, off, on](const TrainConfig& c) { return json(c.*field ? on : off); };
  r.set = [field, off, on, spelling = flag.spelling](TrainConfig& c, const json& v) {
    const std::string word = v.get<std::string>();
    ZDP_CHECK(word == off || word == on, ConfigError, "[train] {} {}: use {} or {}", spelling, word, off, on);
    c.*field = word == on;
  };
  r.show = [field](const SettingRow& row, const TrainConfig& c, int /*ranks*/) -> std::optional<Shown> {
    if (!(c.*field)) return std::nullopt;
    return Shown{row.get(c), ""};
  };
  return r;
}

SettingRow derived(std::string_view name, ShowFn show) {
  SettingRow r;
  r.name = name;
  r.show = std::move(show);
  return r;
}

CheckFn within(Bounds b) {
  return [b](const SettingRow& r, const TrainConfig& c) {
    const json value = r.get(c);
    const bool pair = value.is_array();
    bool ok = true;
    for (const json& v : pair ? value : json::array({value})) {
      const double x = v.get<double>();
      ok = ok && std::isfinite(x) && (b.lo_open ? x > b.lo : x >= b.lo) && (b.hi_open ? x < b.hi : x <= b.hi);
    }
    if (ok) return;
    const std::string range =
        std::isinf(b.hi) ? fmt::format("{} {}", b.lo_open ? ">" : ">=", b.lo)
                         : fmt::format("in {}{}, {}{}", b.lo_open ? "(" : "[", b.lo, b.hi, b.hi_open ? ")" : "]");
    const auto number = [](const json& v) {
      return v.is_number_float() ? fmt::format("{}", v.get<double>()) : v.dump();
    };
    const std::string shown = pair ? number(value[0]) + "," + number(value[1]) : number(value);
    ZDP_THROW(ConfigError, "[train] {} {} must {} {}{}{}", c.spelled(std::string(r.name)), shown,
              pair ? "each be" : "be", range,
              b.hint.empty()          ? ""
              : b.hint.front() == '(' ? " "
                                      : ", ",
              b.hint);
  };
}

std::optional<Shown> always(const SettingRow& r, const TrainConfig& c, int /*ranks*/) { return Shown{r.get(c), ""}; }
ShowFn when(bool (*used)(const TrainConfig&)) {
  return [used](const SettingRow& r, const TrainConfig& c, int /*ranks*/) -> std::optional<Shown> {
    if (!used(c)) return std::nullopt;
    return Shown{r.get(c), ""};
  };
}

namespace {

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

}  // namespace

namespace {

constexpr auto kMust = ResumePolicy::kMustMatch;
constexpr auto kOwn = DefaultFrom::kZerodp;

// What is trained: the model, the data and how it is read.
void add_data_rows(std::vector<SettingRow>& out) {
  out.push_back(row<std::string>(
      "model", {.spelling = "--model", .help = "Model: a preset (zerodp model list), a .json file or inline JSON"},
      kMust, kOwn, [](const TrainConfig& c) { return c.model; },
      [](TrainConfig& c, const std::string& v) { c.model = v; }, always));
  out.push_back(row<std::string>(
      "data",
      {.spelling = "--data",
       .help = "Training data: a UTF-8 text file (bytes as tokens, or --tokenizer's) or an llm.c\n"
               ".bin token shard, or a quoted glob of them ('fineweb_train_*.bin': sorted, concatenated);\n"
               "or chat records, FILE.jsonl, for supervised fine-tuning (loss on the assistant's tokens;\n"
               "needs --tokenizer's tokenizer.json); default: the embedded arithmetic corpus"},
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
               "and vocab.bpe; or with a Hugging Face tokenizer.json (byte-level BPE: Llama 3, Qwen2,\n"
               "SmolLM2). With .bin shards (already tokens) it prints the sample as text, and must be the\n"
               "tokenizer the shards record when they record one",
       .show_default = false},
      kMust, kOwn, [](const TrainConfig& c) { return c.tokenizer; },
      [](TrainConfig& c, const std::string& v) { c.tokenizer = v; },
      when([](const TrainConfig& c) { return !c.tokenizer.empty(); })));
  out.push_back(row<std::string>(
      "chat-template",
      {.spelling = "--chat-template",
       .help = "Chat data (--data FILE.jsonl, docs/llama.md): chatml (<|im_start|>role\\n...<|im_end|>: Qwen,\n"
               "SmolLM2) or llama3 (<|start_header_id|>role<|end_header_id|>...<|eot_id|>); default: the one\n"
               "whose special tokens --tokenizer has (ChatML first)",
       .show_default = false},
      kMust, kOwn, [](const TrainConfig& c) { return c.chat_template; },
      [](TrainConfig& c, const std::string& v) { c.chat_template = v; },
      when([](const TrainConfig& c) { return !c.chat_template.empty(); })));
  // Another layout is another stream of windows: a resume keeps it.
  out.push_back(
      either("chat-packing",
             {.spelling = "--chat-packing",
              .help = "Chat data: pad (one record per window of --seq-len, the rest padding) or pack (records\n"
                      "in order, as many as fit in a window, each attending only to itself and its positions from 0:\n"
                      "fewer windows and less padding; a Llama-family model)"},
             kMust, kOwn, &TrainConfig::pack_chat, "pad", "pack"));
}

// How long, how saved and from which seed.
void add_length_rows(std::vector<SettingRow>& out) {
  // --steps may always grow: it says how far to train, not how.
  out.push_back(row<int>(
      "steps", {.spelling = "--steps", .help = "Optimizer steps"}, ResumePolicy::kMayChange, kOwn,
      [](const TrainConfig& c) { return c.steps; }, [](TrainConfig& c, int v) { c.steps = v; }, always));
  out.push_back(either(
      "on-save-failure",
      {.spelling = "--on-save-failure",
       .help = "When a periodic save (--save-every) fails by a write error (a full disk, a read-only\n"
               "filesystem): stop (print the last complete checkpoint and the command that resumes it, exit 1)\n"
               "or continue (report it, train on and save again at the next save point; the final save must\n"
               "succeed). Either way the failed save leaves nothing behind"},
      ResumePolicy::kNotRecorded, DefaultFrom::kRun, &TrainConfig::continue_after_failed_save, "stop", "continue"));
  out.push_back(row<uint64_t>(
      "seed", {.spelling = "--seed", .help = "Seed of the initialisation and the data order"}, kMust, kOwn,
      [](const TrainConfig& c) { return c.seed; }, [](TrainConfig& c, uint64_t v) { c.seed = v; }, always));
}

// The layout: ranks, stage, precision, products and the batch.
void add_layout_rows(std::vector<SettingRow>& out) {
  out.push_back(derived("ranks", [](const SettingRow&, const TrainConfig& c, int ranks) -> std::optional<Shown> {
    std::string from = c.sources.count("ranks") > 0 ? c.sources.at("ranks") : "zerodp default: one per core";
    if (c.sources.count("ranks") == 0 && c.backend == comm::Backend::kMpi) {
      // The launcher's process count: "mpirun -np", "srun -n".
      const auto launch = comm::mpi_launch();
      from = comm::launch_command(launch ? launch->launcher : comm::Launcher::kMpirun, ranks);
      from = from.substr(0, from.rfind(' '));
    }
    const std::string backend =
        c.source_kind("backend") == SourceKind::kDetected
            ? fmt::format("{} backend ({})", comm::backend_name(c.backend), c.sources.at("backend"))
            : fmt::format("{} backend", comm::backend_name(c.backend));
    return Shown{ranks, fmt::format("{}, {}", from, backend)};
  }));
  out.push_back(engine<int>(
      "stage",
      {.spelling = "--stage",
       .help = "ZeRO stage: 0 (plain data parallel), 1 (P_os), 2 (P_os+g), 3 (P_os+g+p)",
       .ds = {.path = "zero_optimization.stage"}},
      [](const TrainConfig& c) { return stage_number(c.engine.stage); },
      [](TrainConfig& c, int v) { c.engine.stage = parse_stage(v, "[train] " + c.spelled("stage")); }, always));
  out.push_back(engine<std::string>(
      "precision",
      {.spelling = "--precision",
       .help = "Parameter/gradient dtype: fp32, fp16 (dynamic loss scaling) or bf16",
       .ds = {.path = "fp16.enabled, bf16.enabled"}},
      [](const TrainConfig& c) { return std::string(c.engine.dtype.name()); },
      [](TrainConfig& c, const std::string& v) { c.engine.dtype = Dtype::parse(v); }, always));
  out.push_back(engine<std::string>(
      "compute",
      {.spelling = "--compute",
       .help = "The model's matrix products: fp32 (sgemm) or bf16 (operands rounded to bf16, sums in fp32, as\n"
               "autocast; on the CPU's bf16 units, AVX512_BF16, else the same bits slowly); with any --precision\n"
               "(with bf16 they read the bf16 weights in place: no fp32 copy of a unit, the same bits)"},
      [](const TrainConfig& c) { return std::string(kernels::compute_name(c.engine.compute)); },
      [](TrainConfig& c, const std::string& v) {
        const std::optional<kernels::Compute> compute = kernels::parse_compute(v);
        ZDP_CHECK(compute.has_value(), ConfigError, "[train] --compute {}: use fp32 or bf16", v);
        c.engine.compute = *compute;
      },
      when([](const TrainConfig& c) { return c.engine.compute != kernels::Compute::kFp32; })));
  out.push_back(kept<int>(
      kMicroBatchSetting,
      {.spelling = "--micro-batch",
       .help = "Sequences per rank per micro-batch (default: 26 on the embedded arithmetic corpus, 8 on other data)",
       .show_default = false,
       .count = true,
       .ds = {.path = "train_micro_batch_size_per_gpu", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.micro_batch; }, [](TrainConfig& c, int v) { c.micro_batch = v; }, always));
  out.push_back(kept<int>(
      kGradAccumSetting,
      {.spelling = "--grad-accum",
       .help = "Micro-batches per optimizer step",
       .ds = {.path = "gradient_accumulation_steps", .direct = true, .auto_derived = true}},
      [](const TrainConfig& c) { return c.engine.grad_accum; },
      [](TrainConfig& c, int v) {
        c.engine.grad_accum = v;
        c.grad_accum_given = true;
      },
      always, within({.lo = 1, .hint = "(1: no accumulation)"})));
  out.push_back(row<int>(
      "seq-len",
      {.spelling = "--seq-len",
       .help = "Tokens per sequence (default: 20 on the embedded arithmetic corpus, 64 on other data)",
       .show_default = false,
       .count = true},
      kMust, kOwn, [](const TrainConfig& c) { return c.seq_len; }, [](TrainConfig& c, int v) { c.seq_len = v; },
      always));
  out.push_back(
      derived("train-batch-size", [](const SettingRow&, const TrainConfig& c, int world) -> std::optional<Shown> {
        // DeepSpeed's rule counts the data-parallel ranks (a pipeline's replicas).
        const int ranks = c.data_parallel_ranks(world);
        const int64_t batch = static_cast<int64_t>(c.micro_batch) * c.engine.grad_accum * ranks;
        return Shown{batch, c.train_batch_size > 0
                                ? c.source_of("train-batch-size")
                                : fmt::format("derived: micro-batch {} x grad-accum {} x {} {}", c.micro_batch,
                                              c.engine.grad_accum, ranks,
                                              c.pipeline_stages > 1 ? "pipeline replicas" : "ranks")};
      }));
}

}  // namespace

// The data, the batch, the run's length and seed.
void add_run_rows(std::vector<SettingRow>& out) {
  add_data_rows(out);
  add_length_rows(out);
  add_layout_rows(out);
}

namespace {

// ZeRO++'s compressed collectives: what they quantize, and how.
void add_compressed_collective_rows(std::vector<SettingRow>& out) {
  // The compressed collectives change the trajectory: a resume keeps them.
  out.push_back(kept<std::string>(
      "quantize-weights", {.ds = {.path = "zero_optimization.zero_quantized_weights"}},
      [](const TrainConfig& c) { return std::string(comm::quantization_name(c.engine.quantize_weights)); },
      [](TrainConfig& c, const std::string& v) { c.engine.quantize_weights = quantization_of(v); },
      when([](const TrainConfig& c) { return c.engine.quantize_weights != comm::Quantization::kNone; })));
  out.push_back(kept<std::string>(
      "quantize-grads", {.ds = {.path = "zero_optimization.zero_quantized_gradients"}},
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
      [](TrainConfig& c, int64_t v) { c.engine.quantize_delay = v; }, when(compressed),
      within({.hint = "(0: quantize from the first step)"})));
}

}  // namespace

// The engine's precision and collectives, and the run's logging.
void add_engine_rows(std::vector<SettingRow>& out) {
  out.push_back(engine<std::string>(
      "loss-scale", {.ds = {.path = "fp16.loss_scale"}},
      [](const TrainConfig& c) { return loss_scale_text(c.engine.loss_scaler); }, nullptr,
      when([](const TrainConfig& c) { return c.engine.dtype == Dtype::fp16(); })));
  out.push_back(engine<uint64_t>(
      "bucket", {.ds = {.path = "zero_optimization.reduce_bucket_size"}},
      [](const TrainConfig& c) { return static_cast<uint64_t>(c.engine.bucket_elements); }, nullptr,
      when([](const TrainConfig& c) { return traits(c.engine.stage).reduce == GradReduce::kAllReduce; })));
  out.push_back(engine<bool>(
      "overlap", {.ds = {.path = "zero_optimization.overlap_comm"}},
      [](const TrainConfig& c) { return c.engine.overlap; }, nullptr, always));
  out.push_back(engine<bool>(
      "prefetch", {.ds = {.path = "zero_optimization.stage3_prefetch_bucket_size"}},
      [](const TrainConfig& c) { return c.engine.prefetch; }, nullptr,
      when([](const TrainConfig& c) { return traits(c.engine.stage).gathers_on_acquire; })));
  add_compressed_collective_rows(out);
  out.push_back(engine<std::string>(
      "offload-optimizer",
      {.spelling = "--offload-optimizer",
       .help = "Keep each rank's fp32 master weights and optimizer states in a file under DIR (a local\n"
               "disk: NVMe or SSD) instead of RAM, streamed unit by unit through three staging buffers\n"
               "for each optimizer step (ZeRO-Infinity's optimizer offload); the same bits as without it.\n"
               "The file is removed as soon as it is open: nothing is left after a crash. docs/offload.md.\n"
               "DeepSpeed: zero_optimization.offload_optimizer {\"device\": \"nvme\", \"nvme_path\": DIR}",
       .show_default = false,
       .ds = {.path = "zero_optimization.offload_optimizer.nvme_path"}},
      [](const TrainConfig& c) { return c.engine.offload_optimizer_dir; },
      [](TrainConfig& c, const std::string& v) { c.engine.offload_optimizer_dir = v; },
      when([](const TrainConfig& c) { return !c.engine.offload_optimizer_dir.empty(); })));
  out.push_back(engine<std::string>(
      "offload-params",
      {.spelling = "--offload-params",
       .help = "Stage 3, bf16/fp16: keep each rank's parameter shards in a file under DIR (a local disk)\n"
               "instead of RAM; each gather reads its unit's shard just before the all-gather, on the comm\n"
               "thread, and each step writes the rounded shards back (ZeRO-Infinity's parameter offload);\n"
               "the same bits as without it. With --offload-optimizer the master weights go too. The file\n"
               "is removed as soon as it is open. docs/offload.md.\n"
               "DeepSpeed: zero_optimization.offload_param {\"device\": \"nvme\", \"nvme_path\": DIR}",
       .show_default = false,
       .ds = {.path = "zero_optimization.offload_param.nvme_path"}},
      [](const TrainConfig& c) { return c.engine.offload_params_dir; },
      [](TrainConfig& c, const std::string& v) { c.engine.offload_params_dir = v; },
      when([](const TrainConfig& c) { return !c.engine.offload_params_dir.empty(); })));
  out.push_back(engine<int>(
      "shard-group-size",
      {.spelling = "--shard-group-size",
       .help = "Hybrid sharding (HSDP / MiCS): partition the model states inside groups of G\n"
               "consecutive ranks (e.g. one host's) as a run of G ranks would, and replicate them across\n"
               "the N/G groups: gathers stay in the group, and only each shard's gradient all-reduce\n"
               "crosses groups. G must divide --ranks; stages 1-3. 0 = all ranks (the flat layout).\n"
               "DeepSpeed's mics_shard_size / zero_hpz_partition_size map here (docs/scale.md)",
       .ds = {.path = "zero_optimization.mics_shard_size"}},
      [](const TrainConfig& c) { return c.engine.shard_group_size; },
      [](TrainConfig& c, int v) { c.engine.shard_group_size = v; },
      when([](const TrainConfig& c) { return c.engine.shard_group_size > 0; }),
      within({.hint = "(0: all ranks, the flat layout)"})));
  out.push_back(engine<int>(
      "log-every",
      {.spelling = "--log-every",
       .help = "A log line every K steps when the output is not a terminal",
       .ds = {.path = "steps_per_print", .direct = true}},
      [](const TrainConfig& c) { return c.log_every; }, [](TrainConfig& c, int v) { c.log_every = v; }, always));
  out.push_back(engine<bool>(
      "activation-checkpointing", {.ds = {.path = "activation_checkpointing"}},
      [](const TrainConfig& c) { return c.activation_checkpointing; }, nullptr, always));
}

}  // namespace rows

namespace {

std::vector<SettingRow> build_settings() {
  std::vector<SettingRow> out;
  rows::add_run_rows(out);
  rows::add_optimizer_rows(out);
  rows::add_schedule_rows(out);
  rows::add_engine_rows(out);
  rows::add_pipeline_rows(out);
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

void set_from_flag(const SettingRow& row, TrainConfig& c, const nlohmann::json& value) {
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

void check_setting_values(const TrainConfig& c) {
  for (const SettingRow& row : settings()) {
    if (row.check) row.check(row, c);
  }
}

}  // namespace zerodp::train
