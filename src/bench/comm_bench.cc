// SPDX-License-Identifier: Apache-2.0
#include "bench/comm_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/mpi.h"
#include "comm/shard.h"
#include "core/aligned_buffer.h"
#include "core/convert.h"

namespace zerodp::bench {
namespace {

using comm::Collective;
using Clock = std::chrono::steady_clock;

// Every measurement is the best of kBatches batches of `iters` calls: on a
// shared machine, background load only ever makes a batch slower.
constexpr int kBatches = 3;

int auto_iters(const CommBenchOptions& o, double one_call_s) {
  if (o.iters > 0) return o.iters;
  const double n = o.target_s / kBatches / std::max(one_call_s, 1e-7);
  return static_cast<int>(std::clamp(n, 3.0, 2000.0));
}

// Seconds per call of `once` on every rank at once: the slowest rank's
// mean (the clock stops after a barrier, so a collective's slowest peer
// counts), best of kBatches; a first untimed call touches the pages.
// With an idle time (CommBenchOptions::idle_ms), each call starts after
// a barrier and the idle time on every rank, and a rank times its calls
// alone: the slowest rank's mean of them.
template <typename F>
double time_on_every_rank(comm::Communicator& c, const CommBenchOptions& o, F&& once) {
  auto timed = [&](int iters) {
    double local = 0;
    if (o.idle_ms > 0) {
      for (int i = 0; i < iters; ++i) {
        c.barrier();
        std::this_thread::sleep_for(std::chrono::milliseconds(o.idle_ms));
        const auto start = Clock::now();
        once();
        local += std::chrono::duration<double>(Clock::now() - start).count();
      }
      local /= iters;
    } else {
      c.barrier();
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) once();
      c.barrier();
      local = std::chrono::duration<double>(Clock::now() - start).count() / iters;
    }
    return c.all_reduce_scalar(local, comm::ReduceOp::kMax);
  };
  once();
  // The idle time counts against the size's time budget: a call of 40 us
  // after 300 ms idle is a 300 ms iteration, not a 40 us one.
  const int iters = auto_iters(o, timed(1) + o.idle_ms / 1e3);
  double best = timed(iters);
  for (int batch = 1; batch < kBatches; ++batch) best = std::min(best, timed(iters));
  return best;
}

// Seconds per call on this rank's communicator, the slowest rank's.
double time_ours(comm::Communicator& c, Collective kind, size_t count, const CommBenchOptions& o,
                 AlignedBuffer<std::byte>& in, AlignedBuffer<std::byte>& out) {
  const Dtype dtype = o.dtype;
  const comm::ShardRange own = comm::shard_range(count, c.size(), c.rank());
  comm::ConstBuffer src(in.data(), count, dtype);
  comm::Buffer dst(out.data(), count, dtype);
  auto once = [&] {
    switch (kind) {
      case Collective::kAllReduce:
        c.all_reduce(src, dst, comm::ReduceOp::kSum);
        break;
      case Collective::kReduceScatter:
        c.reduce_scatter(src, comm::Buffer(out.data(), own.count, dtype), comm::ReduceOp::kSum);
        break;
      case Collective::kAllGather:
        c.all_gather(comm::ConstBuffer(in.data(), own.count, dtype), dst);
        break;
      case Collective::kBroadcast:
        c.broadcast(dst, 0);
        break;
      default:
        break;
    }
  };
  return time_on_every_rank(c, o, once);
}

// The codec of a compressed collective, packing and unpacking `count`
// elements of `in` (comm/quantize.h), on every rank at once.
CodecBenchRow time_codec(comm::Communicator& c, comm::Quantization q, size_t count, const CommBenchOptions& o,
                         const AlignedBuffer<std::byte>& in, AlignedBuffer<std::byte>& out) {
  const comm::QuantFormat f{.codes = q};  // the default block: the packing's cost per element hardly depends on it
  AlignedBuffer<std::byte> packed(comm::quantized_bytes(count, f));
  const comm::ConstBuffer src(in.data(), count, o.dtype);
  const std::span<std::byte> codes(packed.data(), packed.size());
  CodecBenchRow row{.quantization = q, .bytes = count * o.dtype.size(), .count = count};
  row.quantize_seconds = time_on_every_rank(c, o, [&] { comm::quantize(src, f, codes); });
  row.dequantize_seconds =
      time_on_every_rank(c, o, [&] { comm::dequantize_into(codes, f, comm::Buffer(out.data(), count, o.dtype)); });
  return row;
}

// Copies a -> b (never back: a holds the collectives' inputs).
double time_memcpy(size_t bytes, const CommBenchOptions& o, const AlignedBuffer<std::byte>& a,
                   AlignedBuffer<std::byte>& b) {
  auto timed = [&](int iters) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) std::memcpy(b.data(), a.data(), bytes);
    return std::chrono::duration<double>(Clock::now() - start).count() / iters;
  };
  timed(1);
  const int iters = auto_iters(o, timed(1));
  double best = timed(iters);
  for (int batch = 1; batch < kBatches; ++batch) best = std::min(best, timed(iters));
  return best;
}

}  // namespace

std::vector<size_t> comm_bench_sizes(size_t min_bytes, size_t max_bytes, size_t step, Dtype dtype) {
  std::vector<size_t> sizes;
  for (size_t s = min_bytes; s <= max_bytes; s *= step) {
    if (s >= dtype.size()) sizes.push_back(s / dtype.size() * dtype.size());
  }
  return sizes;
}

std::vector<CommBaselineRow> run_mpi_baseline(const CommBenchOptions& o) {
  std::vector<CommBaselineRow> rows;
  for (Collective kind : o.collectives) {
    for (size_t bytes : o.sizes) {
      const size_t count = bytes / o.dtype.size();
      const double one = comm::mpi_native_time(kind, o.dtype, count, 1).seconds;
      // Every rank must agree on the iteration count: use the slowest rank's.
      const comm::NativeTiming t = comm::mpi_native_time(kind, o.dtype, count, auto_iters(o, one), kBatches);
      rows.push_back({kind, bytes, t.count, t.seconds});
    }
  }
  return rows;
}

std::vector<CommBenchRow> run_comm_bench(const CommBenchOptions& o, bool with_mpi_baseline,
                                         std::vector<CodecBenchRow>* codec_rows) {
  const size_t max_bytes = o.sizes.empty() ? 0 : *std::max_element(o.sizes.begin(), o.sizes.end());
  std::vector<CommBenchRow> rows;
  comm::run_ranks(o.backend, o.ranks, o.comm, [&](comm::Communicator& c) {
    AlignedBuffer<std::byte> in(max_bytes), out(max_bytes);
    // Inputs of 1.0: sums stay finite and ordinary in every dtype.
    const size_t max_count = max_bytes / o.dtype.size();
    std::vector<float> ones(std::min<size_t>(max_count, 1 << 16), 1.0f);
    for (size_t at = 0; at < max_count; at += ones.size()) {
      const size_t n = std::min(ones.size(), max_count - at);
      convert(ones.data(), Dtype::fp32(), in.data() + at * o.dtype.size(), o.dtype, n);
    }
    for (Collective kind : o.collectives) {
      for (size_t bytes : o.sizes) {
        const size_t count = bytes / o.dtype.size();
        const double t = time_ours(c, kind, count, o, in, out);
        // memcpy right after, on rank 0 alone while the others wait: the
        // pair sees the same machine load.
        if (c.rank() == 0) rows.push_back({kind, bytes, count, t, time_memcpy(bytes, o, in, out), 0, 0});
        c.barrier();
      }
    }
    for (comm::Quantization q : o.codecs) {
      for (size_t bytes : o.sizes) {
        const CodecBenchRow row = time_codec(c, q, bytes / o.dtype.size(), o, in, out);
        if (c.rank() == 0 && codec_rows != nullptr) codec_rows->push_back(row);
      }
    }
    if (with_mpi_baseline) {
      const auto baseline = run_mpi_baseline(o);
      if (c.rank() == 0) merge_baseline(rows, baseline);
    }
  });
  return rows;
}

void merge_baseline(std::vector<CommBenchRow>& rows, const std::vector<CommBaselineRow>& baseline) {
  for (const CommBaselineRow& b : baseline) {
    for (CommBenchRow& row : rows) {
      if (row.collective == b.collective && row.bytes == b.bytes) {
        row.mpi_seconds = b.seconds;
        row.mpi_count = b.count;
      }
    }
  }
}

}  // namespace zerodp::bench
