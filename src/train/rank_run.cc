// SPDX-License-Identifier: Apache-2.0
#include "train/rank_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/process_memory.h"
#include "core/simd.h"
#include "engine_ckpt/engine_checkpoint.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "optim/optimizer.h"
#include "train/effective_config.h"
#include "train/memory_check.h"
#include "train/metrics.h"
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
    ws.set_batch(batch);
  };
}

// Rank 0's opening lines: the model, the data, the layout, the compute, the
// memory plan and the effective configuration.
void print_opening(const RunSetup& run, const TrainConfig& config, const comm::Communicator& comm,
                   const plan::ProcessPrediction& process_plan, uint64_t baseline, const MemoryLimit& limit,
                   const std::vector<Setting>& settings) {
  const int n = comm.size();
  fmt::print("zerodp train: {}\n", run.lm->describe());
  fmt::print("data: {}\n", run.corpus.description);
  fmt::print("ranks: {} ({}), ZeRO stage {}, {}, micro-batch {} x seq {} x accum {} -> {} tokens/step\n", n,
             comm.backend_name(), config.engine.stage, config.engine.dtype.name(), config.micro_batch, config.seq_len,
             config.engine.grad_accum,
             static_cast<int64_t>(config.micro_batch) * config.seq_len * config.engine.grad_accum * n);
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
  fmt::print(
      "memory: the plan {} for this process = baseline {} (measured after the warm-up) + {} rank{}; "
      "limit {}: {}\n",
      mib(process_plan.total()), mib(baseline), process_plan.ranks.size(), process_plan.ranks.size() == 1 ? "" : "s",
      limit.bytes == UINT64_MAX ? std::string("none") : gib(limit.bytes), limit.source);
  fmt::print("{}", format_effective_config(settings));
}

}  // namespace

void run_rank(const RunSetup& run, comm::Communicator& comm, TrainOutcome& outcome) {
  const bool lead = comm.rank() == 0;
  const int n = comm.size();
  const model::CausalLm& lm = *run.lm;
  const Corpus& corpus = run.corpus;
  TrainConfig config = run.config;  // mpi: the batch rule needs the number of processes
  resolve_batch(config, n);
  // Refuse before allocating anything when the plan does not fit, naming a
  // stage that would: at once with the process as it is, then again with
  // the baseline measured once every rank (thread) is up, has touched its
  // OpenBLAS buffers and paged in its code (the warm-up), and holds nothing
  // of the model.
  const plan::RunShape shape = run_shape(config, n, run.consolidate, run.load_scratch);
  const plan::LocalRanks local =
      config.backend == comm::Backend::kThread ? plan::LocalRanks{0, n} : plan::LocalRanks{comm.rank(), 1};
  const MemoryLimit limit = memory_limit(config);
  plan::check_memory_fits(run.model_config, shape, local, current_rss_bytes(), limit.bytes, limit.source);
  warm_up(lm, comm, config.engine, config.micro_batch, config.seq_len, comm.rank() - local.first, local.count);
  comm.barrier();
  const uint64_t baseline = comm.all_reduce_uint64(current_rss_bytes(), comm::ReduceOp::kMax);
  plan::check_memory_fits(run.model_config, shape, local, baseline, limit.bytes, limit.source);
  const plan::ProcessPrediction process_plan = plan::predict_process(run.model_config, shape, local, baseline);
  zero::Engine engine(lm, comm, config.engine, config.seed, config.micro_batch, config.seq_len,
                      config.activation_checkpointing);
  const DistributedSampler train_sampler(corpus.train, config.seq_len, config.micro_batch, n, config.seed,
                                         corpus.record_length, corpus.train_name, corpus.train_targets);
  const DistributedSampler val_sampler(corpus.val, config.seq_len, config.micro_batch, n, config.seed + 1,
                                       corpus.record_length, corpus.val_name, corpus.val_targets);
  std::optional<MetricsWriter> metrics;
  std::optional<Progress> progress;
  const std::vector<Setting> settings = effective_settings(config, n);
  if (lead) {
    print_opening(run, config, comm, process_plan, baseline, limit, settings);
    progress.emplace(config.steps, config.log_every, config.backend == comm::Backend::kThread);
  }
  Progress* const lead_progress = lead ? &*progress : nullptr;

  int64_t step = 0;
  const zero::BatchFeeder train_feed = feed_from(train_sampler, step, comm.rank());
  int64_t val_index = 0;
  const zero::BatchFeeder val_feed = feed_from(val_sampler, val_index, comm.rank());
  auto validate_now = [&] {
    double sum = 0;
    for (val_index = 0; val_index < config.eval_batches; ++val_index) sum += engine.eval_loss(val_feed);
    return sum / config.eval_batches;
  };

  const double tokens_per_step =
      static_cast<double>(config.micro_batch) * config.seq_len * config.engine.grad_accum * n;
  if (!config.init_from.empty()) {
    const std::unique_ptr<weights::InitWeights> reader = weights::open_init_weights(config.init_from, run.model_config);
    engine.load_params([&reader](size_t first, std::span<float> out) { reader->read(first, out); });
    if (lead) progress->note(fmt::format("initialised from {} ({})", config.init_from, reader->description()));
  }
  if (!config.resume_dir.empty()) {
    const zero::CommTimeoutAtLeast waits_for_io(engine, timeout_ms(config.checkpoint_timeout_s));
    const ckpt::LoadResult loaded = engine_ckpt::load(engine, config.resume_dir);
    step = loaded.step;
    if (lead) {
      progress->note(fmt::format("resumed from {} at step {} (saved by {} ranks at stage {}, {}); {}", loaded.path,
                                 loaded.step, loaded.saved_ranks, loaded.saved_stage, loaded.saved_dtype,
                                 run.resume_notes));
    }
  }
  // Created only now, once every input (a checkpoint included) was accepted:
  // a refused run must not truncate or leave a metrics file.
  if (lead && !config.metrics_path.empty()) {
    // A resumed run continues its file after the step it resumed from.
    if (config.resume_dir.empty()) {
      metrics.emplace(config.metrics_path);
    } else {
      metrics.emplace(config.metrics_path, step);
    }
    metrics->write(effective_config_record(settings));
  }

  // The step's observers, in the order they act (their collectives too).
  CheckpointPolicy checkpoints(engine, config, run.data_fingerprint, lead_progress);
  std::vector<std::unique_ptr<StepObserver>> extra;
  std::vector<StepObserver*> observers;
  if (run.held_out)
    observers.push_back(
        extra.emplace_back(std::make_unique<HeldOutReport>(engine, lm, corpus, config, lead_progress)).get());
  observers.push_back(&checkpoints);
  if (!config.metrics_path.empty()) {
    observers.push_back(
        extra.emplace_back(std::make_unique<MetricsLog>(engine, comm, metrics ? &*metrics : nullptr)).get());
  }
  if (lead) {
    observers.push_back(
        extra.emplace_back(std::make_unique<ProgressLine>(*progress, config.engine.dtype == Dtype::fp16())).get());
  }

  comm::CommStats last_step_comm;
  // Hybrid sharding: what of it crossed the groups (counted in both).
  comm::CommStats last_step_across;
  comm::Communicator* const replica = engine.replica_communicator();
  double train_seconds = 0;
  std::vector<double> losses;
  const int64_t first_step = step;
  if (lead) progress->start_at(first_step);
  int interrupted = 0;  // the signal every rank agreed to stop on
  for (; step < config.steps; ++step) {
    // One integer all-reduce per step: every rank stops before the same step.
    interrupted = static_cast<int>(
        comm.all_reduce_uint64(static_cast<uint64_t>(StopOnSignals::requested()), comm::ReduceOp::kMax));
    if (interrupted != 0) break;
    const comm::CommStats before = comm.stats();
    const comm::CommStats before_across = replica ? replica->stats() : comm::CommStats{};
    const auto t0 = Clock::now();
    const zero::StepResult r = engine.train_step(train_feed);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    train_seconds += dt;
    last_step_comm = comm.stats() - before;
    if (replica) last_step_across = replica->stats() - before_across;
    losses.push_back(r.loss);
    const bool eval = config.eval_every > 0 && (step + 1) % config.eval_every == 0 && step + 1 < config.steps;
    const StepEvent event{.step = step + 1,
                          .steps = config.steps,
                          .result = r,
                          .seconds = dt,
                          .tokens_per_step = tokens_per_step,
                          .val_loss = eval ? validate_now() : -1.0,
                          .comm = last_step_comm};
    for (StepObserver* o : observers) o->on_step(event);
  }
  if (interrupted != 0) {
    const std::string root = config.save_dir.empty() ? std::string(kInterruptedSaveDir) : config.save_dir;
    if (lead) {
      progress->note(
          fmt::format("{} received: every rank finished step {}; saving before exiting (a second "
                      "signal exits at once)",
                      signal_name(interrupted), step));
    }
    if (checkpoints.last_saved() != step) checkpoints.save(step, root);
    if (lead || config.backend == comm::Backend::kMpi) outcome.interrupted_signal = interrupted;
    if (!lead) return;
    progress->finish();
    fmt::print(
        "interrupted by {} after step {} of {}; the checkpoint is in {}. Continue the run with:\n"
        "  {}\n",
        signal_name(interrupted), step, config.steps, root, resume_command(config, root, n));
    return;
  }
  if (!config.save_dir.empty() && checkpoints.last_saved() != step) checkpoints.save(step, config.save_dir);
  if (lead && checkpoints.failed_saves() > 0) {
    progress->note(
        fmt::format("{} periodic save(s) failed and the run trained on (--on-save-failure continue); the "
                    "final checkpoint is saved",
                    checkpoints.failed_saves()));
  }
  const double final_val = validate_now();
  const AllRankFigures figures = collect_figures(comm, engine, last_step_comm);
  const zero::LedgerBuffer<float> params = run.consolidate ? engine.gather_params_to(0) : zero::LedgerBuffer<float>();
  if (!lead) return;
  progress->finish();
  // A resumed run's first step is not the run's start: name it so, with
  // the last step's loss beside it.
  const std::string resumed =
      first_step > 0 && !losses.empty()
          ? fmt::format(", where this run resumed; {:.4f} at step {}", losses.back(), config.steps)
          : "";
  fmt::print("validation loss {:.4f} (training loss {:.4f} at step {}{})\n", final_val,
             losses.empty() ? 0.0 : losses.front(), first_step + 1, resumed);
  if (run.held_out) {
    outcome.held_out_accuracy = held_out_accuracy(lm, params, corpus, config.held_out, config.seq_len);
    fmt::print("held-out arithmetic: {:.0f}% of {} unseen sums answered exactly\n", 100.0 * outcome.held_out_accuracy,
               std::min<size_t>(config.held_out, corpus.held_out.size()));
  }
  if (metrics) {
    // The final validation pass, so a report's best validation loss is this run's.
    metrics->write(report::FinalRecord{
        .step = step,
        .val_loss = final_val,
        .held_out_accuracy = run.held_out ? std::optional(outcome.held_out_accuracy) : std::nullopt});
  }
  RunStats stats;
  stats.model_description = lm.describe();
  stats.num_params = lm.num_params();
  stats.largest_unit = engine.plan().largest_unit();
  stats.stage = config.engine.stage;
  stats.ranks = n;
  stats.backend = std::string(comm.backend_name());
  stats.dtype = config.engine.dtype;
  stats.optimizer_k =
      static_cast<int>(optim::bytes_per_param_k(config.engine.optimizer, config.engine.dtype.is_low_precision()));
  stats.grad_accum = config.engine.grad_accum;
  stats.quantize_weights = config.engine.quantize_weights;
  stats.quantize_grads = config.engine.quantize_grads;
  stats.quantize_block = config.engine.quantize_block;
  stats.quantize_delay = config.engine.quantize_delay;
  stats.steps_taken = engine.steps_taken();
  stats.shard_group = engine.shard_group_size();
  stats.memory = figures.memory;
  stats.step_comm = figures.step_comm;
  stats.step_comm_across = last_step_across;
  stats.seconds = train_seconds;
  stats.tokens_per_second =
      train_seconds > 0 ? tokens_per_step * static_cast<double>(config.steps - first_step) / train_seconds : 0;
  fmt::print("{}", format_summary(stats));
  if (config.sample_tokens > 0) {
    fmt::print("\nSample ({} tokens, temperature {:g}, top-k {}):\n{}\n", config.sample_tokens, config.temperature,
               config.top_k, sample_text(lm, params, corpus, config));
  }
  outcome.baseline_bytes = baseline;
  outcome.planned_bytes = process_plan.total();
  outcome.peak_rss_bytes = peak_rss_bytes();
  fmt::print("{}", format_process_memory(process_plan, outcome.peak_rss_bytes, config.backend == comm::Backend::kMpi));
  outcome.losses = losses;
  outcome.final_val_loss = final_val;
  outcome.tokens_per_second = stats.tokens_per_second;
  outcome.ranks = n;
}

}  // namespace zerodp::train
