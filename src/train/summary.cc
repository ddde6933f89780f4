// SPDX-License-Identifier: Apache-2.0
#include "train/summary.h"

#include <fmt/format.h>

#include <algorithm>

namespace zerodp::train {
namespace {

// Why stage 3's measured traffic differs from the paper's 3Φ (engine.cc's
// forward_pass and backward_pass, core/gather_schedule.h): backward keeps the
// forward's last gather and gathers nothing for an op that reads no weights
// (GPT's embedding), and tied weights stay gathered from one forward use to
// the next where the gather region holds them beside the ops between.
constexpr const char* kStage3GatherNote =
    " (backward reuses the last gather and skips weight-free ops; tied weights stay gathered through forward where "
    "they fit: docs/architecture.md)";

std::string mb(uint64_t bytes) { return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6); }

uint64_t sent_by(const comm::CommStats& s, comm::Collective kind) { return s[kind].bytes_sent; }

// Why a step with A micro-batches sends more than the paper's figure.
std::string accumulation_traffic(const RunStats& s) {
  const int a = s.engine.grad_accum;
  const double expected = expected_sent_phi(s);
  const StageTraits& t = traits(s.engine.stage);
  if (t.reduce == GradReduce::kAllReduce) {
    return fmt::format(
        "  with --grad-accum {0}: {0} all-reduces of 2Φ, one per micro-batch = {1:g}Φ (the paper's 2Φ is "
        "one reduction per step)\n",
        a, expected);
  }
  if (t.gathers_on_acquire) {
    return fmt::format(
        "  with --grad-accum {0}: per micro-batch a reduce-scatter of Φ and the forward and backward "
        "all-gathers (the paper's 2Φ) = {1:g}Φ\n",
        a, expected);
  }
  return fmt::format(
      "  with --grad-accum {0}: {0} reduce-scatters of Φ, one per micro-batch, + 1 all-gather of Φ = "
      "{1:g}Φ (the paper's 2Φ is one reduction per step)\n",
      a, expected);
}

bool quantized(const RunStats& s) {
  return s.engine.quantize_weights != comm::Quantization::kNone || s.engine.quantize_grads != comm::Quantization::kNone;
}

std::string compressed_traffic(const RunStats& s) {
  std::string out = fmt::format(
      "  compressed: parameter gathers {}, gradient reduce-scatters {}; a packed element is its code plus\n"
      "  a 4-byte scale per {} elements, so the Φ figure above counts p-byte elements' worth (docs/comm.md)\n",
      comm::quantization_name(s.engine.quantize_weights), comm::quantization_name(s.engine.quantize_grads),
      s.engine.quantize_block);
  if (s.engine.quantize_delay > 0 && s.steps_taken > s.engine.quantize_delay) {
    out += fmt::format("  --quantize-delay {}: steps 1-{} sent the plain collectives\n", s.engine.quantize_delay,
                       s.engine.quantize_delay);
  } else if (s.engine.quantize_delay > 0) {
    out += fmt::format(
        "  --quantize-delay {}: every step sent the plain collectives (the run ended at step {}), "
        "the one measured above too\n",
        s.engine.quantize_delay, s.steps_taken);
  }
  return out;
}

// Hybrid sharding: the group's collectives are a flat run's at N = G; the
// only traffic that leaves a group is the gradient shard's all-reduce across
// the R = N/G groups (2 (R-1)/R of Φ/G elements per micro-batch), read from
// the replica communicator's counters (step_comm_across).
std::string hybrid_traffic(const RunStats& s, uint64_t total, int group) {
  const comm::CommStats& x = s.step_comm_across;
  const uint64_t across = sent_by(x, comm::Collective::kAllReduce) + sent_by(x, comm::Collective::kReduceScatter) +
                          sent_by(x, comm::Collective::kAllGather);
  const uint64_t inside = total - std::min(total, across);
  const double phi = static_cast<double>(s.num_params), p = static_cast<double>(s.engine.dtype.size());
  const double g = group, r = static_cast<double>(s.ranks) / group;
  const int groups = s.ranks / group;
  std::string out = fmt::format("  inside its group of {}: {} = {:.3f}Φ elements x (G-1)/G; the paper: {}Φ{}\n", group,
                                mb(inside), group > 1 ? static_cast<double>(inside) / (phi * p * (g - 1) / g) : 0.0,
                                collectives_per_step(s.engine.stage, 1),
                                traits(s.engine.stage).gathers_on_acquire ? kStage3GatherNote : "");
  out += fmt::format(
      "  across the {} groups: {} = {:.3f} all-reduces of the Φ/G gradient shard (2(R-1)/R of its elements each)\n",
      groups, mb(across), static_cast<double>(across) / (phi * p / g * 2 * (r - 1) / r));
  if (s.engine.grad_accum > 1) {
    out += accumulation_traffic(s);
    out += fmt::format(
        "  (that is inside the group; across the groups: {} all-reduces of the shard, one per micro-batch)\n",
        s.engine.grad_accum);
  }
  if (quantized(s)) {
    out += compressed_traffic(s);
    out += fmt::format(
        "  (inside the group; the shard's all-reduce across the groups is not compressed: {} bytes per element)\n",
        s.engine.dtype.size());
  }
  return out;
}

// The paper's per-rank formula for this stage's partitioning.
const char* formula_text(Stage stage) {
  const StageTraits& t = traits(stage);
  if (t.partitions_params) return "(2p+K)Φ/N";
  if (t.partitions_grads) return "pΦ + (p+K)Φ/N";
  if (t.partitions_optimizer) return "2pΦ + KΦ/N";
  return "(2p+K)Φ";
}

}  // namespace

uint64_t formula_model_state_bytes(const RunStats& s, int rank) {
  const uint64_t phi = s.num_params;
  const uint64_t own = s.memory[rank].owned;
  const uint64_t p = s.engine.dtype.size();
  const uint64_t k = static_cast<uint64_t>(s.optimizer_k);
  const StageTraits& t = traits(s.engine.stage);
  // --offload-params: the parameter shards are on the disk.
  const uint64_t params = !s.engine.offload_params_dir.empty() ? 0 : t.partitions_params ? p * own : p * phi;
  const uint64_t grads = t.partitions_grads ? p * own : p * phi;
  // --offload-optimizer: K's bytes are on the disk.
  const uint64_t optimizer = !s.engine.offload_optimizer_dir.empty() ? 0 : t.partitions_optimizer ? k * own : k * phi;
  return params + grads + optimizer;
}

// Beyond the formula: stage 1's owned accumulator, and the pairwise sum's
// partials over micro-batches (core/stage.h), each the accumulator's size.
uint64_t accumulator_bytes(const RunStats& s, int rank) {
  return s.engine.dtype.size() *
         extra_grad_elements(s.engine.stage, s.engine.grad_accum, s.memory[rank].owned, s.num_params);
}

double expected_sent_phi(const RunStats& s) { return collectives_per_step(s.engine.stage, s.engine.grad_accum); }

namespace {

// The notes under the table: what a rank keeps beside the formula's bytes.
std::string model_state_notes(const RunStats& s) {
  std::string out;
  if (keeps_owned_accumulator(s.engine.stage, s.engine.grad_accum)) {
    out +=
        "  (stage 1 reduces every micro-batch, so with --grad-accum it keeps an owned accumulator pΦ/N\n"
        "   beside the flat local gradients it reduce-scatters from: docs/architecture.md)\n";
  }
  if (s.memory[0].block_scales > 0) {
    out +=
        "  (8-bit Adam keeps, beside K's bytes, an fp32 scale per moment for every 2048-element block\n"
        "   a rank's unit shards touch: docs/optim.md)\n";
  }
  if (s.memory[0].fp32_moments > 0) {
    out +=
        "  (fp32 units: 8-bit Adam keeps the token embedding's unit and units under min_8bit_size\n"
        "   elements in AdamW's fp32 moments, 6 bytes per element beyond K: docs/optim.md)\n";
  }
  if (s.memory[0].tensor_stats > 0) {
    out +=
        "  (Adafactor keeps, beside K's bytes, fp32 row and column statistics of every matrix a rank's\n"
        "   unit shards touch and v of its other elements, and a buffer of their size for each step's\n"
        "   factors: docs/optim.md)\n";
  }
  if (pairwise_partials(s.engine.grad_accum) > 0) {
    out += fmt::format(
        "  (--grad-accum {} sums the micro-batches pairwise, the same tree at every power-of-two N, holding\n"
        "   {} partial sum(s) the size of the gradient accumulator: docs/architecture.md)\n",
        s.engine.grad_accum, pairwise_partials(s.engine.grad_accum));
  }
  return out;
}

// --offload-optimizer and --offload-params: where K's bytes and the
// parameter shards went, the RAM they stream through, and the disk traffic
// of rank 0.
std::string offload_lines(const RunStats& s) {
  const RankMemory& m = s.memory[0];
  const double steps = static_cast<double>(std::max<int64_t>(1, s.steps_taken));
  const auto per_step = [&](uint64_t bytes) { return mb(static_cast<uint64_t>(static_cast<double>(bytes) / steps)); };
  const char* io = m.disk_uring != 0 ? "io_uring" : "threads";
  std::string out;
  if (!s.engine.offload_optimizer_dir.empty()) {
    const double pass_s = static_cast<double>(m.disk_pass_us) / 1e6;
    const uint64_t disk = m.disk - m.param_disk, read = m.disk_read - m.param_read;
    const uint64_t written = m.disk_written - m.param_written;
    out += fmt::format(
        "  (--offload-optimizer {} ({}{}): rank 0's master weights and optimizer states, {}, are on the disk;\n"
        "   RAM holds three staging buffers of the largest unit's (ledger: offload). The run read {} and\n"
        "   wrote {} of them, {} and {} per step, in passes of {:.2f} s in all ({:.2f} GB/s of disk traffic),\n"
        "   {:.2f} s of it waiting for the disk: docs/offload.md)\n",
        s.engine.offload_optimizer_dir, io, m.disk_direct != 0 ? ", O_DIRECT" : ", buffered", mb(disk), mb(read),
        mb(written), per_step(read), per_step(written), pass_s,
        pass_s > 0 ? static_cast<double>(read + written) / pass_s / 1e9 : 0.0,
        static_cast<double>(m.disk_wait_us) / 1e6);
  }
  if (!s.engine.offload_params_dir.empty()) {
    out += fmt::format(
        "  (--offload-params {}: rank 0's parameter shards, {}, are on the disk; RAM holds one staging buffer of\n"
        "   the largest shard (ledger: offload). The gathers read {} ({} per step) in {:.2f} s on the comm\n"
        "   thread; the steps wrote {} ({} per step) in {:.2f} s: docs/offload.md)\n",
        s.engine.offload_params_dir, mb(m.param_disk), mb(m.param_read), per_step(m.param_read),
        static_cast<double>(m.param_read_us) / 1e6, mb(m.param_written), per_step(m.param_written),
        static_cast<double>(m.param_write_us) / 1e6);
  }
  if (!out.empty()) out += fmt::format("   (ledger: offload, rank 0: {})\n", mb(m.get(zero::MemoryCategory::kOffload)));
  return out;
}

// The table of each rank's model-state bytes against the stage's formula,
// and the notes on what the formula leaves out.
std::string model_state_table(const RunStats& s) {
  using zero::MemoryCategory;
  const uint64_t phi = s.num_params;
  const int p = static_cast<int>(s.engine.dtype.size());
  const int replica = 2 * p + s.optimizer_k;
  std::string out = fmt::format("Model states per rank (measured by the ledger; formula {} with p = {}, K = {}):\n",
                                formula_text(s.engine.stage), p, s.optimizer_k);
  out += fmt::format("  {:>4}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {}\n", "rank", "params", "grads",
                     "master", "moments", "total", "formula", "");
  for (int r = 0; r < s.ranks; ++r) {
    const RankMemory& m = s.memory[r];
    const uint64_t moments = m.get(MemoryCategory::kAdamM) + m.get(MemoryCategory::kAdamV);
    const uint64_t accumulator = accumulator_bytes(s, r);
    const uint64_t expected =
        formula_model_state_bytes(s, r) + accumulator + m.block_scales + m.fp32_moments + m.tensor_stats;
    const bool states_off = !s.engine.offload_optimizer_dir.empty();
    const bool params_off = !s.engine.offload_params_dir.empty();
    const char* verdict = m.model_states != expected ? "DIFFERS"
                          : states_off && params_off ? "= formula less K and pΦ/N (on disk)"
                          : states_off               ? "= formula less K (on disk)"
                          : params_off               ? "= formula less pΦ/N (on disk)"
                          : accumulator > 0          ? "= formula + accumulators"
                          : m.fp32_moments > 0       ? "= formula + block scales + fp32 units"
                          : m.block_scales > 0       ? "= formula + block scales"
                          : m.tensor_stats > 0       ? "= formula + factored statistics"
                                                     : "= formula";
    out += fmt::format("  {:>4}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {}\n", r,
                       mb(m.get(MemoryCategory::kParams)), mb(m.get(MemoryCategory::kGrads)),
                       mb(m.get(MemoryCategory::kMaster)), mb(moments), mb(m.model_states), mb(expected), verdict);
  }
  out += model_state_notes(s);
  out += offload_lines(s);
  out += fmt::format(
      "  replica / rank 0 = {:.2f}x less memory for model states\n",
      static_cast<double>(replica) * phi / static_cast<double>(std::max<uint64_t>(1, s.memory[0].model_states)));
  return out;
}

// What rank 0 sent in the last step, against the paper's volume.
std::string traffic_lines(const RunStats& s) {
  const uint64_t phi = s.num_params;
  const int p = static_cast<int>(s.engine.dtype.size());
  const comm::CommStats& c = s.step_comm[0];
  const uint64_t ar = sent_by(c, comm::Collective::kAllReduce);
  const uint64_t rs = sent_by(c, comm::Collective::kReduceScatter);
  const uint64_t ag = sent_by(c, comm::Collective::kAllGather);
  const uint64_t total = ar + rs + ag;
  const double n = s.ranks;
  const double per_phi = s.ranks > 1 ? static_cast<double>(total) / (static_cast<double>(phi) * p * (n - 1) / n) : 0;
  std::string out =
      fmt::format("Sent per step by rank 0 (measured): all-reduce {} + reduce-scatter {} + all-gather {} = {}\n",
                  mb(ar), mb(rs), mb(ag), mb(total));
  const int group = s.shard_group > 0 ? s.shard_group : s.ranks;
  if (group < s.ranks) {
    out += hybrid_traffic(s, total, group);
  } else if (s.ranks > 1) {
    const bool gathers = traits(s.engine.stage).gathers_on_acquire;
    out += fmt::format("  = {:.3f}Φ elements x (N-1)/N; the paper: {}Φ{}\n", per_phi,
                       collectives_per_step(s.engine.stage, 1), gathers ? kStage3GatherNote : "");
    if (s.engine.grad_accum > 1) out += accumulation_traffic(s);
    if (quantized(s)) out += compressed_traffic(s);
  } else {
    out += "  (one rank: nothing to send)\n";
  }
  return out;
}

}  // namespace

std::string format_summary(const RunStats& s) {
  using zero::MemoryCategory;
  const uint64_t phi = s.num_params;
  const int p = static_cast<int>(s.engine.dtype.size());
  const int replica = 2 * p + s.optimizer_k;
  std::string out;
  out += fmt::format("\n== What ZeRO stage {} held and sent ({} ranks, {} backend, {}) ==\n", s.engine.stage, s.ranks,
                     s.backend, s.engine.dtype.name());
  const int group = s.shard_group > 0 ? s.shard_group : s.ranks;
  if (group < s.ranks) {
    out += fmt::format(
        "hybrid sharding: {} groups of {} ranks; states partitioned in a group, replicated across (N = G = {} below)\n",
        s.ranks / group, group, group);
  }
  out += fmt::format("model: {}\n", s.model_description);
  out += fmt::format("Φ = {} parameters. One full replica: {}Φ params + {}Φ grads + {}Φ optimizer = {}Φ = {}\n", phi, p,
                     p, s.optimizer_k, replica, mb(static_cast<uint64_t>(replica) * phi));
  out += model_state_table(s);
  out += traffic_lines(s);
  const RankMemory& m0 = s.memory[0];
  out += fmt::format("Peaks on rank 0: activations {}, gathered params {}, gradient buckets {}\n",
                     mb(m0.peak_of(MemoryCategory::kActivations)), mb(m0.peak_of(MemoryCategory::kGathered)),
                     mb(m0.peak_of(MemoryCategory::kBuckets)));
  out += fmt::format("Throughput: {:.0f} tokens/s over {:.1f} s\n", s.tokens_per_second, s.seconds);
  return out;
}

}  // namespace zerodp::train
