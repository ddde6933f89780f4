// SPDX-License-Identifier: Apache-2.0
#include "train/run_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/shard_reader.h"
#include "comm/mpi.h"
#include "core/error.h"
#include "train/chat_data.h"
#include "train/output_preflight.h"
#include "train/samples.h"
#include "weights/init_weights.h"

namespace zerodp::train {
namespace {

// `mpirun -np N zerodp train` (or `srun -n N`) without --backend: N
// processes would each run their own thread job. The launch is detected and
// the MPI backend used (the effective configuration says so); an explicit
// --backend thread under a multi-process launch is refused.
void use_mpi_when_launched(TrainConfig& config) {
  const auto launch = comm::mpi_launch();
  if (!launch || config.backend == comm::Backend::kMpi) return;
  const int processes = launch->processes;
  const std::string launcher = comm::launch_command(launch->launcher, processes);
  if (config.given("backend")) {
    ZDP_CHECK(processes <= 1, ConfigError,
              "[train] --backend thread under {}: each of the {} processes would train its own copy; drop --backend "
              "thread (or pass --backend mpi) to train one job across them",
              launcher, processes);
    return;
  }
  ZDP_CHECK(comm::mpi_available(), ConfigError,
            "[train] started by {}, but this zerodp was built without MPI: install libopenmpi-dev and rebuild "
            "(scripts/setup), or run without the launcher (--ranks N uses threads)",
            launcher);
  config.backend = comm::Backend::kMpi;
  config.sources["backend"] = fmt::format("detected: started by {}", launcher);
}

// The settings as this run has them: a resume's (its model, data, batch,
// optimizer and schedule, unless flags say otherwise: resume_config.h), a
// Hugging Face checkpoint's shape, the data's defaults and the batch rule.
void resolve_settings(RunSetup& run) {
  TrainConfig& config = run.config;
  check_start_point(config);
  use_mpi_when_launched(config);
  if (!config.resume_dir.empty()) {
    run.resume_path = ckpt::resolve_checkpoint(config.resume_dir);
    run.resumed = ckpt::read_manifest(run.resume_path);
    run.resume_notes = apply_checkpoint_config(config, *run.resumed, run.resume_path);
  }
  // A Hugging Face checkpoint brings its shape: without --model, the run
  // trains the model its config.json describes.
  if (!config.init_from.empty() && !config.given("model")) {
    const std::string from_checkpoint = weights::model_json_of_checkpoint(config.init_from);
    if (!from_checkpoint.empty()) {
      config.model = from_checkpoint;
      config.sources["model"] = "derived: the config.json of --init-from";
    }
  }
  apply_data_defaults(config);
  if (config.ranks == 0 && config.backend == comm::Backend::kThread) {
    config.ranks = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (config.ranks >= 1) resolve_batch(config, config.ranks);
  validate(config);
}

// The corpus the settings name: the embedded one, chat records or text/shards.
Corpus load_run_corpus(const TrainConfig& config) {
  if (config.data.empty() && !config.val_data.empty()) {
    warn(
        fmt::format("--val-data {} is ignored: the embedded corpus validates on its own held-out sums; give "
                    "--data too",
                    config.val_data));
  }
  ZDP_CHECK(!config.pack_chat || is_chat_data(config.data), ConfigError,
            "[train] --chat-packing pack packs chat records (--data FILE.jsonl), not {}",
            config.data.empty() ? std::string("the embedded corpus") : config.data);
  ZDP_CHECK(config.chat_template.empty() || is_chat_data(config.data), ConfigError,
            "[train] --chat-template {} applies to chat data (--data FILE.jsonl), not to {}", config.chat_template,
            config.data.empty() ? std::string("the embedded corpus") : config.data);
  if (config.data.empty()) return arithmetic_corpus();
  if (is_chat_data(config.data)) {
    ZDP_CHECK(config.val_data.empty(), ConfigError,
              "[train] --val-data {}: chat data validates on the last 10% of its records; leave --val-data out",
              config.val_data);
    return load_chat_corpus(config.data, config.tokenizer, config.chat_template, config.seq_len, config.pack_chat);
  }
  return load_corpus(config.data, config.val_data, config.tokenizer);
}

// The model the settings name, checked against the data it trains on.
void make_run_model(RunSetup& run) {
  const TrainConfig& config = run.config;
  run.model_config = model::resolve_model_config(config.model);
  // The trainer trains language models of any family (model/causal_lm.h):
  // it keeps the CausalLm for the sample and the held-out report, and the
  // Model for the engine.
  run.model = model::make_model(run.model_config);
  run.lm = dynamic_cast<const model::CausalLm*>(run.model.get());
  ZDP_CHECK(run.lm != nullptr, ConfigError,
            "[train] model '{}' is a \"{}\" model, not a language model: zerodp train trains on token data; pick a "
            "gpt or llama preset (zerodp model list)",
            config.model, run.model_config.kind());
  ZDP_CHECK(run.corpus.train_segments.empty() || run.lm->attends_within_segments(), ConfigError,
            "[train] --chat-packing pack needs a model whose attention keeps packed records apart (the Llama "
            "family); model '{}' is a \"{}\": use --chat-packing pad",
            config.model, run.model_config.kind());
  ZDP_CHECK(run.corpus.vocab <= run.lm->vocab(), ConfigError,
            "[train] the data has token ids up to {} but the model's vocabulary is {}: use a model with vocab >= {}",
            run.corpus.vocab - 1, run.lm->vocab(), run.corpus.vocab);
  ZDP_CHECK(config.seq_len <= run.lm->max_context(), ConfigError,
            "[train] --seq-len {} is longer than the model's context {}: use --seq-len {} or less", config.seq_len,
            run.lm->max_context(), run.lm->max_context());
}

}  // namespace

RunSetup prepare_run(const TrainConfig& input) {
  RunSetup run;
  run.config = input;
  resolve_settings(run);
  const TrainConfig& config = run.config;
  run.corpus = load_run_corpus(config);
  if (config.sample_tokens > 0) check_sample_prompt(run.corpus, config);  // a --prompt it cannot encode: refused now
  make_run_model(run);
  // Every output proved writable (and --save's room for two checkpoints)
  // before the first step, not found unwritable at the first save.
  check_train_outputs(config, run.model_config);
  // Checked once per process, before any rank allocates: a bad file is
  // refused first. Each rank then reads only the parameters it holds.
  uint64_t init_scratch = 0;  // each rank's reader of --init-from holds this much while it reads
  if (!config.init_from.empty()) {
    init_scratch = weights::open_init_weights(config.init_from, run.model_config)->scratch_bytes();
  }
  // Rank 0 answers the held-out sums and writes the sample from one fp32
  // copy of the model; with neither, no rank ever holds the whole model.
  run.held_out = config.held_out > 0 && !run.corpus.held_out.empty();
  run.consolidate = run.held_out || config.sample_tokens > 0;
  // A resume reads each record through one buffer of whole chunks, the
  // reader of --init-from through its own; the two exclude each other
  // (check_start_point).
  run.load_scratch = run.resumed ? ckpt::read_scratch_bytes(run.resumed->chunk_bytes) : init_scratch;
  // What a checkpoint records of the data, to name a changed file at resume:
  // read once, for that check and for the saves.
  run.data_fingerprint = config.save_dir.empty() && !run.resumed ? DataFingerprint{} : fingerprint_data(config.data);
  if (run.resumed) run.resume_notes += check_saved_data(config, *run.resumed, run.resume_path, run.data_fingerprint);
  return run;
}

}  // namespace zerodp::train
