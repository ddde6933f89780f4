// SPDX-License-Identifier: Apache-2.0
// `zerodp ckpt inspect|consolidate|reshard`: the offline checkpoint tools.
// They read a checkpoint directory (or a training root with `latest`) and
// need no ranks. Bad paths and options are ConfigErrors (exit 2); damaged
// files make inspect print the problem and exit 1.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/file_io.h"
#include "ckpt/offline.h"
#include "ckpt/staged_output.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/process_memory.h"
#include "core/stage.h"
#include "model/family.h"
#include "plan/quantity.h"
#include "train/output_preflight.h"
#include "weights/consolidate.h"
#include "weights/model_record.h"

namespace zerodp::cli {
namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// The recorded model must parse as a model config of its family
// (InputFileError naming the manifest): ckpt's tools copy it as JSON,
// src/weights reads it. A family this program does not know (a user's own
// model, registered in the user's program: model/family.h) is left as the
// JSON the manifest carries: inspect and reshard work on the files alone.
void check_model_record(const ckpt::Manifest& manifest, const std::string& checkpoint_dir) {
  if (model::find_family(manifest.model_kind) == nullptr) return;
  weights::manifest_model_config(manifest, ckpt::join_path(checkpoint_dir, ckpt::kManifestName));
}

void run_inspect(const std::string& path) {
  const ckpt::InspectReport r = ckpt::inspect_checkpoint(path);
  const ckpt::Manifest& m = r.manifest;
  check_model_record(m, r.path);
  fmt::print("checkpoint {}\n", r.path);
  fmt::print("  format version {}, written by {}, save id {:#x}\n", m.format_version, m.created_by, m.save_id);
  fmt::print("  model: {} ({} parameters in {} units)\n", m.model_description, m.num_params, m.units.size());
  fmt::print("  saved at {} ranks, ZeRO stage {}, {} parameters, optimizer {}\n", m.ranks, m.stage, m.dtype.name(),
             optim::optimizer_kind_name(m.optimizer.kind));
  if (!m.per_unit_tensors()) {
    fmt::print("  tensors per unit: {}\n", fmt::join(m.tensors, ", "));
  } else {
    // Version 3: units hold different tensors (8-bit Adam's fp32 units).
    fmt::print("  tensors: {}\n", fmt::join(m.tensors, ", "));
    for (size_t u = 0; u < m.units.size(); ++u) {
      fmt::print("    unit {} ({}): {}\n", u, m.units[u].name, fmt::join(m.tensors_of(u), ", "));
    }
  }
  fmt::print("  data step {} (engine steps {}, optimizer steps {}), seed {}\n", m.data_step, m.steps, m.optimizer_steps,
             m.seed);
  if (m.dtype == Dtype::fp16()) {
    fmt::print("  loss scale {} (iteration {}, {} overflows, hysteresis left {})\n", m.scaler.scale, m.scaler.iteration,
               m.scaler.total_overflows, m.scaler.hysteresis_left);
  }
  for (const auto& [k, v] : m.metadata) fmt::print("  metadata {} = {}\n", k, v);
  uint64_t total = 0;
  for (size_t i = 0; i < r.files.size(); ++i) {
    const auto& f = r.files[i];
    total += m.shards[i].bytes;
    fmt::print("  {}  {:>12} bytes  crc32c {:#010x}  {}\n", m.shards[i].file, m.shards[i].bytes, m.shards[i].crc32c,
               f.ok ? "ok" : "BAD: " + f.problem);
  }
  fmt::print("  {} shard files, {} in all; {}\n", r.files.size(), mib(total),
             r.ok() ? "every checksum verified" : "SOME FILES ARE DAMAGED");
  ZDP_CHECK(r.ok(), InputFileError, "[ckpt inspect] {}: damaged shard files (see above)", r.path);
}

// OUT is built as OUT.tmp beside it (ckpt/staged_output.h): its folder must
// be writable, proved before the checkpoint is read.
void check_output_folder(const std::string& out, const char* what) {
  ckpt::check_fresh_output(out, what);
  const std::filesystem::path parent = std::filesystem::path(ckpt::without_trailing_slashes(out)).parent_path();
  train::check_writable_folder(parent, fmt::format("[ckpt {}] OUT's folder", what));
}

void run_consolidate(const std::string& path, const std::string& out, weights::ConsolidateOptions options) {
  check_output_folder(out, "consolidate");
  const weights::ConsolidateResult r = weights::consolidate(path, out, options);
  fmt::print("consolidated {}\n", r.checkpoint);
  for (const auto& f : r.files) fmt::print("  wrote {}\n", f);
  fmt::print(
      "memory: one {} buffer the tensors stream through; process resident before {}, peak {} "
      "(peak - before = {})\n",
      mib(r.stream_buffer_bytes), mib(r.rss_before_bytes), mib(r.peak_rss_bytes),
      mib(r.peak_rss_bytes - std::min(r.peak_rss_bytes, r.rss_before_bytes)));
}

void run_reshard(const std::string& path, const std::string& out, int ranks, int stage) {
  std::optional<Stage> recorded;
  if (stage >= 0) recorded = parse_stage(stage, "[ckpt reshard] --stage");
  check_output_folder(out, "reshard");
  const std::string dir = ckpt::resolve_checkpoint(path);
  check_model_record(ckpt::read_manifest(dir), dir);
  const ckpt::ReshardResult r = ckpt::reshard(path, out, {.ranks = ranks, .stage = recorded});
  fmt::print("resharded {} to {} ranks: {} ({} in all; streamed through a {} buffer)\n", ckpt::resolve_checkpoint(path),
             ranks, r.path, mib(r.bytes_total), mib(r.largest_record_bytes));
  fmt::print("peak resident memory of this process: {}\n", mib(peak_rss_bytes()));
}

}  // namespace

void add_ckpt_command(CLI::App& app) {
  auto* ckpt = app.add_subcommand("ckpt", "Inspect, consolidate and reshard checkpoints (offline; no ranks needed)");
  ckpt->require_subcommand(1);

  auto path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* inspect = ckpt->add_subcommand("inspect", "Print the manifest and verify every shard file's checksums");
  inspect->add_option("DIR", *path, "A checkpoint directory, or a training --save directory (uses its latest)")
      ->required();
  inspect->callback([path] { run_inspect(*path); });

  auto states = std::make_shared<bool>(false);
  auto no_llmc = std::make_shared<bool>(false);
  auto no_hf = std::make_shared<bool>(false);
  auto hf_dtype = std::make_shared<std::string>("fp32");
  auto hf_shard = std::make_shared<std::string>("0");
  auto* consolidate = ckpt->add_subcommand(
      "consolidate",
      "Write the full fp32 weights as OUT/model.safetensors (zerodp's names) and, for GPT, "
      "OUT/model.bin (llm.c's format) and OUT/hf/ (Hugging Face GPT-2: model.safetensors and "
      "config.json, for GPT2LMHeadModel.from_pretrained), for the Llama family OUT/hf/ (Hugging Face's "
      "LlamaForCausalLM or Qwen2ForCausalLM, which train --init-from reads back), streaming tensor by tensor: "
      "peak memory is a 4 MiB slice of the largest tensor, not the model");
  consolidate->add_option("DIR", *path, "A checkpoint directory, or a training --save directory")->required();
  consolidate->add_option("OUT", *out, "Output directory (created; must not exist or be empty)")->required();
  consolidate->add_flag("--optimizer-states", *states, "Also write OUT/<state>.safetensors per optimizer tensor");
  consolidate->add_flag("--no-llmc", *no_llmc, "Skip the llm.c model file for GPT models");
  consolidate->add_flag("--no-hf", *no_hf, "Skip the Hugging Face layout (OUT/hf/)");
  consolidate
      ->add_option("--hf-dtype", *hf_dtype, "OUT/hf/'s tensors in fp32, bf16 or fp16 (torch_dtype in its config.json)")
      ->default_str("fp32");
  consolidate
      ->add_option("--hf-max-shard-size", *hf_shard,
                   "OUT/hf/ in files of at most this size (e.g. 5GB, 500MiB) with "
                   "model.safetensors.index.json, as save_pretrained's max_shard_size; 0: one file")
      ->default_str("0");
  consolidate->callback([path, out, states, no_llmc, no_hf, hf_dtype, hf_shard] {
    run_consolidate(*path, *out,
                    {.llmc = !*no_llmc,
                     .hf = !*no_hf,
                     .optimizer_states = *states,
                     .hf_dtype = Dtype::parse(*hf_dtype),
                     .hf_max_shard_bytes = *hf_shard == "0" ? 0 : plan::parse_bytes(*hf_shard, "--hf-max-shard-size")});
  });

  auto ranks = std::make_shared<int>(0);
  auto stage = std::make_shared<int>(-1);
  auto* reshard = ckpt->add_subcommand("reshard", "Write the checkpoint for M ranks into OUT (streaming)");
  reshard->add_option("DIR", *path, "A checkpoint directory, or a training --save directory")->required();
  reshard->add_option("OUT", *out, "Output checkpoint directory (created; must not exist or be empty)")->required();
  reshard->add_option("--ranks", *ranks, "M, the number of ranks to shard for")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  reshard
      ->add_option("--stage", *stage,
                   "ZeRO stage to record (default: the saved one; any stage loads any "
                   "checkpoint)")
      ->check(CLI::Range(0, 3));
  reshard->callback([path, out, ranks, stage] { run_reshard(*path, *out, *ranks, *stage); });
}

}  // namespace zerodp::cli
