// SPDX-License-Identifier: Apache-2.0
#include "bench/comm_bench_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bench/comm_bench_parse.h"
#include "core/build_info.h"
#include "plan/calibration.h"

namespace zerodp::bench {

using comm::Collective;
using plan::bus_factor;

std::string format_comm_json(const CommBenchOptions& o, const std::vector<CommBenchRow>& rows,
                             const std::vector<CodecBenchRow>& codec_rows) {
  plan::CommMeasurements m{.backend = std::string(comm::backend_name(o.backend)),
                           .ranks = o.ranks,
                           .dtype = std::string(o.dtype.name()),
                           .samples = {},
                           .codec = {},
                           .build = build_info().commit,
                           .idle_ms = o.idle_ms};
  for (const CommBenchRow& r : rows) {
    m.samples.push_back({.collective = r.collective, .bytes = r.bytes, .count = r.count, .seconds = r.seconds});
  }
  for (const CodecBenchRow& r : codec_rows) {
    m.codec.push_back({.quantization = r.quantization,
                       .bytes = r.bytes,
                       .count = r.count,
                       .quantize_seconds = r.quantize_seconds,
                       .dequantize_seconds = r.dequantize_seconds});
  }
  return plan::comm_measurements_to_json(m).dump(2);
}

std::string format_codec_table(const CommBenchOptions& o, const std::vector<CodecBenchRow>& rows) {
  std::string out;
  auto add = std::back_inserter(out);
  if (rows.empty()) return out;
  fmt::format_to(add, "\n# codec: comm::quantize and dequantize_into of {} elements on all {} ranks at once\n",
                 o.dtype.name(), o.ranks);
  fmt::format_to(add, "{:>6} {:>10} {:>11} {:>11} {:>11} {:>10} {:>10}\n", "codec", "size", "count", "pack ns/el",
                 "unpack ns/el", "pack GB/s", "unpack GB/s");
  for (const CodecBenchRow& r : rows) {
    const std::string size =
        r.bytes >= (size_t{1} << 20) ? fmt::format("{}MiB", r.bytes >> 20) : fmt::format("{}KiB", r.bytes >> 10);
    const double n = static_cast<double>(r.count);
    fmt::format_to(add, "{:>6} {:>10} {:>11} {:>11.2f} {:>11.2f} {:>10.3f} {:>10.3f}\n",
                   comm::quantization_name(r.quantization), size, r.count, r.quantize_seconds / n * 1e9,
                   r.dequantize_seconds / n * 1e9, r.bytes / r.quantize_seconds / 1e9,
                   r.bytes / r.dequantize_seconds / 1e9);
  }
  return out;
}

std::string format_comm_table(const CommBenchOptions& o, const std::vector<CommBenchRow>& rows,
                              std::string_view baseline_note) {
  const int n = o.ranks;
  std::string out;
  auto add = std::back_inserter(out);
  fmt::format_to(add, "# zerodp bench comm: backend {}, {} ranks, {}; baseline: {}; memcpy: one thread, same bytes\n",
                 comm::backend_name(o.backend), n, o.dtype.name(), baseline_note);
  if (o.idle_ms > 0) {
    fmt::format_to(
        add, "# each of our calls after {} ms idle on every rank, and timed alone (the baseline's back to back)\n",
        o.idle_ms);
  }
  fmt::format_to(add,
                 "# algbw = S/t, busbw = algbw * factor (all_reduce 2(n-1)/n, reduce_scatter and all_gather (n-1)/n, "
                 "broadcast 1); GB/s = 1e9 bytes/s\n");
  for (Collective kind : o.collectives) {
    fmt::format_to(add, "\n# {}\n", comm::collective_name(kind));
    fmt::format_to(add, "{:>10} {:>11} {:>5} {:>11} {:>8} {:>8} {:>10} {:>8} {:>10} {:>9}\n", "size", "count", "type",
                   "time(us)", "algbw", "busbw", "mpi_busbw", "vs_mpi", "memcpy_bw", "vs_memcpy");
    for (size_t bytes : o.sizes) {
      const auto it = std::find_if(rows.begin(), rows.end(),
                                   [&](const CommBenchRow& r) { return r.collective == kind && r.bytes == bytes; });
      if (it == rows.end()) continue;
      const CommBenchRow& r = *it;
      const double algbw = bytes / r.seconds / 1e9;
      const double busbw = algbw * bus_factor(kind, n);
      const std::string size =
          bytes >= (size_t{1} << 20) ? fmt::format("{}MiB", bytes >> 20) : fmt::format("{}KiB", bytes >> 10);
      std::string mpi = "-", vs_mpi = "-";
      if (r.mpi_seconds > 0) {
        const double mpi_busbw = r.mpi_count * o.dtype.size() / r.mpi_seconds / 1e9 * bus_factor(kind, n);
        mpi = fmt::format("{:.3f}", mpi_busbw);
        if (mpi_busbw > 0) vs_mpi = fmt::format("{:.2f}x", busbw / mpi_busbw);
      }
      const double memcpy_bw = bytes / r.memcpy_seconds / 1e9;
      fmt::format_to(add, "{:>10} {:>11} {:>5} {:>11.1f} {:>8.3f} {:>8.3f} {:>10} {:>8} {:>10.3f} {:>8.2f}x\n", size,
                     r.count, o.dtype.name(), r.seconds * 1e6, algbw, busbw, mpi, vs_mpi, memcpy_bw, busbw / memcpy_bw);
    }
  }
  return out;
}

std::string format_baseline_line(const CommBaselineRow& row) {
  return fmt::format("zerodp-baseline {} {} {} {:.9e}", comm::collective_name(row.collective), row.bytes, row.count,
                     row.seconds);
}

std::optional<CommBaselineRow> parse_baseline_line(const std::string& line) {
  std::istringstream in(line);
  std::string tag, name;
  CommBaselineRow row;
  in >> tag >> name >> row.bytes >> row.count >> row.seconds;
  if (!in || tag != "zerodp-baseline") return std::nullopt;
  row.collective = parse_bench_collective(name);
  return row;
}

}  // namespace zerodp::bench
