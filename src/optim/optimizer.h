// SPDX-License-Identifier: Apache-2.0
// The optimizer interface the ZeRO engine calls on a rank's owned shard of
// the flat fp32 master parameters, and the factory (the configs are in
// optim/optimizer_config.h).
//
// An optimizer is built for one shard size and owns its state buffers (Adam's
// m and v, SGD's momentum, Lion's m), allocated zeroed at construction and reported to
// an optional StateAccountant (the engine passes one that books them in its
// memory ledger). step() updates every element from the same-index gradient
// only: no reduction crosses elements, the float operations run in a fixed
// order (see optim_kernels.cc), and the vectorised loops give the same bits as
// the scalar ones. So an element's trajectory does not depend on which rank
// owns it or how the shards are cut, which the engine's bitwise equality
// across ZeRO stages and rank counts relies on.
//
// Hyperparameters are doubles, like PyTorch's Python floats: per-step scalars
// (bias corrections, -lr/(1-b1^t), 1-lr*wd) are computed in double and rounded
// to float once per step; the element-wise math is float.
// Thread-safety: one optimizer per rank; step() is not reentrant. Distinct
// optimizers are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/convert.h"
#include "core/dtype.h"
#include "optim/optimizer_config.h"

namespace zerodp::optim {

// Elements [offset, offset + count) of a flat buffer.
struct ElementRange {
  size_t offset = 0;
  size_t count = 0;
  friend bool operator==(const ElementRange&, const ElementRange&) = default;
};

// The part of `ranges` (given in global flat offsets) that falls inside the
// shard [shard_offset, shard_offset + shard_size), shifted to shard-local
// offsets, sorted and merged. For turning the model's "no weight decay"
// parameters (biases, layernorm weights) into a rank's shard-local list.
std::vector<ElementRange> ranges_within_shard(std::span<const ElementRange> ranges, size_t shard_offset,
                                              size_t shard_size);

// The optimizer's state buffers, for the ledger and for checkpoints.
enum class StateKind : uint8_t {
  kExpAvg = 0,    // Adam m (first moment); Lion's momentum m
  kExpAvgSq = 1,  // Adam v (second moment)
  kMomentum = 2,  // SGD momentum buffer
};
std::string_view state_kind_name(StateKind kind);  // "exp_avg", "exp_avg_sq", "momentum_buffer"

struct StateTensor {
  StateKind kind;
  std::span<float> data;  // shard-sized
};
struct ConstStateTensor {
  StateKind kind;
  std::span<const float> data;
};

// Called with +bytes when the optimizer allocates a state buffer and with
// -bytes when it frees it (in its destructor). Must not throw on release.
using StateAccountant = std::function<void(StateKind kind, int64_t delta_bytes)>;

// How an optimizer sits on its shard.
struct ShardOptions {
  // Shard-local ranges whose elements get no weight decay (need not be sorted
  // or disjoint; they are merged). Ranges must lie inside the shard.
  std::vector<ElementRange> no_decay = {};
  StateAccountant accountant = {};  // optional
  SimdLevel simd = active_simd_level();
};

// Bytes per parameter of an optimizer's model states: the ZeRO paper's K,
// split as the paper splits it. The one place K is worked out (the plan, the
// run summary and the ledger's expectations read it).
struct OptimizerBytesPerParam {
  size_t master = 0;   // fp32 master copy: mixed precision only (fp32 parameters are their own master)
  size_t moment1 = 0;  // Adam's m, SGD's momentum buffer or Lion's m
  size_t moment2 = 0;  // Adam's v
  size_t k() const { return master + moment1 + moment2; }
};
// AdamW/Adam m + v = 8 (+4 master) = 12; SGD with momentum 4 (+4) = 8; plain
// SGD 0 (+4) = 4; Lion m 4 (+4) = 8. The moments are the state tensors
// make_optimizer allocates.
OptimizerBytesPerParam optimizer_bytes_per_param(const OptimizerConfig& config, bool mixed_precision);
// K: optimizer_bytes_per_param(config, mixed_precision).k().
size_t bytes_per_param_k(const OptimizerConfig& config, bool mixed_precision);

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual OptimizerKind kind() const = 0;
  // Number of shard elements this optimizer updates.
  size_t size() const { return size_; }
  const std::vector<ElementRange>& no_decay() const { return no_decay_; }
  SimdLevel simd() const { return simd_; }
  // The config's learning rate: what step() uses when no lr is given.
  virtual double base_lr() const = 0;

  // One update of the shard: params[i] from grads[i] * grad_scale. lr is this
  // step's learning rate (from the schedule). grad_scale is the combined
  // unscale/clip coefficient (grad_utils.h), applied as one float multiply per
  // element inside the loop, so the engine needs no separate pass and no fp32
  // gradient copy. 16-bit gradients are widened exactly, a block at a time.
  // Throws ShapeError when a span's size is not size(), ConfigError when lr is
  // negative or not finite. Increments step_count() first (t = 1 on the first
  // step, as PyTorch).
  void step(std::span<float> params, std::span<const float> grads, double lr, float grad_scale = 1.0f);
  void step(std::span<float> params, std::span<const Half> grads, double lr, float grad_scale = 1.0f);
  void step(std::span<float> params, std::span<const BFloat16> grads, double lr, float grad_scale = 1.0f);

  // Number of steps taken (skipped overflow steps do not call step()).
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps);

  // The state buffers, in a fixed order (Adam: exp_avg, exp_avg_sq; SGD with
  // momentum: momentum_buffer; plain SGD: none; Lion: exp_avg). Writable, so a checkpoint
  // loader can fill them in place; together with step_count() this is the
  // whole state.
  std::vector<StateTensor> state();
  std::vector<ConstStateTensor> state() const;
  // Copies `buffers` (same order and sizes as state()) and the step count in;
  // ShapeError when the count or a size differs.
  void load_state(int64_t steps, std::span<const std::span<const float>> buffers);

  // Bytes of state this optimizer holds per shard element (8, 4 or 0).
  size_t state_bytes_per_param() const;

 protected:
  struct OwnedState {
    StateKind kind;
    AlignedBuffer<float> buffer;
  };

  Optimizer(size_t size, ShardOptions options);
  // Allocates one zeroed shard-sized state buffer and books it.
  void add_state(StateKind kind);
  float* state_data(size_t index) { return states_[index].buffer.data(); }

  // Computes this step's float scalars; step_count() is already the new t.
  virtual void begin_step(double lr, float grad_scale) = 0;
  // Updates `count` elements: params and grads point at the first of them,
  // which is element `offset` of the shard (and of the state buffers); decay
  // says whether weight decay applies to them.
  virtual void update(float* params, const float* grads, size_t offset, size_t count, bool decay) = 0;

 private:
  template <typename G>
  void step_impl(std::span<float> params, std::span<const G> grads, double lr, float grad_scale);
  // Splits [begin, begin + count) at the no-decay ranges and calls update();
  // grads points at element `begin`.
  void run_segments(float* params, const float* grads, size_t begin, size_t count);

  size_t size_ = 0;
  std::vector<ElementRange> no_decay_;  // sorted, merged, inside the shard
  StateAccountant accountant_;
  SimdLevel simd_;
  std::vector<OwnedState> states_;
  int64_t step_count_ = 0;
};

// Builds the optimizer of config.kind for a shard of `shard_size` elements;
// validates the config first (ConfigError).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, size_t shard_size, ShardOptions options = {});

}  // namespace zerodp::optim
