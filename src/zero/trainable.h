// SPDX-License-Identifier: Apache-2.0
// Trainable: what a training loop drives on one rank, whatever the layout:
// one Engine over the whole model (data parallelism with ZeRO), or a
// Pipeline of stage engines (zero/pipeline.h). The loop calls the same
// steps either way; what it reads per rank (the ledger, the plan, the
// optimizer's figures) is engine()'s, this rank's stage's in a pipeline.
// Thread-safety: one per rank, driven by that rank's thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <span>

#include "model/model.h"
#include "zero/memory_ledger.h"

namespace zerodp::zero {

struct StepResult;
class Engine;

// Loads micro-batch `micro` (0..grad_accum-1) of this rank into the workspace.
using BatchFeeder = std::function<void(model::Workspace& ws, int micro)>;

// Starting weights, read a slice at a time: fills `out` with flat parameters
// [first, first + out.size()) as fp32. A rank asks only for what it holds
// (model::Model::init_range, an llm.c file's reader, a given buffer).
using ParamSource = std::function<void(size_t first, std::span<float> out)>;

class Trainable {
 public:
  virtual ~Trainable() = default;
  // One optimizer step over the configured micro-batches. Collective.
  virtual StepResult train_step(const BatchFeeder& feed) = 0;
  // Forward only on one micro-batch; the loss averaged over the data-parallel
  // ranks, on every rank. Collective.
  virtual double eval_loss(const BatchFeeder& feed) = 0;
  // The whole model's low-precision parameters, widened to fp32, on `root`
  // (booked in its ledger while the copy lives; empty elsewhere). Collective.
  virtual LedgerBuffer<float> gather_params_to(int root) = 0;
  // Starts from given weights of the whole model (flat offsets) instead of
  // the seed's. Before the first step.
  virtual void load_params(const ParamSource& source) = 0;
  // This rank's engine: the whole model's, or its pipeline stage's.
  virtual Engine& engine() = 0;
  // The timeout of every communicator the trainee calls collectives on
  // (CommTimeoutAtLeast raises it around a checkpoint's I/O).
  virtual std::chrono::milliseconds comm_timeout() const = 0;
  virtual void set_comm_timeout(std::chrono::milliseconds timeout) = 0;
};

// Raises the trainee's collective timeout to at least `timeout` while it
// lives, and restores it after: a checkpoint's collectives wait for the
// peers' file I/O (with hybrid sharding, for group 0's whole save), which
// can take longer than any step's collective.
class CommTimeoutAtLeast {
 public:
  CommTimeoutAtLeast(Trainable& trainee, std::chrono::milliseconds timeout)
      : trainee_(trainee), before_(trainee.comm_timeout()) {
    trainee_.set_comm_timeout(std::max(before_, timeout));
  }
  ~CommTimeoutAtLeast() { trainee_.set_comm_timeout(before_); }
  CommTimeoutAtLeast(const CommTimeoutAtLeast&) = delete;
  CommTimeoutAtLeast& operator=(const CommTimeoutAtLeast&) = delete;

 private:
  Trainable& trainee_;
  std::chrono::milliseconds before_;
};

}  // namespace zerodp::zero
