// SPDX-License-Identifier: Apache-2.0
// The ZeRO paper's model of what each rank holds and sends (Rajbhandari et
// al., SC20, arXiv 1910.02054, Fig. 1 and sections 5 and 7), generalised from
// mixed-precision Adam to every precision x optimizer zerodp supports.
//
// One replica's model states cost, per parameter:
//   params (p bytes) + grads (g bytes) + optimizer (K bytes)
// where p = g = the size of the training dtype and K counts the fp32 master
// copy (low-precision runs only) and the optimizer's moments:
//
//   precision    optimizer        p  g  master m  v   K   total
//   fp16/bf16    AdamW / Adam     2  2  4      4  4   12  16   (the paper)
//   fp16/bf16    SGD + momentum   2  2  4      4  -    8  12
//   fp16/bf16    SGD              2  2  4      -  -    4   8
//   fp16/bf16    Lion             2  2  4      4  -    8  12
//   fp32         AdamW / Adam     4  4  -      4  4    8  16
//   fp32         SGD + momentum   4  4  -      4  -    4  12
//   fp32         SGD              4  4  -      -  -    0   8
//   fp32         Lion             4  4  -      4  -    4  12
//
// fp32 training keeps no master copy (the parameters are the fp32 copy), so
// fp32 Adam is 16 bytes per parameter like mixed precision, split 4 + 4 + 8.
//
// K comes from src/optim (optim::optimizer_bytes_per_param), the one place
// that knows which state tensors an optimizer keeps.
//
// Per rank at N ranks (which categories a stage partitions is core/stage.h's
// table):  stage 0  (p + g + K)Φ      stage 1  (p + g)Φ + KΦ/N
//          stage 2  pΦ + (g + K)Φ/N   stage 3  (p + g + K)Φ/N
// A partitioned category holds ceil(Φ/N) elements when only Φ is known; with
// the model's units it holds what the engine's busiest rank owns, sum over
// units of ceil(c_u/N) (unit_shard_elements). Either differs from the
// paper's Φ/N by less than N (resp. N per unit) elements per category.
//
// Communication per rank per step (paper section 7), in elements: stages 0-2
// move 2Φ (reduce-scatter Φ + all-gather Φ, an all-reduce being the two), stage
// 3 moves 3Φ (all-gather in forward, again in backward, reduce-scatter of
// gradients): the stage table's collectives_per_step(). Bytes are those
// elements in the training dtype. A ring or all-to-all collective puts
// (N-1)/N of that on each rank's link.
//
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "comm/quantize.h"
#include "core/dtype.h"
#include "core/stage.h"
#include "optim/optimizer.h"

namespace zerodp::plan {

// The plan names an optimizer by the states it keeps (it has no --momentum):
// "adamw", "adam", "sgd-momentum" (also "sgdm", "momentum", "sgd_momentum"),
// "sgd", "lion"; case-insensitive. The result is src/optim's config of that kind with
// default hyperparameters (sgd-momentum: momentum 0.9). ConfigError naming the
// accepted values otherwise.
optim::OptimizerConfig parse_optimizer(std::string_view name);
// The same names back: SGD with a momentum > 0 is "sgd-momentum".
std::string_view optimizer_name(const optim::OptimizerConfig& optimizer);

// Bytes each parameter costs in one replica, by category.
struct BytesPerParam {
  int params = 0;   // the training copy (fp16/bf16 or fp32)
  int grads = 0;    // gradients in the training dtype
  int master = 0;   // fp32 master weights (low-precision runs only)
  int moment1 = 0;  // Adam m, SGD's momentum buffer or Lion's m
  int moment2 = 0;  // Adam v

  int optimizer() const { return master + moment1 + moment2; }  // the paper's K
  int total() const { return params + grads + optimizer(); }
};

// p and g are the training dtype's size; master and moments are
// optim::optimizer_bytes_per_param's.
BytesPerParam bytes_per_param(Dtype precision, const optim::OptimizerConfig& optimizer);

// Per-rank bytes of model states, by category (optimizer = master + moments).
struct ModelStateBytes {
  uint64_t params = 0;
  uint64_t grads = 0;
  uint64_t master = 0;
  uint64_t moment1 = 0;
  uint64_t moment2 = 0;

  uint64_t optimizer() const { return master + moment1 + moment2; }
  uint64_t total() const { return params + grads + optimizer(); }
};

// Elements of a Φ-element flat buffer each of `ranks` ranks holds: ceil(Φ/N).
uint64_t shard_elements(uint64_t num_params, int ranks);

// Elements the busiest rank owns when each unit is split on its own over N
// ranks with no padding (the first c % N ranks of a c-element unit hold one
// more), as the engine's PartitionPlan does: sum over units of ceil(c/N).
uint64_t unit_shard_elements(std::span<const uint64_t> unit_counts, int ranks);

// Exact per-rank bytes at `stage` with N = `ranks` (partitioned categories,
// traits(stage), hold shard_elements()). REQUIRES ranks >= 1 (ConfigError).
ModelStateBytes model_state_bytes(uint64_t num_params, Stage stage, int ranks, const BytesPerParam& bpp);

// The same with the partitioned categories holding `shard` elements (e.g.
// unit_shard_elements()).
ModelStateBytes model_state_bytes_with_shard(uint64_t num_params, uint64_t shard, Stage stage,
                                             const BytesPerParam& bpp);

// The paper's formula with Φ/N unrounded, for comparing with its tables.
double paper_model_state_bytes(double num_params, Stage stage, int ranks, const BytesPerParam& bpp);

struct CommVolume {
  uint64_t elements = 0;    // the paper's volume: 2Φ (stages 0-2) or 3Φ (stage 3)
  uint64_t bytes = 0;       // elements x the communication dtype's size
  uint64_t sent_bytes = 0;  // what a ring/all-to-all puts on one rank's link:
                            // per collective (N-1) shards of ceil(Φ/N)
  int collectives = 0;      // full-model collectives per step: 2 or 3
  // Hybrid sharding (groups of G < N ranks): of sent_bytes, what the
  // shard's gradient all-reduce across the N/G groups sends, 2
  // ceil(ceil(Φ/G)/R) elements with R = N/G: the only traffic that leaves a
  // group (crosses hosts when a group is a host). 0 in the flat layout.
  uint64_t across_groups_sent_bytes = 0;
};

// Per rank per step. `comm_dtype` is the dtype gradients and parameters travel
// in (the training dtype). With compressed collectives (where the stage has
// them: `weights` for stage 3's two parameter all-gathers, `grads` for the
// reduce-scatter of stages 1-3) a collective moves comm::quantized_bytes of
// the buffer instead: bytes adds quantized_bytes(Φ), sent_bytes (N-1)
// quantized_bytes(ceil(Φ/N)) (docs/comm.md; the engine quantizes per unit
// shard, its blocks ending at tensor boundaries, so it sends at most one
// scale more per unit and per tensor start in each shard).
// With hybrid sharding (`group` G dividing `ranks`, below it, stages 1-3)
// the collectives above run over the G ranks of a group, and the shard's
// all-reduce across the ranks/G groups adds across_groups_sent_bytes (plain:
// the engine does not quantize it). group 0 = ranks.
CommVolume comm_volume(uint64_t num_params, Stage stage, int ranks, Dtype comm_dtype, comm::QuantFormat weights = {},
                       comm::QuantFormat grads = {}, int group = 0);

// The largest Φ whose per-rank model states fit in `device_bytes` at `stage`
// and N = `ranks` (exact: model_state_bytes(Φ).total() <= device_bytes), as
// the paper's "max model size" analysis (model states only; activations and
// buffers are the caller's to subtract first). 0 when not even one fits.
uint64_t max_params(uint64_t device_bytes, Stage stage, int ranks, const BytesPerParam& bpp);

// 8-bit Adam's bytes of one moment on rank `rank` of `ranks` beyond
// BytesPerParam's whole bytes per parameter: an fp32 scale per 2048-element
// block that each of its 8-bit unit shards touches, and 3 bytes per element
// (an fp32 moment instead of a one-byte code) of the units that keep fp32
// moments (optim::unit_optimizer_config: unit `embedding_unit`, -1 for none,
// and units under min_8bit_size elements). Each unit whole when the
// optimizer state is not partitioned. 0 for the other optimizers. The memory
// model adds it to moment1 and moment2.
uint64_t moment_extra_bytes(std::span<const uint64_t> unit_counts, int embedding_unit, int ranks, int rank,
                            bool partitioned, const optim::OptimizerConfig& optimizer);

// Adafactor's second-moment statistics on rank `rank` of `ranks`, in bytes:
// the fp32 row and column statistics of every matrix its unit shards touch
// and v of their other elements (optim::adafactor_state_values; each unit
// whole when the optimizer state is not partitioned), twice: the optimizer
// keeps a work buffer of the same layout for each step's factors, booked
// with them. unit_tensors[u] lists unit u's tensors; a unit without (a model
// given only by --params) counts as one vector, 4 bytes per element. 0 for
// the other optimizers. The memory model adds it to moment2.
uint64_t tensor_stats_bytes(std::span<const uint64_t> unit_counts,
                            std::span<const std::vector<optim::TensorShape>> unit_tensors, int ranks, int rank,
                            bool partitioned, const optim::OptimizerConfig& optimizer);

// Throws ConfigError unless ranks >= 1.
void check_ranks(int ranks);

}  // namespace zerodp::plan
