// SPDX-License-Identifier: Apache-2.0
#include "train/rank_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/process_memory.h"
#include "core/simd.h"
#include "engine_ckpt/pipeline_checkpoint.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "optim/optimizer.h"
#include "train/effective_config.h"
#include "train/memory_check.h"
#include "train/metrics.h"
#include "train/pipeline_layout.h"
#include "train/progress.h"
#include "train/rank_figures.h"
#include "train/sampler.h"
#include "train/samples.h"
#include "train/step_observers.h"
#include "train/stop_signal.h"
#include "train/summary.h"
#include "train/warm_up.h"
#include "weights/init_weights.h"
#include "zero/engine.h"
#include "zero/pipeline.h"

namespace zerodp::train {
namespace {

using Clock = std::chrono::steady_clock;

// Where an interrupted run without --save puts its checkpoint.
constexpr const char* kInterruptedSaveDir = "zerodp-interrupted";

// The feeder of `sampler`'s micro-batches at the step (or batch index) `at`
// points to, for this rank.
zero::BatchFeeder feed_from(const DistributedSampler& sampler, const int64_t& at, int rank) {
  return [&sampler, &at, rank](model::Workspace& ws, int micro) {
    const TokenBatch b = sampler.batch(at, micro, rank);
    model::Batch batch;
    batch.tokens = b.tokens;
    batch.targets = b.targets;
    batch.segments = b.segments;
    ws.set_batch(batch);
  };
}

// The memory plan, checked before anything is allocated and again after
// the warm-up (part 1 of a rank's run).
struct Preflight {
  plan::ProcessPrediction process_plan;        // data parallelism's (empty with a pipeline)
  std::optional<plan::PipelinePlan> pipeline;  // --pipeline-stages
  plan::LocalRanks local;                      // this process's ranks
  uint64_t baseline = 0;  // the process's resident bytes after the warm-up, the largest of any rank's
  MemoryLimit limit;
};

// Rank 0's opening lines: the model, the data, the layout, the compute, the
// memory plan and the effective configuration.
void print_opening(const RunSetup& run, const TrainConfig& config, const comm::Communicator& comm,
                   const Preflight& preflight, const std::vector<Setting>& settings) {
  const int n = comm.size();
  const int dp = config.data_parallel_ranks(n);
  fmt::print("zerodp train: {}\n", run.lm->describe());
  fmt::print("data: {}\n", run.corpus.description);
  const std::string layout =
      config.pipeline_stages > 1
          ? fmt::format("{} = {} pipeline stages x {} replicas, {} schedule", n, config.pipeline_stages, dp,
                        pipeline_schedule_name(config.pipeline_schedule))
          : fmt::format("{}", n);
  fmt::print("ranks: {} ({}), ZeRO stage {}, {}, micro-batch {} x seq {} x accum {} -> {} tokens/step\n", layout,
             comm.backend_name(), config.engine.stage, config.engine.dtype.name(), config.micro_batch, config.seq_len,
             config.engine.grad_accum,
             static_cast<int64_t>(config.micro_batch) * config.seq_len * config.engine.grad_accum * dp);
  const kernels::BlasInfo blas = kernels::blas_info();
  // The products' precision, where they run, then the SIMD level and BLAS.
  std::string products;
  if (config.engine.compute == kernels::Compute::kBf16) {
    products = kernels::bf16_units_at(active_simd_level())
                   ? "bf16 matrix products with fp32 sums on the CPU's bf16 units (AVX512_BF16); "
                   : "bf16 matrix products with fp32 sums in portable C++ (this SIMD level has no bf16 units: "
                     "the same bits, slowly; --compute fp32 is faster here); ";
  }
  fmt::print("compute: {}SIMD {} (best here {}), OpenBLAS {} kernels\n", products, simd_level_name(active_simd_level()),
             simd_level_name(best_simd_level()), blas.core);
  if (!blas.note.empty()) fmt::print("note: {}\n", blas.note);
  const MemoryLimit& limit = preflight.limit;
  const std::string limit_text = limit.bytes == UINT64_MAX ? std::string("none") : gib(limit.bytes);
  if (preflight.pipeline) {
    fmt::print("{}", plan::format_pipeline_text(*preflight.pipeline));
    fmt::print(
        "memory: the pipeline's plan {} for this process = baseline {} + its ranks' stage peaks; limit {}: {}\n",
        mib(preflight.baseline +
            pipeline_local_bytes(*preflight.pipeline, pipeline_engine_run(config, run.consolidate), preflight.local)),
        mib(preflight.baseline), limit_text, limit.source);
  } else {
    const plan::ProcessPrediction& process_plan = preflight.process_plan;
    fmt::print(
        "memory: the plan {} for this process = baseline {} (measured after the warm-up) + {} rank{}; "
        "limit {}: {}\n",
        mib(process_plan.total()), mib(preflight.baseline), process_plan.ranks.size(),
        process_plan.ranks.size() == 1 ? "" : "s", limit_text, limit.source);
  }
  fmt::print("{}", format_effective_config(settings));
}

// Refuse before allocating anything when the plan does not fit, naming a
// stage that would: at once with the process as it is, then again with the
// baseline measured once every rank (thread) is up, has touched its OpenBLAS
// buffers and paged in its code (the warm-up), and holds nothing of the
// model.
Preflight preflight(const RunSetup& run, const TrainConfig& config, comm::Communicator& comm) {
  const int n = comm.size();
  const plan::RunShape shape = run_shape(config, n, run.consolidate, run.load_scratch);
  const plan::LocalRanks local =
      config.backend == comm::Backend::kThread ? plan::LocalRanks{0, n} : plan::LocalRanks{comm.rank(), 1};
  Preflight p;
  p.limit = memory_limit(config);
  p.local = local;
  if (config.pipeline_stages > 1) {
    // A pipeline's ranks hold their stages: the pipeline's plan checks them.
    p.pipeline = run_pipeline_plan(config, run.model_config, n);
    check_pipeline_memory(*p.pipeline, pipeline_engine_run(config, run.consolidate), local, current_rss_bytes(),
                          p.limit.bytes, p.limit.source);
  } else {
    plan::check_memory_fits(run.model_config, shape, local, current_rss_bytes(), p.limit.bytes, p.limit.source);
    if (shape.offload_optimizer || shape.offload_params)
      check_offload_room(config, plan::predict_process(run.model_config, shape, local, 0));
  }
  warm_up(*run.lm, comm, config.engine, config.micro_batch, config.seq_len, comm.rank() - local.first, local.count);
  comm.barrier();
  p.baseline = comm.all_reduce_uint64(current_rss_bytes(), comm::ReduceOp::kMax);
  if (p.pipeline) {
    check_pipeline_memory(*p.pipeline, pipeline_engine_run(config, run.consolidate), local, p.baseline, p.limit.bytes,
                          p.limit.source);
    return p;
  }
  plan::check_memory_fits(run.model_config, shape, local, p.baseline, p.limit.bytes, p.limit.source);
  p.process_plan = plan::predict_process(run.model_config, shape, local, p.baseline);
  return p;
}

// What the loop leaves for the finish (part 3's result).
struct LoopEnd {
  int interrupted = 0;  // the signal every rank agreed to stop on; 0: the run reached its steps
  double train_seconds = 0;
  std::vector<double> losses;
  comm::CommStats last_step_comm;
  zero::RankThreadTimes last_step_times;  // this rank's thread times in the last step
  comm::CommStats last_step_across;       // hybrid sharding: what of it crossed the groups (counted in both)
};

// One rank's run after its preflight: the engine and its data, then start,
// loop and finish (parts 2-4). Rank 0 (the lead) prints and writes the
// metrics; every rank takes part in every collective.
class RankRun {
 public:
  RankRun(const RunSetup& run, const TrainConfig& config, comm::Communicator& comm, const Preflight& preflight)
      : run_(run),
        config_(config),
        comm_(comm),
        preflight_(preflight),
        lead_(comm.rank() == 0),
        n_(comm.size()),
        dp_(config.data_parallel_ranks(n_)),
        trainee_(make_trainee(run, config, comm, preflight)),
        engine_(trainee_->engine()),
        pipeline_(dynamic_cast<zero::Pipeline*>(trainee_.get())),
        train_sampler_(run.corpus.train, config.seq_len, config.micro_batch, dp_, config.seed, run.corpus.record_length,
                       run.corpus.train_name, run.corpus.train_targets, run.corpus.train_segments),
        val_sampler_(run.corpus.val, config.seq_len, config.micro_batch, dp_, config.seed + 1, run.corpus.record_length,
                     run.corpus.val_name, run.corpus.val_targets, run.corpus.val_segments),
        // Stage-major ranks (rank = stage x D + replica): the replica reads
        // the data rank `replica` of D would.
        train_feed_(feed_from(train_sampler_, step_, comm.rank() % dp_)),
        val_feed_(feed_from(val_sampler_, val_index_, comm.rank() % dp_)),
        settings_(effective_settings(config, n_)),
        tokens_per_step_(static_cast<double>(config.micro_batch) * config.seq_len * config.engine.grad_accum * dp_),
        progress_(lead_ ? std::optional<Progress>(std::in_place, config.steps, config.log_every,
                                                  config.backend == comm::Backend::kThread)
                        : std::nullopt),
        checkpoints_(*trainee_, n_, config, run.data_fingerprint, progress()) {}

  void run(TrainOutcome& outcome) {
    if (lead_) {
      print_opening(run_, config_, comm_, preflight_, settings_);
    }
    start();
    const LoopEnd end = loop();
    if (end.interrupted != 0) return finish_interrupted(end, outcome);
    finish(end, outcome);
  }

 private:
  Progress* progress() { return lead_ ? &*progress_ : nullptr; }

  // The whole model's engine, or this rank's stage of a pipeline.
  static std::unique_ptr<zero::Trainable> make_trainee(const RunSetup& run, const TrainConfig& config,
                                                       comm::Communicator& comm, const Preflight& preflight) {
    if (preflight.pipeline) {
      return std::make_unique<zero::Pipeline>(*run.lm, comm, config.engine,
                                              engine_pipeline_layout(*preflight.pipeline, *run.lm), config.seed,
                                              config.micro_batch, config.seq_len, config.activation_checkpointing);
    }
    return std::make_unique<zero::Engine>(*run.lm, comm, config.engine, config.seed, config.micro_batch, config.seq_len,
                                          config.activation_checkpointing);
  }

  double validate_now() {
    double sum = 0;
    for (val_index_ = 0; val_index_ < config_.eval_batches; ++val_index_) sum += trainee_->eval_loss(val_feed_);
    return sum / config_.eval_batches;
  }

  // Part 2: the starting weights (--init-from) or the saved state (--resume),
  // then the metrics file and the step's observers.
  void start() {
    if (!config_.init_from.empty()) {
      const std::unique_ptr<weights::InitWeights> reader =
          weights::open_init_weights(config_.init_from, run_.model_config);
      trainee_->load_params([&reader](size_t first, std::span<float> out) { reader->read(first, out); });
      if (lead_) progress_->note(fmt::format("initialised from {} ({})", config_.init_from, reader->description()));
    }
    if (!config_.resume_dir.empty()) {
      const zero::CommTimeoutAtLeast waits_for_io(*trainee_, timeout_ms(config_.checkpoint_timeout_s));
      const ckpt::LoadResult loaded = engine_ckpt::load(*trainee_, config_.resume_dir);
      step_ = loaded.step;
      if (lead_) {
        progress_->note(fmt::format("resumed from {} at step {} (saved by {} ranks at stage {}, {}); {}", loaded.path,
                                    loaded.step, loaded.saved_ranks, loaded.saved_stage, loaded.saved_dtype,
                                    run_.resume_notes));
      }
    }
    // Created only now, once every input (a checkpoint included) was
    // accepted: a refused run must not truncate or leave a metrics file. A
    // resumed run continues its file after the step it resumed from.
    if (lead_ && !config_.metrics_path.empty()) {
      if (config_.resume_dir.empty()) {
        metrics_.emplace(config_.metrics_path);
      } else {
        metrics_.emplace(config_.metrics_path, step_);
      }
      metrics_->write(effective_config_record(settings_));
    }
    add_observers();
  }

  // The step's observers, in the order they act (their collectives too).
  void add_observers() {
    if (run_.held_out) {
      observers_.push_back(
          owned_.emplace_back(std::make_unique<HeldOutReport>(*trainee_, *run_.lm, run_.corpus, config_, progress()))
              .get());
    }
    observers_.push_back(&checkpoints_);
    if (!config_.metrics_path.empty()) {
      observers_.push_back(
          owned_.emplace_back(std::make_unique<MetricsLog>(engine_, comm_, metrics_ ? &*metrics_ : nullptr)).get());
    }
    if (lead_) {
      observers_.push_back(
          owned_.emplace_back(std::make_unique<ProgressLine>(*progress_, config_.engine.dtype == Dtype::fp16())).get());
    }
  }

  // Part 3: the steps, each handed to the observers, until the last or a
  // stop signal every rank agreed on.
  LoopEnd loop() {
    LoopEnd end;
    comm::Communicator* const replica = engine_.replica_communicator();
    first_step_ = step_;
    if (lead_) progress_->start_at(first_step_);
    for (; step_ < config_.steps; ++step_) {
      // One integer all-reduce per step: every rank stops before the same step.
      end.interrupted = static_cast<int>(
          comm_.all_reduce_uint64(static_cast<uint64_t>(StopOnSignals::requested()), comm::ReduceOp::kMax));
      if (end.interrupted != 0) break;
      const comm::CommStats before = comm_.stats();
      const comm::CommStats before_across = replica ? replica->stats() : comm::CommStats{};
      const auto t0 = Clock::now();
      const zero::RankThreadTimes times0 = engine_.thread_times();
      const zero::StepResult r = trainee_->train_step(train_feed_);
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      end.last_step_times = engine_.thread_times() - times0;
      end.train_seconds += dt;
      end.last_step_comm = comm_.stats() - before;
      if (replica) end.last_step_across = replica->stats() - before_across;
      end.losses.push_back(r.loss);
      const bool eval = config_.eval_every > 0 && (step_ + 1) % config_.eval_every == 0 && step_ + 1 < config_.steps;
      const StepEvent event{.step = step_ + 1,
                            .steps = config_.steps,
                            .result = r,
                            .seconds = dt,
                            .times = end.last_step_times,
                            .tokens_per_step = tokens_per_step_,
                            .val_loss = eval ? validate_now() : -1.0,
                            .comm = end.last_step_comm};
      for (StepObserver* o : observers_) o->on_step(event);
    }
    return end;
  }

  // Part 4 after a stop signal: a checkpoint and the command that continues.
  void finish_interrupted(const LoopEnd& end, TrainOutcome& outcome) {
    const std::string root = config_.save_dir.empty() ? std::string(kInterruptedSaveDir) : config_.save_dir;
    if (lead_) {
      progress_->note(
          fmt::format("{} received: every rank finished step {}; saving before exiting (a second "
                      "signal exits at once)",
                      signal_name(end.interrupted), step_));
    }
    if (checkpoints_.last_saved() != step_) checkpoints_.save(step_, root);
    if (lead_ || config_.backend == comm::Backend::kMpi) outcome.interrupted_signal = end.interrupted;
    if (!lead_) return;
    progress_->finish();
    fmt::print(
        "interrupted by {} after step {} of {}; the checkpoint is in {}. Continue the run with:\n"
        "  {}\n",
        signal_name(end.interrupted), step_, config_.steps, root, resume_command(config_, root, n_));
  }

  // Part 4: the final save and validation, then (rank 0) the report.
  void finish(const LoopEnd& end, TrainOutcome& outcome) {
    if (!config_.save_dir.empty() && checkpoints_.last_saved() != step_) checkpoints_.save(step_, config_.save_dir);
    if (lead_ && checkpoints_.failed_saves() > 0) {
      progress_->note(fmt::format(
          "{} periodic save(s) failed and the run trained on (--on-save-failure continue); the final checkpoint is "
          "saved",
          checkpoints_.failed_saves()));
    }
    const double final_val = validate_now();
    const AllRankFigures figures = collect_figures(comm_, engine_, end.last_step_comm, end.last_step_times);
    const zero::LedgerBuffer<float> params =
        run_.consolidate ? trainee_->gather_params_to(0) : zero::LedgerBuffer<float>();
    const std::string pipeline_text = pipeline_ ? pipeline_summary() : std::string();
    if (!lead_) return;
    progress_->finish();
    report_final(end, final_val, params, outcome);
    RunStats stats = run_stats(figures, end);
    if (pipeline_) {
      // The data-parallel summary's formulas are the whole model's; a
      // pipeline's ranks hold stages: their own block.
      fmt::print("\n{}Throughput: {:.0f} tokens/s over {:.1f} s\n", pipeline_text, stats.tokens_per_second,
                 stats.seconds);
    } else {
      fmt::print("{}", format_summary(stats));
    }
    if (config_.sample_tokens > 0) {
      fmt::print("\nSample ({} tokens, temperature {:g}, top-k {}):\n{}\n", config_.sample_tokens, config_.temperature,
                 config_.top_k, sample_text(*run_.lm, params, run_.corpus, config_));
    }
    outcome.baseline_bytes = preflight_.baseline;
    outcome.peak_rss_bytes = peak_rss_bytes();
    if (pipeline_) {
      outcome.planned_bytes =
          preflight_.baseline +
          pipeline_local_bytes(*preflight_.pipeline, pipeline_engine_run(config_, run_.consolidate), preflight_.local);
      fmt::print("process memory: peak RSS {} against the pipeline's plan {}\n", mib(outcome.peak_rss_bytes),
                 mib(outcome.planned_bytes));
    } else {
      outcome.planned_bytes = preflight_.process_plan.total();
      fmt::print("{}", format_process_memory(preflight_.process_plan, outcome.peak_rss_bytes,
                                             config_.backend == comm::Backend::kMpi));
    }
    outcome.losses = end.losses;
    outcome.final_val_loss = final_val;
    outcome.tokens_per_second = stats.tokens_per_second;
    outcome.ranks = n_;
  }

  // Rank 0: the final validation line, the held-out score and the metrics' final record.
  void report_final(const LoopEnd& end, double final_val, const zero::LedgerBuffer<float>& params,
                    TrainOutcome& outcome) {
    // A resumed run's first step is not the run's start: name it so, with
    // the last step's loss beside it.
    const std::string resumed =
        first_step_ > 0 && !end.losses.empty()
            ? fmt::format(", where this run resumed; {:.4f} at step {}", end.losses.back(), config_.steps)
            : "";
    fmt::print("validation loss {:.4f} (training loss {:.4f} at step {}{})\n", final_val,
               end.losses.empty() ? 0.0 : end.losses.front(), first_step_ + 1, resumed);
    if (run_.held_out) {
      outcome.held_out_accuracy = held_out_accuracy(*run_.lm, params, run_.corpus, config_.held_out, config_.seq_len);
      fmt::print("held-out arithmetic: {:.0f}% of {} unseen sums answered exactly\n", 100.0 * outcome.held_out_accuracy,
                 std::min<size_t>(config_.held_out, run_.corpus.held_out.size()));
    }
    if (metrics_) {
      // The final validation pass, so a report's best validation loss is this run's.
      metrics_->write(report::FinalRecord{
          .step = step_,
          .val_loss = final_val,
          .held_out_accuracy = run_.held_out ? std::optional(outcome.held_out_accuracy) : std::nullopt});
    }
  }

  // Each rank's last schedule and ledger peak, gathered (collective); rank
  // 0's text: per stage, the measured bubble beside the formula's, and the
  // ledger's peak beside the plan's.
  std::string pipeline_summary() {
    struct Mine {
      double schedule_s, compute_s;
      uint64_t ledger_peak;
    };
    const zero::Pipeline::ScheduleTime t = pipeline_->last_schedule();
    const std::vector<Mine> all =
        comm_.all_gather_value(Mine{t.schedule_s, t.compute_s, engine_.ledger().peak_total()});
    if (!lead_) return {};
    const plan::PipelinePlan& plan = *preflight_.pipeline;
    const plan::EngineRun planned = pipeline_engine_run(config_, run_.consolidate);
    std::string out = fmt::format(
        "== The pipeline: {} stages x {} replicas, {}, M = {}; the formula's bubble {:.1f}% ==\n", plan.stages.size(),
        plan.replicas, pipeline_schedule_name(plan.config.schedule), config_.engine.grad_accum,
        100.0 * bubble_fraction(static_cast<int>(plan.stages.size()), config_.engine.grad_accum));
    for (size_t s = 0; s < plan.stages.size(); ++s) {
      const Mine& m = all[s * static_cast<size_t>(plan.replicas)];  // the stage's replica 0
      out += fmt::format(
          "  stage {}: last step's schedule {:.3f} s, forwards and backwards {:.3f} s, bubble {:.1f}%; ledger peak {} "
          "(plan {})\n",
          s, m.schedule_s, m.compute_s, 100.0 * (m.schedule_s > 0 ? 1.0 - m.compute_s / m.schedule_s : 0.0),
          mib(m.ledger_peak),
          mib(plan::predict_pipeline_rank(plan, planned, static_cast<int>(s) * plan.replicas).total()));
    }
    return out;
  }

  RunStats run_stats(const AllRankFigures& figures, const LoopEnd& end) const {
    RunStats stats;
    stats.model_description = run_.lm->describe();
    stats.num_params = run_.lm->num_params();
    stats.largest_unit = engine_.plan().largest_unit();
    stats.engine = config_.engine;
    stats.ranks = n_;
    stats.backend = std::string(comm_.backend_name());
    stats.optimizer_k =
        static_cast<int>(optim::bytes_per_param_k(config_.engine.optimizer, config_.engine.dtype.is_low_precision()));
    stats.steps_taken = engine_.steps_taken();
    stats.shard_group = engine_.shard_group_size();
    stats.memory = figures.memory;
    stats.step_comm = figures.step_comm;
    stats.step_comm_across = end.last_step_across;
    stats.seconds = end.train_seconds;
    stats.tokens_per_second =
        end.train_seconds > 0 ? tokens_per_step_ * static_cast<double>(config_.steps - first_step_) / end.train_seconds
                              : 0;
    return stats;
  }

  const RunSetup& run_;
  const TrainConfig& config_;
  comm::Communicator& comm_;
  const Preflight& preflight_;
  const bool lead_;
  const int n_;
  const int dp_;  // data-parallel ranks: N, or a pipeline's replicas
  std::unique_ptr<zero::Trainable> trainee_;
  zero::Engine& engine_;      // trainee_'s: the whole model's, or this rank's stage's
  zero::Pipeline* pipeline_;  // trainee_ with --pipeline-stages, else null
  const DistributedSampler train_sampler_;
  const DistributedSampler val_sampler_;
  int64_t step_ = 0;       // the data position: the next step to train
  int64_t val_index_ = 0;  // the validation batch being evaluated
  int64_t first_step_ = 0;
  const zero::BatchFeeder train_feed_;
  const zero::BatchFeeder val_feed_;
  const std::vector<Setting> settings_;
  const double tokens_per_step_;
  std::optional<Progress> progress_;
  std::optional<MetricsWriter> metrics_;
  CheckpointPolicy checkpoints_;
  std::vector<std::unique_ptr<StepObserver>> owned_;
  std::vector<StepObserver*> observers_;
};

}  // namespace

void run_rank(const RunSetup& run, comm::Communicator& comm, TrainOutcome& outcome) {
  TrainConfig config = run.config;  // mpi: the batch rule needs the number of processes
  resolve_batch(config, comm.size());
  const Preflight checked = preflight(run, config, comm);
  RankRun(run, config, comm, checked).run(outcome);
}

}  // namespace zerodp::train
