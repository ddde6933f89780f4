// SPDX-License-Identifier: Apache-2.0
#include "plan/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/build_info.h"
#include "core/error.h"
#include "plan/collective_cost.h"

namespace zerodp::plan {
namespace {

constexpr std::string_view kCommFormat = "zerodp-bench-comm";
constexpr int kCommVersion = 1;

const nlohmann::json& field(const nlohmann::json& j, std::string_view key, std::string_view what) {
  ZDP_CHECK(j.is_object(), InputFileError, "[plan] {}: expected a JSON object, got {}", what, j.type_name());
  const auto it = j.find(key);
  ZDP_CHECK(it != j.end(), InputFileError, "[plan] {}: no \"{}\"", what, key);
  return *it;
}

double positive(const nlohmann::json& j, std::string_view key, std::string_view what) {
  const nlohmann::json& v = field(j, key, what);
  ZDP_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0, InputFileError,
            "[plan] {}: \"{}\" must be a positive number, got {}", what, key, v.dump());
  return v.get<double>();
}

double non_negative(const nlohmann::json& j, std::string_view key, std::string_view what) {
  const nlohmann::json& v = field(j, key, what);
  ZDP_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0, InputFileError,
            "[plan] {}: \"{}\" must be a number >= 0, got {}", what, key, v.dump());
  return v.get<double>();
}

std::string text(const nlohmann::json& j, std::string_view key, std::string_view what) {
  const nlohmann::json& v = field(j, key, what);
  ZDP_CHECK(v.is_string(), InputFileError, "[plan] {}: \"{}\" must be a string, got {}", what, key, v.dump());
  return v.get<std::string>();
}

comm::Collective parse_collective(const std::string& name, std::string_view what) {
  for (int k = 0; k < comm::kNumCollectives; ++k) {
    const auto kind = static_cast<comm::Collective>(k);
    if (comm::collective_name(kind) == name) return kind;
  }
  ZDP_THROW(InputFileError, "[plan] {}: unknown collective \"{}\"", what, name);
}

std::optional<CollectiveOp> cost_op(comm::Collective c) {
  switch (c) {
    case comm::Collective::kAllReduce:
      return CollectiveOp::kAllReduce;
    case comm::Collective::kReduceScatter:
      return CollectiveOp::kReduceScatter;
    case comm::Collective::kAllGather:
      return CollectiveOp::kAllGather;
    default:
      return std::nullopt;
  }
}

}  // namespace

double bus_factor(comm::Collective kind, int ranks) {
  if (kind == comm::Collective::kBroadcast) return 1;
  const double f = static_cast<double>(ranks - 1) / ranks;
  return kind == comm::Collective::kAllReduce ? 2 * f : f;
}

nlohmann::json comm_measurements_to_json(const CommMeasurements& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CommSample& s : m.samples) {
    const double algbw = static_cast<double>(s.bytes) / s.seconds / 1e9;
    rows.push_back({{"collective", std::string(comm::collective_name(s.collective))},
                    {"bytes", s.bytes},
                    {"count", s.count},
                    {"seconds", s.seconds},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", algbw * bus_factor(s.collective, m.ranks)}});
  }
  nlohmann::json j = {{"format", kCommFormat}, {"version", kCommVersion}, {"backend", m.backend},
                      {"ranks", m.ranks},      {"dtype", m.dtype},        {"rows", rows}};
  if (!m.build.empty()) j["build"] = m.build;
  if (m.idle_ms > 0) j["idle_ms"] = m.idle_ms;
  if (!m.codec.empty()) {
    nlohmann::json codec = nlohmann::json::array();
    for (const CodecSample& c : m.codec) {
      codec.push_back({{"quantization", std::string(comm::quantization_name(c.quantization))},
                       {"bytes", c.bytes},
                       {"count", c.count},
                       {"quantize_seconds", c.quantize_seconds},
                       {"dequantize_seconds", c.dequantize_seconds}});
    }
    j["codec"] = codec;
  }
  return j;
}

CommMeasurements comm_measurements_from_json(const nlohmann::json& j, std::string_view what) {
  ZDP_CHECK(text(j, "format", what) == kCommFormat, InputFileError,
            "[plan] {}: \"format\" is not \"{}\": give the output of zerodp bench comm --json", what, kCommFormat);
  ZDP_CHECK(field(j, "version", what) == kCommVersion, InputFileError, "[plan] {}: version {} is not {}", what,
            field(j, "version", what).dump(), kCommVersion);
  CommMeasurements m;
  m.backend = text(j, "backend", what);
  m.ranks = static_cast<int>(positive(j, "ranks", what));
  m.dtype = text(j, "dtype", what);
  if (j.contains("build")) m.build = text(j, "build", what);
  if (j.contains("idle_ms")) m.idle_ms = static_cast<int>(positive(j, "idle_ms", what));
  const nlohmann::json& rows = field(j, "rows", what);
  ZDP_CHECK(rows.is_array(), InputFileError, "[plan] {}: \"rows\" must be an array", what);
  for (const nlohmann::json& r : rows) {
    CommSample s;
    s.collective = parse_collective(text(r, "collective", what), what);
    s.bytes = static_cast<size_t>(positive(r, "bytes", what));
    s.count = static_cast<size_t>(positive(r, "count", what));
    s.seconds = positive(r, "seconds", what);
    m.samples.push_back(s);
  }
  if (j.contains("codec")) {
    const nlohmann::json& codec = j.at("codec");
    ZDP_CHECK(codec.is_array(), InputFileError, "[plan] {}: \"codec\" must be an array", what);
    for (const nlohmann::json& r : codec) {
      CodecSample c;
      const std::string kind = text(r, "quantization", what);
      ZDP_CHECK(kind == "int8" || kind == "int4", InputFileError,
                "[plan] {}: codec \"quantization\" is \"{}\", not int8 or int4", what, kind);
      c.quantization = kind == "int8" ? comm::Quantization::kInt8 : comm::Quantization::kInt4;
      c.bytes = static_cast<size_t>(positive(r, "bytes", what));
      c.count = static_cast<size_t>(positive(r, "count", what));
      c.quantize_seconds = positive(r, "quantize_seconds", what);
      c.dequantize_seconds = positive(r, "dequantize_seconds", what);
      m.codec.push_back(c);
    }
  }
  return m;
}

double ModelMeasurement::model_flops() const {
  return train_flops_per_position * batch * seq_len / (forward_s + backward_s);
}

ModelMeasurement model_measurement_from_json(const nlohmann::json& j, std::string_view what) {
  ModelMeasurement m;
  m.model = text(j, "model", what);
  m.num_params = static_cast<uint64_t>(positive(j, "num_params", what));
  m.batch = static_cast<int>(positive(j, "batch", what));
  m.seq_len = static_cast<int>(positive(j, "seq_len", what));
  m.sgemm_flops = positive(j, "sgemm_gflops", what) * 1e9;
  m.train_flops_per_position = positive(j, "train_flops_per_position", what);
  const nlohmann::json& s = field(j, "seconds_per_step", what);
  m.forward_s = positive(s, "forward", what);
  m.backward_s = positive(s, "backward", what);
  m.adamw_s = non_negative(s, "adamw", what);
  return m;
}

Link fit_link(const CommMeasurements& m, const Hardware& hw, std::string_view source) {
  const std::string where(source);
  ZDP_CHECK(m.ranks >= 2, InputFileError, "[plan] {}: a bench comm run on {} rank calibrates no link", where, m.ranks);
  const bool across_hosts = m.ranks > hw.ranks_per_host;
  const auto bytes_per_exchange = [&](double s) {
    return across_hosts ? link_bytes_per_exchange(s, m.ranks, hw) : local_bytes_per_exchange(s, m.ranks, hw);
  };
  size_t smallest = 0, largest = 0;
  for (const CommSample& s : m.samples) {
    if (!cost_op(s.collective)) continue;
    smallest = smallest == 0 ? s.bytes : std::min(smallest, s.bytes);
    largest = std::max(largest, s.bytes);
  }
  ZDP_CHECK(largest > 0, InputFileError,
            "[plan] {}: no all_reduce, reduce_scatter or all_gather rows to calibrate from", where);
  // Latency: the smallest buffer's time per exchange step, least over collectives.
  double latency = 0;
  bool first = true;
  for (const CommSample& s : m.samples) {
    const auto op = cost_op(s.collective);
    if (!op || s.bytes != smallest) continue;
    const double per_step = s.seconds / exchange_steps(*op);
    latency = first ? per_step : std::min(latency, per_step);
    first = false;
  }
  // Bandwidth: the buffers of at least a quarter of the largest.
  double moved = 0, time = 0;
  for (const CommSample& s : m.samples) {
    const auto op = cost_op(s.collective);
    if (!op || s.bytes * 4 < largest || s.bytes == smallest) continue;
    const int steps = exchange_steps(*op);
    moved += steps * bytes_per_exchange(static_cast<double>(s.bytes));
    time += s.seconds - steps * latency;
  }
  ZDP_CHECK(moved > 0 && time > 0, InputFileError,
            "[plan] {}: the rows give no bandwidth (need sizes well above the smallest, {} bytes): run bench comm "
            "with a larger --max-bytes",
            where, smallest);
  return Link{.latency_s = latency,
              .bandwidth = moved / time,
              .source = fmt::format("{} ({} ranks, {}, {})", where, m.ranks, m.backend,
                                    m.idle_ms > 0 ? fmt::format("each call after {} ms idle", m.idle_ms)
                                                  : std::string("calls back to back"))};
}

CodecCost fit_codec(const CommMeasurements& m, comm::Quantization q, std::string_view source) {
  size_t largest = 0;
  for (const CodecSample& c : m.codec) {
    if (c.quantization == q) largest = std::max(largest, c.bytes);
  }
  double count = 0, packing = 0, unpacking = 0;
  for (const CodecSample& c : m.codec) {
    if (c.quantization != q || c.bytes * 4 < largest) continue;
    count += static_cast<double>(c.count);
    packing += c.quantize_seconds;
    unpacking += c.dequantize_seconds;
  }
  if (count == 0) return {};
  return CodecCost{.quantize_s = packing / count,
                   .dequantize_s = unpacking / count,
                   .source = fmt::format("{} ({} ranks at once, {})", source, m.ranks, m.dtype)};
}

void calibrate_comm(const CommMeasurements& m, Hardware& hw, std::string_view source) {
  // The fit is the machine's link as this build's collectives drive it
  // (their chunks, pipelining and copies), and the codec is our code: both
  // are this build's only if this build measured them.
  const std::string other_build = !m.build.empty() && m.build != build_info().commit ? m.build : "";
  Link link = fit_link(m, hw, source);
  link.measured_by = other_build;
  link.idle_ms = m.idle_ms;
  if (m.ranks <= hw.ranks_per_host) {
    hw.local = link;
  } else if (m.idle_ms > 0) {
    hw.link = link;  // calls after compute, as most of a run's
  } else {
    // Calls back to back: the link for those that follow another at once,
    // and for every call unless a file timed after idle gives that one.
    hw.link_back_to_back = link;
    if (hw.link.idle_ms == 0) hw.link = link;
  }
  for (const comm::Quantization q : {comm::Quantization::kInt8, comm::Quantization::kInt4}) {
    CodecCost codec = fit_codec(m, q, source);
    codec.measured_by = other_build;
    if (codec.known()) hw.codec(q) = codec;
  }
}

void calibrate_compute(const ModelMeasurement& m, Hardware& hw, std::string_view source) {
  hw.gemm_flops = m.sgemm_flops;
  hw.model_efficiency = std::min(1.0, m.model_flops() / m.sgemm_flops);
  hw.optimizer_s_per_param = m.adamw_s / static_cast<double>(m.num_params);
  hw.compute_source = fmt::format("{} ({}, B {} x T {})", source, m.model, m.batch, m.seq_len);
}

}  // namespace zerodp::plan
