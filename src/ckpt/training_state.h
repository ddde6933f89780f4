// SPDX-License-Identifier: Apache-2.0
// What ckpt::save and ckpt::load need of a training run, as an abstract
// view of one rank's training state, so that ckpt is a format library that
// knows no engine. zero::Engine's implementation lives in a layer above
// both (engine_ckpt/engine_checkpoint.h).
//
// The partition is the one every checkpoint uses: each unit's elements are
// split over the N ranks with comm::shard_range (the rank's "plan shard"),
// N being communicator().size(), or file_part().files where ranks share
// shard files.
// Thread-safety: one TrainingState per rank, used from that rank's thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "comm/communicator.h"
#include "comm/shard.h"
#include "core/dtype.h"
#include "core/stage.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer_config.h"

namespace zerodp::ckpt {

// One state tensor of one unit, over the elements this rank holds.
struct StateTensorView {
  std::string name;               // "master" (fp32 master weights), then the optimizer's state names
  size_t unit = 0;                // index into RunRecord::units
  comm::ShardRange range;         // unit-relative values held (elements, or blocks for a per-block tensor:
                                  // format.h's tensor_layout); covers the rank's record_range
  std::span<float> data;          // writable: load fills it (float32 tensors)
  std::span<uint8_t> codes = {};  // the same for one-byte tensors (8-bit Adam's codes)
};

// Where training stands (identical on every rank).
struct StepCounters {
  int64_t steps = 0;            // optimizer steps taken (skipped fp16 steps excluded)
  int64_t optimizer_steps = 0;  // steps minus fp16 skips
  optim::LossScalerState scaler;
};

// What the manifest records of the run and a load checks (identical on
// every rank), as plain values.
struct RunRecord {
  std::string model_kind = "gpt";  // the model family (Manifest::model_kind)
  std::string model_json;          // model::model_config_json of the model
  std::string model_description;   // one line (Model::describe)
  std::vector<UnitEntry> units;    // the units in flat order and their element counts
  Stage stage = Stage::k0;         // informational
  Dtype dtype = Dtype::fp32();     // the parameter dtype
  optim::OptimizerConfig optimizer;
  std::string engine_json;  // the rest of the run's config as a JSON object (informational); "" for {}
};

// The shard file a rank writes, and which of its units. Data parallelism:
// rank r writes all of file r of N. A pipeline of P stages over D replicas:
// the checkpoint is the D-rank one data parallelism would write, and the
// stage-s rank of replica d writes the units of stage s into file d (the
// stages' units are contiguous and in stage order), so its files move
// between any layout as a D-rank checkpoint does.
struct FilePart {
  int file = 0;   // the file and plan shard: 0..files-1
  int files = 1;  // the checkpoint's N
  size_t unit_begin = 0, unit_end = 0;
};

class TrainingState {
 public:
  virtual ~TrainingState() = default;

  // This rank's communicator: its rank and N, and the collectives that
  // save and load run.
  virtual comm::Communicator& communicator() = 0;
  virtual RunRecord record() const = 0;
  // Default: file communicator().rank() of communicator().size(), every unit.
  virtual FilePart file_part();
  // Every (unit, tensor) this rank holds, of every unit of its file_part():
  // unit-major, each unit's "master" first. Units may hold different tensors
  // (8-bit Adam's fp32 units hold exp_avg and exp_avg_sq), in an order that
  // agrees between units.
  virtual std::vector<StateTensorView> state_tensors() = 0;
  virtual StepCounters counters() const = 0;
  // States kept outside RAM (--offload-optimizer) reach a unit's views
  // only between open_unit(u) and close_unit(u): save and load call them
  // around each unit's records, in unit order, after state_tensors(); a
  // load's close_unit(u, true) takes the filled views in. Default: every
  // view is always reachable.
  virtual void open_unit(size_t /*unit*/, bool /*loading*/) {}
  virtual void close_unit(size_t /*unit*/, bool /*loaded*/) {}
  // Called by load after it filled state_tensors(), on every rank: set the
  // counters and refresh whatever derives from the state. Collective.
  virtual void state_loaded(const StepCounters& counters) = 0;
  // Called by load, on every rank, after it found the saved units (names and
  // element counts) equal to record().units and before it reads any state:
  // throw (ConfigError naming `manifest_path`) when the saved model, as
  // record().model_json recorded it, is not this one. The format library
  // does not read model JSON; the state's owner does.
  virtual void check_saved_model(const std::string& saved_model_json, const std::string& manifest_path) const = 0;
};

}  // namespace zerodp::ckpt
