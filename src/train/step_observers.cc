// SPDX-License-Identifier: Apache-2.0
#include "train/step_observers.h"

#include <fmt/format.h>

#include <algorithm>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "comm/mpi.h"
#include "core/error.h"
#include "engine_ckpt/pipeline_checkpoint.h"
#include "train/rank_figures.h"
#include "train/samples.h"

namespace zerodp::train {

std::string resume_command(const TrainConfig& config, const std::string& root, int ranks) {
  // Under MPI the launcher comes first, as the run was started: run as
  // printed, the job resumes on MPI ranks (the launch is detected), not on
  // one process's thread ranks.
  std::string out;
  if (config.backend == comm::Backend::kMpi) {
    const auto launch = comm::mpi_launch();
    out = comm::launch_command(launch ? launch->launcher : comm::Launcher::kMpirun, ranks) + " ";
  }
  out += fmt::format("zerodp train --resume {} --save {}", root, root);
  if (config.save_every > 0) out += fmt::format(" --save-every {}", config.save_every);
  if (config.keep_last > 0) out += fmt::format(" --keep-last {}", config.keep_last);
  if (config.continue_after_failed_save) out += " --on-save-failure continue";
  if (config.backend == comm::Backend::kThread && config.given("ranks")) {
    out += fmt::format(" --ranks {}", config.ranks);
  }
  // The layout is not the checkpoint's to decide (any layout resumes it):
  // the command keeps the one the run was given (a pipeline's stage too,
  // which the default, ZeRO 3, would not fit).
  if (config.given("stage") || config.pipeline_stages > 1) {
    out += fmt::format(" --stage {}", stage_number(config.engine.stage));
  }
  if (config.pipeline_stages > 1) {
    out += fmt::format(" --pipeline-stages {}", config.pipeline_stages);
    if (config.given("pipeline-schedule")) {
      out += fmt::format(" --pipeline-schedule {}", pipeline_schedule_name(config.pipeline_schedule));
    }
    if (!config.pipeline_cut.empty()) out += fmt::format(" --pipeline-cut {}", fmt::join(config.pipeline_cut, ","));
    if (config.given("pipeline-balance")) out += fmt::format(" --pipeline-balance {}", config.pipeline_balance);
  }
  return out;
}

CheckpointPolicy::CheckpointPolicy(zero::Trainable& trainee, int ranks, const TrainConfig& config,
                                   const DataFingerprint& data, Progress* progress)
    : trainee_(trainee), ranks_(ranks), config_(config), data_(data), progress_(progress) {}

void CheckpointPolicy::on_step(const StepEvent& event) {
  if (!config_.save_dir.empty() && config_.save_every > 0 && event.step % config_.save_every == 0) {
    // A periodic save may be survived; the final one and a signal's may not.
    save_at(event.step, config_.save_dir, config_.continue_after_failed_save);
  }
}

void CheckpointPolicy::save(int64_t data_step, const std::string& root) { save_at(data_step, root, false); }

void CheckpointPolicy::save_at(int64_t data_step, const std::string& root, bool survive_write_errors) {
  ckpt::SaveOptions options;
  options.seed = config_.seed;
  options.data_step = data_step;
  options.keep_last = config_.keep_last;
  options.metadata = run_record(config_, data_, config_.data_parallel_ranks(ranks_));
  options.survive_write_errors = survive_write_errors;
  const zero::CommTimeoutAtLeast waits_for_io(trainee_, timeout_ms(config_.checkpoint_timeout_s));
  ckpt::SaveResult saved;
  try {
    saved = engine_ckpt::save(trainee_, root, options);
  } catch (const std::exception& e) {
    std::string last;
    try {
      last = ckpt::resolve_checkpoint(root);
    } catch (const std::exception&) {
    }
    const auto* error = dynamic_cast<const Error*>(&e);
    const std::string failed = fmt::format("[train] saving step {} under {} failed ({}); no partial checkpoint is left",
                                           data_step, root, error != nullptr ? error->message() : e.what());
    // Every rank failed by a write error alike and the communicator is whole (ckpt::SaveOptions).
    if (survive_write_errors && dynamic_cast<const IoError*>(&e) != nullptr) {
      ++failed_saves_;
      if (progress_ != nullptr) {
        progress_->note(fmt::format("{}. Training on (--on-save-failure continue); the next save is at step {}. {}",
                                    failed, std::min<int64_t>(data_step + config_.save_every, config_.steps),
                                    last.empty() ? std::string("There is no complete checkpoint yet")
                                                 : fmt::format("The last complete checkpoint is {}", last)));
      } else if (dynamic_cast<const ckpt::SaveFailedError*>(&e) == nullptr) {
        warn(failed);  // this rank's own cause, which rank 0 does not know
      }
      return;
    }
    ZDP_THROW(IoError, "{}. {}", failed,
              last.empty() ? std::string("There is no complete checkpoint yet: run again from the start")
                           : fmt::format("The last complete checkpoint is {}; continue with: {}", last,
                                         resume_command(config_, root, ranks_)));
  }
  last_saved_ = data_step;
  if (progress_ != nullptr) {
    progress_->note(
        fmt::format("saved {} ({:.1f} MB in {:.2f} s)", saved.path, saved.bytes_total / 1e6, saved.seconds));
  }
}

HeldOutReport::HeldOutReport(zero::Trainable& trainee, const model::CausalLm& lm, const Corpus& corpus,
                             const TrainConfig& config, Progress* progress)
    : trainee_(trainee), lm_(lm), corpus_(corpus), config_(config), progress_(progress) {}

void HeldOutReport::on_step(const StepEvent& event) {
  if (event.val_loss < 0) return;
  const zero::LedgerBuffer<float> now = trainee_.gather_params_to(0);  // collective
  if (progress_ == nullptr) return;
  progress_->note(fmt::format("step {}: validation loss {:.4f}, held-out sums answered exactly: {:.0f}%", event.step,
                              event.val_loss,
                              100.0 * held_out_accuracy(lm_, now, corpus_, config_.held_out, config_.seq_len)));
}

MetricsLog::MetricsLog(zero::Engine& engine, comm::Communicator& comm, MetricsWriter* writer)
    : engine_(engine), comm_(comm), writer_(writer) {}

void MetricsLog::on_step(const StepEvent& event) {
  const AllRankFigures figures = collect_figures(comm_, engine_, event.comm, event.times);  // collective
  if (writer_ == nullptr) return;
  writer_->write(step_record(event.step, event.result, event.seconds, event.tokens_per_step, event.val_loss, figures));
}

void ProgressLine::on_step(const StepEvent& event) {
  // One step count everywhere: a skipped fp16 step is a step (marked), as in the metrics file.
  const zero::StepResult& r = event.result;
  progress_.update({.step = event.step,
                    .total = event.steps,
                    .loss = r.loss,
                    .val_loss = event.val_loss,
                    .tokens_per_second = event.tokens_per_step / event.seconds,
                    .loss_scale = show_loss_scale_ ? r.loss_scale : 0.0,
                    .skipped = r.skipped});
}

}  // namespace zerodp::train
