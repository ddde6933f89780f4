// SPDX-License-Identifier: Apache-2.0
// OpenMPI's own collectives, timed: the baseline `zerodp bench comm` compares
// both backends against (MPI builds only; see mpi.h).
#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "comm/mpi.h"
#include "comm/mpi_env.h"
#include "core/aligned_buffer.h"
#include "core/convert.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// User-defined sums for 16-bit floats (MPI has no fp16/bf16 type): widen,
// add in fp32, round, at every step of MPI's own reduction tree.
template <typename T, float (*ToFloat)(T), T (*FromFloat)(float)>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FromFloat(ToFloat(a[i]) + ToFloat(b[i]));
}

struct NativeType {
  MPI_Datatype type;
  MPI_Op sum;
};

NativeType native_type(Dtype dtype) {
  static MPI_Op half_sum = MPI_OP_NULL;
  static MPI_Op bf16_sum = MPI_OP_NULL;
  switch (dtype.kind()) {
    case Dtype::Kind::kFp32:
      return {MPI_FLOAT, MPI_SUM};
    case Dtype::Kind::kFp16:
      if (half_sum == MPI_OP_NULL) MPI_Op_create(&sum_16bit<Half, half_to_float, float_to_half>, 1, &half_sum);
      return {MPI_UINT16_T, half_sum};
    case Dtype::Kind::kBf16:
      if (bf16_sum == MPI_OP_NULL) {
        MPI_Op_create(&sum_16bit<BFloat16, bfloat16_to_float, float_to_bfloat16>, 1, &bf16_sum);
      }
      return {MPI_UINT16_T, bf16_sum};
  }
  return {MPI_FLOAT, MPI_SUM};
}

}  // namespace

NativeTiming mpi_native_time(Collective kind, Dtype dtype, size_t count, int iterations, int batches) {
  detail::ensure_mpi();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t n = static_cast<size_t>(size);
  const NativeType t = native_type(dtype);
  const size_t esize = dtype.size();
  // Block collectives need a multiple of the ranks.
  const bool blocked = kind == Collective::kReduceScatter || kind == Collective::kAllGather;
  const size_t full = blocked ? count / n * n : count;
  const size_t block = full / n;
  ZDP_CHECK(full <= static_cast<size_t>(INT32_MAX), ConfigError,
            "[bench] {} elements are too many for MPI's int counts", full);
  AlignedBuffer<std::byte> send(std::max<size_t>(full * esize, 1));
  AlignedBuffer<std::byte> recv(std::max<size_t>(full * esize, 1));
  // Small values (1.0 / bit pattern of 1.0) keep sums finite.
  if (dtype == Dtype::fp32()) {
    const float one = 1.0f;
    for (size_t i = 0; i < full; ++i) std::memcpy(send.data() + i * 4, &one, 4);
  }
  auto once = [&] {
    const int c = static_cast<int>(full);
    const int b = static_cast<int>(block);
    switch (kind) {
      case Collective::kAllReduce:
        MPI_Allreduce(send.data(), recv.data(), c, t.type, t.sum, MPI_COMM_WORLD);
        break;
      case Collective::kReduceScatter:
        MPI_Reduce_scatter_block(send.data(), recv.data(), b, t.type, t.sum, MPI_COMM_WORLD);
        break;
      case Collective::kAllGather:
        MPI_Allgather(send.data(), b, t.type, recv.data(), b, t.type, MPI_COMM_WORLD);
        break;
      case Collective::kBroadcast:
        MPI_Bcast(send.data(), c, t.type, 0, MPI_COMM_WORLD);
        break;
      default:
        ZDP_THROW(ConfigError, "[bench] no OpenMPI baseline for {}", collective_name(kind));
    }
  };
  once();  // warm-up: first-touch pages, connection setup
  double best = 0;
  for (int batch = 0; batch < std::max(batches, 1); ++batch) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) once();
    MPI_Barrier(MPI_COMM_WORLD);
    double elapsed = (MPI_Wtime() - start) / std::max(iterations, 1);
    double slowest = elapsed;
    MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = batch == 0 ? slowest : std::min(best, slowest);
  }
  return {best, full};
}

}  // namespace zerodp::comm
