// SPDX-License-Identifier: Apache-2.0
// The collective bandwidth benchmark behind `zerodp bench comm`: our
// collectives on a backend's ranks, a single-thread memcpy of the same bytes
// right after each (the pair sees the same machine load), and OpenMPI's own
// collectives on the same sizes as the baseline.
//
// Every measurement is the best of three batches of `iters` calls: on a
// shared machine, background load only ever makes a batch slower. A call's
// time is the slowest rank's mean. Inputs are 1.0 (sums stay finite and
// ordinary in every dtype), reductions are sums, out of place.
//
// Thread-safety: call from one thread; the functions start their own ranks
// (thread backend) or run as this process's rank (under mpirun).
#pragma once

#include <cstddef>
#include <vector>

#include "comm/communicator.h"
#include "comm/quantize.h"
#include "comm/types.h"
#include "comm/world.h"
#include "core/dtype.h"

namespace zerodp::bench {

struct CommBenchOptions {
  comm::Backend backend = comm::Backend::kThread;
  int ranks = 2;  // thread ranks; under mpirun, the number of processes
  Dtype dtype = Dtype::fp32();
  std::vector<comm::Collective> collectives{comm::Collective::kAllReduce, comm::Collective::kReduceScatter,
                                            comm::Collective::kAllGather};
  std::vector<size_t> sizes;  // buffer sizes S in bytes, each a whole number of elements (comm_bench_sizes)
  int iters = 0;              // timed calls per batch; 0: automatic, aiming at target_s per size (3..2000)
  double target_s = 0.2;
  // --idle-ms: every rank waits this long before each timed call, and only
  // the calls are timed. A run's collectives follow compute, on an idle
  // link; back to back (0) they meet a link still busy with the last call,
  // where TCP behaves otherwise (docs/scale.md, "Back to back or after
  // compute").
  int idle_ms = 0;
  comm::CommOptions comm;  // the collectives' timeout
  // The compressed collectives' codecs to time (--codec): every rank packs
  // and unpacks each size at once, as the ranks of a run do.
  std::vector<comm::Quantization> codecs;
};

// One (codec, size): seconds per comm::quantize of `count` elements of the
// dtype and per comm::dequantize_into of them, the slowest rank's.
struct CodecBenchRow {
  comm::Quantization quantization = comm::Quantization::kInt8;
  size_t bytes = 0;
  size_t count = 0;
  double quantize_seconds = 0;
  double dequantize_seconds = 0;
};

// One (collective, size) of our backend. mpi_seconds stays 0 until an
// OpenMPI baseline is merged in (merge_baseline).
struct CommBenchRow {
  comm::Collective collective = comm::Collective::kAllReduce;
  size_t bytes = 0;           // S
  size_t count = 0;           // elements of the buffer
  double seconds = 0;         // per call, the slowest rank's
  double memcpy_seconds = 0;  // one thread copying S bytes, measured right after
  double mpi_seconds = 0;     // OpenMPI's collective per call; 0: no baseline
  size_t mpi_count = 0;       // the elements OpenMPI's call moved
};

// One (collective, size) of OpenMPI's own collectives.
struct CommBaselineRow {
  comm::Collective collective = comm::Collective::kAllReduce;
  size_t bytes = 0;
  size_t count = 0;
  double seconds = 0;
};

// Sizes from min_bytes to max_bytes, multiplying by `step` (2, or 4 for a
// quick run), rounded down to whole elements; sizes below one element are
// left out.
std::vector<size_t> comm_bench_sizes(size_t min_bytes, size_t max_bytes, size_t step, Dtype dtype);

// Our collectives (and memcpy) on every size, collective by collective.
// with_mpi_baseline: also OpenMPI's collectives in the same processes
// (backend kMpi only). The rows are rank 0's: under mpirun, the other
// processes get an empty vector.
// codec_rows: where rank 0 puts the codec rows (options.codecs), if given.
std::vector<CommBenchRow> run_comm_bench(const CommBenchOptions& options, bool with_mpi_baseline = false,
                                         std::vector<CodecBenchRow>* codec_rows = nullptr);

// OpenMPI's collectives on every size; call on every process under mpirun.
// Every rank uses the slowest rank's iteration count.
std::vector<CommBaselineRow> run_mpi_baseline(const CommBenchOptions& options);

// Copies each baseline row into the row of the same collective and size.
void merge_baseline(std::vector<CommBenchRow>& rows, const std::vector<CommBaselineRow>& baseline);

}  // namespace zerodp::bench
