// SPDX-License-Identifier: Apache-2.0
// Adafactor on a rank's flat fp32 shard (Shazeer & Stern 2018, "Adafactor:
// Adaptive Learning Rates with Sublinear Memory Cost", arXiv 1804.04235,
// Algorithms 4 and 5), with the defaults and the operation order of Hugging
// Face transformers' Adafactor. At step t, for each parameter tensor (a
// matrix is a tensor of two or more dimensions with at least 2 rows and 2
// columns; a tensor of more dimensions is a batch of matrices of its last
// two), with g = grad * grad_scale (float):
//   rho     = relative_step ? min(warmup_init ? 1e-6*t : 1e-2, 1/sqrt(t)) : lr
//   lr_t    = rho * (scale_parameter ? max(eps2, RMS(p)) : 1)     (RMS before the update)
//   b2t     = 1 - t^decay_rate
//   sq      = g*g + eps1
//   matrix: r = r*b2t + (1-b2t)*mean_row(sq);  c = c*b2t + (1-b2t)*mean_col(sq)
//           u = (rsqrt(r_i / mean(r)) * rsqrt(c_j)) * g
//   other:  v = v*b2t + (1-b2t)*sq;  u = rsqrt(v) * g
//   u = u / max(RMS(u) / clip_threshold, 1);  u = u * lr_t
//   beta1 > 0: m = m*beta1 + (1-beta1)*u;  u = m
//   p = p + (-weight_decay*lr_t)*p  (weight_decay != 0);  p = p - u
// rsqrt(x) is 1/sqrt(x) in float. A matrix with one row or one column is
// kept unfactored: its factored form is the same update in exact arithmetic
// (HF factors it; the last bits may differ).
//
// The reductions: RMS(p), the row and column means of sq, mean(r) and RMS(u)
// read whole tensors, which a rank's shard may cut. They are computed from
// per-shard partial sums (Optimizer::tensor_stats, two rounds a step), which
// the engine sums over the partition plan's shards in rank order; every
// partial is a double sum over the part's elements in index order, rounded
// once to float, so the result depends on where the plan cuts the tensors
// (on N) but not on the stage or the backend. A lone optimizer (tests, one
// shard holding whole tensors) computes them itself with one part.
//
// State: a rank keeps the full row and column statistics (fp32) of every
// matrix its shard touches (ranks that share a matrix hold identical
// copies), and v (fp32) for the shard's elements of the other tensors, in one
// buffer "exp_avg_sq_factored" (StateIndex::kTensorStats: tensor by tensor,
// rows then columns of a matrix); with beta1 > 0 also m ("exp_avg", per
// element). adafactor_state_values gives its length.
// Non-finite gradients: a NaN or infinite g makes the statistics and the
// parameters NaN (as AdamW); the engine never gets there (fp16 skips
// overflow steps, fp32/bf16 stop with an error first).
// Thread-safety: as Optimizer.
#pragma once

#include <span>

#include <vector>

#include "optim/optimizer.h"

namespace zerodp::optim {

// The number of fp32 values of "exp_avg_sq_factored" for the shard
// [unit_offset, unit_offset + count) of a unit with these tensors.
size_t adafactor_state_values(std::span<const TensorShape> tensors, size_t unit_offset, size_t count);

// The length of round `round`'s (0, 1) statistics vector of a unit with these
// tensors (Optimizer::tensor_stats_size; empty: the unit is one vector).
// Round 0: per tensor its squared-parameter sum, then for a matrix its row
// and column sums; round 1: per tensor its update's squared sum.
size_t adafactor_stats_values(std::span<const TensorShape> tensors, int round);

// The engine's scratch for reducing a step's statistics over the plan's
// shards (zero::Engine::share_tensor_stats; the plan predicts it from the
// same function): `sums` fp32 values for every unit's statistics of one
// round (the all-reduce's buffer), `parts` fp32 values for the ranks'
// partials of one unit when a rank holds units whole (stage 0: `ranks` times
// the widest unit's), `acc` doubles for one partial's sums. Units without
// tensors (unit_tensors shorter than `units`) are one vector each.
struct AdafactorStatsScratch {
  size_t sums = 0, parts = 0, acc = 0;
};
AdafactorStatsScratch adafactor_stats_scratch(std::span<const std::vector<TensorShape>> unit_tensors, size_t units,
                                              int ranks, bool partitioned);

// The packed per-element form of "exp_avg_sq_factored" that checkpoints
// store (docs/checkpoint-format.md): one fp32 per element of the unit; a
// matrix's row statistics at its first batch*rows elements and its column
// statistics right after them (zeros for the rest), v at each element of the
// other tensors. packed_range is the unit-relative range a shard's view
// covers: its own elements and the packed statistics of the matrices it
// touches.
ElementRange adafactor_packed_range(std::span<const TensorShape> tensors, size_t unit_offset, size_t count);

class Adafactor final : public Optimizer {
 public:
  // REQUIRES: validate()d config. options.tensors describe the unit's
  // tensors (unit-relative; empty: the shard is one vector).
  Adafactor(const AdafactorConfig& config, size_t shard_size, ShardOptions options = {});

  OptimizerKind kind() const override { return OptimizerKind::kAdafactor; }
  const AdafactorConfig& config() const { return config_; }

  size_t tensor_stats_size(int round) const override;

  // Checkpoint form (see adafactor_packed_range): the view's range, and the
  // state written into / read from such a view.
  ElementRange packed_range() const;
  void pack(std::span<float> out) const;
  void unpack(std::span<const float> in);

 private:
  // A tensor of the unit this shard touches.
  struct Touched {
    size_t tensor = 0;      // index into tensors_
    size_t lo = 0, hi = 0;  // the shard-local elements of it in the shard
    size_t state = 0;       // its first value in exp_avg_sq_factored
    size_t stats0 = 0;      // its first value in round 0's statistics
    bool factored = false;
    double param_scale = 1.0;     // max(eps2, RMS(p)) or 1 (round 0)
    float divisor = 1.0f;         // max(RMS(u) / clip_threshold, 1) (round 1)
    float lr = 0.0f;              // this step's lr_t
    float neg_decay = 0.0f;       // -weight_decay * lr_t
    std::vector<float> row_mean;  // mean(r) per batch (round 0)
  };

  void accumulate_tensor_stats(int round, const float* params, const float* grads, size_t begin, size_t count,
                               float grad_scale, double* acc) override;
  void load_tensor_stats(int round, std::span<const float> combined) override;
  void begin_step(double lr, float grad_scale) override;
  void update(float* params, const float* grads, size_t offset, size_t count, bool decay) override;

  // The update direction before the clip divisor, u of element e (shard-local)
  // of touched tensor `t` from its scaled gradient g; for an unfactored
  // tensor also the new v.
  float direction(const Touched& t, size_t e, float g, float* v_new) const;
  // exp_avg_sq_factored's values (the state after the momentum, if any).
  float* state_values() { return state_data(config_.beta1 > 0.0 ? 1 : 0); }
  const float* state_values() const { return state_data(config_.beta1 > 0.0 ? 1 : 0); }
  double t_step() const { return static_cast<double>(step_count() + 1); }

  AdafactorConfig config_;
  std::vector<TensorShape> tensors_;
  std::vector<size_t> stats0_offsets_;  // per unit tensor: its first value in round 0's vector
  std::vector<Touched> touched_;
  size_t state_size_ = 0;
  // This step's rsqrt(r_i / mean(r)) and rsqrt(c_j), laid out as the
  // matrices' statistics in exp_avg_sq_factored: a work buffer of the
  // statistics' size, derived from them each step (not checkpointed), booked
  // with them (add_work).
  float* factors_ = nullptr;
  float grad_scale_ = 1.0f;
  float eps1_ = 0.0f, beta1_ = 0.0f, one_minus_beta1_ = 1.0f;
  float beta2t_ = 0.0f, one_minus_beta2t_ = 1.0f;
};

}  // namespace zerodp::optim
