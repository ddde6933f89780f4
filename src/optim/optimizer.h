// SPDX-License-Identifier: Apache-2.0
// The optimizer interface the ZeRO engine calls on a rank's owned shard of
// the flat fp32 master parameters, and the factory (the configs are in
// optim/optimizer_config.h).
//
// An optimizer is built for one shard size and owns its state buffers (Adam's
// m and v, SGD's momentum, Lion's m, 8-bit Adam's codes and block scales),
// allocated zeroed at construction and reported to
// an optional StateAccountant (the engine passes one that books them in its
// memory ledger). step() updates every element from the same-index gradient
// only (8-bit Adam's block scales and Adafactor's per-tensor statistics
// excepted, see block_end_maxima and tensor_stats): no other reduction
// crosses elements, the float operations run in a fixed
// order (see optim_kernels.cc), and the vectorised loops give the same bits as
// the scalar ones. So an element's trajectory does not depend on which rank
// owns it or how the shards are cut, which the engine's bitwise equality
// across ZeRO stages and rank counts relies on. The two exceptions are
// combined over the partition plan's shards in a fixed way, so they keep the
// equality across stages (Adafactor's sums depend on N's cuts, though).
//
// Hyperparameters are doubles, like PyTorch's Python floats: per-step scalars
// (bias corrections, -lr/(1-b1^t), 1-lr*wd) are computed in double and rounded
// to float once per step; the element-wise math is float.
// Thread-safety: one optimizer per rank; step() is not reentrant. Distinct
// optimizers are independent.
#pragma once

#include <array>
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

// One parameter tensor of a unit, for optimizers whose update reads
// statistics of whole tensors (Adafactor): its elements, unit-relative, and
// its shape as `batch` matrices of rows x cols (row-major). A tensor of two
// or more dimensions is a batch of matrices of its last two; a vector or a
// scalar is one row (rows 1, cols = count).
struct TensorShape {
  size_t offset = 0;  // first element, relative to the unit's start
  size_t count = 0;
  size_t batch = 1, rows = 1, cols = 0;
  // Factored second moment (Adafactor): a matrix with at least 2 rows and 2 columns.
  bool factored() const { return rows >= 2 && cols >= 2; }
  friend bool operator==(const TensorShape&, const TensorShape&) = default;
};
// The TensorShape of a tensor of `shape` (row-major) at unit-relative offset.
TensorShape tensor_shape(size_t offset, std::span<const int> shape);
// Where the tensors start, ascending (a unit's: comm::TensorStarts, so that
// no quantization block of the compressed collectives holds two tensors).
std::vector<uint64_t> tensor_starts(std::span<const TensorShape> tensors);

// The optimizer's state buffers, for the ledger and for checkpoints.
enum class StateKind : uint8_t {
  kExpAvg = 0,          // Adam m (first moment); Lion's momentum m
  kExpAvgSq = 1,        // Adam v (second moment)
  kMomentum = 2,        // SGD momentum buffer
  kExpAvgCodes = 3,     // 8-bit Adam: m's codes, one byte per element (quant8.h)
  kExpAvgSqCodes = 4,   // 8-bit Adam: v's codes
  kExpAvgAbsmax = 5,    // 8-bit Adam: m's fp32 scale per block touched
  kExpAvgSqAbsmax = 6,  // 8-bit Adam: v's fp32 scale per block touched
  // Adafactor: the row and column statistics of the matrices the shard
  // touches and v of its other elements, packed (optim/adafactor.h)
  kExpAvgSqFactored = 7,
  kExpAvgBf16 = 8,  // Lion with bf16 momentum: m as bf16 bits, two bytes per element
};
// "exp_avg", "exp_avg_sq", "momentum_buffer", "exp_avg_q8", "exp_avg_sq_q8",
// "exp_avg_absmax", "exp_avg_sq_absmax", "exp_avg_sq_factored", "exp_avg_bf16"
std::string_view state_kind_name(StateKind kind);
// The first moment's kinds (booked as adam_m) or the second's (adam_v).
bool is_second_moment(StateKind kind);

// How a state tensor is stored: fp32 or one byte per value, and indexed by
// shard element, by quantization block (the blocks of the unit that the
// shard's elements touch, quant8::blocks_touched) or by Adafactor's packed
// statistics (adafactor_state_values).
enum class StateDtype : uint8_t { kF32 = 0, kU8 = 1, kBf16 = 2 };
enum class StateIndex : uint8_t { kElement = 0, kBlock = 1, kTensorStats = 2 };
struct StateLayout {
  StateDtype dtype = StateDtype::kF32;
  StateIndex index = StateIndex::kElement;
};
StateLayout state_layout(StateKind kind);

// A state tensor: `data` for an fp32 one, `codes` for a one-byte one (the
// other is empty; a bf16 one's `codes` are its values' bytes, two each,
// little-endian). Shard-sized, or one value per block touched.
struct StateTensor {
  StateKind kind;
  std::span<float> data;
  std::span<uint8_t> codes = {};
};
struct ConstStateTensor {
  StateKind kind;
  std::span<const float> data;
  std::span<const uint8_t> codes = {};
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
  // The shard's first element within its unit. Block-quantized state (8-bit
  // Adam) anchors its blocks at the unit's first element; the others ignore it.
  size_t unit_offset = 0;
  // The unit's first element in the model's flat order. Stochastic rounding
  // (Lion's bf16 momentum) draws an element's random bits from its flat
  // index and the step, so they are the same at every N and stage; the
  // others ignore it.
  uint64_t unit_flat_offset = 0;
  // The unit's parameter tensors, in flat order (Adafactor reads them; the
  // others ignore them). They must not overlap and must cover the shard;
  // empty: the shard is one vector.
  std::vector<TensorShape> tensors = {};
  // The states live in memory their owner attaches around each use
  // (attach_states): offloaded states, streamed from a file. The optimizer
  // allocates and books none of them then; its work buffers stay its own.
  bool external_states = false;
};

// Bytes per parameter of an optimizer's model states: the ZeRO paper's K,
// split as the paper splits it. The one place K is worked out (the plan, the
// run summary and the ledger's expectations read it).
struct OptimizerBytesPerParam {
  size_t master = 0;   // fp32 master copy: mixed precision only (fp32 parameters are their own master)
  size_t moment1 = 0;  // Adam's m, SGD's momentum buffer or Lion's m (8-bit Adam: m's codes)
  size_t moment2 = 0;  // Adam's v (8-bit Adam: v's codes)
  // Block-quantized moments: besides the bytes per element above, each moment
  // keeps scale_bytes per block of quant_block elements that a shard touches
  // (block_scale_bytes); 0 for unquantized state.
  size_t quant_block = 0;
  size_t scale_bytes = 0;
  // Adafactor: besides moment1, a shard keeps adafactor_state_values(...)
  // fp32 values of second-moment statistics (optim/adafactor.h), which
  // depend on the tensors' shapes; not in k().
  bool tensor_stats = false;
  size_t k() const { return master + moment1 + moment2; }  // without the block scales
};
// AdamW/Adam m + v = 8 (+4 master) = 12; SGD with momentum 4 (+4) = 8; plain
// SGD 0 (+4) = 4; Lion m 4 (+4) = 8; 8-bit Adam m + v codes 2 (+4) = 6, plus
// an fp32 scale per 2048-element block for each moment; Adafactor 0 (+4),
// or m 4 (+4) with beta1, plus its factored statistics (tensor_stats). The
// moments are the state tensors make_optimizer allocates.
OptimizerBytesPerParam optimizer_bytes_per_param(const OptimizerConfig& config, bool mixed_precision);
// K: optimizer_bytes_per_param(config, mixed_precision).k().
size_t bytes_per_param_k(const OptimizerConfig& config, bool mixed_precision);
// The bytes of one moment's block scales for a shard of `count` elements at
// `unit_offset` in its unit: scale_bytes per block it touches (0 for
// unquantized state). The engine holds two such moments per unit shard.
size_t block_scale_bytes(const OptimizerBytesPerParam& bytes, size_t unit_offset, size_t count);

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
  // ShapeError when the count or a size differs. fp32 states only (8-bit
  // Adam's are filled through state()).
  void load_state(int64_t steps, std::span<const std::span<const float>> buffers);

  // ---- states kept elsewhere (ShardOptions::external_states) ----
  // The bytes attach_states needs: every state tensor in order, each
  // starting at a multiple of kStateAlign.
  static constexpr size_t kStateAlign = 64;
  size_t state_extent_bytes() const;
  // Points the state tensors into `memory` (state_extent_bytes() long,
  // kStateAlign-aligned) until detach_states(); step(), state() and the
  // statistics read and write them there. ShapeError for a short or
  // misaligned span, or when the states are the optimizer's own.
  void attach_states(std::span<std::byte> memory);
  void detach_states();
  bool states_attached() const;
  // Writes the state's starting values into the attached states (zeros;
  // 8-bit Adam's codes of zero): a new extent before its first step.
  virtual void reset_states();

  // Bytes of per-element state this optimizer holds per shard element (8, 4,
  // 2 or 0; 8-bit Adam's block scales not included).
  size_t state_bytes_per_param() const;
  // The bytes booked as `kind`: its state buffer and any work buffer booked
  // with it (add_work).
  uint64_t booked_bytes(StateKind kind) const;

  // ---- block-quantized state (8-bit Adam) ----
  // The quantization block size, or 0 for element-wise state. A block's scale
  // is the largest new moment in the whole block, and a shard's first and
  // last blocks may be shared with other ranks' shards (quant8.h). Where they
  // are, every rank must quantize them with the maximum over all the shards:
  //   1. local = block_end_maxima(grads, grad_scale): this shard's part of
  //      its first and last blocks' new maxima, {max|m| first, max v first,
  //      max|m| last, max v last} (zeros for an empty shard);
  //   2. combine_block_end_maxima over the shards that cut the unit, then
  //      share_block_end_maxima(combined) on each;
  //   3. step() with the same grads and grad_scale.
  // step() without a shared value uses this shard's own maxima: right when
  // the shard holds its end blocks whole (one rank, or stage 0).
  virtual size_t quant_block_size() const { return 0; }
  using BlockEndMaxima = std::array<float, 4>;
  BlockEndMaxima block_end_maxima(std::span<const float> grads, float grad_scale);
  BlockEndMaxima block_end_maxima(std::span<const Half> grads, float grad_scale);
  BlockEndMaxima block_end_maxima(std::span<const BFloat16> grads, float grad_scale);
  // For the next step() only.
  virtual void share_block_end_maxima(const BlockEndMaxima& combined);

  // ---- per-tensor statistics (Adafactor) ----
  // The length of round `round`'s statistics vector (0, 1), the same on
  // every rank of a unit; 0: the optimizer reads none (all but Adafactor).
  // Statistics of whole tensors a shard may cut. Before each step(), for
  // round 0 then round 1:
  //   1. partial = tensor_stats(round, params, grads, grad_scale, part) for
  //      each plan shard of the unit (`part`: its shard-local range; a rank
  //      updating its own plan shard passes the whole shard, a rank holding
  //      the whole unit (stage 0) computes every plan shard's partial);
  //   2. sum the partials of the plan's shards in rank order, as the
  //      communicator's fp32 all-reduce does (comm::reduce_ordered), and
  //      set_tensor_stats(round, sum) on each;
  // then step() with the same params, grads and grad_scale. Each partial is
  // a double sum over the part in index order, rounded once to float; `acc`
  // is the caller's scratch for those sums (at least tensor_stats_size(round)
  // doubles: the engine books one for all its units). A step() without them
  // computes them over the whole shard as one part.
  virtual size_t tensor_stats_size(int /*round*/) const { return 0; }
  void tensor_stats(int round, std::span<const float> params, std::span<const float> grads, float grad_scale,
                    ElementRange part, std::span<float> out, std::span<double> acc);
  void tensor_stats(int round, std::span<const float> params, std::span<const Half> grads, float grad_scale,
                    ElementRange part, std::span<float> out, std::span<double> acc);
  void tensor_stats(int round, std::span<const float> params, std::span<const BFloat16> grads, float grad_scale,
                    ElementRange part, std::span<float> out, std::span<double> acc);
  void set_tensor_stats(int round, std::span<const float> combined);

 protected:
  // A state tensor (or a work buffer): `bytes` at `data`, which points into
  // `owned` or, with external states, into the attached memory (null while
  // detached).
  struct OwnedState {
    StateKind kind;
    size_t bytes = 0;
    AlignedBuffer<std::byte> owned;
    std::byte* data = nullptr;
  };

  Optimizer(size_t size, ShardOptions options);
  // Allocates one zeroed state buffer of state_layout(kind): shard-sized, or
  // `values` long (one per block touched, or Adafactor's packed
  // statistics), and books it.
  void add_state(StateKind kind, size_t values = 0);
  // Allocates a zeroed fp32 work buffer of `values` that is not state (no
  // checkpoint holds it) but lives as long as the optimizer, and books it as
  // `booked_as` (Adafactor's per-step factors, derived from its statistics,
  // are booked with them). The pointer stays valid for the optimizer's life.
  float* add_work(StateKind booked_as, size_t values);
  float* state_data(size_t index) { return reinterpret_cast<float*>(states_[index].data); }
  const float* state_data(size_t index) const { return reinterpret_cast<const float*>(states_[index].data); }
  uint8_t* state_codes(size_t index) { return reinterpret_cast<uint8_t*>(states_[index].data); }
  size_t unit_offset() const { return unit_offset_; }
  // The model's flat index of shard element 0 (ShardOptions::unit_flat_offset + unit_offset).
  uint64_t flat_offset() const { return flat_offset_; }

  // Splits [begin, begin + count) at the no-decay ranges and calls update();
  // grads points at element `begin`.
  void run_segments(float* params, const float* grads, size_t begin, size_t count);
  // Updates shard elements [begin, begin + count) from fp32 grads (pointing
  // at element begin). The pieces step() hands it, in order, cover the shard
  // and never cut a 2048-element block of the unit (a multiple of kWidenBlock
  // from the unit's start). Default: run_segments.
  virtual void apply(float* params, const float* grads, size_t begin, size_t count);
  // block_end_maxima's part: the new maxima over shard elements
  // [begin, begin + count) of one block, {max|m|, max v}.
  virtual std::array<float, 2> partial_block_maxima(const float* grads, size_t begin, size_t count, float grad_scale);
  // tensor_stats' part: adds shard elements [begin, begin + count)'s
  // contributions into acc (tensor_stats_size(round) doubles); params and
  // grads point at element begin.
  virtual void accumulate_tensor_stats(int round, const float* params, const float* grads, size_t begin, size_t count,
                                       float grad_scale, double* acc);
  // set_tensor_stats' part, after the size check.
  virtual void load_tensor_stats(int round, std::span<const float> combined);
  const std::vector<TensorShape>& tensors() const { return tensors_; }

  // Computes this step's float scalars; step_count() is already the new t.
  virtual void begin_step(double lr, float grad_scale) = 0;
  // Updates `count` elements: params and grads point at the first of them,
  // which is element `offset` of the shard (and of the state buffers); decay
  // says whether weight decay applies to them.
  virtual void update(float* params, const float* grads, size_t offset, size_t count, bool decay) = 0;

 private:
  template <typename G>
  void step_impl(std::span<float> params, std::span<const G> grads, double lr, float grad_scale);
  template <typename G>
  BlockEndMaxima block_end_maxima_impl(std::span<const G> grads, float grad_scale);
  template <typename G>
  void tensor_stats_impl(int round, std::span<const float> params, std::span<const G> grads, float grad_scale,
                         ElementRange part, std::span<float> out, std::span<double> scratch);

  size_t size_ = 0;
  size_t unit_offset_ = 0;
  uint64_t flat_offset_ = 0;
  std::vector<ElementRange> no_decay_;  // sorted, merged, inside the shard
  StateAccountant accountant_;
  SimdLevel simd_;
  std::vector<OwnedState> states_;
  std::vector<OwnedState> work_;  // add_work's buffers
  std::vector<TensorShape> tensors_;
  bool external_states_ = false;
  bool attached_ = true;  // the states are reachable: owned, or attached
  int rounds_set_ = 0;    // tensor statistics rounds given for the next step()
  int64_t step_count_ = 0;
};

// The maxima of shard `me`'s first and last blocks over every shard of the
// unit that touches them: `shards` are the unit-relative element ranges of
// all the shards that cut the unit (in any order), `partials` their
// block_end_maxima. A maximum is exact, so the result does not depend on
// how many shards there are or in which order they come.
Optimizer::BlockEndMaxima combine_block_end_maxima(std::span<const ElementRange> shards,
                                                   std::span<const Optimizer::BlockEndMaxima> partials, size_t me);

// Offload (zero/offload_store.h) keeps a unit shard's fp32 master weights
// (mixed precision; at fp32 the parameters are the master and stay in RAM)
// and then its optimizer's states in one extent, each part
// Optimizer::kStateAlign-aligned: the master's bytes, and the extent's.
size_t offload_master_bytes(size_t count, bool mixed_precision);
size_t offload_extent_bytes(const Optimizer& opt, bool mixed_precision);

// Builds the optimizer of config.kind for a shard of `shard_size` elements;
// validates the config first (ConfigError).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, size_t shard_size, ShardOptions options = {});

}  // namespace zerodp::optim
