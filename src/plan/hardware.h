// SPDX-License-Identifier: Apache-2.0
// The machine a step-time prediction runs on (plan/step_time.h): how the
// ranks sit on hosts, the two kinds of link between them as an alpha-beta
// pair (latency per exchange step, bandwidth), the compute rate, the
// optimizer's cost per parameter and how much of the overlappable
// communication the machine really hides.
//
// Where the numbers come from, in the order they override each other:
// defaults (none for the link and the GEMM rate: a prediction needs them),
// a hardware JSON file (read_hardware_file; the format is in docs/plan.md,
// "Step time"), measurements (plan/calibration.h), then flags.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "comm/quantize.h"

namespace zerodp::plan {

// An alpha-beta link: one exchange step that moves `bytes` through it takes
// latency_s + bytes / bandwidth.
struct Link {
  double latency_s = 0;
  double bandwidth = 0;  // bytes per second, each direction
  std::string source;    // "flag", "file", "bench comm ..." (for the report)
  // The build (commit) whose collectives were timed for the fit, when that
  // is not this one: the prediction then does not use it
  // (Hardware::link_from_another_build).
  std::string measured_by = {};
  // bench comm --idle-ms of the fit: each call timed after that long idle
  // (0: calls back to back, or not fitted from bench comm).
  int idle_ms = 0;

  bool known() const { return bandwidth > 0; }
};

// The compressed collectives' packing on a rank's CPU (comm/quantize.h),
// seconds per element: quantize (pack) and dequantize (unpack to fp32 and
// round to the buffer's dtype). 0 when not known: the collective then costs
// its packed bytes alone.
struct CodecCost {
  double quantize_s = 0;
  double dequantize_s = 0;
  std::string source;
  // The build (commit) that measured it when that is not this one: the
  // prediction then does not use it (Hardware::cannot_predict).
  std::string measured_by = {};

  bool known() const { return quantize_s > 0 || dequantize_s > 0; }
};

struct Hardware {
  // Ranks of one data-parallel group on a host (the flat layout puts
  // consecutive ranks on a host, as mpirun --map-by slot does).
  int ranks_per_host = 1;
  // GPUs (or CPU ranks) per data-parallel rank, Megatron-style model
  // parallelism inside a host: each of them holds 1/model_parallel of every
  // unit, computes 1/model_parallel of the FLOPs and runs its own
  // data-parallel collectives on its slice, all of them through the host's
  // link at once.
  int model_parallel = 1;
  // CPU cores of a host that run its ranks (0: not given). The model gives
  // each rank (each rank x model_parallel) a core of its own at the compute
  // rate; a host with more of them than cores is oversubscribed, and the
  // prediction says so instead of giving a number (oversubscribed). With
  // overlap each rank's comm thread needs a second core while it hides
  // collectives behind compute (comm_threads_oversubscribed).
  int cores_per_host = 0;
  Link link;  // between hosts: the host's NIC, shared by all its ranks
  // The same link for a collective that starts as the rank's previous one
  // ends, with no compute between (not known: `link`). Fitted from bench
  // comm's calls back to back beside `link` from calls after idle: on a
  // shaped TCP link the two can differ by 2x (docs/scale.md, "Back to back
  // or after compute"), and the engine makes both kinds of call.
  Link link_back_to_back;
  Link local;                     // between ranks of one host (shared memory), per rank
  double gemm_flops = 0;          // FLOP/s of one rank's GEMM
  double model_efficiency = 1.0;  // the model's forward + backward rate / gemm_flops
  double optimizer_s_per_param = 0;
  // Of the communication the engine's schedule can overlap with compute,
  // the fraction the machine really hides (1: all of it).
  double overlap_efficiency = 1.0;
  std::string compute_source;  // where gemm_flops and model_efficiency came from
  CodecCost int8_codec, int4_codec;
  // A host's disk under --offload-optimizer, shared by its ranks: bytes per
  // second read and written (0: not known), and where they came from.
  struct Disk {
    double read_Bps = 0;
    double write_Bps = 0;
    std::string source;
    bool known() const { return read_Bps > 0 && write_Bps > 0; }
  } disk;

  double compute_flops() const { return gemm_flops * model_efficiency; }
  // Ranks (x model_parallel) a run of `ranks` ranks puts on one host.
  int ranks_on_host(int ranks) const { return std::min(ranks, ranks_per_host) * model_parallel; }
  // Why the model cannot predict a run of `ranks` ranks on this machine
  // (more of them on a host than its cores), or "" when it can.
  std::string oversubscribed(int ranks) const;
  // Why the overlapped step of `ranks` ranks cannot be predicted while the
  // serial one (overlap off) can: a collective in flight keeps its comm
  // thread busy (OpenMPI progresses only inside MPI_Testsome, which it
  // polls; the thread backend spins), so a schedule that runs collectives
  // beside compute runs two busy threads per rank. Fewer cores than that on
  // a host slow the compute the model runs at full rate. "" when the host
  // has them or its cores are not given; call only for a schedule that
  // runs collectives beside compute (StepTime::overlapped_compute_s).
  std::string comm_threads_oversubscribed(int ranks) const;
  // Why a run whose collectives use the codec of `q` (kNone: none) cannot be
  // predicted: that codec's cost measured by another build. "" otherwise.
  std::string codec_from_another_build(comm::Quantization q) const;
  // Why a run of `ranks` ranks cannot be predicted: the link its
  // collectives cross (between hosts when it spans several, else the
  // host's own) was fitted to another build's collectives. "" otherwise.
  std::string link_from_another_build(int ranks) const;
  // The codec of `q`; REQUIRES q != kNone.
  const CodecCost& codec(comm::Quantization q) const;
  CodecCost& codec(comm::Quantization q);
  // ConfigError naming the missing or impossible value and how to give it.
  void validate() const;
};

// Reads the keys present in `j` into `hw` (others keep their values):
// ranks_per_host, model_parallel, cores_per_host, link {bandwidth_GBps, latency_us},
// link_back_to_back and local (the same keys as link), gemm_tflops, model_efficiency,
// optimizer_ns_per_param, overlap_efficiency, codec {int8, int4: {quantize_ns,
// dequantize_ns}} (per element). InputFileError naming `what`
// and the key for an unknown key, a wrong type or a value out of range.
void apply_hardware_json(const nlohmann::json& j, Hardware& hw, std::string_view what);

// The file's JSON object applied to `hw`; InputFileError when it cannot be
// read or parsed.
void read_hardware_file(const std::filesystem::path& path, Hardware& hw);

// A JSON file (a hardware file, a bench's --json output); InputFileError
// naming `what` when it cannot be read or parsed.
nlohmann::json read_json_file(const std::filesystem::path& path, std::string_view what);

// The disk's rates from `zerodp bench disk --json` (read_GBps, write_GBps);
// InputFileError naming `what` when they are missing.
Hardware::Disk disk_from_bench_json(const nlohmann::json& j, std::string_view what);

// A bandwidth as typed: "1Gbit", "800Gbit", "100Mbit" (bits per second) or
// "12.5GB", "117MB" (bytes per second, 1e9 and 1e6); "/s" may follow.
// Returns bytes per second; ConfigError naming `what` otherwise.
double parse_bandwidth(std::string_view text, std::string_view what);

// "50us", "1ms", "0.5s", "200ns" -> seconds; ConfigError otherwise.
double parse_duration(std::string_view text, std::string_view what);

// "100T", "45G", "3.2e13" -> FLOP/s (T = 1e12, G = 1e9, M = 1e6).
double parse_flops(std::string_view text, std::string_view what);

}  // namespace zerodp::plan
