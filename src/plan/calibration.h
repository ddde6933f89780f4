// SPDX-License-Identifier: Apache-2.0
// Calibrating the step-time model (plan/step_time.h) from what the machine
// measured:
//
// - `zerodp bench comm --json`: the time per call of our collectives at each
//   size. This file defines that JSON (CommMeasurements: written by
//   src/bench through comm_measurements_to_json, read here), so the format
//   has one home. The fit inverts plan/collective_cost.h: the latency from
//   the smallest buffer, the bandwidth from the largest ones,
//   bandwidth = sum(steps x link bytes) / sum(time - steps x latency).
//   A run across hosts (N > ranks_per_host) calibrates the link between
//   hosts, a run on one host the shared-memory link.
//   With --codec, the file also holds the compressed collectives' packing
//   and unpacking time per element (CodecSample), which calibrates the codec.
// - `zerodp bench model --json` (src/bench/model_bench_format.cc writes it;
//   the keys read here are listed in docs/plan.md): the sgemm rate, the
//   model's FLOPs and its mean forward, backward and AdamW seconds per step;
//   the model's rate over the sgemm rate is the model efficiency.
//
// Errors: InputFileError naming the file (or `what`) and the problem.
// Thread-safety: all functions are pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "comm/quantize.h"
#include "comm/types.h"
#include "plan/hardware.h"

namespace zerodp::plan {

struct CommSample {
  comm::Collective collective = comm::Collective::kAllReduce;
  size_t bytes = 0;    // S, the full buffer
  size_t count = 0;    // elements
  double seconds = 0;  // per call, the slowest rank's
};

// The compressed collectives' packing (bench comm --codec): every rank packs
// (comm::quantize) and unpacks (comm::dequantize_into) a buffer of `count`
// elements of the run's dtype at once, as the ranks of a run do on their
// comm threads; the slowest rank's seconds per call.
struct CodecSample {
  comm::Quantization quantization = comm::Quantization::kInt8;
  size_t bytes = 0;  // S, the plain buffer
  size_t count = 0;
  double quantize_seconds = 0;
  double dequantize_seconds = 0;
};

struct CommMeasurements {
  std::string backend;  // "thread" or "mpi"
  int ranks = 0;
  std::string dtype;
  std::vector<CommSample> samples;
  std::vector<CodecSample> codec;  // JSON "codec", present only when measured
  // The commit of the zerodp that measured (core/build_info.h); JSON
  // "build", absent from files written before it was recorded ("").
  std::string build = {};
  // bench comm's --idle-ms: the idle time before each timed call (JSON
  // "idle_ms", absent: 0, back to back).
  int idle_ms = 0;
};

// busbw / algbw, nccl-tests' convention: all_reduce 2(n-1)/n,
// reduce_scatter and all_gather (n-1)/n, broadcast 1.
double bus_factor(comm::Collective kind, int ranks);

// {"format":"zerodp-bench-comm","version":1,"backend":..,"ranks":..,"dtype":..,
//  "rows":[{"collective":"all_gather","bytes":..,"count":..,"seconds":..,
//           "algbw_GBps":..,"busbw_GBps":..}]} (algbw and busbw for readers;
// the reader ignores them), and "build" when known.
nlohmann::json comm_measurements_to_json(const CommMeasurements& m);
CommMeasurements comm_measurements_from_json(const nlohmann::json& j, std::string_view what);

struct ModelMeasurement {
  std::string model;
  uint64_t num_params = 0;
  int batch = 0, seq_len = 0;
  double sgemm_flops = 0;                             // FLOP/s
  double train_flops_per_position = 0;                // forward + backward
  double forward_s = 0, backward_s = 0, adamw_s = 0;  // mean per step

  double model_flops() const;  // forward + backward FLOP/s: step FLOPs / (forward_s + backward_s)
};
ModelMeasurement model_measurement_from_json(const nlohmann::json& j, std::string_view what);

// The link the measurements calibrate (the one between hosts when the run
// spanned hosts, as `hw.ranks_per_host` says), fitted as above. Needs at
// least one all_reduce, reduce_scatter or all_gather sample.
Link fit_link(const CommMeasurements& m, const Hardware& hw, std::string_view source);

// The codec's cost per element of `q` from the buffers of at least a
// quarter of the largest: sum(seconds) / sum(count), packing and unpacking
// apart. Unknown (zeros) when the measurements have no such rows.
CodecCost fit_codec(const CommMeasurements& m, comm::Quantization q, std::string_view source);

// Fits and stores the link, and each codec the measurements hold into hw's.
// One host's ranks: hw.local. Across hosts, calls timed after idle
// (--idle-ms): hw.link; calls back to back: hw.link_back_to_back, and
// hw.link too unless a file timed after idle gave it (either order).
void calibrate_comm(const CommMeasurements& m, Hardware& hw, std::string_view source);

// gemm_flops, model_efficiency and optimizer_s_per_param from the
// measurement.
void calibrate_compute(const ModelMeasurement& m, Hardware& hw, std::string_view source);

}  // namespace zerodp::plan
