// SPDX-License-Identifier: Apache-2.0
// `zerodp plan`: which ZeRO stage fits a model on N ranks, what each rank
// holds by category, what it sends per step, and the chart of it; with
// --predict, the step time on a machine given by flags, a hardware file and
// bench measurements. Strings become a typed plan::PlanConfig (and
// plan::Hardware) here, once; plan/ does the arithmetic and report/ draws.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/compute.h"
#include "model/gpt_family.h"
#include "model/presets.h"
#include "plan/calibration.h"
#include "plan/hardware.h"
#include "plan/model_shape.h"
#include "plan/pipeline.h"
#include "plan/plan_format.h"
#include "plan/planner.h"
#include "plan/quantity.h"
#include "plan/step_time_format.h"
#include "report/plan_chart.h"

namespace zerodp::cli {
namespace {

struct PlanOptions {
  std::string params;
  std::string model;
  std::string ranks;
  std::string precision = "bf16";
  std::string optimizer = "adamw";
  bool adam8bit_fp32_embedding = true;
  uint64_t adam8bit_min_8bit_size = 4096;
  std::string device_memory;
  std::optional<int> micro_batch;
  std::optional<int> seq_len;
  bool checkpointing = false;
  std::string compute = "fp32";
  int grad_accum = 1;
  bool quantize_weights = false, quantize_grads = false;
  int quantize_grads_bits = 8;
  uint32_t quantize_block = comm::kDefaultQuantBlock;
  int shard_group_size = 0;
  bool offload_optimizer = false;
  bool offload_params = false;
  int pipeline_stages = 1;
  std::string pipeline_schedule = "1f1b";
  std::vector<int> pipeline_cut;
  std::string pipeline_balance = "flops";
  std::string compare;
  bool json = false;
  std::string chart;
  // --predict and the machine
  bool predict = false;
  std::string hardware;
  std::vector<std::string> calibrate_comm;
  std::string calibrate_model;
  std::optional<int> ranks_per_host;
  std::optional<int> model_parallel;
  std::optional<int> cores_per_host;
  std::string link_bandwidth, link_latency, local_bandwidth, local_latency, gemm_rate;
  std::string disk_bandwidth, calibrate_disk;
  std::optional<double> model_efficiency, overlap_efficiency, optimizer_ns;
};

// --compute: whether the run's products are bf16 (their inputs then kept as
// bf16 operands).
bool bf16_compute(const std::string& compute) {
  const std::optional<kernels::Compute> c = kernels::parse_compute(compute);
  ZDP_CHECK(c.has_value(), ConfigError, "[plan] --compute {}: use fp32 or bf16", compute);
  return *c == kernels::Compute::kBf16;
}

// Defaults, then the --hardware file, then bench measurements, then flags.
plan::Hardware to_hardware(const PlanOptions& o) {
  plan::Hardware hw;
  if (!o.hardware.empty()) plan::read_hardware_file(o.hardware, hw);
  if (o.ranks_per_host) hw.ranks_per_host = *o.ranks_per_host;
  if (o.model_parallel) hw.model_parallel = *o.model_parallel;
  if (o.cores_per_host) hw.cores_per_host = *o.cores_per_host;
  ZDP_CHECK(hw.ranks_per_host >= 1 && hw.model_parallel >= 1 && hw.cores_per_host >= 0, ConfigError,
            "[plan] --ranks-per-host and --model-parallel must be at least 1, --cores-per-host at least 0");
  for (const std::string& path : o.calibrate_comm) {
    const std::string what = "--calibrate-comm " + path;
    plan::calibrate_comm(plan::comm_measurements_from_json(plan::read_json_file(path, what), what), hw,
                         "bench comm " + path);
  }
  if (!o.calibrate_model.empty()) {
    const std::string what = "--calibrate-model " + o.calibrate_model;
    plan::calibrate_compute(plan::model_measurement_from_json(plan::read_json_file(o.calibrate_model, what), what), hw,
                            "bench model " + o.calibrate_model);
  }
  const auto set_link = [](plan::Link& link, const std::string& bw, const std::string& lat, const char* name) {
    if (!bw.empty()) link.bandwidth = plan::parse_bandwidth(bw, std::string("--") + name + "-bandwidth");
    if (!lat.empty()) link.latency_s = plan::parse_duration(lat, std::string("--") + name + "-latency");
    if (!bw.empty() || !lat.empty()) link.source = link.source.empty() ? "flags" : link.source + ", flags";
  };
  set_link(hw.link, o.link_bandwidth, o.link_latency, "link");
  set_link(hw.local, o.local_bandwidth, o.local_latency, "local");
  if (!o.gemm_rate.empty()) {
    hw.gemm_flops = plan::parse_flops(o.gemm_rate, "--gemm-rate");
    hw.compute_source = "flags";
  }
  if (!o.calibrate_disk.empty()) {
    const std::string what = "--calibrate-disk " + o.calibrate_disk;
    hw.disk = plan::disk_from_bench_json(plan::read_json_file(o.calibrate_disk, what), what);
  }
  if (!o.disk_bandwidth.empty()) {
    // READ or READ,WRITE: one rate for both directions, or each.
    const size_t comma = o.disk_bandwidth.find(',');
    hw.disk.read_Bps = plan::parse_bandwidth(o.disk_bandwidth.substr(0, comma), "--disk-bandwidth");
    hw.disk.write_Bps = comma == std::string::npos
                            ? hw.disk.read_Bps
                            : plan::parse_bandwidth(o.disk_bandwidth.substr(comma + 1), "--disk-bandwidth");
    hw.disk.source = "flags";
  }
  if (o.model_efficiency) hw.model_efficiency = *o.model_efficiency;
  if (o.overlap_efficiency) hw.overlap_efficiency = *o.overlap_efficiency;
  if (o.optimizer_ns) hw.optimizer_s_per_param = *o.optimizer_ns * 1e-9;
  hw.validate();
  return hw;
}

std::optional<plan::StepTimePrediction> predict(const PlanOptions& o, const plan::PlanConfig& c) {
  const bool machine_given = !o.hardware.empty() || !o.calibrate_comm.empty() || !o.calibrate_model.empty() ||
                             !o.link_bandwidth.empty() || !o.gemm_rate.empty() || !o.disk_bandwidth.empty() ||
                             !o.calibrate_disk.empty();
  if (!o.predict) {
    ZDP_CHECK(!machine_given, ConfigError,
              "[plan] --hardware, --calibrate-comm, --calibrate-model, --calibrate-disk, --link-bandwidth, "
              "--disk-bandwidth and --gemm-rate describe the machine for --predict: add --predict");
    return std::nullopt;
  }
  ZDP_CHECK(c.shape.has_value(), ConfigError,
            "[plan] --predict needs a GPT's shape for its FLOPs and units: give --model with a GPT preset or config "
            "instead of --params");
  const plan::Hardware hw = to_hardware(o);
  plan::StepTimeRun run;
  run.dtype = c.precision;
  run.micro_batch = o.micro_batch.value_or(1);
  run.seq_len = o.seq_len.value_or(c.shape->context);
  run.grad_accum = c.grad_accum;
  run.checkpointing = o.checkpointing;
  run.quantize_weights = c.quantize_weights;
  run.quantize_grads = c.quantize_grads;
  run.quantize_block = c.quantize_block;
  run.shard_group = c.shard_group;
  run.offload_optimizer = c.offload_optimizer;
  run.offload_params = c.offload_params;
  run.optimizer = c.optimizer;
  return plan::predict_step_times(*c.shape, c.model_name, run, c.ranks, hw);
}

std::string model_display_name(const std::string& spec) {
  if (!spec.empty() && spec.find('{') == std::string::npos && spec.find(".json") != std::string::npos) {
    return std::filesystem::path(spec).stem().string();
  }
  return spec.find('{') == std::string::npos ? spec : "custom";
}

// --model: src/model's presets and JSON configs, the ones `zerodp model
// list` prints and `zerodp train --model` takes. An MLP gives Φ only.
void resolve_model_into(const std::string& spec, plan::PlanConfig& c) {
  c.model_name = model_display_name(spec);
  const model::ModelConfig m = model::resolve_model_config(spec);
  if (const auto* gpt = m.as<model::GptSpec>()) {
    c.shape = plan::gpt_shape(gpt->config());
    ZDP_CHECK_EQ(c.shape->num_params(), model::num_params(m), Error,
                 "[plan] plan's and src/model's parameter counts differ");
  } else {
    c.num_params = model::num_params(m);
  }
}

plan::PlanConfig to_config(const PlanOptions& o) {
  plan::PlanConfig c;
  ZDP_CHECK(o.params.empty() != o.model.empty(), ConfigError,
            "[plan] give exactly one of --params (e.g. 7.5B) or --model (a preset such as gpt2-124m, or a JSON "
            "config)");
  if (!o.params.empty()) c.num_params = plan::parse_count(o.params, "--params");
  if (!o.model.empty()) resolve_model_into(o.model, c);
  c.ranks = plan::parse_rank_list(o.ranks);
  c.precision = Dtype::parse(o.precision);
  c.optimizer = plan::parse_optimizer(o.optimizer);
  c.optimizer.adam.fp32_embedding = o.adam8bit_fp32_embedding;
  c.optimizer.adam.min_8bit_size = o.adam8bit_min_8bit_size;
  ZDP_CHECK(o.grad_accum >= 1, ConfigError, "[plan] --grad-accum {} must be at least 1 (1 = no accumulation)",
            o.grad_accum);
  c.grad_accum = o.grad_accum;
  ZDP_CHECK(o.quantize_grads_bits == 8 || o.quantize_grads_bits == 4, ConfigError,
            "[plan] --quantize-grads-bits {} must be 8 or 4", o.quantize_grads_bits);
  if (o.quantize_weights) c.quantize_weights = comm::Quantization::kInt8;
  if (o.quantize_grads) {
    c.quantize_grads = o.quantize_grads_bits == 4 ? comm::Quantization::kInt4 : comm::Quantization::kInt8;
  }
  ZDP_CHECK(comm::quant_block_offered(o.quantize_block), ConfigError,
            "[plan] --quantize-block {} is not offered: use a power of two from {} to {}", o.quantize_block,
            comm::kMinQuantBlock, comm::kMaxQuantBlock);
  c.quantize_block = o.quantize_block;
  ZDP_CHECK(o.shard_group_size >= 0, ConfigError,
            "[plan] --shard-group-size {} must be at least 1 (0: all ranks, the flat layout)", o.shard_group_size);
  c.shard_group = o.shard_group_size;
  c.offload_optimizer = o.offload_optimizer;
  c.offload_params = o.offload_params;
  c.bf16_compute = bf16_compute(o.compute);
  if (!o.device_memory.empty()) c.device_memory = plan::parse_bytes(o.device_memory, "--device-memory");
  const bool wants_activations = o.micro_batch || o.seq_len || o.checkpointing;
  if (wants_activations) {
    ZDP_CHECK(c.shape.has_value(), ConfigError,
              "[plan] --micro-batch, --seq-len and --activation-checkpointing need a GPT's shape: give --model with "
              "a GPT preset or config instead of --params");
    plan::ActivationConfig a;
    a.micro_batch = o.micro_batch.value_or(1);
    a.seq_len = o.seq_len.value_or(0);
    a.checkpointing = o.checkpointing;
    a.bf16_product_inputs = bf16_compute(o.compute);
    c.activations = a;
  }
  if (!o.chart.empty()) {
    const std::filesystem::path dir = std::filesystem::path(o.chart).parent_path();
    std::error_code ec;
    ZDP_CHECK(dir.empty() || std::filesystem::is_directory(dir, ec), ConfigError,
              "[plan] --chart '{}': the directory '{}' does not exist: create it or choose another path", o.chart,
              dir.string());
  }
  ZDP_CHECK(o.compare.empty() || o.compare == "deepspeed", ConfigError,
            "[plan] --compare '{}' is not known: the only comparison is --compare deepspeed", o.compare);
  return c;
}

// --pipeline-stages: the pipeline's plan at each N, and with
// --device-memory the most blocks that fit with it and without.
std::vector<plan::PipelinePlan> pipeline_plans(const PlanOptions& o, const plan::PlanConfig& c) {
  if (o.pipeline_stages == 1 && o.pipeline_cut.empty()) return {};
  ZDP_CHECK(c.shape.has_value(), ConfigError,
            "[plan] --pipeline-stages needs a GPT's shape: give --model with a GPT preset or config instead of "
            "--params");
  std::vector<plan::PipelinePlan> out;
  for (const int n : c.ranks) {
    plan::PipelineConfig p;
    p.shape = *c.shape;
    p.ranks = n;
    p.stages = o.pipeline_stages;
    p.schedule = plan::parse_pipeline_schedule(o.pipeline_schedule);
    p.micro_batches = c.grad_accum;
    p.micro_batch = o.micro_batch.value_or(1);
    p.seq_len = o.seq_len.value_or(0);
    p.checkpointing = o.checkpointing;
    p.bf16_compute = bf16_compute(o.compute);
    p.precision = c.precision;
    p.optimizer = c.optimizer;
    p.layers_per_stage = o.pipeline_cut;
    p.balance = plan::parse_pipeline_balance(o.pipeline_balance);
    out.push_back(plan::plan_pipeline(p));
  }
  return out;
}

std::string largest_pipelined_text(const plan::PipelinePlan& p, uint64_t bytes) {
  plan::PipelineConfig one = p.config;
  one.stages = 1;
  const auto most = [&](const plan::PipelineConfig& c) {
    const int layers = plan::largest_layers_that_fit(c, bytes);
    return layers == plan::kMostPipelineLayers ? fmt::format("{} or more", layers) : std::to_string(layers);
  };
  return fmt::format(
      "  largest GPT of this width (C = {}) whose busiest rank fits {:.2f} GB at ZeRO 1, N = {}: {} blocks with P = "
      "{}, {} with P = 1\n",
      p.config.shape.channels, static_cast<double>(bytes) / 1e9, p.config.ranks, most(p.config), p.config.stages,
      most(one));
}

// --predict with --pipeline-stages: each pipeline's step at ZeRO 0 and 1.
std::string pipeline_step_text(const plan::PipelinePlan& p, const plan::Hardware& hw) {
  if (const std::string why = hw.oversubscribed(p.config.ranks); !why.empty()) {
    return fmt::format("  step time (--predict): not predicted: {}\n", why);
  }
  std::string out;
  for (const Stage zero : {Stage::k0, Stage::k1}) {
    const plan::PipelineStepTime t = plan::predict_pipeline_step(p, zero, hw);
    out += fmt::format(
        "  step time (--predict, ZeRO {}): {:.4f} s = schedule {:.4f} s (bubble {:.1f}%, the formula's {:.1f}%) + "
        "replicas' reduction and optimizer {:.4f} s + tied embedding {:.4f} s; per micro-batch stages {:.4f} s, sends "
        "{:.4f} s\n",
        zero, t.step_s, t.schedule_s, 100 * t.bubble, 100 * p.bubble, t.reduce_s, t.tied_s, fmt::join(t.stage_s, " / "),
        fmt::join(t.send_s, " / "));
  }
  return out;
}

void run_plan(const PlanOptions& o) {
  const plan::PlanConfig config = to_config(o);
  const std::vector<plan::PipelinePlan> pipelines = pipeline_plans(o, config);
  const std::optional<plan::StepTimePrediction> step_times = predict(o, config);
  const plan::PlanResult result = plan::make_plan(config);
  plan::FormatOptions format;
  format.compare_deepspeed = o.compare == "deepspeed";
  if (!o.chart.empty()) report::save_plan_chart(result, o.chart);
  if (o.json) {
    nlohmann::json j = plan::plan_to_json(result, format);
    if (!o.chart.empty()) j["chart"] = o.chart;
    if (step_times) j["step_time"] = plan::step_time_to_json(*step_times);
    for (const plan::PipelinePlan& p : pipelines) j["pipeline"].push_back(plan::pipeline_to_json(p));
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", plan::format_plan_text(result, format));
    for (const plan::PipelinePlan& p : pipelines) {
      fmt::print("{}", plan::format_pipeline_text(p));
      if (config.device_memory) fmt::print("{}", largest_pipelined_text(p, *config.device_memory));
      if (step_times) fmt::print("{}", pipeline_step_text(p, step_times->hardware));
    }
    if (step_times) fmt::print("{}", plan::format_step_time_text(*step_times));
    if (!o.chart.empty()) fmt::print("\nChart written to {}\n", o.chart);
  }
}

void add_predict_options(CLI::App* cmd, PlanOptions& o) {
  cmd->add_flag("--predict", o.predict,
                "Also predict the step time at every stage and N (needs a GPT --model; --micro-batch, --seq-len, "
                "--grad-accum and --activation-checkpointing describe the run): an alpha-beta model of each "
                "collective as zerodp's comm layer runs it, the model's FLOPs at a GEMM rate, and the engine's overlap "
                "(docs/plan.md, Step time); --shard-group-size and the --quantize flags are modelled too (the codec's "
                "cost from --calibrate-comm of bench comm --codec, or codec in --hardware)");
  cmd->add_option(
      "--hardware", o.hardware,
      "A JSON file describing the machine: ranks_per_host, model_parallel, cores_per_host, link {bandwidth_GBps, "
      "latency_us}, link_back_to_back {...}, local {...}, gemm_tflops, model_efficiency, optimizer_ns_per_param, "
      "overlap_efficiency, codec {int8, int4: {quantize_ns, dequantize_ns}} (docs/plan.md); measurements "
      "and flags override it");
  cmd->add_option("--calibrate-comm", o.calibrate_comm,
                  "Output of zerodp bench comm --json: fits the link's latency and bandwidth (across hosts when its "
                  "ranks exceed --ranks-per-host, else shared memory), and with --codec the compressed collectives' "
                  "packing cost; repeat for both links. Across hosts give calls timed after idle (--idle-ms) and "
                  "calls back to back: each collective is timed on the one it is (one file serves both)");
  cmd->add_option("--calibrate-model", o.calibrate_model,
                  "Output of zerodp bench model --json: the GEMM rate, the model's share of it and the optimizer's "
                  "cost per parameter");
  cmd->add_option("--ranks-per-host", o.ranks_per_host,
                  "Ranks of one data-parallel group on a host (consecutive ranks share a host; default 1)");
  cmd->add_option("--cores-per-host", o.cores_per_host,
                  "CPU cores of a host that run ranks (default: not given). More ranks on a host than cores: the "
                  "step time is not predicted (the model gives each rank a core), and the row says so; fewer than "
                  "two a rank: the overlapped step of a schedule that runs collectives beside compute is not "
                  "predicted (each comm thread polls on a core of its own), the serial one is");
  cmd->add_option("--model-parallel", o.model_parallel,
                  "GPUs per data-parallel rank (model parallelism inside a host; default 1): each holds and computes "
                  "1/M of the model and runs its slice's collectives over the host's link");
  cmd->add_option("--link-bandwidth", o.link_bandwidth,
                  "A host's link to the others, each way: 1Gbit, 800Gbps, 12.5GB (bytes/s)");
  cmd->add_option("--link-latency", o.link_latency, "Latency of one exchange step between hosts: 50us, 1ms");
  cmd->add_option("--local-bandwidth", o.local_bandwidth, "Shared-memory bandwidth per rank within a host: 5GB");
  cmd->add_option("--local-latency", o.local_latency, "Latency of one exchange step within a host: 5us");
  cmd->add_option("--disk-bandwidth", o.disk_bandwidth,
                  "With --offload-optimizer: the disk's sequential rate, one for both directions or READ,WRITE "
                  "(1.2GB or 1.2GB,0.5GB; bytes/s), shared by a host's ranks");
  cmd->add_option("--calibrate-disk", o.calibrate_disk,
                  "With --offload-optimizer: the output of zerodp bench disk --json on the offload directory");
  cmd->add_option("--gemm-rate", o.gemm_rate, "GEMM FLOP/s of one rank (one GPU): 100T, 45G");
  cmd->add_option("--model-efficiency", o.model_efficiency,
                  "The model's forward + backward FLOP/s over the GEMM rate, in (0, 1] (default 1)");
  cmd->add_option("--overlap-efficiency", o.overlap_efficiency,
                  "The share of what the engine's schedule can overlap that the machine hides, in [0, 1] (default 1)");
  cmd->add_option("--optimizer-ns", o.optimizer_ns, "Optimizer nanoseconds per parameter updated (default 0)");
}

// How the ranks hold the model beyond the stage: hybrid sharding, offload
// to a disk, pipeline stages.
void add_layout_options(CLI::App* cmd, PlanOptions& o) {
  cmd->add_option("--shard-group-size", o.shard_group_size,
                  "Hybrid sharding (zerodp train --shard-group-size): stages 1-3 partition over groups of G ranks "
                  "and\nreplicate across them; every --ranks value must be a multiple of G. 0 = flat. With --predict, "
                  "groups are consecutive ranks (--ranks-per-host)")
      ->capture_default_str();
  cmd->add_flag("--offload-optimizer", o.offload_optimizer,
                "The master weights and optimizer states on a local disk (zerodp train --offload-optimizer DIR):\n"
                "RAM per rank without them but with the staging buffers, the disk's bytes per rank and a step's\n"
                "reads and writes (needs --model)");
  cmd->add_flag("--offload-params", o.offload_params,
                "Stage 3's parameter shards on a local disk (zerodp train --offload-params DIR): stage 3's RAM\n"
                "without them but with their staging buffer, and their disk bytes and traffic (needs --model and\n"
                "--precision bf16 or fp16)");
  cmd->add_option("--pipeline-stages", o.pipeline_stages,
                  "Pipeline parallelism: P stages of D = N/P data-parallel replicas each (needs a GPT --model):\n"
                  "each stage's blocks, states at ZeRO 0 and 1, activations in flight, bytes sent and the bubble\n"
                  "for M = --grad-accum micro-batches; with --device-memory the most blocks that fit at P and at 1")
      ->capture_default_str();
  cmd->add_option("--pipeline-schedule", o.pipeline_schedule,
                  "1f1b (stage s holds min(P-s, M) micro-batches' activations) or gpipe (all M)")
      ->capture_default_str();
  cmd->add_option("--pipeline-cut", o.pipeline_cut,
                  "Blocks per pipeline stage, P numbers summing to the model's blocks (default: balanced by\n"
                  "--pipeline-balance)")
      ->delimiter(',');
  cmd->add_option("--pipeline-balance", o.pipeline_balance,
                  "What the default cut balances: flops (each stage's time) or memory (each stage's peak per rank\n"
                  "at ZeRO 1, its activations counted once per micro-batch in flight)")
      ->capture_default_str();
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Predict per-rank memory (params, grads, optimizer states; activations and stage 3's gathered units with "
      "--model) and communication per step for ZeRO stages 0-3, recommend the stage with the least communication "
      "that fits, and draw it (the ZeRO paper's model: GB = 1e9 bytes, also shown in GiB)");
  cmd->add_option("--params", opts->params,
                  "Number of parameters Φ: 7.5B, 124M, 1T, 7.5e9 or a plain integer (or give --model)");
  cmd->add_option("--model", opts->model,
                  "A preset (zerodp model list: gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m, gpt-30m, gpt-tiny, ...), "
                  "a .json file, or inline JSON as zerodp train takes it: {\"kind\":\"gpt\",\"layers\":..,\"heads\":..,"
                  "\"channels\":..,\"vocab\":..,\"max_seq_len\":..}");
  cmd->add_option("--ranks", opts->ranks, "Number of ranks N, or a comma-separated list: 64 or 1,4,16,64")->required();
  cmd->add_option("--precision", opts->precision,
                  "Training dtype of params, grads and communication: bf16, fp16 (both with fp32 master weights) or "
                  "fp32")
      ->capture_default_str();
  cmd->add_option("--optimizer", opts->optimizer,
                  "adamw, adam, sgd-momentum, sgd, lion, lion-bf16, adam8bit or adafactor (sets K, the optimizer bytes "
                  "per parameter;\n"
                  "adafactor's factored statistics need --model)")
      ->capture_default_str();
  cmd->add_option("--adam8bit-fp32-embedding", opts->adam8bit_fp32_embedding,
                  "adam8bit: the token embedding's unit keeps fp32 moments, as zerodp train's flag (needs --model; "
                  "without it the model is one unit and holds no embedding)")
      ->capture_default_str();
  cmd->add_option("--adam8bit-min-8bit-size", opts->adam8bit_min_8bit_size,
                  "adam8bit: units of fewer elements keep fp32 moments, as zerodp train's flag")
      ->capture_default_str();
  cmd->add_option("--device-memory", opts->device_memory,
                  "Memory per rank, e.g. 32GB (1e9 bytes) or 80GiB (2^30 bytes): enables fits, the recommendation and "
                  "the largest model per stage");
  cmd->add_option("--grad-accum", opts->grad_accum,
                  "Micro-batches per step (stage 1 then keeps a flat gradient staging buffer)");
  cmd->add_flag("--quantize-weights", opts->quantize_weights,
                "Stage 3's parameter all-gathers as int8 blocks (zerodp train --quantize-weights): the communication "
                "columns count the packed bytes");
  cmd->add_flag("--quantize-grads", opts->quantize_grads,
                "Stages 1-3's gradient reduce-scatter as int8 (or --quantize-grads-bits 4) blocks");
  cmd->add_option("--quantize-grads-bits", opts->quantize_grads_bits, "8 or 4")->capture_default_str();
  cmd->add_option("--quantize-block", opts->quantize_block,
                  "Elements per fp32 scale of the compressed collectives (zerodp train --quantize-block): a power of "
                  "two from 32 to 2048")
      ->capture_default_str();
  add_layout_options(cmd, *opts);
  cmd->add_option("--micro-batch", opts->micro_batch,
                  "Micro-batch size B per rank for the activation estimate (needs --model)");
  cmd->add_option("--seq-len", opts->seq_len,
                  "Sequence length T for the activation estimate (default: the model's context)");
  cmd->add_flag("--activation-checkpointing", opts->checkpointing,
                "Keep only block outputs and recompute one block at a time in backward");
  cmd->add_option("--compute", opts->compute,
                  "The run's matrix products (zerodp train --compute): fp32, or bf16, whose runs keep the activations "
                  "only products read in bf16 (a GPT block's ln1, qkv, attention output, ln2 and GELU output): the "
                  "activation estimate follows; with --precision bf16 they read the bf16 weights in "
                  "place, so the fp32 compute copy holds a block's gradient, not the largest unit. --predict takes the "
                  "GEMM rate from --gemm-rate or --calibrate-model (bench model --compute bf16 for bf16 products)")
      ->capture_default_str();
  cmd->add_option(
      "--compare", opts->compare,
      "Also print another tool's estimate: deepspeed (its estimate_zero2/3_model_states_mem_needs, in GiB)");
  cmd->add_flag("--json", opts->json, "Print machine-readable JSON (all sizes in bytes) instead of tables");
  cmd->add_option("--chart", opts->chart, "Write an SVG chart: one replica's states and per-rank bars per stage and N");
  add_predict_options(cmd, *opts);
  cmd->callback([opts] { run_plan(*opts); });
}

}  // namespace zerodp::cli
