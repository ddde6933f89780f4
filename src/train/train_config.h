// SPDX-License-Identifier: Apache-2.0
// TrainConfig: one training run, as typed values. Filled once at the edge
// (the CLI's flags, a DeepSpeed-style JSON config, or both: flags override
// the file), then validated as a whole before anything is allocated.
// Thread-safety: a plain value.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/world.h"
#include "core/pipeline_schedule.h"
#include "zero/engine_config.h"

namespace zerodp::train {

// Where a setting's value came from, by the prefix of its `sources` entry:
// "flag ", "config ", "checkpoint", "derived", "detected"; anything else
// (or no entry) is a default.
enum class SourceKind : uint8_t { kDefault, kFlag, kConfig, kCheckpoint, kDerived, kDetected };
SourceKind source_kind_of(std::string_view source);

// A timeout flag's seconds as the communicators' milliseconds.
inline std::chrono::milliseconds timeout_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

struct TrainConfig {
  // What to train on.
  std::string model = "gpt-tiny";  // preset name, .json path or inline JSON
  std::string data;                // "" = the embedded arithmetic corpus; else text files or llm.c .bin shards (a glob)
  std::string val_data;            // llm.c: the validation shard (default: *_val_* beside a *_train_* path)
  std::string tokenizer;      // "" = text as bytes; "gpt2", a directory or a tokenizer.json (text/tokenizer_lookup.h)
  std::string chat_template;  // chat data (.jsonl): "chatml", "llama3"; "" = from the tokenizer's special tokens
  // Chat data: pack several records into a window (their attention and
  // positions kept apart: a Llama-family model) instead of one per window.
  bool pack_chat = false;

  // Ranks.
  comm::Backend backend = comm::Backend::kThread;
  int ranks = 0;  // 0 = number of CPU cores (thread), or what mpirun started (mpi)
  double comm_timeout_s = 120.0;
  // A checkpoint save's or load's collectives wait at least this long: they
  // wait for the peers' file I/O (hybrid sharding: for group 0's whole save).
  double checkpoint_timeout_s = 600.0;

  // Batch: train_batch_size = micro_batch * grad_accum * ranks.
  // DeepSpeed's train_batch_size when a config file gives it (0 = not
  // given): once the ranks are known, resolve_batch derives what was not
  // given (the micro-batch, or the accumulation) or checks the rule.
  int train_batch_size = 0;
  bool grad_accum_given = false;  // by --grad-accum or gradient_accumulation_steps
  // A resume that takes its accumulation from the checkpoint keeps the saved
  // global batch: this many micro-batches per step (grad-accum x ranks as
  // saved), shared by the ranks that resume it (resolve_batch). 0: not such a resume.
  int resume_micro_batches = 0;
  // 0 = not given: the data's default (apply_data_defaults), short windows
  // of many lines for the embedded arithmetic corpus, longer ones for text.
  // The CLI and config files refuse a given 0.
  int micro_batch = 0;
  int seq_len = 0;
  int steps = 1600;
  uint64_t seed = 1234;
  bool activation_checkpointing = false;

  // The engine: stage, precision, optimizer, schedule, scaler, clipping.
  zero::EngineConfig engine = default_engine();

  // Pipeline parallelism (zero/pipeline.h): P stages of N / P data-parallel
  // replicas each; 1: none.
  int pipeline_stages = 1;
  PipelineSchedule pipeline_schedule = PipelineSchedule::kOneFOneB;
  std::vector<int> pipeline_cut;           // blocks per stage, P of them; empty: balanced as pipeline_balance says
  std::string pipeline_balance = "flops";  // plan::PipelineBalance's name: flops or memory
  int data_parallel_ranks(int ranks) const { return ranks / pipeline_stages; }

  // Evaluation and output.
  int eval_every = 200;         // validation loss every K steps; 0 = only at the end
  int eval_batches = 4;         // micro-batches per rank in one validation pass
  int log_every = 100;          // a log line every K steps when not on a terminal
  std::string metrics_path;     // JSON Lines, one record per step
  int sample_tokens = 48;       // generated after training (GPT); 0 = none
  std::string prompt;           // the sample's start ("" = a held-out prompt, or a new document)
  double temperature = 0.8;     // the sample's; 0 = greedy
  int top_k = 40;               // the sample draws from the k likeliest tokens; 0 = all
  int held_out = 100;           // embedded corpus: unseen sums answered at each evaluation and at the end; 0 = none
  double max_memory_bytes = 0;  // refuse before allocating when the plan exceeds it; 0 = no limit

  // Checkpoints.
  std::string save_dir;
  std::string resume_dir;
  std::string
      init_from;  // weights file (llm.c, zerodp or HF safetensors): the starting weights (instead of the seed's)
  // Settings a resume may change although the checkpoint recorded others
  // (--resume-override data,lr): by setting name, as in `sources`.
  std::vector<std::string> resume_overrides;
  int save_every = 0;
  int keep_last = 0;
  // --on-save-failure continue: a periodic save that fails by a write error
  // (full disk, read-only filesystem) is reported and the run trains on,
  // saving again at the next save point; false (stop): the run stops there.
  bool continue_after_failed_save = false;

  // Where each setting came from, keyed by the setting's name, which is the
  // train flag's name without dashes ("stage", "lr"): "flag
  // --stage", "config zero_optimization.stage", "checkpoint", "derived: ...".
  // A setting not listed has the default named by `defaults`.
  std::map<std::string, std::string> sources;
  std::string defaults = "zerodp default";  // "DeepSpeed default" once a config file is applied
  // Settings whose config key held Hugging Face's "auto", by setting name:
  // the key ("optimizer.params.lr"). The value is a flag's, else derived or
  // the default; the effective configuration names the key beside it.
  std::map<std::string, std::string> auto_keys;
  std::string source_of(const std::string& setting) const;
  // The kind of a setting's `sources` entry (source_kind_of below).
  SourceKind source_kind(const std::string& setting) const;
  // Whether the user gave the setting: by a flag or a config file's key.
  bool given(const std::string& setting) const;
  // How a message names the setting: the flag the user typed ("--lr"), the
  // key of the config file ("--config's optimizer.params.lr"), or for a
  // setting not given "--SETTING (KEY in --config)", KEY being the setting
  // row's DeepSpeed key (settings.h), or `key` where a message means
  // another one; "--SETTING" alone when DeepSpeed has none.
  std::string spelled(const std::string& setting) const;
  std::string spelled(const std::string& setting, const std::string& key) const;

  static zero::EngineConfig default_engine();
};

// The batch shape a run gets when --micro-batch / --seq-len are not given.
// The embedded corpus: 20 tokens (two 10-byte lines) per sequence. With
// learned absolute positions, every digit slot must be learned once per
// position a line can start at: 2 such positions instead of 6 (at 64
// tokens). With the default peak learning rate of 1.5e-3 that takes the
// demo through its plateaus well before the last step on every GEMM kernel
// (docs/portability.md); at 64 tokens and 3e-3 the last step fell inside
// one, and the GEMM kernel's rounding decided the result.
inline constexpr int kArithmeticMicroBatch = 26;
inline constexpr int kArithmeticSeqLen = 20;
inline constexpr int kTextMicroBatch = 8;
inline constexpr int kTextSeqLen = 64;
void apply_data_defaults(TrainConfig& config);

// Throws ConfigError (one line: the problem and the fix) for values that do
// not fit together. REQUIRES ranks resolved (>= 1) for the batch-size rule.
void validate(const TrainConfig& config);
// The part of validate() that needs no resolved values: one start point
// (--init-from or --resume, not both). Checked before a resume reads its checkpoint.
void check_start_point(const TrainConfig& config);

// DeepSpeed's batch rule, train_batch_size = micro_batch * grad_accum *
// ranks, for `ranks` data-parallel ranks (the world's over the pipeline's
// stages, after check_pipeline), with DeepSpeed's derivations when
// train_batch_size is given: with the micro-batch, the accumulation is
// derived; with the accumulation, the micro-batch; with neither, the
// accumulation is 1 and the micro-batch derived; with both, the rule is
// checked. A resume's saved global batch (resume_micro_batches) comes first:
// the accumulation is its micro-batches over `ranks`. ConfigError when a
// division is not exact or the rule fails.
// Idempotent: derived values count as given afterwards.
void resolve_batch(TrainConfig& config, int world);

}  // namespace zerodp::train
