// SPDX-License-Identifier: Apache-2.0
#include "optim/adafactor.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace zerodp::optim {
namespace {

// A tensor the shard [s0, s0 + count) of its unit touches: its shard-local
// elements [lo, hi) and its first value in exp_avg_sq_factored.
struct Span {
  size_t tensor, lo, hi, state;
};

std::vector<Span> touched_tensors(std::span<const TensorShape> tensors, size_t s0, size_t count) {
  std::vector<Span> out;
  size_t state = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorShape& t = tensors[i];
    const size_t lo = std::max(t.offset, s0), hi = std::min(t.offset + t.count, s0 + count);
    if (lo >= hi) continue;
    out.push_back({i, lo - s0, hi - s0, state});
    state += t.factored() ? t.batch * (t.rows + t.cols) : hi - lo;
  }
  return out;
}

// The shard as one vector when no tensors are given.
std::vector<TensorShape> shard_tensors(std::span<const TensorShape> given, size_t s0, size_t count) {
  if (!given.empty()) return {given.begin(), given.end()};
  return {TensorShape{.offset = s0, .count = count, .batch = 1, .rows = 1, .cols = count}};
}

inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }

}  // namespace

size_t adafactor_state_values(std::span<const TensorShape> tensors, size_t unit_offset, size_t count) {
  const std::vector<TensorShape> all = shard_tensors(tensors, unit_offset, count);
  size_t values = 0;
  for (const Span& s : touched_tensors(all, unit_offset, count)) {
    const TensorShape& t = all[s.tensor];
    values += t.factored() ? t.batch * (t.rows + t.cols) : s.hi - s.lo;
  }
  return values;
}

size_t adafactor_stats_values(std::span<const TensorShape> tensors, int round) {
  if (tensors.empty()) return 1;
  if (round != 0) return tensors.size();
  size_t values = 0;
  for (const TensorShape& t : tensors) values += 1 + (t.factored() ? t.batch * (t.rows + t.cols) : 0);
  return values;
}

AdafactorStatsScratch adafactor_stats_scratch(std::span<const std::vector<TensorShape>> unit_tensors, size_t units,
                                              int ranks, bool partitioned) {
  AdafactorStatsScratch s;
  size_t widest = 0;
  for (int round = 0; round < 2; ++round) {
    size_t sums = 0;
    for (size_t u = 0; u < units; ++u) {
      const size_t n = adafactor_stats_values(
          u < unit_tensors.size() ? std::span<const TensorShape>(unit_tensors[u]) : std::span<const TensorShape>(),
          round);
      sums += n;
      widest = std::max(widest, n);
    }
    s.sums = std::max(s.sums, sums);
  }
  s.parts = partitioned ? 0 : static_cast<size_t>(ranks) * widest;
  s.acc = widest;
  return s;
}

ElementRange adafactor_packed_range(std::span<const TensorShape> tensors, size_t unit_offset, size_t count) {
  if (count == 0) return {unit_offset, 0};
  const std::vector<TensorShape> all = shard_tensors(tensors, unit_offset, count);
  size_t lo = unit_offset, hi = unit_offset + count;
  for (const Span& s : touched_tensors(all, unit_offset, count)) {
    const TensorShape& t = all[s.tensor];
    if (!t.factored()) continue;
    lo = std::min(lo, t.offset);
    hi = std::max(hi, t.offset + t.batch * (t.rows + t.cols));
  }
  return {lo, hi - lo};
}

Adafactor::Adafactor(const AdafactorConfig& config, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)), config_(config) {
  tensors_ = shard_tensors(Optimizer::tensors(), unit_offset(), shard_size);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorShape& t = tensors_[i];
    ZDP_CHECK(
        t.batch * t.rows * t.cols == t.count && (i == 0 || tensors_[i - 1].offset + tensors_[i - 1].count <= t.offset),
        ShapeError,
        "[adafactor] tensor {} at unit offset {} ({} = {} x {} x {} elements) is not in flat order or "
        "does not match its shape",
        i, t.offset, t.count, t.batch, t.rows, t.cols);
  }
  size_t covered = 0;
  size_t stats0 = 0;  // adafactor_stats_values' round-0 layout
  for (const TensorShape& t : tensors_) {
    stats0_offsets_.push_back(stats0);
    stats0 += 1 + (t.factored() ? t.batch * (t.rows + t.cols) : 0);
  }
  for (const Span& s : touched_tensors(tensors_, unit_offset(), shard_size)) {
    const TensorShape& t = tensors_[s.tensor];
    Touched x;
    x.tensor = s.tensor;
    x.lo = s.lo;
    x.hi = s.hi;
    x.state = s.state;
    x.stats0 = stats0_offsets_[s.tensor];
    x.factored = t.factored();
    if (x.factored) x.row_mean.assign(t.batch, 0.0f);
    touched_.push_back(std::move(x));
    covered += s.hi - s.lo;
  }
  ZDP_CHECK(covered == shard_size, ShapeError,
            "[adafactor] the unit's tensors cover {} of the shard's {} elements (unit offset {}); every element must "
            "lie in one",
            covered, shard_size, unit_offset());
  if (config_.beta1 > 0.0) add_state(StateKind::kExpAvg);
  state_size_ = adafactor_state_values(tensors_, unit_offset(), shard_size);
  add_state(StateKind::kExpAvgSqFactored, state_size_);
  factors_ = add_work(StateKind::kExpAvgSqFactored, state_size_);
  eps1_ = static_cast<float>(config_.eps1);
  beta1_ = static_cast<float>(config_.beta1);
  one_minus_beta1_ = static_cast<float>(1.0 - config_.beta1);
}

size_t Adafactor::tensor_stats_size(int round) const { return adafactor_stats_values(tensors_, round); }

float Adafactor::direction(const Touched& t, size_t e, float g, float* v_new) const {
  const TensorShape& T = tensors_[t.tensor];
  const float* state = state_values() + t.state;
  if (t.factored) {
    const size_t k = unit_offset() + e - T.offset;  // tensor-relative
    const size_t row = k / T.cols;                  // over the batch
    const size_t b = row / T.rows;
    const size_t col = b * T.cols + k % T.cols;
    const float* f = factors_ + t.state;  // rsqrt(r_i / mean(r)), then rsqrt(c_j)
    return (f[row] * f[T.batch * T.rows + col]) * g;
  }
  const float sq = g * g + eps1_;
  const float v = state[e - t.lo] * beta2t_ + one_minus_beta2t_ * sq;
  *v_new = v;
  return rsqrt(v) * g;
}

void Adafactor::accumulate_tensor_stats(int round, const float* params, const float* grads, size_t begin, size_t count,
                                        float grad_scale, double* acc) {
  const size_t end = begin + count;
  for (const Touched& t : touched_) {
    const size_t a = std::max(t.lo, begin), z = std::min(t.hi, end);
    if (a >= z) continue;
    const TensorShape& T = tensors_[t.tensor];
    if (round == 0) {
      double psum = acc[t.stats0];
      for (size_t e = a; e < z; ++e) {
        const double p = params[e - begin];
        psum += p * p;
      }
      acc[t.stats0] = psum;
      if (!t.factored) continue;
      double* rows = acc + t.stats0 + 1;
      double* cols = rows + T.batch * T.rows;
      for (size_t e = a; e < z;) {
        // One row's piece: [e, row end) within [a, z).
        const size_t k = unit_offset() + e - T.offset;
        const size_t row = k / T.cols;
        const size_t n = std::min(z - e, T.cols - k % T.cols);
        const size_t col0 = (row / T.rows) * T.cols + k % T.cols;
        double rsum = rows[row];
        for (size_t i = 0; i < n; ++i) {
          const float g = grads[e + i - begin] * grad_scale;
          const float sq = g * g + eps1_;
          rsum += sq;
          cols[col0 + i] += sq;
        }
        rows[row] = rsum;
        e += n;
      }
    } else {
      double usum = acc[t.tensor];
      float v_new = 0.0f;
      for (size_t e = a; e < z; ++e) {
        const double u = direction(t, e, grads[e - begin] * grad_scale, &v_new);
        usum += u * u;
      }
      acc[t.tensor] = usum;
    }
  }
}

void Adafactor::load_tensor_stats(int round, std::span<const float> combined) {
  if (round == 0) {
    const double b2t = 1.0 - std::pow(t_step(), config_.decay_rate);
    beta2t_ = static_cast<float>(b2t);
    one_minus_beta2t_ = static_cast<float>(1.0 - b2t);
  }
  for (Touched& t : touched_) {
    const TensorShape& T = tensors_[t.tensor];
    if (round == 1) {
      const double rms = std::sqrt(static_cast<double>(combined[t.tensor]) / static_cast<double>(T.count));
      t.divisor = static_cast<float>(std::max(rms / config_.clip_threshold, 1.0));
      continue;
    }
    const double prms = std::sqrt(static_cast<double>(combined[t.stats0]) / static_cast<double>(T.count));
    t.param_scale = config_.scale_parameter ? std::max(config_.eps2, prms) : 1.0;
    if (!t.factored) continue;
    float* r = state_values() + t.state;
    float* c = r + T.batch * T.rows;
    const float* row_sums = combined.data() + t.stats0 + 1;
    const float* col_sums = row_sums + T.batch * T.rows;
    const auto fcols = static_cast<float>(T.cols), frows = static_cast<float>(T.rows);
    for (size_t i = 0; i < T.batch * T.rows; ++i) r[i] = r[i] * beta2t_ + one_minus_beta2t_ * (row_sums[i] / fcols);
    for (size_t j = 0; j < T.batch * T.cols; ++j) c[j] = c[j] * beta2t_ + one_minus_beta2t_ * (col_sums[j] / frows);
    float* f = factors_ + t.state;
    for (size_t b = 0; b < T.batch; ++b) {
      double sum = 0.0;
      for (size_t i = 0; i < T.rows; ++i) sum += r[b * T.rows + i];
      t.row_mean[b] = static_cast<float>(sum / static_cast<double>(T.rows));
      for (size_t i = b * T.rows; i < (b + 1) * T.rows; ++i) f[i] = rsqrt(r[i] / t.row_mean[b]);
    }
    for (size_t j = 0; j < T.batch * T.cols; ++j) f[T.batch * T.rows + j] = rsqrt(c[j]);
  }
}

void Adafactor::begin_step(double lr, float grad_scale) {
  const auto t = static_cast<double>(step_count());
  double rho = lr;
  if (config_.relative_step) rho = std::min(config_.warmup_init ? 1e-6 * t : 1e-2, 1.0 / std::sqrt(t));
  for (Touched& x : touched_) {
    const double lr_t = x.param_scale * rho;
    x.lr = static_cast<float>(lr_t);
    x.neg_decay = static_cast<float>(-config_.weight_decay * lr_t);
  }
  grad_scale_ = grad_scale;
}

void Adafactor::update(float* params, const float* grads, size_t offset, size_t count, bool decay) {
  const size_t end = offset + count;
  const bool momentum = config_.beta1 > 0.0;
  const bool decays = decay && config_.weight_decay != 0.0;
  float* m = momentum ? state_data(0) : nullptr;
  for (const Touched& t : touched_) {
    const size_t a = std::max(t.lo, offset), z = std::min(t.hi, end);
    if (a >= z) continue;
    for (size_t e = a; e < z; ++e) {
      const float g = grads[e - offset] * grad_scale_;
      float v_new = 0.0f;
      float u = direction(t, e, g, &v_new);
      if (!t.factored) state_values()[t.state + (e - t.lo)] = v_new;
      u = u / t.divisor;
      u = u * t.lr;
      if (momentum) {
        m[e] = m[e] * beta1_ + one_minus_beta1_ * u;
        u = m[e];
      }
      float p = params[e - offset];
      if (decays) p = p + t.neg_decay * p;
      params[e - offset] = p - u;
    }
  }
}

ElementRange Adafactor::packed_range() const { return adafactor_packed_range(tensors_, unit_offset(), size()); }

void Adafactor::pack(std::span<float> out) const {
  const ElementRange range = packed_range();
  ZDP_CHECK(out.size() == range.count, ShapeError, "[adafactor.pack] {} values for a range of {}", out.size(),
            range.count);
  std::fill(out.begin(), out.end(), 0.0f);
  const float* state = state_values();
  for (const Touched& t : touched_) {
    const TensorShape& T = tensors_[t.tensor];
    if (t.factored) {
      std::copy_n(state + t.state, T.batch * (T.rows + T.cols), out.data() + (T.offset - range.offset));
    } else {
      std::copy_n(state + t.state, t.hi - t.lo, out.data() + (unit_offset() + t.lo - range.offset));
    }
  }
}

void Adafactor::unpack(std::span<const float> in) {
  const ElementRange range = packed_range();
  ZDP_CHECK(in.size() == range.count, ShapeError, "[adafactor.unpack] {} values for a range of {}", in.size(),
            range.count);
  float* state = state_values();
  for (const Touched& t : touched_) {
    const TensorShape& T = tensors_[t.tensor];
    if (t.factored) {
      std::copy_n(in.data() + (T.offset - range.offset), T.batch * (T.rows + T.cols), state + t.state);
    } else {
      std::copy_n(in.data() + (unit_offset() + t.lo - range.offset), t.hi - t.lo, state + t.state);
    }
  }
}

}  // namespace zerodp::optim
