// SPDX-License-Identifier: Apache-2.0
#include "optim/optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "optim/adafactor.h"
#include "optim/adam.h"
#include "optim/adam8bit.h"
#include "optim/lion.h"
#include "optim/quant8.h"
#include "optim/sgd.h"

namespace zerodp::optim {
namespace {

// 16-bit gradients are widened into a stack block of this many floats (16 KiB);
// a multiple of the vector width so blocks split no vector.
constexpr size_t kWidenBlock = 4096;
static_assert(kWidenBlock % quant8::kBlockSize == 0, "a widened block never cuts a quantization block");

void check_range(double value, double low, double high, bool high_open, std::string_view op, std::string_view name,
                 std::string_view hint) {
  const bool ok = std::isfinite(value) && value >= low && (high_open ? value < high : value <= high);
  ZDP_CHECK(ok, ConfigError, "[{}] {} {} is outside [{}, {}{}; {}", op, name, value, low, high, high_open ? ")" : "]",
            hint);
}

void check_non_negative(double value, std::string_view op, std::string_view name, std::string_view hint) {
  ZDP_CHECK(std::isfinite(value) && value >= 0.0, ConfigError, "[{}] {} {} must be finite and >= 0; {}", op, name,
            value, hint);
}

}  // namespace

OptimizerKind parse_optimizer_kind(std::string_view name) {
  if (name == "adamw") return OptimizerKind::kAdamW;
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "lion") return OptimizerKind::kLion;
  if (name == "adam8bit") return OptimizerKind::kAdam8bit;
  if (name == "adafactor") return OptimizerKind::kAdafactor;
  ZDP_THROW(ConfigError, "[optimizer] unknown optimizer '{}'; use adamw, adam, sgd, lion, adam8bit or adafactor", name);
}

std::string_view optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW:
      return "adamw";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kLion:
      return "lion";
    case OptimizerKind::kAdam8bit:
      return "adam8bit";
    case OptimizerKind::kAdafactor:
      return "adafactor";
  }
  return "?";
}

double config_weight_decay(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return config.sgd.weight_decay;
    case OptimizerKind::kLion:
      return config.lion.weight_decay;
    case OptimizerKind::kAdafactor:
      return config.adafactor.weight_decay;
    case OptimizerKind::kAdamW:
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdam8bit:
      break;
  }
  return config.adam.weight_decay;
}

std::string_view state_kind_name(StateKind kind) {
  switch (kind) {
    case StateKind::kExpAvg:
      return "exp_avg";
    case StateKind::kExpAvgSq:
      return "exp_avg_sq";
    case StateKind::kMomentum:
      return "momentum_buffer";
    case StateKind::kExpAvgCodes:
      return "exp_avg_q8";
    case StateKind::kExpAvgSqCodes:
      return "exp_avg_sq_q8";
    case StateKind::kExpAvgAbsmax:
      return "exp_avg_absmax";
    case StateKind::kExpAvgSqAbsmax:
      return "exp_avg_sq_absmax";
    case StateKind::kExpAvgSqFactored:
      return "exp_avg_sq_factored";
    case StateKind::kExpAvgBf16:
      return "exp_avg_bf16";
  }
  return "?";
}

bool is_second_moment(StateKind kind) {
  return kind == StateKind::kExpAvgSq || kind == StateKind::kExpAvgSqCodes || kind == StateKind::kExpAvgSqAbsmax ||
         kind == StateKind::kExpAvgSqFactored;
}

StateLayout state_layout(StateKind kind) {
  switch (kind) {
    case StateKind::kExpAvgCodes:
    case StateKind::kExpAvgSqCodes:
      return {.dtype = StateDtype::kU8, .index = StateIndex::kElement};
    case StateKind::kExpAvgAbsmax:
    case StateKind::kExpAvgSqAbsmax:
      return {.dtype = StateDtype::kF32, .index = StateIndex::kBlock};
    case StateKind::kExpAvgSqFactored:
      return {.dtype = StateDtype::kF32, .index = StateIndex::kTensorStats};
    case StateKind::kExpAvgBf16:
      return {.dtype = StateDtype::kBf16, .index = StateIndex::kElement};
    case StateKind::kExpAvg:
    case StateKind::kExpAvgSq:
    case StateKind::kMomentum:
      break;
  }
  return {};
}

bool keeps_fp32_moments(const OptimizerConfig& config, uint64_t unit_count, bool holds_token_embedding) {
  if (config.kind != OptimizerKind::kAdam8bit) return false;
  return (config.adam.fp32_embedding && holds_token_embedding) || unit_count < config.adam.min_8bit_size;
}

OptimizerConfig unit_optimizer_config(const OptimizerConfig& config, uint64_t unit_count, bool holds_token_embedding) {
  OptimizerConfig out = config;
  if (keeps_fp32_moments(config, unit_count, holds_token_embedding)) out.kind = OptimizerKind::kAdamW;
  return out;
}

void validate(const OptimizerConfig& config) {
  const std::string_view op = optimizer_kind_name(config.kind);
  if (config.kind == OptimizerKind::kSgd) {
    const SgdConfig& c = config.sgd;
    check_range(c.momentum, 0.0, 1.0, true, op, "momentum", "use a value like 0.9, or 0 for plain SGD");
    check_non_negative(c.weight_decay, op, "weight_decay", "use 0 to disable weight decay");
    ZDP_CHECK(!c.nesterov || c.momentum > 0.0, ConfigError,
              "[{}] nesterov needs a momentum > 0; set a momentum like 0.9 or turn nesterov off", op);
    return;
  }
  if (config.kind == OptimizerKind::kLion) {
    const LionConfig& c = config.lion;
    check_range(c.beta1, 0.0, 1.0, true, op, "beta1", "use a value like 0.9");
    check_range(c.beta2, 0.0, 1.0, true, op, "beta2", "use a value like 0.99");
    check_non_negative(c.weight_decay, op, "weight_decay", "use 0 to disable weight decay");
    ZDP_CHECK(c.bf16_momentum || c.momentum_rounding == RoundingMode::kNearest, ConfigError,
              "[{}] stochastic momentum rounding needs the bf16 momentum (an fp32 momentum is not rounded); keep the "
              "momentum in bf16 or drop the rounding",
              op);
    return;
  }
  if (config.kind == OptimizerKind::kAdafactor) {
    const AdafactorConfig& c = config.adafactor;
    ZDP_CHECK(!c.warmup_init || c.relative_step, ConfigError,
              "[{}] warmup_init needs relative_step; turn relative_step on or warmup_init off", op);
    check_range(c.beta1, 0.0, 1.0, true, op, "beta1", "use 0 for no first moment (the default) or a value like 0.9");
    check_non_negative(c.eps1, op, "eps1", "use a value like 1e-30");
    check_non_negative(c.eps2, op, "eps2", "use a value like 1e-3");
    ZDP_CHECK(std::isfinite(c.clip_threshold) && c.clip_threshold > 0.0, ConfigError,
              "[{}] clip_threshold {} must be finite and > 0; use a value like 1.0", op, c.clip_threshold);
    check_range(c.decay_rate, -1.0, 0.0, true, op, "decay_rate", "use a value like -0.8");
    check_non_negative(c.weight_decay, op, "weight_decay", "use 0 to disable weight decay");
    return;
  }
  const AdamConfig& c = config.adam;
  check_range(c.beta1, 0.0, 1.0, true, op, "beta1", "use a value like 0.9");
  check_range(c.beta2, 0.0, 1.0, true, op, "beta2", "use a value like 0.999");
  check_non_negative(c.eps, op, "eps", "use a value like 1e-8");
  check_non_negative(c.weight_decay, op, "weight_decay", "use 0 to disable weight decay");
}

std::vector<ElementRange> ranges_within_shard(std::span<const ElementRange> ranges, size_t shard_offset,
                                              size_t shard_size) {
  const size_t shard_end = shard_offset + shard_size;
  std::vector<ElementRange> local;
  for (const ElementRange& r : ranges) {
    const size_t begin = std::max(r.offset, shard_offset);
    const size_t end = std::min(r.offset + r.count, shard_end);
    if (begin < end) local.push_back({begin - shard_offset, end - begin});
  }
  std::sort(local.begin(), local.end(),
            [](const ElementRange& a, const ElementRange& b) { return a.offset < b.offset; });
  std::vector<ElementRange> merged;
  for (const ElementRange& r : local) {
    if (!merged.empty() && r.offset <= merged.back().offset + merged.back().count) {
      const size_t end = std::max(merged.back().offset + merged.back().count, r.offset + r.count);
      merged.back().count = end - merged.back().offset;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

OptimizerBytesPerParam optimizer_bytes_per_param(const OptimizerConfig& config, bool mixed_precision) {
  OptimizerBytesPerParam b;
  // Low-precision training updates an fp32 master copy (the updates would
  // underflow in fp16/bf16); fp32 training updates the parameters themselves.
  b.master = mixed_precision ? sizeof(float) : 0;
  switch (config.kind) {
    case OptimizerKind::kAdamW:
    case OptimizerKind::kAdam:
      b.moment1 = b.moment2 = sizeof(float);
      break;
    case OptimizerKind::kSgd:
      b.moment1 = config.sgd.momentum > 0.0 ? sizeof(float) : 0;
      break;
    case OptimizerKind::kLion:
      b.moment1 = config.lion.bf16_momentum ? sizeof(uint16_t) : sizeof(float);  // the momentum m (exp_avg)
      break;
    case OptimizerKind::kAdam8bit:
      b.moment1 = b.moment2 = sizeof(uint8_t);  // the codes of m and v
      b.quant_block = quant8::kBlockSize;
      b.scale_bytes = sizeof(float);  // each moment's absmax per block
      break;
    case OptimizerKind::kAdafactor:
      b.moment1 = config.adafactor.beta1 > 0.0 ? sizeof(float) : 0;  // m (exp_avg), with beta1
      b.tensor_stats = true;  // the factored second moment: adafactor_state_values fp32s a shard
      break;
  }
  return b;
}

size_t block_scale_bytes(const OptimizerBytesPerParam& bytes, size_t unit_offset, size_t count) {
  if (bytes.quant_block == 0) return 0;
  return quant8::blocks_touched(unit_offset, count).count * bytes.scale_bytes;
}

size_t bytes_per_param_k(const OptimizerConfig& config, bool mixed_precision) {
  return optimizer_bytes_per_param(config, mixed_precision).k();
}

TensorShape tensor_shape(size_t offset, std::span<const int> shape) {
  TensorShape t;
  t.offset = offset;
  t.count = 1;
  for (int d : shape) {
    ZDP_CHECK(d >= 0, ShapeError, "[optimizer] a tensor dimension is {}", d);
    t.count *= static_cast<size_t>(d);
  }
  if (shape.size() >= 2) {
    t.cols = static_cast<size_t>(shape[shape.size() - 1]);
    t.rows = static_cast<size_t>(shape[shape.size() - 2]);
    t.batch = t.rows * t.cols == 0 ? 0 : t.count / (t.rows * t.cols);
  } else {
    t.rows = 1;
    t.cols = t.count;
  }
  return t;
}

std::vector<uint64_t> tensor_starts(std::span<const TensorShape> tensors) {
  std::vector<uint64_t> starts;
  for (const TensorShape& t : tensors) starts.push_back(t.offset);
  std::sort(starts.begin(), starts.end());
  return starts;
}

Optimizer::Optimizer(size_t size, ShardOptions options)
    : size_(size),
      unit_offset_(options.unit_offset),
      flat_offset_(options.unit_flat_offset + options.unit_offset),
      accountant_(std::move(options.accountant)),
      simd_(options.simd),
      tensors_(std::move(options.tensors)) {
  for (const ElementRange& r : options.no_decay) {
    ZDP_CHECK(r.offset <= size && r.count <= size - r.offset, ShapeError,
              "[optimizer] no-decay range [{}, {}) lies outside the shard of {} elements", r.offset, r.offset + r.count,
              size);
  }
  no_decay_ = ranges_within_shard(options.no_decay, 0, size);
  external_states_ = options.external_states;
  attached_ = !external_states_;
}

Optimizer::~Optimizer() {
  if (!accountant_) return;
  for (const std::vector<OwnedState>* buffers : {&states_, &work_}) {
    for (const OwnedState& s : *buffers) {
      if (s.owned.bytes() == 0) continue;  // external, or empty
      try {
        accountant_(s.kind, -static_cast<int64_t>(s.owned.bytes()));
      } catch (...) {  // a destructor must not throw; the accountant's contract says it does not
      }
    }
  }
}

namespace {

// A state's bytes: shard-sized or `values` long, at its dtype's width.
size_t state_tensor_bytes(StateKind kind, size_t shard_size, size_t values) {
  const StateLayout layout = state_layout(kind);
  const size_t count = layout.index == StateIndex::kElement ? shard_size : values;
  switch (layout.dtype) {
    case StateDtype::kU8:
      return count;
    case StateDtype::kBf16:
      return 2 * count;
    case StateDtype::kF32:
      break;
  }
  return count * sizeof(float);
}

size_t align_state(size_t bytes) {
  return (bytes + Optimizer::kStateAlign - 1) / Optimizer::kStateAlign * Optimizer::kStateAlign;
}

}  // namespace

size_t offload_master_bytes(size_t count, bool mixed_precision) {
  return mixed_precision ? align_state(count * sizeof(float)) : 0;
}

size_t offload_extent_bytes(const Optimizer& opt, bool mixed_precision) {
  return offload_master_bytes(opt.size(), mixed_precision) + opt.state_extent_bytes();
}

void Optimizer::add_state(StateKind kind, size_t values) {
  OwnedState s{kind, state_tensor_bytes(kind, size_, values), {}, nullptr};
  if (!external_states_) {
    s.owned = AlignedBuffer<std::byte>(s.bytes);  // zeroed: fp32 and bf16 +0
    s.data = s.owned.data();
    if (accountant_) accountant_(kind, static_cast<int64_t>(s.bytes));
  }
  states_.push_back(std::move(s));
}

float* Optimizer::add_work(StateKind booked_as, size_t values) {
  OwnedState w{booked_as, values * sizeof(float), AlignedBuffer<std::byte>(values * sizeof(float)), nullptr};
  w.data = w.owned.data();
  work_.push_back(std::move(w));
  if (accountant_) accountant_(booked_as, static_cast<int64_t>(work_.back().bytes));
  return reinterpret_cast<float*>(work_.back().data);
}

size_t Optimizer::state_extent_bytes() const {
  size_t bytes = 0;
  for (const OwnedState& s : states_) bytes += align_state(s.bytes);
  return bytes;
}

void Optimizer::attach_states(std::span<std::byte> memory) {
  ZDP_CHECK(external_states_, ShapeError, "[optimizer] attach_states: the states are the optimizer's own");
  ZDP_CHECK(memory.size() >= state_extent_bytes(), ShapeError,
            "[optimizer] attach_states: {} bytes given for states of {}", memory.size(), state_extent_bytes());
  ZDP_CHECK(reinterpret_cast<uintptr_t>(memory.data()) % kStateAlign == 0, ShapeError,
            "[optimizer] attach_states: memory not {}-byte aligned", kStateAlign);
  size_t at = 0;
  for (OwnedState& s : states_) {
    s.data = memory.data() + at;
    at += align_state(s.bytes);
  }
  attached_ = true;
}

void Optimizer::detach_states() {
  if (!external_states_) return;
  for (OwnedState& s : states_) s.data = nullptr;
  attached_ = false;
}

bool Optimizer::states_attached() const { return attached_; }

void Optimizer::reset_states() {
  for (OwnedState& s : states_) std::fill_n(s.data, s.bytes, std::byte{0});
}

uint64_t Optimizer::booked_bytes(StateKind kind) const {
  uint64_t bytes = 0;
  for (const std::vector<OwnedState>* buffers : {&states_, &work_}) {
    for (const OwnedState& s : *buffers) {
      if (s.kind == kind) bytes += s.owned.bytes();
    }
  }
  return bytes;
}

void Optimizer::set_step_count(int64_t steps) {
  ZDP_CHECK(steps >= 0, ShapeError, "[optimizer] step count {} is negative", steps);
  step_count_ = steps;
}

namespace {

// A state's bytes as the span its layout names: fp32 values in `data`, one-
// or two-byte values in `codes`.
template <typename Tensor, typename Byte>
Tensor state_tensor(StateKind kind, Byte* data, size_t bytes) {
  if (state_layout(kind).dtype == StateDtype::kF32) {
    using Float = std::conditional_t<std::is_const_v<Byte>, const float, float>;
    return {kind, {reinterpret_cast<Float*>(data), bytes / sizeof(float)}};
  }
  using Code = std::conditional_t<std::is_const_v<Byte>, const uint8_t, uint8_t>;
  return {kind, {}, {reinterpret_cast<Code*>(data), bytes}};
}

}  // namespace

std::vector<StateTensor> Optimizer::state() {
  ZDP_CHECK(states_attached(), ShapeError, "[optimizer] state(): the external states are not attached");
  std::vector<StateTensor> out;
  for (OwnedState& s : states_) out.push_back(state_tensor<StateTensor>(s.kind, s.data, s.bytes));
  return out;
}

std::vector<ConstStateTensor> Optimizer::state() const {
  ZDP_CHECK(states_attached(), ShapeError, "[optimizer] state(): the external states are not attached");
  std::vector<ConstStateTensor> out;
  for (const OwnedState& s : states_) {
    out.push_back(state_tensor<ConstStateTensor>(s.kind, static_cast<const std::byte*>(s.data), s.bytes));
  }
  return out;
}

void Optimizer::load_state(int64_t steps, std::span<const std::span<const float>> buffers) {
  ZDP_CHECK_EQ(buffers.size(), states_.size(), ShapeError, "[optimizer.load_state] number of state buffers");
  ZDP_CHECK(states_attached(), ShapeError, "[optimizer.load_state] the external states are not attached");
  for (size_t i = 0; i < buffers.size(); ++i) {
    ZDP_CHECK_EQ(buffers[i].size(), size_, ShapeError, "[optimizer.load_state] state buffer size");
    ZDP_CHECK(state_layout(states_[i].kind).dtype == StateDtype::kF32 &&
                  state_layout(states_[i].kind).index == StateIndex::kElement,
              ShapeError, "[optimizer.load_state] state {} is not per-element fp32; fill it through state()",
              state_kind_name(states_[i].kind));
  }
  set_step_count(steps);
  for (size_t i = 0; i < buffers.size(); ++i) std::copy(buffers[i].begin(), buffers[i].end(), state_data(i));
}

size_t Optimizer::state_bytes_per_param() const {
  size_t bytes = 0;
  for (const OwnedState& s : states_) {
    const StateLayout layout = state_layout(s.kind);
    if (layout.index == StateIndex::kElement) {
      bytes += layout.dtype == StateDtype::kU8 ? 1 : layout.dtype == StateDtype::kBf16 ? 2 : sizeof(float);
    }
  }
  return bytes;
}

void Optimizer::apply(float* params, const float* grads, size_t begin, size_t count) {
  run_segments(params, grads, begin, count);
}

std::array<float, 2> Optimizer::partial_block_maxima(const float* /*grads*/, size_t /*begin*/, size_t /*count*/,
                                                     float /*grad_scale*/) {
  return {0.0f, 0.0f};
}

void Optimizer::share_block_end_maxima(const BlockEndMaxima& /*combined*/) {}

void Optimizer::accumulate_tensor_stats(int /*round*/, const float* /*params*/, const float* /*grads*/,
                                        size_t /*begin*/, size_t /*count*/, float /*grad_scale*/, double* /*acc*/) {}

void Optimizer::load_tensor_stats(int /*round*/, std::span<const float> /*combined*/) {}

template <typename G>
void Optimizer::tensor_stats_impl(int round, std::span<const float> params, std::span<const G> grads, float grad_scale,
                                  ElementRange part, std::span<float> out, std::span<double> scratch) {
  const std::string_view op = optimizer_kind_name(kind());
  ZDP_CHECK(round >= 0 && round <= 1 && out.size() == tensor_stats_size(round) && scratch.size() >= out.size(),
            ShapeError, "[{}.tensor_stats] round {} into {} values with {} of scratch", op, round, out.size(),
            scratch.size());
  ZDP_CHECK(
      params.size() == size_ && grads.size() == size_ && part.offset <= size_ && part.count <= size_ - part.offset,
      ShapeError, "[{}.tensor_stats] params {}, grads {}, part [{}, {}) for a shard of {}", op, params.size(),
      grads.size(), part.offset, part.offset + part.count, size_);
  const std::span<double> acc = scratch.first(out.size());
  std::fill(acc.begin(), acc.end(), 0.0);
  if constexpr (std::is_same_v<G, float>) {
    accumulate_tensor_stats(round, params.data() + part.offset, grads.data() + part.offset, part.offset, part.count,
                            grad_scale, acc.data());
  } else {
    std::array<float, kWidenBlock> block;
    for (size_t at = part.offset; at < part.offset + part.count;) {
      const size_t n = std::min(kWidenBlock, part.offset + part.count - at);
      convert(grads.subspan(at, n), std::span<float>(block.data(), n), simd_);
      accumulate_tensor_stats(round, params.data() + at, block.data(), at, n, grad_scale, acc.data());
      at += n;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(acc[i]);
}

void Optimizer::tensor_stats(int round, std::span<const float> params, std::span<const float> grads, float grad_scale,
                             ElementRange part, std::span<float> out, std::span<double> acc) {
  tensor_stats_impl(round, params, grads, grad_scale, part, out, acc);
}
void Optimizer::tensor_stats(int round, std::span<const float> params, std::span<const Half> grads, float grad_scale,
                             ElementRange part, std::span<float> out, std::span<double> acc) {
  tensor_stats_impl(round, params, grads, grad_scale, part, out, acc);
}
void Optimizer::tensor_stats(int round, std::span<const float> params, std::span<const BFloat16> grads,
                             float grad_scale, ElementRange part, std::span<float> out, std::span<double> acc) {
  tensor_stats_impl(round, params, grads, grad_scale, part, out, acc);
}

void Optimizer::set_tensor_stats(int round, std::span<const float> combined) {
  ZDP_CHECK(round == rounds_set_ && round <= 1 && combined.size() == tensor_stats_size(round), ShapeError,
            "[{}.set_tensor_stats] round {} ({} values) after {} rounds; rounds 0 then 1, each of "
            "tensor_stats_size values",
            optimizer_kind_name(kind()), round, combined.size(), rounds_set_);
  load_tensor_stats(round, combined);
  ++rounds_set_;
}

template <typename G>
Optimizer::BlockEndMaxima Optimizer::block_end_maxima_impl(std::span<const G> grads, float grad_scale) {
  ZDP_CHECK(grads.size() == size_, ShapeError, "[{}.block_end_maxima] grads have {} elements, the shard has {}",
            optimizer_kind_name(kind()), grads.size(), size_);
  BlockEndMaxima out{};
  const size_t block = quant_block_size();
  if (block == 0 || size_ == 0) return out;
  // The shard's elements in its first block, and in its last.
  const size_t first_end = std::min(size_, block - unit_offset_ % block);
  const size_t last_begin = std::max(first_end, ((unit_offset_ + size_ - 1) / block) * block - unit_offset_);
  auto maxima = [&](size_t begin, size_t count) {
    if constexpr (std::is_same_v<G, float>) {
      return partial_block_maxima(grads.data() + begin, begin, count, grad_scale);
    } else {
      std::array<float, kWidenBlock> widened;
      convert(grads.subspan(begin, count), std::span<float>(widened.data(), count), simd_);
      return partial_block_maxima(widened.data(), begin, count, grad_scale);
    }
  };
  const std::array<float, 2> first = maxima(0, first_end);
  const std::array<float, 2> last = last_begin < size_ ? maxima(last_begin, size_ - last_begin) : first;
  return {first[0], first[1], last[0], last[1]};
}

Optimizer::BlockEndMaxima Optimizer::block_end_maxima(std::span<const float> grads, float grad_scale) {
  return block_end_maxima_impl(grads, grad_scale);
}
Optimizer::BlockEndMaxima Optimizer::block_end_maxima(std::span<const Half> grads, float grad_scale) {
  return block_end_maxima_impl(grads, grad_scale);
}
Optimizer::BlockEndMaxima Optimizer::block_end_maxima(std::span<const BFloat16> grads, float grad_scale) {
  return block_end_maxima_impl(grads, grad_scale);
}

Optimizer::BlockEndMaxima combine_block_end_maxima(std::span<const ElementRange> shards,
                                                   std::span<const Optimizer::BlockEndMaxima> partials, size_t me) {
  ZDP_CHECK(shards.size() == partials.size() && me < shards.size(), ShapeError,
            "[combine_block_end_maxima] {} shards, {} partials, shard {}", shards.size(), partials.size(), me);
  Optimizer::BlockEndMaxima out = partials[me];
  if (shards[me].count == 0) return out;
  const quant8::BlockRange mine = quant8::blocks_touched(shards[me].offset, shards[me].count);
  const size_t my_first = mine.first, my_last = mine.first + mine.count - 1;
  for (size_t q = 0; q < shards.size(); ++q) {
    if (shards[q].count == 0) continue;
    const quant8::BlockRange theirs = quant8::blocks_touched(shards[q].offset, shards[q].count);
    const std::array<size_t, 2> ends = {theirs.first, theirs.first + theirs.count - 1};
    for (size_t e = 0; e < 2; ++e) {
      for (size_t moment = 0; moment < 2; ++moment) {
        const float value = partials[q][2 * e + moment];
        if (ends[e] == my_first) out[moment] = std::max(out[moment], value);
        if (ends[e] == my_last) out[2 + moment] = std::max(out[2 + moment], value);
      }
    }
  }
  return out;
}

void Optimizer::run_segments(float* params, const float* grads, size_t begin, size_t count) {
  const size_t end = begin + count;
  // The first no-decay range that ends after `begin`; ranges are sorted,
  // disjoint and not adjacent (merged), so each next one starts past `at`.
  auto it = std::upper_bound(no_decay_.begin(), no_decay_.end(), begin,
                             [](size_t value, const ElementRange& r) { return value < r.offset + r.count; });
  size_t at = begin;
  while (at < end) {
    if (it == no_decay_.end() || it->offset >= end) {
      update(params + at, grads + (at - begin), at, end - at, true);
      break;
    }
    const size_t nd_begin = std::max(it->offset, at);
    const size_t nd_end = std::min(it->offset + it->count, end);
    if (at < nd_begin) update(params + at, grads + (at - begin), at, nd_begin - at, true);
    update(params + nd_begin, grads + (nd_begin - begin), nd_begin, nd_end - nd_begin, false);
    at = nd_end;
    ++it;
  }
}

template <typename G>
void Optimizer::step_impl(std::span<float> params, std::span<const G> grads, double lr, float grad_scale) {
  const std::string_view op = optimizer_kind_name(kind());
  ZDP_CHECK(params.size() == size_, ShapeError, "[{}.step] params have {} elements, the shard has {}", op,
            params.size(), size_);
  ZDP_CHECK(grads.size() == size_, ShapeError, "[{}.step] grads have {} elements, the shard has {}", op, grads.size(),
            size_);
  ZDP_CHECK(std::isfinite(lr) && lr >= 0.0, ConfigError,
            "[{}.step] learning rate {} must be finite and >= 0; check the lr schedule", op, lr);
  ZDP_CHECK(states_attached(), ShapeError, "[{}.step] the external states are not attached", op);
  if (tensor_stats_size(0) > 0 && rounds_set_ < 2) {
    // No statistics given: this shard's own, as one part (right when it
    // holds its tensors whole).
    ZDP_CHECK(rounds_set_ == 0, ShapeError, "[{}.step] tensor statistics round 1 was not given", op);
    for (int round = 0; round < 2; ++round) {
      std::vector<float> stats(tensor_stats_size(round));
      std::vector<double> acc(stats.size());
      tensor_stats_impl(round, std::span<const float>(params), grads, grad_scale, {0, size_}, stats, acc);
      set_tensor_stats(round, stats);
    }
  }
  rounds_set_ = 0;
  ++step_count_;
  begin_step(lr, grad_scale);
  if constexpr (std::is_same_v<G, float>) {
    apply(params.data(), grads.data(), 0, size_);
  } else {
    // Pieces end at multiples of kWidenBlock from the unit's start, so no
    // piece cuts a quantization block.
    std::array<float, kWidenBlock> block;
    for (size_t at = 0; at < size_;) {
      const size_t n = std::min(kWidenBlock - (unit_offset_ + at) % kWidenBlock, size_ - at);
      convert(grads.subspan(at, n), std::span<float>(block.data(), n), simd_);
      apply(params.data(), block.data(), at, n);
      at += n;
    }
  }
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, double lr, float grad_scale) {
  step_impl(params, grads, lr, grad_scale);
}
void Optimizer::step(std::span<float> params, std::span<const Half> grads, double lr, float grad_scale) {
  step_impl(params, grads, lr, grad_scale);
}
void Optimizer::step(std::span<float> params, std::span<const BFloat16> grads, double lr, float grad_scale) {
  step_impl(params, grads, lr, grad_scale);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, size_t shard_size, ShardOptions options) {
  validate(config);
  switch (config.kind) {
    case OptimizerKind::kAdamW:
      return std::make_unique<Adam>(config.adam, AdamVariant::kAdamW, shard_size, std::move(options));
    case OptimizerKind::kAdam:
      return std::make_unique<Adam>(config.adam, AdamVariant::kAdam, shard_size, std::move(options));
    case OptimizerKind::kSgd:
      return std::make_unique<Sgd>(config.sgd, shard_size, std::move(options));
    case OptimizerKind::kLion:
      return std::make_unique<Lion>(config.lion, shard_size, std::move(options));
    case OptimizerKind::kAdam8bit:
      return std::make_unique<Adam8bit>(config.adam, shard_size, std::move(options));
    case OptimizerKind::kAdafactor:
      return std::make_unique<Adafactor>(config.adafactor, shard_size, std::move(options));
  }
  ZDP_THROW(ConfigError, "[optimizer] unknown optimizer kind {}", static_cast<int>(config.kind));
}

}  // namespace zerodp::optim
