// SPDX-License-Identifier: Apache-2.0
#include "train/trainer.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "ckpt/manifest.h"
#include "ckpt/model_record.h"
#include "ckpt/shard_reader.h"
#include "ckpt/weights_reader.h"
#include "comm/mpi.h"
#include "core/error.h"
#include "core/process_memory.h"
#include "core/simd.h"
#include "kernels/gemm.h"
#include "model/generate.h"
#include "model/gpt.h"
#include "model/llmc_io.h"
#include "model/presets.h"
#include "plan/predict.h"
#include "train/corpus.h"
#include "train/effective_config.h"
#include "train/metrics.h"
#include "train/progress.h"
#include "train/resume_config.h"
#include "train/sampler.h"
#include "train/stop_signal.h"
#include "train/summary.h"
#include "train/warm_up.h"
#include "zero/engine.h"

namespace zerodp::train {
namespace {

using Clock = std::chrono::steady_clock;

// What each rank reports for the metrics file and the summary: its ledger
// and its counters of the last step (calls, bytes sent, bytes received per
// collective; not the seconds). All integers and no padding, so the bytes
// that travel are exactly the values.
struct RankFigures {
  RankMemory memory;
  std::array<std::array<uint64_t, 3>, comm::kNumCollectives> comm{};
};
static_assert(std::has_unique_object_representations_v<RankFigures>, "RankFigures must have no padding");

// Every rank's ledger and step counters, on every rank: one all-gather of a
// RankFigures (collective).
struct AllRankFigures {
  std::vector<RankMemory> memory;
  std::vector<comm::CommStats> step_comm;
};
AllRankFigures collect_figures(comm::Communicator& comm, const zero::Engine& engine, const comm::CommStats& step) {
  RankFigures mine;
  const zero::LedgerSnapshot ledger = engine.ledger().snapshot();
  for (size_t c = 0; c < zero::kNumMemoryCategories; ++c) {
    mine.memory.current[c] = ledger.categories[c].current;
    mine.memory.peak[c] = ledger.categories[c].peak;
  }
  mine.memory.model_states = ledger.model_states.current;
  mine.memory.owned = engine.plan().owned_count(comm.rank());
  for (int k = 0; k < comm::kNumCollectives; ++k) {
    const comm::CollectiveStats& s = step[static_cast<comm::Collective>(k)];
    mine.comm[k] = {s.calls, s.bytes_sent, s.bytes_received};
  }
  AllRankFigures all;
  for (const RankFigures& r : comm.all_gather_value(mine)) {
    all.memory.push_back(r.memory);
    comm::CommStats& c = all.step_comm.emplace_back();
    for (int k = 0; k < comm::kNumCollectives; ++k) {
      comm::CollectiveStats& s = c[static_cast<comm::Collective>(k)];
      s.calls = r.comm[k][0];
      s.bytes_sent = r.comm[k][1];
      s.bytes_received = r.comm[k][2];
    }
  }
  return all;
}

// Exact-match accuracy of greedy answers to held-out problems (rank 0).
double held_out_accuracy(const model::Gpt& gpt, std::span<const float> params, const Corpus& corpus, int count,
                         int context) {
  int correct = 0;
  const int n = std::min<int>(count, static_cast<int>(corpus.held_out.size()));
  for (int i = 0; i < n; ++i) {
    const ArithmeticProblem& p = corpus.held_out[i];
    const auto prompt = text_to_tokens(p.prompt());
    model::GenerateConfig g;
    g.max_new_tokens = static_cast<int>(p.answer().size());
    g.context = context;  // the positions the model was trained at
    g.temperature = 0.0f;
    const auto out = model::generate(gpt, params, prompt, g);
    const std::string answer = tokens_to_text({out.begin() + static_cast<std::ptrdiff_t>(prompt.size()), out.end()});
    if (answer == p.answer()) ++correct;
  }
  return n > 0 ? static_cast<double>(correct) / n : 0.0;
}

// The sample's first tokens: --prompt (through the tokenizer, or as bytes),
// else a held-out problem's prompt (embedded corpus) or a new document
// (after <|endoftext|>, as llm.c's samples start). The first `hidden` of
// them are not printed (the end-of-text token).
struct SamplePrompt {
  std::vector<int32_t> tokens;
  size_t hidden = 0;
};
SamplePrompt sample_prompt(const Corpus& corpus, const TrainConfig& config) {
  SamplePrompt p;
  const bool document = corpus.tokenizer && corpus.tokenizer->end_of_text() >= 0;
  if (document) {
    p.tokens = {corpus.tokenizer->end_of_text()};
    p.hidden = 1;
  }
  if (!config.prompt.empty()) {
    ZDP_CHECK(corpus.byte_level || corpus.tokenizer, ConfigError,
              "[train] --prompt needs a tokenizer to turn it into these shards' ids: give --tokenizer gpt2 (the one "
              "the shards were made with)");
    const std::vector<int32_t> ids =
        corpus.tokenizer ? corpus.tokenizer->encode_uncached(config.prompt) : text_to_tokens(config.prompt);
    p.tokens.insert(p.tokens.end(), ids.begin(), ids.end());
    return p;
  }
  if (document) return p;
  if (corpus.byte_level) {
    p.tokens = text_to_tokens(corpus.held_out.empty() ? std::string("\n") : corpus.held_out[0].prompt());
  } else {
    p.tokens = {0};
  }
  return p;
}

std::string sample_text(const model::Gpt& gpt, std::span<const float> params, const Corpus& corpus,
                        const TrainConfig& config) {
  const SamplePrompt prompt = sample_prompt(corpus, config);
  model::GenerateConfig g;
  g.max_new_tokens = config.sample_tokens;
  g.temperature = static_cast<float>(config.temperature);
  g.top_k = config.top_k;
  g.seed = config.seed;
  g.context = config.seq_len;      // the positions the model was trained at
  g.align = corpus.record_length;  // windows start on a record, as in training
  auto out = model::generate(gpt, params, prompt.tokens, g);
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(prompt.hidden));
  return sample_to_text(corpus, out);
}

plan::RunShape run_shape(const TrainConfig& config, int ranks, bool consolidated_copy, uint64_t load_scratch) {
  plan::RunShape shape;
  shape.stage = config.engine.stage;
  shape.ranks = ranks;
  shape.dtype = config.engine.dtype;
  shape.optimizer = config.engine.optimizer;
  shape.micro_batch = config.micro_batch;
  shape.seq_len = config.seq_len;
  shape.checkpointing = config.activation_checkpointing;
  shape.grad_accum = config.engine.grad_accum;
  shape.prefetch = config.engine.prefetch;
  shape.bucket_elements = config.engine.bucket_elements;
  shape.consolidated_copy = consolidated_copy;
  shape.load_scratch = load_scratch;
  return shape;
}

// --max-memory, or this machine's memory shared by the processes on it
// (Open MPI tells how many run here).
struct MemoryLimit {
  uint64_t bytes = 0;
  std::string source;
};
MemoryLimit memory_limit(const TrainConfig& config) {
  if (config.max_memory_bytes > 0) return {static_cast<uint64_t>(config.max_memory_bytes), "--max-memory"};
  uint64_t machine = machine_memory_bytes();
  std::string what = "this machine's memory";
  if (const uint64_t cgroup = cgroup_memory_limit_bytes(); cgroup > 0 && (machine == 0 || cgroup < machine)) {
    machine = cgroup;
    what = "this process's cgroup memory limit";
  }
  if (machine == 0) return {UINT64_MAX, "no limit (the machine's memory is unknown)"};
  int local = 1;
  if (config.backend == comm::Backend::kMpi) {
    if (const auto launch = comm::mpi_launch()) local = launch->processes_on_host;
  }
  if (local == 1) return {machine, what + " (--max-memory)"};
  return {machine / static_cast<uint64_t>(local), fmt::format("{} / {} processes on it (--max-memory)", what, local)};
}

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }
std::string mib(uint64_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// The measured peak next to the plan, and how far the plan is above it.
std::string format_process_memory(const plan::ProcessPrediction& plan, uint64_t peak, bool mpi) {
  const uint64_t allocator = plan.allocator();
  const uint64_t ranks = plan.ranks_total() - allocator;
  const double over = peak > 0 ? 100.0 * (static_cast<double>(plan.total()) / static_cast<double>(peak) - 1.0) : 0.0;
  return fmt::format(
      "Process memory{}: peak resident {} measured; the plan {} = baseline {} (binary, libraries, data, OpenBLAS "
      "buffers) + {} rank{} at {} peak moment {} + allocator rounding {} ({:+.1f}% against the measurement)\n",
      mpi ? " (rank 0's process)" : "", mib(peak), mib(plan.total()), mib(plan.baseline), plan.ranks.size(),
      plan.ranks.size() == 1 ? "" : "s", plan.ranks.size() == 1 ? "its" : "their", mib(ranks), mib(allocator), over);
}

// `mpirun -np N zerodp train` without --backend: N processes would each run
// their own thread job. The launch is detected and the MPI backend used
// (the effective configuration says so); an explicit --backend thread under
// a multi-process launch is refused.
void use_mpi_when_launched_by_mpirun(TrainConfig& config) {
  const auto launch = comm::mpi_launch();
  if (!launch || config.backend == comm::Backend::kMpi) return;
  const int processes = launch->processes;
  if (config.given("backend")) {
    ZDP_CHECK(processes <= 1, ConfigError,
              "[train] --backend thread under mpirun -np {}: each of the {} processes would train its own copy; "
              "drop --backend thread (or pass --backend mpi) to train one job across them",
              processes, processes);
    return;
  }
  ZDP_CHECK(comm::mpi_available(), ConfigError,
            "[train] started by mpirun, but this zerodp was built without MPI: install libopenmpi-dev and rebuild "
            "(scripts/setup), or run without mpirun (--ranks N uses threads)");
  config.backend = comm::Backend::kMpi;
  config.sources["backend"] = fmt::format("detected: started by mpirun -np {}", processes);
}

// Where an interrupted run without --save puts its checkpoint.
constexpr const char* kInterruptedSaveDir = "zerodp-interrupted";

// The flags a resumed run needs that its checkpoint does not record: where
// to keep saving (the checkpoint brings model, data, batch, optimizer, schedule).
std::string resume_flags(const TrainConfig& config, const std::string& root) {
  std::string out = " --save " + root;
  if (config.save_every > 0) out += fmt::format(" --save-every {}", config.save_every);
  if (config.keep_last > 0) out += fmt::format(" --keep-last {}", config.keep_last);
  if (config.backend == comm::Backend::kThread && config.given("ranks")) {
    out += fmt::format(" --ranks {}", config.ranks);
  }
  return out;
}

}  // namespace

TrainOutcome run_training(const TrainConfig& input) {
  return_large_frees_to_the_os();  // so that the process's peak is the ledger's (core/process_memory.h)
  TrainConfig config = input;
  // A resume continues the run it saved: its model, data, batch, optimizer
  // and schedule, unless flags say otherwise (resume_config.h).
  std::string resume_notes;
  std::string resume_path;
  std::optional<ckpt::Manifest> resumed;
  check_start_point(config);
  use_mpi_when_launched_by_mpirun(config);
  if (!config.resume_dir.empty()) {
    resume_path = ckpt::resolve_checkpoint(config.resume_dir);
    resumed = ckpt::read_manifest(resume_path);
    resume_notes = apply_checkpoint_config(config, *resumed, resume_path);
  }
  apply_data_defaults(config);
  if (config.ranks == 0 && config.backend == comm::Backend::kThread) {
    config.ranks = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (config.ranks >= 1) resolve_batch(config, config.ranks);
  validate(config);
  if (config.data.empty() && !config.val_data.empty()) {
    warn(
        fmt::format("--val-data {} is ignored: the embedded corpus validates on its own held-out sums; give "
                    "--data too",
                    config.val_data));
  }
  const Corpus corpus =
      config.data.empty() ? arithmetic_corpus() : load_corpus(config.data, config.val_data, config.tokenizer);
  if (config.sample_tokens > 0) (void)sample_prompt(corpus, config);  // a --prompt it cannot encode: refused now
  const model::ModelConfig model_config = model::resolve_model_config(config.model);
  ZDP_CHECK(model_config.kind == model::ModelKind::kGpt, ConfigError,
            "[train] model '{}' is an MLP: zerodp train trains GPT models on token data; pick a gpt preset "
            "(zerodp model list)",
            config.model);
  const model::GptConfig& gc = model_config.gpt;
  ZDP_CHECK(corpus.vocab <= gc.vocab, ConfigError,
            "[train] the data has token ids up to {} but the model's vocabulary is {}: use a model with vocab >= {}",
            corpus.vocab - 1, gc.vocab, corpus.vocab);
  ZDP_CHECK(config.seq_len <= gc.max_seq_len, ConfigError,
            "[train] --seq-len {} is longer than the model's context {}: use --seq-len {} or less", config.seq_len,
            gc.max_seq_len, gc.max_seq_len);
  const auto model_ptr = model::make_model(model_config);
  const auto& gpt = dynamic_cast<const model::Gpt&>(*model_ptr);
  // Checked once per process, before any rank allocates: a bad file is
  // refused first. Each rank then reads only the parameters it holds.
  if (!config.init_from.empty()) ckpt::GptWeightsReader(config.init_from, gc);  // any of its formats
  // Rank 0 answers the held-out sums and writes the sample from one fp32
  // copy of the model; with neither, no rank ever holds the whole model.
  const bool held_out = config.held_out > 0 && !corpus.held_out.empty();
  const bool consolidate = held_out || config.sample_tokens > 0;
  // A resume reads each record through one buffer of whole chunks.
  const uint64_t load_scratch = resumed ? ckpt::read_scratch_bytes(resumed->chunk_bytes) : 0;
  // What a checkpoint records of the data, to name a changed file at resume:
  // read once, for that check and for the saves.
  const DataFingerprint data_fingerprint =
      config.save_dir.empty() && !resumed ? DataFingerprint{} : fingerprint_data(config.data);
  if (resumed) resume_notes += check_saved_data(config, *resumed, resume_path, data_fingerprint);

  TrainOutcome outcome;
  comm::CommOptions comm_options;
  comm_options.timeout = std::chrono::milliseconds(static_cast<int64_t>(config.comm_timeout_s * 1000));

  const StopOnSignals stop_on_signals;  // SIGINT/SIGTERM: finish the step, save, exit (stop_signal.h)
  comm::run_ranks(config.backend, config.ranks, comm_options, [&, input_config = config](comm::Communicator& comm) {
    const bool lead = comm.rank() == 0;
    const int n = comm.size();
    TrainConfig config = input_config;  // mpi: the batch rule needs the number of processes
    resolve_batch(config, n);
    // Refuse before allocating anything when the plan does not fit, naming a
    // stage that would: at once with the process as it is, then again with
    // the baseline measured once every rank (thread) is up, has touched its
    // OpenBLAS buffers and paged in its code (the warm-up), and holds nothing
    // of the model.
    const plan::RunShape shape = run_shape(config, n, consolidate, load_scratch);
    const plan::LocalRanks local =
        config.backend == comm::Backend::kThread ? plan::LocalRanks{0, n} : plan::LocalRanks{comm.rank(), 1};
    const MemoryLimit limit = memory_limit(config);
    plan::check_memory_fits(model_config, shape, local, current_rss_bytes(), limit.bytes, limit.source);
    warm_up(gpt, comm, config.engine, config.micro_batch, config.seq_len);
    comm.barrier();
    const uint64_t baseline = comm.all_reduce_uint64(current_rss_bytes(), comm::ReduceOp::kMax);
    plan::check_memory_fits(model_config, shape, local, baseline, limit.bytes, limit.source);
    const plan::ProcessPrediction process_plan = plan::predict_process(model_config, shape, local, baseline);
    zero::Engine engine(gpt, comm, config.engine, config.seed, config.micro_batch, config.seq_len,
                        config.activation_checkpointing);
    const DistributedSampler train_sampler(corpus.train, config.seq_len, config.micro_batch, n, config.seed,
                                           corpus.record_length, corpus.train_name);
    const DistributedSampler val_sampler(corpus.val, config.seq_len, config.micro_batch, n, config.seed + 1,
                                         corpus.record_length, corpus.val_name);
    std::optional<MetricsWriter> metrics;
    std::optional<Progress> progress;
    const std::vector<Setting> settings = effective_settings(config, n);
    if (lead) {
      fmt::print("zerodp train: {}\n", gpt.describe());
      fmt::print("data: {}\n", corpus.description);
      fmt::print("ranks: {} ({}), ZeRO stage {}, {}, micro-batch {} x seq {} x accum {} -> {} tokens/step\n", n,
                 comm.backend_name(), config.engine.stage, config.engine.dtype.name(), config.micro_batch,
                 config.seq_len, config.engine.grad_accum,
                 static_cast<int64_t>(config.micro_batch) * config.seq_len * config.engine.grad_accum * n);
      fmt::print("compute: SIMD {} (best here {}), OpenBLAS {} kernels\n", simd_level_name(active_simd_level()),
                 simd_level_name(best_simd_level()), kernels::blas_info().core);
      if (const std::string better = kernels::better_blas_coretype(); !better.empty()) {
        fmt::print(
            "note: OpenBLAS does not know this CPU and runs its generic kernel; OPENBLAS_CORETYPE={} "
            "is several times faster here\n",
            better);
      }
      fmt::print(
          "memory: the plan {} for this process = baseline {} (measured after the warm-up) + {} rank{}; "
          "limit {}: {}\n",
          mib(process_plan.total()), mib(baseline), process_plan.ranks.size(),
          process_plan.ranks.size() == 1 ? "" : "s", limit.bytes == UINT64_MAX ? std::string("none") : gib(limit.bytes),
          limit.source);
      fmt::print("{}", format_effective_config(settings));
      progress.emplace(config.steps, config.log_every, config.backend == comm::Backend::kThread);
    }

    int64_t step = 0;
    auto feed_from = [&](const DistributedSampler& sampler, const int64_t& at) {
      return [&sampler, &at, &comm](model::Workspace& ws, int micro) {
        const TokenBatch b = sampler.batch(at, micro, comm.rank());
        model::Batch batch;
        batch.tokens = b.tokens;
        batch.targets = b.targets;
        ws.set_batch(batch);
      };
    };
    const zero::BatchFeeder train_feed = feed_from(train_sampler, step);
    int64_t val_index = 0;
    const zero::BatchFeeder val_feed = feed_from(val_sampler, val_index);
    auto validate_now = [&] {
      double sum = 0;
      for (val_index = 0; val_index < config.eval_batches; ++val_index) sum += engine.eval_loss(val_feed);
      return sum / config.eval_batches;
    };

    const double tokens_per_step =
        static_cast<double>(config.micro_batch) * config.seq_len * config.engine.grad_accum * n;
    if (!config.init_from.empty()) {
      ckpt::GptWeightsReader reader(config.init_from, gc);
      engine.load_params([&reader](size_t first, std::span<float> out) { reader.read(first, out); });
      if (lead) progress->note(fmt::format("initialised from {} ({})", config.init_from, reader.description()));
    }
    if (!config.resume_dir.empty()) {
      const ckpt::LoadResult loaded = ckpt::load(engine, config.resume_dir);
      step = loaded.step;
      if (lead) {
        progress->note(fmt::format("resumed from {} at step {} (saved by {} ranks at stage {}, {}); {}", loaded.path,
                                   loaded.step, loaded.saved_ranks, loaded.saved_stage, loaded.saved_dtype,
                                   resume_notes));
      }
    }
    // Created only now, once every input (a checkpoint included) was accepted:
    // a refused run must not truncate or leave a metrics file.
    if (lead && !config.metrics_path.empty()) {
      metrics.emplace(config.metrics_path);
      metrics->write(effective_config_record(settings));
    }
    int64_t last_saved = -1;
    // data_step: the data position the checkpoint resumes at (steps done).
    auto save_now = [&](int64_t data_step, const std::string& root) {
      ckpt::SaveOptions options;
      options.seed = config.seed;
      options.data_step = data_step;
      options.keep_last = config.keep_last;
      options.metadata = run_record(config, data_fingerprint);
      const ckpt::SaveResult saved = ckpt::save(engine, root, options);
      last_saved = data_step;
      if (lead) {
        progress->note(
            fmt::format("saved {} ({:.1f} MB in {:.2f} s)", saved.path, saved.bytes_total / 1e6, saved.seconds));
      }
    };

    comm::CommStats last_step_comm;
    double train_seconds = 0;
    std::vector<double> losses;
    const int64_t first_step = step;
    int interrupted = 0;  // the signal every rank agreed to stop on
    for (; step < config.steps; ++step) {
      // One integer all-reduce per step: every rank stops before the same step.
      interrupted = static_cast<int>(
          comm.all_reduce_uint64(static_cast<uint64_t>(StopOnSignals::requested()), comm::ReduceOp::kMax));
      if (interrupted != 0) break;
      const comm::CommStats before = comm.stats();
      const auto t0 = Clock::now();
      const zero::StepResult r = engine.train_step(train_feed);
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      train_seconds += dt;
      last_step_comm = comm.stats() - before;
      losses.push_back(r.loss);
      const bool eval = config.eval_every > 0 && (step + 1) % config.eval_every == 0 && step + 1 < config.steps;
      const double val = eval ? validate_now() : -1.0;
      if (eval && held_out) {
        const zero::LedgerBuffer<float> now = engine.gather_params_to(0);  // collective
        if (lead) {
          progress->note(fmt::format("step {}: validation loss {:.4f}, held-out sums answered exactly: {:.0f}%",
                                     step + 1, val,
                                     100.0 * held_out_accuracy(gpt, now, corpus, config.held_out, config.seq_len)));
        }
      }
      if (!config.save_dir.empty() && config.save_every > 0 && (step + 1) % config.save_every == 0) {
        save_now(step + 1, config.save_dir);
      }
      AllRankFigures figures;
      if (!config.metrics_path.empty()) figures = collect_figures(comm, engine, last_step_comm);
      if (!lead) continue;
      // One step count everywhere: a skipped fp16 step is a step (marked), as in the metrics file.
      ProgressEntry e{step + 1, config.steps,         r.loss,
                      val,      tokens_per_step / dt, config.engine.dtype == Dtype::fp16() ? r.loss_scale : 0.0,
                      r.skipped};
      progress->update(e);
      if (metrics) {
        metrics->write(step_record(step + 1, r, dt, tokens_per_step, val, figures.memory, figures.step_comm));
      }
    }
    if (interrupted != 0) {
      const std::string root = config.save_dir.empty() ? std::string(kInterruptedSaveDir) : config.save_dir;
      if (lead) {
        progress->note(
            fmt::format("{} received: every rank finished step {}; saving before exiting (a second "
                        "signal exits at once)",
                        signal_name(interrupted), step));
      }
      if (last_saved != step) save_now(step, root);
      outcome.interrupted_signal = interrupted;
      if (!lead) return;
      progress->finish();
      fmt::print(
          "interrupted by {} after step {} of {}; the checkpoint is in {}. Continue the run with:\n"
          "  zerodp train --resume {}{}\n",
          signal_name(interrupted), step, config.steps, root, root, resume_flags(config, root));
      return;
    }
    if (!config.save_dir.empty() && last_saved != step) save_now(step, config.save_dir);
    const double final_val = validate_now();
    const AllRankFigures figures = collect_figures(comm, engine, last_step_comm);
    const zero::LedgerBuffer<float> params = consolidate ? engine.gather_params_to(0) : zero::LedgerBuffer<float>();
    if (!lead) return;
    progress->finish();
    fmt::print("validation loss {:.4f} (training loss {:.4f} at step {})\n", final_val,
               losses.empty() ? 0.0 : losses.front(), first_step + 1);
    if (held_out) {
      outcome.held_out_accuracy = held_out_accuracy(gpt, params, corpus, config.held_out, config.seq_len);
      fmt::print("held-out arithmetic: {:.0f}% of {} unseen sums answered exactly\n", 100.0 * outcome.held_out_accuracy,
                 std::min<size_t>(config.held_out, corpus.held_out.size()));
    }
    if (metrics) {
      // The final validation pass, so a report's best validation loss is this run's.
      metrics->write(
          report::FinalRecord{.step = step,
                              .val_loss = final_val,
                              .held_out_accuracy = held_out ? std::optional(outcome.held_out_accuracy) : std::nullopt});
    }
    RunStats stats;
    stats.model_description = gpt.describe();
    stats.num_params = gpt.num_params();
    stats.largest_unit = engine.plan().largest_unit();
    stats.stage = config.engine.stage;
    stats.ranks = n;
    stats.backend = std::string(comm.backend_name());
    stats.dtype = config.engine.dtype;
    stats.optimizer_k =
        static_cast<int>(optim::bytes_per_param_k(config.engine.optimizer, config.engine.dtype.is_low_precision()));
    stats.grad_accum = config.engine.grad_accum;
    stats.memory = figures.memory;
    stats.step_comm = figures.step_comm;
    stats.seconds = train_seconds;
    stats.tokens_per_second =
        train_seconds > 0 ? tokens_per_step * static_cast<double>(config.steps - first_step) / train_seconds : 0;
    fmt::print("{}", format_summary(stats));
    if (config.sample_tokens > 0) {
      fmt::print("\nSample ({} tokens, temperature {:g}, top-k {}):\n{}\n", config.sample_tokens, config.temperature,
                 config.top_k, sample_text(gpt, params, corpus, config));
    }
    outcome.baseline_bytes = baseline;
    outcome.planned_bytes = process_plan.total();
    outcome.peak_rss_bytes = peak_rss_bytes();
    fmt::print("{}",
               format_process_memory(process_plan, outcome.peak_rss_bytes, config.backend == comm::Backend::kMpi));
    outcome.losses = losses;
    outcome.final_val_loss = final_val;
    outcome.tokens_per_second = stats.tokens_per_second;
    outcome.ranks = n;
  });
  return outcome;
}

}  // namespace zerodp::train
