// SPDX-License-Identifier: Apache-2.0
// The model interface the ZeRO engine trains: parameters as units, a forward
// schedule of ops, and per-rank workspaces.
//
// Parameters live in one flat fp32 buffer of num_params() elements, grouped
// into units; each unit owns one contiguous range [offset, offset + count),
// and units() lists them in flat order. ops() is the forward schedule; each op
// reads exactly one unit's parameters (op.unit) and backward runs the ops in
// reverse. A unit may appear in more than one op (GPT's tied embedding / LM
// head): its gradient then accumulates over all of its backward ops, and the
// engine must reduce it only after the last one (last_backward_op()).
//
// Contract of one training micro-batch on one rank:
//   ws.set_batch(batch);
//   for i in 0..ops().size():            forward(i, params of ops()[i].unit, ws)
//   ws.loss()                            mean loss of this micro-batch
//   ws.set_loss_grad_scale(s);           d(objective)/d(loss), e.g. loss_scale / (micro_batches * ranks)
//   for i in ops().size()-1 .. 0:        backward(i, params, grads of ops()[i].unit, ws)
//                                        (params may be empty where !ops()[i].backward_reads_params)
// backward ACCUMULATES (+=) into the gradient span, so micro-batches and the
// tied weights add up; the caller zeroes gradients when it wants fresh ones.
//
// Thread-safety: a Model is immutable after construction; every const method
// may be called from many rank threads at once. A Workspace holds one rank's
// mutable state (inputs, activations, scratch) and is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/grad_schedule.h"
#include "kernels/linear.h"
#include "kernels/profile.h"
#include "model/param_init.h"

namespace zerodp::model {

struct UnitInfo {
  std::string name;   // "embedding", "block3", "ln_f", "fc0", ...
  size_t offset = 0;  // first element in the flat parameter buffer
  size_t count = 0;   // number of parameters
  // Where every op of the unit runs its weight part apart and can make it a
  // range of rows at a time (Model::backward_weights_rows): the elements of
  // a row (count is a multiple). The engine then makes the unit's gradient
  // in rows when it reads bf16 units in place (core/grad_schedule.h). 0: no.
  size_t grad_row = 0;
};

// One named tensor inside the flat buffer (it lies inside one unit).
struct TensorInfo {
  std::string name;   // "wte", "block3.qkvw", "ln_f.b", "fc1.w", ...
  size_t offset = 0;  // first element in the flat buffer
  size_t count = 0;
  std::vector<int> shape;  // row-major, e.g. {3C, C}
  bool decay = false;      // weight decay applies (matrices: yes; biases and layernorm: no, as GPT-2 / nanoGPT)
  TensorInit init = {};    // how it starts (model/param_init.h)
  // Where the tensor starts in the whole model when this is a part of it (a
  // pipeline stage's view, model/stage_model.h): its initial values are the
  // whole model's there, since a tensor's random stream is keyed by that
  // offset. kAtOffset: here.
  static constexpr size_t kAtOffset = static_cast<size_t>(-1);
  size_t origin = kAtOffset;
  size_t init_key() const { return origin == kAtOffset ? offset : origin; }
};

// One step of the forward schedule. The family keeps its own meaning of
// each op (by its index); the engine reads only these fields.
struct Op {
  int unit = 0;      // index into units(); the op's params/grads are this unit's range
  int layer = 0;     // the family's own layer index for the op (GPT: the block), else 0
  std::string name;  // for logs and profiles
  // False where backward needs only the gradient of its output and the
  // activations (GPT's embedding, the MLP's first layer, which has no input
  // gradient to make): the engine then passes an empty parameter span and
  // stage 3 gathers nothing for it.
  bool backward_reads_params = true;
  // True for the op that looks rows up in a token embedding (GPT's wte):
  // 8-bit Adam keeps that unit's moments in fp32, as bitsandbytes advises
  // for embeddings (optim::unit_optimizer_config).
  bool token_embedding = false;
  // True where the backward also runs as two calls, backward_input (the
  // input's gradient: reads the parameters, writes no gradient) and later
  // backward_weights (the parameters' gradient: reads none), with the bits
  // of backward (GPT's and Llama's LM head). The engine runs the weight
  // part of a tied unit's op at the unit's last backward op, so the unit's
  // gradient is open only at the end of the backward (core/grad_schedule.h).
  bool weight_grad_apart = false;
  // Where the family reads bf16 weights in place (Model::reads_bf16_weights):
  // the floats of its unit the op widens to fp32 for kernels other than the
  // products (norm gains, biases), the scratch the engine lends each call.
  size_t bf16_widened = 0;
};

// One micro-batch, by role, not by family: integer inputs (`tokens`) or
// real ones (`features`), and integer targets (`targets`) or real ones
// (`values`); each family reads the ones it needs and its set_batch checks
// their sizes. A language model reads tokens and targets ([B,T] each,
// targets the next tokens, or -1 where a position has no loss); the MLP
// reads features [B, in] and values [B, out] (regression) or targets [B]
// (classification: a class in [0, out)). Spans are copied into the
// workspace by set_batch.
// (Default member initialisers let callers write Batch{.tokens = t, .targets = y}
// under -Wextra.)
struct Batch {
  std::span<const int32_t> tokens = {};
  std::span<const int32_t> targets = {};
  // Packed records ([B,T], language models with segment-aware attention:
  // the Llama family): each position's record id. A maximal run of equal
  // ids in a row is one record: its positions restart at 0 and its
  // attention stays inside it. Empty: each row is one sequence. A model
  // without segments refuses a non-empty one.
  std::span<const int32_t> segments = {};
  std::span<const float> features = {};
  std::span<const float> values = {};
};

class Workspace {
 public:
  virtual ~Workspace() = default;

  // Copies this micro-batch's inputs in (ShapeError / ConfigError on sizes or
  // ids that do not fit the model and the workspace's batch shape).
  virtual void set_batch(const Batch& batch) = 0;
  // Mean loss of the current micro-batch over its unmasked targets; valid
  // after the last forward op.
  virtual float loss() const = 0;
  // Targets of the current micro-batch that are the ignore id (-1: no loss
  // at that position, kernels/softmax_xent.h); 0 for a model without them.
  int masked_targets() const { return masked_targets_; }
  // d(objective)/d(loss) used to start backward (default 1).
  void set_loss_grad_scale(float scale) { loss_grad_scale_ = scale; }
  float loss_grad_scale() const { return loss_grad_scale_; }

  // Bytes this workspace holds for activations (kept for backward) and
  // scratch (recomputation, activation gradients). All of it is allocated
  // when the workspace is made, so current == peak; they are reported apart
  // so that the engine's ledger can account for them.
  virtual size_t activation_bytes() const = 0;
  virtual size_t scratch_bytes() const = 0;
  size_t total_bytes() const { return activation_bytes() + scratch_bytes(); }
  size_t peak_activation_bytes() const { return total_bytes(); }

  virtual int micro_batch() const = 0;
  virtual int seq_len() const = 0;  // 1 for the MLP
  virtual bool checkpointing() const = 0;

  // Per-kernel timing (for `zerodp bench model`); null disables it.
  void set_profile(kernels::Profile* profile) { profile_ = profile; }
  kernels::Profile* profile() const { return profile_; }

 protected:
  void set_masked_targets(int count) { masked_targets_ = count; }

 private:
  int masked_targets_ = 0;
  float loss_grad_scale_ = 1.0f;
  kernels::Profile* profile_ = nullptr;
};

struct ModelConfig;  // model/family.h

// What a workspace is made for (Model::make_workspace_for).
struct WorkspaceOptions {
  int micro_batch = 1;
  int seq_len = 1;  // ignored by the MLP
  bool checkpointing = false;
  // Keep the activations that only matrix products read as the bf16
  // operands those products make of them (kernels::round_to_bf16_operands),
  // at half their bytes: for a run whose products are bf16 (--compute bf16)
  // the results are the same bits. A family without such a layout (or with
  // checkpointing, which keeps none of them) ignores it.
  bool bf16_product_inputs = false;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string kind() const = 0;  // its family's name: "gpt", "mlp", ...
  // The config this model was built from (name "custom"): what
  // make_model() rebuilds it from and model_config_json() records. A model
  // whose family is registered (model/family.h) returns its spec here and
  // is then checkpointed, resumed, resharded and consolidated like GPT-2
  // (examples/custom_model); the default throws ConfigError, so a model
  // without a family trains but cannot be checkpointed.
  virtual ModelConfig config() const;
  virtual std::string describe() const = 0;  // one line: shape and parameter count
  virtual size_t num_params() const = 0;     // Φ
  virtual const std::vector<UnitInfo>& units() const = 0;
  virtual const std::vector<Op>& ops() const = 0;
  // Every tensor in flat order; together they tile [0, num_params()).
  // The optimizer's no-decay ranges are the tensors with decay == false;
  // each tensor's `init` says how it starts.
  virtual std::vector<TensorInfo> tensors() const = 0;

  // Deterministic initialisation of flat parameters [first, first +
  // out.size()) from a seed, with the same bits as the same elements of
  // init_params: a rank generates only what it holds, slice by slice
  // (ShapeError past num_params()).
  void init_range(std::span<float> out, size_t first, uint64_t seed) const;
  // The same with tensors() computed once by a caller that fills many slices.
  void init_range(std::span<const TensorInfo> tensors, std::span<float> out, size_t first, uint64_t seed) const;
  // All parameters (a full flat buffer of num_params()).
  void init_params(std::span<float> all_params, uint64_t seed) const;

  // A workspace for micro-batches of `micro_batch` samples of `seq_len`
  // tokens (ignored by the MLP); checkpointing recomputes each block in
  // backward instead of keeping its activations (GPT only; ConfigError for
  // the MLP).
  virtual std::unique_ptr<Workspace> make_workspace(int micro_batch, int seq_len, bool checkpointing) const = 0;
  // The same with every option; the default ignores bf16_product_inputs.
  virtual std::unique_ptr<Workspace> make_workspace_for(const WorkspaceOptions& options) const {
    return make_workspace(options.micro_batch, options.seq_len, options.checkpointing);
  }

  virtual void forward(int op_index, std::span<const float> unit_params, Workspace& ws) const = 0;
  virtual void backward(int op_index, std::span<const float> unit_params, std::span<float> unit_grads,
                        Workspace& ws) const = 0;
  // The two parts of backward(op_index) where ops()[op_index].weight_grad_apart
  // (ConfigError elsewhere): backward_input, then backward_weights at any
  // later point of the same backward pass (the op's kept tensors stay as
  // backward_input left them), accumulating what backward would.
  virtual void backward_input(int op_index, std::span<const float> unit_params, Workspace& ws) const;
  virtual void backward_weights(int op_index, std::span<float> unit_grads, Workspace& ws) const;

  // The weight part of op_index's backward (as backward_weights adds it)
  // for rows [first_row, first_row + rows.size() / grad_row) of its unit
  // alone, added into `rows` with the bits those elements get from
  // backward_weights. Only where units()[unit].grad_row > 0 (ConfigError
  // elsewhere); the other ops of the unit may have run theirs on other rows.
  virtual void backward_weights_rows(int op_index, size_t first_row, std::span<float> rows, Workspace& ws) const;

  // Whether the ops can also read a bf16 unit in place when the run's
  // products are bf16 (kernels::Compute::kBf16): the three calls below, with
  // the bits of forward, backward and backward_input on the unit widened to
  // fp32, and no fp32 copy of the unit. `widened` is a scratch of at least
  // ops()[op_index].bf16_widened floats (model/unit_params.h). The defaults
  // say no and throw ConfigError.
  virtual bool reads_bf16_weights() const { return false; }
  virtual void forward_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                            Workspace& ws) const;
  virtual void backward_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                             std::span<float> unit_grads, Workspace& ws) const;
  virtual void backward_input_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                                   Workspace& ws) const;

  // The shapes of the matrix products one micro-batch runs (kernels::
  // warm_up_linear touches OpenBLAS's buffers with them before a run
  // measures its baseline memory).
  virtual std::vector<kernels::LinearShape> linear_shapes(int micro_batch, int seq_len) const = 0;

  // ---- pipeline stages (model/stage_model.h, zero/pipeline.h) ----
  // A stage runs a contiguous range of ops; between two stages one tensor
  // crosses, both ways: the input of the later stage's first op (sent after
  // the earlier stage's forward) and its gradient (sent back after the later
  // stage's backward). A family that can be cut says where (the default:
  // nowhere, and the three methods below throw ConfigError).
  // Whether the ops can be cut before op `op_index` (0 < op_index < ops().size()).
  virtual bool can_cut_before(int /*op_index*/) const { return false; }
  // A workspace for ops [first_op, end_op) only: the activations of those
  // ops, the inputs a stage needs (tokens where the embedding is in it,
  // targets for the loss) and the boundary tensors; `options` as
  // make_workspace_for's (bf16 product inputs where the stage has blocks).
  virtual std::unique_ptr<Workspace> make_stage_workspace(const WorkspaceOptions& options, int first_op,
                                                          int end_op) const;
  // The input of op `op_index` (a cut): the later stage fills it before its
  // first forward op, the earlier one reads it after its last.
  virtual std::span<float> boundary_activation(Workspace& ws, int op_index) const;
  // Its gradient: after op `op_index`'s backward it holds d(objective)/d(its
  // input); the earlier stage fills it before its last op's backward.
  virtual std::span<float> boundary_gradient(Workspace& ws, int op_index) const;

  // Model FLOPs of forward + backward per sample position (per token for the
  // GPT, per sample for the MLP): 6 x (matmul parameters) + attention.
  virtual double train_flops_per_position(int seq_len) const = 0;

  // Helpers derived from units() / ops().
  std::span<const float> unit_span(std::span<const float> all, int unit) const;
  std::span<float> unit_span(std::span<float> all, int unit) const;
  // For each unit, the index of the op whose backward touches it last (the
  // lowest op index using it): the point where its gradient is complete.
  std::vector<int> last_backward_op() const;
  // ShapeError unless backward(op_index, ...)'s spans are its unit's size;
  // the parameters may also be empty where the op's backward does not read
  // them (Op::backward_reads_params).
  void check_backward_spans(int op_index, size_t params, size_t grads) const;
};

// The model's ops as core/grad_schedule.h reads them; `bf16_in_place`: the
// engine hands the ops their bf16 units (reads_bf16_weights), so an op's
// backward puts only its widened floats into the compute copy.
GradOps grad_ops(const Model& model, bool bf16_in_place = false);

// Runs every forward op over a full flat parameter buffer; returns ws.loss().
float forward_all(const Model& model, std::span<const float> params, Workspace& ws);
// Runs every backward op in reverse, accumulating into the full flat grads.
void backward_all(const Model& model, std::span<const float> params, std::span<float> grads, Workspace& ws);

}  // namespace zerodp::model
