// SPDX-License-Identifier: Apache-2.0
#include "plan/hardware.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/build_info.h"
#include "core/error.h"

namespace zerodp::plan {
namespace {

// "12.5GB" -> {12.5, "gb"}; nullopt when there is no leading number.
struct NumberAndUnit {
  double value = 0;
  std::string unit;  // lowercase, without a trailing "/s"
};

std::optional<NumberAndUnit> split_number(std::string_view text) {
  const std::string s(text);
  size_t used = 0;
  NumberAndUnit r;
  try {
    r.value = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(r.value) || r.value <= 0) return std::nullopt;
  for (size_t i = used; i < s.size(); ++i) {
    if (s[i] != ' ') r.unit += static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  }
  if (r.unit.size() >= 2 && r.unit.ends_with("/s")) r.unit.resize(r.unit.size() - 2);
  return r;
}

double scaled(std::string_view text, std::string_view what, std::string_view forms,
              std::initializer_list<std::pair<std::string_view, double>> units) {
  if (const auto n = split_number(text)) {
    for (const auto& [unit, factor] : units) {
      if (n->unit == unit) return n->value * factor;
    }
  }
  ZDP_THROW(ConfigError, "[plan] {} '{}' is not understood: write {}", what, text, forms);
}

double number(const nlohmann::json& j, std::string_view key, std::string_view what, double lo, double hi) {
  ZDP_CHECK(j.is_number(), InputFileError, "[plan] {}: \"{}\" must be a number, got {}", what, key, j.dump());
  const double v = j.get<double>();
  ZDP_CHECK(std::isfinite(v) && v >= lo && v <= hi, InputFileError, "[plan] {}: \"{}\" is {}, outside [{}, {}]", what,
            key, v, lo, hi);
  return v;
}

void apply_link_json(const nlohmann::json& j, Link& link, std::string_view key, std::string_view what) {
  ZDP_CHECK(j.is_object(), InputFileError, "[plan] {}: \"{}\" must be an object with bandwidth_GBps and latency_us",
            what, key);
  for (const auto& [k, v] : j.items()) {
    const std::string name = std::string(key) + "." + k;
    if (k == "bandwidth_GBps") {
      link.bandwidth = number(v, name, what, 1e-9, 1e9) * 1e9;
    } else if (k == "latency_us") {
      link.latency_s = number(v, name, what, 0, 1e9) * 1e-6;
    } else {
      ZDP_THROW(InputFileError, "[plan] {}: unknown key \"{}\" (a link has bandwidth_GBps and latency_us)", what, name);
    }
  }
  link.source = std::string(what);
}

// "codec": {"int8": {"quantize_ns": .., "dequantize_ns": ..}, "int4": {..}}
void apply_codec_json(const nlohmann::json& j, Hardware& hw, std::string_view what) {
  ZDP_CHECK(j.is_object(), InputFileError, "[plan] {}: \"codec\" must be an object with int8 and/or int4", what);
  for (const auto& [kind, costs] : j.items()) {
    ZDP_CHECK(kind == "int8" || kind == "int4", InputFileError,
              "[plan] {}: unknown key \"codec.{}\" (the codecs are int8 and int4)", what, kind);
    ZDP_CHECK(costs.is_object(), InputFileError,
              "[plan] {}: \"codec.{}\" must be an object with quantize_ns and dequantize_ns", what, kind);
    CodecCost& c = hw.codec(kind == "int8" ? comm::Quantization::kInt8 : comm::Quantization::kInt4);
    for (const auto& [k, v] : costs.items()) {
      const std::string name = fmt::format("codec.{}.{}", kind, k);
      if (k == "quantize_ns") {
        c.quantize_s = number(v, name, what, 0, 1e9) * 1e-9;
      } else if (k == "dequantize_ns") {
        c.dequantize_s = number(v, name, what, 0, 1e9) * 1e-9;
      } else {
        ZDP_THROW(InputFileError, "[plan] {}: unknown key \"{}\" (a codec has quantize_ns and dequantize_ns)", what,
                  name);
      }
    }
    c.source = std::string(what);
  }
}

}  // namespace

const CodecCost& Hardware::codec(comm::Quantization q) const {
  return q == comm::Quantization::kInt4 ? int4_codec : int8_codec;
}

CodecCost& Hardware::codec(comm::Quantization q) { return q == comm::Quantization::kInt4 ? int4_codec : int8_codec; }

void Hardware::validate() const {
  ZDP_CHECK(ranks_per_host >= 1, ConfigError, "[plan] ranks per host must be at least 1, got {}", ranks_per_host);
  ZDP_CHECK(model_parallel >= 1, ConfigError, "[plan] model parallel degree must be at least 1, got {}",
            model_parallel);
  ZDP_CHECK(gemm_flops > 0, ConfigError,
            "[plan] --predict needs a GEMM rate: give --gemm-rate (e.g. 100T), --calibrate-model (zerodp bench model "
            "--json) or gemm_tflops in --hardware");
  ZDP_CHECK(model_efficiency > 0 && model_efficiency <= 1, ConfigError,
            "[plan] model efficiency must be in (0, 1], got {}", model_efficiency);
  ZDP_CHECK(overlap_efficiency >= 0 && overlap_efficiency <= 1, ConfigError,
            "[plan] overlap efficiency must be in [0, 1], got {}", overlap_efficiency);
  ZDP_CHECK(optimizer_s_per_param >= 0, ConfigError, "[plan] optimizer cost per parameter must not be negative");
}

namespace {

// "" when `busy` threads fit a host's cores (or the cores are not given),
// else "N <what> on a host of C core(s)" for the caller's reason.
std::string over_cores(int busy, int cores, std::string_view what) {
  if (cores == 0 || busy <= cores) return "";
  return fmt::format("{} {} on a host of {} core{}", busy, what, cores, cores == 1 ? "" : "s");
}

}  // namespace

std::string Hardware::oversubscribed(int ranks) const {
  const std::string over = over_cores(ranks_on_host(ranks), cores_per_host, "ranks");
  return over.empty() ? over : over + ": the model gives each its own core (oversubscribed)";
}

std::string Hardware::comm_threads_oversubscribed(int ranks) const {
  const std::string over = over_cores(2 * ranks_on_host(ranks), cores_per_host, "busy threads");
  return over.empty() ? over
                      : "overlap runs " + over +
                            ": each rank's comm thread polls the collectives it runs beside compute, and the model "
                            "gives it a core of its own; serial (--no-overlap) is predicted";
}

std::string Hardware::codec_from_another_build(comm::Quantization q) const {
  if (q == comm::Quantization::kNone || codec(q).measured_by.empty()) return "";
  return fmt::format(
      "the {} codec's cost was measured by another build ({}; this is {}): run zerodp bench comm "
      "--codec --json with this binary",
      comm::quantization_name(q), codec(q).measured_by, build_info().commit);
}

std::string Hardware::link_from_another_build(int ranks) const {
  if (ranks <= 1) return "";
  const bool across_hosts = ranks > ranks_per_host;
  const Link& l = !across_hosts ? local : link.measured_by.empty() ? link_back_to_back : link;
  if (l.measured_by.empty()) return "";
  return fmt::format(
      "the {} link was fitted to another build's collectives ({}; this is {}): run zerodp bench comm --json with "
      "this binary",
      across_hosts ? "hosts'" : "host's own", l.measured_by, build_info().commit);
}

void apply_hardware_json(const nlohmann::json& j, Hardware& hw, std::string_view what) {
  ZDP_CHECK(j.is_object(), InputFileError, "[plan] {}: expected a JSON object, got {}", what, j.type_name());
  for (const auto& [k, v] : j.items()) {
    if (k == "ranks_per_host") {
      hw.ranks_per_host = static_cast<int>(number(v, k, what, 1, 1 << 20));
    } else if (k == "model_parallel") {
      hw.model_parallel = static_cast<int>(number(v, k, what, 1, 1 << 20));
    } else if (k == "cores_per_host") {
      hw.cores_per_host = static_cast<int>(number(v, k, what, 1, 1 << 20));
    } else if (k == "link") {
      apply_link_json(v, hw.link, k, what);
    } else if (k == "link_back_to_back") {
      apply_link_json(v, hw.link_back_to_back, k, what);
    } else if (k == "local") {
      apply_link_json(v, hw.local, k, what);
    } else if (k == "gemm_tflops") {
      hw.gemm_flops = number(v, k, what, 1e-9, 1e9) * 1e12;
      hw.compute_source = std::string(what);
    } else if (k == "model_efficiency") {
      hw.model_efficiency = number(v, k, what, 1e-6, 1);
    } else if (k == "optimizer_ns_per_param") {
      hw.optimizer_s_per_param = number(v, k, what, 0, 1e9) * 1e-9;
    } else if (k == "overlap_efficiency") {
      hw.overlap_efficiency = number(v, k, what, 0, 1);
    } else if (k == "codec") {
      apply_codec_json(v, hw, what);
    } else if (k == "comment") {
      // free text, for the reader of the file
    } else {
      ZDP_THROW(InputFileError,
                "[plan] {}: unknown key \"{}\" (known: ranks_per_host, model_parallel, cores_per_host, link, "
                "link_back_to_back, local, gemm_tflops, model_efficiency, optimizer_ns_per_param, "
                "overlap_efficiency, codec, comment)",
                what, k);
    }
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path, std::string_view what) {
  std::ifstream in(path);
  ZDP_CHECK(in.good(), InputFileError, "[plan] {}: cannot open the file", what);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    ZDP_THROW(InputFileError, "[plan] {}: not valid JSON: {}", what, e.what());
  }
}

void read_hardware_file(const std::filesystem::path& path, Hardware& hw) {
  const std::string what = "--hardware " + path.string();
  apply_hardware_json(read_json_file(path, what), hw, what);
}

Hardware::Disk disk_from_bench_json(const nlohmann::json& j, std::string_view what) {
  ZDP_CHECK(j.is_object() && j.contains("read_GBps") && j.contains("write_GBps"), InputFileError,
            "[plan] {}: not the output of zerodp bench disk --json (read_GBps and write_GBps are missing)", what);
  Hardware::Disk d;
  d.read_Bps = number(j.at("read_GBps"), "read_GBps", what, 1e-6, 1e6) * 1e9;
  d.write_Bps = number(j.at("write_GBps"), "write_GBps", what, 1e-6, 1e6) * 1e9;
  d.source = "bench disk " + std::string(what);
  return d;
}

double parse_bandwidth(std::string_view text, std::string_view what) {
  return scaled(text, what, "a rate such as 1Gbit, 800Gbps, 100Mbit (bits/s) or 12.5GB, 117MB (bytes/s)",
                {{"gbit", 1e9 / 8},
                 {"gbps", 1e9 / 8},
                 {"mbit", 1e6 / 8},
                 {"mbps", 1e6 / 8},
                 {"tbit", 1e12 / 8},
                 {"gb", 1e9},
                 {"mb", 1e6},
                 {"tb", 1e12}});
}

double parse_duration(std::string_view text, std::string_view what) {
  return scaled(text, what, "a time such as 50us, 1ms, 200ns or 0.5s",
                {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}});
}

double parse_flops(std::string_view text, std::string_view what) {
  return scaled(text, what, "a rate in FLOP/s such as 100T, 45G, 800M or 3.2e13",
                {{"", 1.0}, {"t", 1e12}, {"g", 1e9}, {"m", 1e6}, {"tflops", 1e12}, {"gflops", 1e9}});
}

}  // namespace zerodp::plan
