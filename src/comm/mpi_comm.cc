// SPDX-License-Identifier: Apache-2.0
// The MPI backend (compiled only when CMake finds MPI); see mpi.h.
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/mpi.h"
#include "comm/mpi_env.h"
#include "comm/reduce.h"
#include "comm/shard.h"
#include "core/aligned_buffer.h"
#include "core/error.h"

#ifndef ZERODP_MPIEXEC_PATH
#define ZERODP_MPIEXEC_PATH ""
#endif

namespace zerodp::comm {
namespace detail {
namespace {

std::once_flag g_init_once;
std::atomic<bool> g_abort_at_exit{false};
int g_tag_ub = 32767;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (g_abort_at_exit.load()) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  } else {
    MPI_Finalize();
  }
}

}  // namespace

void ensure_mpi() {
  std::call_once(g_init_once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      ZDP_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS, CommError,
                "[mpi] MPI_Init_thread failed");
      ZDP_CHECK(std::atexit(finalize_at_exit) == 0, CommError, "[mpi] cannot register MPI_Finalize at exit");
    } else {
      MPI_Query_thread(&provided);
    }
    ZDP_CHECK(provided >= MPI_THREAD_SERIALIZED, CommError,
              "[mpi] MPI provides thread level {} but zerodp needs MPI_THREAD_SERIALIZED ({}) or more", provided,
              static_cast<int>(MPI_THREAD_SERIALIZED));
    void* value = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
    if (flag) g_tag_ub = *static_cast<int*>(value);
  });
}

int mpi_tag_upper_bound() { return g_tag_ub; }

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKindBits = 3, kDtypeBits = 2, kOpBits = 2, kQuantBits = 2;
constexpr int kMetaBits = kKindBits + kDtypeBits + kOpBits + kQuantBits;
static_assert(kNumCollectives <= (1 << kKindBits), "a message tag holds the collective's kind in kKindBits bits");

struct Pending {
  int peer;
  bool is_recv;
  int bytes;  // expected bytes for receives
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, const CommOptions& options)
      : Communicator(rank, size, options), comm_(comm), inputs_(static_cast<size_t>(size)) {
    // Tags are positive ints up to MPI_TAG_UB (at least 32767): the low bits
    // say what the call is, the rest hold the low bits of the count.
    int bits = 0;
    while (bits < 40 && (static_cast<long long>(1) << (kMetaBits + bits + 1)) - 1 <= detail::mpi_tag_upper_bound()) {
      ++bits;
    }
    count_bits_ = bits;
  }
  ~MpiCommunicator() override {
    // A communicator with requests left over from a failure is not freed:
    // MPI_Comm_free would wait for them.
    // After MPI_Finalize (a communicator outliving main) there is nothing to free.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!broken() && !finalized) MPI_Comm_free(&comm_);
  }

  std::string_view backend_name() const override { return "mpi"; }

 protected:
  void do_all_reduce(ConstBuffer in, Buffer out, ReduceOp op) override {
    const Collective kind = Collective::kAllReduce;
    const ShardRange own = shard_range(in.count, size(), rank());
    Buffer own_out = out.slice(own.offset, own.count);
    reduce_scatter_into(kind, in, own_out, op);
    all_gather_from(kind, own_out, out, op);
  }
  void do_reduce_scatter(ConstBuffer in, Buffer out, ReduceOp op) override {
    reduce_scatter_into(Collective::kReduceScatter, in, out, op);
  }
  void do_all_gather(ConstBuffer in, Buffer out) override {
    all_gather_from(Collective::kAllGather, in, out, ReduceOp::kSum);
  }
  void do_broadcast(Buffer buf, int root) override {
    const Collective kind = Collective::kBroadcast;
    start(kind);
    const int tag = make_tag(kind, buf.dtype, ReduceOp::kSum, buf.count);
    if (rank() == root) {
      for (int i = 1; i < size(); ++i) send((rank() + i) % size(), buf.data, buf.bytes(), tag, kind);
    } else {
      recv(root, buf.data, buf.bytes(), kind);
    }
    wait_all(kind, tag);
  }
  void do_barrier() override {
    const Collective kind = Collective::kBarrier;
    start(kind);
    const int tag = make_tag(kind, Dtype::fp32(), ReduceOp::kSum, 0);
    for (int i = 1; i < size(); ++i) recv((rank() - i + size()) % size(), nullptr, 0, kind);
    for (int i = 1; i < size(); ++i) send((rank() + i) % size(), nullptr, 0, tag, kind);
    wait_all(kind, tag);
  }
  double do_all_reduce_scalar(double value, ReduceOp op) override {
    const Collective kind = Collective::kScalarAllReduce;
    start(kind);
    std::vector<double> values(static_cast<size_t>(size()));
    values[rank()] = value;
    exchange(kind, make_tag(kind, Dtype::fp32(), op, 1), &values[rank()], as_bytes(values.data()), sizeof(double));
    return reduce_scalars(values, op);
  }
  void do_all_reduce_uint64(uint64_t value, ReduceOp op, std::span<uint64_t> values) override {
    const Collective kind = Collective::kIntAllReduce;
    start(kind);
    values[rank()] = value;
    exchange(kind, make_tag(kind, Dtype::fp32(), op, 1), &values[rank()], as_bytes(values.data()), sizeof(uint64_t));
  }
  // Every rank sends its value to every peer; the tag's count is the value's
  // size in bytes, and the arrival check compares the byte counts.
  void do_all_gather_value(std::span<const std::byte> value, std::span<std::byte> out) override {
    const Collective kind = Collective::kValueAllGather;
    start(kind);
    const size_t bytes = value.size();
    if (bytes > 0) std::memcpy(out.data() + static_cast<size_t>(rank()) * bytes, value.data(), bytes);
    exchange(kind, make_tag(kind, Dtype::fp32(), ReduceOp::kSum, bytes), value.data(), out.data(), bytes);
  }
  // The compressed collectives: one message to and from every peer.
  void do_exchange(const ExchangeCall& call, std::span<const std::span<const std::byte>> outgoing,
                   std::span<const std::span<std::byte>> incoming) override {
    start(call.kind);
    const int tag = make_tag(call.kind, call.dtype, call.op, call.count, call.quant.codes);
    for (int i = 1; i < size(); ++i) {
      const int k = (rank() - i + size()) % size();
      recv(k, incoming[k].data(), incoming[k].size(), call.kind);
    }
    for (int i = 1; i < size(); ++i) {
      const int k = (rank() + i) % size();
      send(k, outgoing[k].data(), outgoing[k].size(), tag, call.kind);
    }
    wait_all(call.kind, tag);
  }
  std::unique_ptr<Communicator> do_split(int color, std::span<const int> colors) override {
    // Every rank passed split()'s all_gather_value, so none is missing.
    MPI_Comm sub = MPI_COMM_NULL;
    ZDP_CHECK(MPI_Comm_split(comm_, color, rank(), &sub) == MPI_SUCCESS, CommError,
              "[split] rank {}: MPI_Comm_split failed", rank());
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    int sub_rank = 0, sub_size = 1;
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Comm_size(sub, &sub_size);
    auto child = std::make_unique<MpiCommunicator>(sub, sub_rank, sub_size, options());
    // Its ranks in the world, for messages: the key (this rank) keeps the
    // parent's order.
    for (int k = 0; k < size(); ++k) {
      if (colors[static_cast<size_t>(k)] == color) child->world_ranks_.push_back(world_rank(k));
    }
    return child;
  }
  std::string rank_name(int rank) const override {
    if (world_ranks_.empty() || rank < 0 || static_cast<size_t>(rank) >= world_ranks_.size()) {
      return fmt::format("rank {}", rank);
    }
    return fmt::format("rank {} (world rank {})", rank, world_ranks_[static_cast<size_t>(rank)]);
  }
  int world_rank(int rank) const { return world_ranks_.empty() ? rank : world_ranks_[static_cast<size_t>(rank)]; }
  void on_broken(const std::string&) override {
    // Cancel what is still posted so MPI does not write into buffers the
    // caller is about to free; sends cannot be cancelled reliably, only freed.
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) continue;
      if (pending_[i].is_recv) MPI_Cancel(&requests_[i]);
      MPI_Request_free(&requests_[i]);
    }
    requests_.clear();
    pending_.clear();
  }

 private:
  int make_tag(Collective kind, Dtype dtype, ReduceOp op, size_t count,
               Quantization quant = Quantization::kNone) const {
    const auto meta = static_cast<unsigned>(kind) | (static_cast<unsigned>(dtype.kind()) << kKindBits) |
                      (static_cast<unsigned>(op) << (kKindBits + kDtypeBits)) |
                      (static_cast<unsigned>(quant) << (kKindBits + kDtypeBits + kOpBits));
    const uint64_t count_part = count & ((uint64_t{1} << count_bits_) - 1);
    return static_cast<int>(meta | (count_part << kMetaBits));
  }

  std::string describe_tag(int tag) const {
    const auto kind = static_cast<Collective>(tag & ((1 << kKindBits) - 1));
    const auto dtype = Dtype(static_cast<Dtype::Kind>((tag >> kKindBits) & ((1 << kDtypeBits) - 1)));
    const auto op = static_cast<ReduceOp>((tag >> (kKindBits + kDtypeBits)) & ((1 << kOpBits) - 1));
    const auto quant = static_cast<Quantization>((tag >> (kKindBits + kDtypeBits + kOpBits)) & ((1 << kQuantBits) - 1));
    const auto count = static_cast<uint64_t>(tag) >> kMetaBits;
    if (quant != Quantization::kNone) {
      return fmt::format("{} of {} elements as {} blocks (op {}, count = {} mod 2^{})", collective_name(kind),
                         dtype.name(), quantization_name(quant), reduce_op_name(op), count, count_bits_);
    }
    if (kind == Collective::kValueAllGather) {
      return fmt::format("{} of {} bytes (mod 2^{})", collective_name(kind), count, count_bits_);
    }
    if (kind == Collective::kIntAllReduce) return fmt::format("{} (op {})", collective_name(kind), reduce_op_name(op));
    return fmt::format("{} of {} elements (op {}, count = {} mod 2^{})", collective_name(kind), dtype.name(),
                       reduce_op_name(op), count, count_bits_);
  }

  void start(Collective kind) {
    deadline_ = Clock::now() + options().timeout;
    requests_.clear();
    pending_.clear();
    (void)kind;
  }

  void check_mpi(int rc, Collective kind, const char* what) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    ZDP_THROW(CommError, "{}: {} failed: {}", message_prefix(kind), what, std::string(text, len));
  }

  int checked_bytes(size_t bytes, Collective kind) const {
    ZDP_CHECK(bytes <= static_cast<size_t>(INT_MAX), CommError,
              "{}: {} bytes to one peer exceed the MPI backend's 2 GiB per-message limit; use more ranks or "
              "smaller buckets",
              message_prefix(kind), bytes);
    return static_cast<int>(bytes);
  }

  template <typename T>
  static std::byte* as_bytes(T* values) {
    return reinterpret_cast<std::byte*>(values);  // the values travel as their bytes
  }
  // The small collectives' exchange: this rank sends `bytes` from `mine` to
  // every peer and receives peer k's into all[k * bytes, (k + 1) * bytes).
  void exchange(Collective kind, int tag, const void* mine, std::byte* all, size_t bytes) {
    for (int i = 1; i < size(); ++i) {
      const int k = (rank() - i + size()) % size();
      recv(k, all + static_cast<size_t>(k) * bytes, bytes, kind);
    }
    for (int i = 1; i < size(); ++i) send((rank() + i) % size(), mine, bytes, tag, kind);
    wait_all(kind, tag);
  }
  void send(int peer, const void* data, size_t bytes, int tag, Collective kind) {
    const int n = checked_bytes(bytes, kind);
    requests_.push_back(MPI_REQUEST_NULL);
    pending_.push_back({peer, false, n});
    check_mpi(MPI_Isend(data, n, MPI_BYTE, peer, tag, comm_, &requests_.back()), kind, "MPI_Isend");
  }

  // Any tag: the tag is checked on arrival, so a peer in a different
  // collective produces a clear error rather than a silent wait.
  void recv(int peer, void* data, size_t bytes, Collective kind) {
    const int n = checked_bytes(bytes, kind);
    requests_.push_back(MPI_REQUEST_NULL);
    pending_.push_back({peer, true, n});
    check_mpi(MPI_Irecv(data, n, MPI_BYTE, peer, MPI_ANY_TAG, comm_, &requests_.back()), kind, "MPI_Irecv");
  }

  // Polls every posted request until all complete, checking what arrived;
  // throws CommTimeoutError naming the first peer still outstanding.
  void wait_all(Collective kind, int expected_tag) {
    const int total = static_cast<int>(requests_.size());
    std::vector<int> done(static_cast<size_t>(total));
    std::vector<MPI_Status> statuses(static_cast<size_t>(total));
    int remaining = total;
    int idle_polls = 0;
    while (remaining > 0) {
      int completed = 0;
      const int rc = MPI_Testsome(total, requests_.data(), &completed, done.data(), statuses.data());
      if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) check_mpi(rc, kind, "MPI_Testsome");
      if (completed == MPI_UNDEFINED) break;
      for (int j = 0; j < completed; ++j) {
        const int i = done[j];
        const Pending& p = pending_[i];
        const MPI_Status& st = statuses[j];
        if (rc == MPI_ERR_IN_STATUS && st.MPI_ERROR != MPI_SUCCESS) {
          if (p.is_recv && st.MPI_ERROR == MPI_ERR_TRUNCATE) {
            ZDP_THROW(CommError,
                      "{}: mismatched collective calls: rank {} sent more than the {} bytes this rank expects "
                      "(different counts or dtypes)",
                      message_prefix(kind), p.peer, p.bytes);
          }
          check_mpi(st.MPI_ERROR, kind, p.is_recv ? "receive" : "send");
        }
        if (p.is_recv) check_arrival(kind, p, st, expected_tag);
      }
      remaining -= completed;
      if (remaining == 0) break;
      if (completed > 0) {
        idle_polls = 0;
        continue;
      }
      const auto now = Clock::now();
      if (now >= deadline_) throw_timeout(kind);
      // Progress happens inside MPI_Testsome, so keep calling it; yield when
      // idle for a while (oversubscribed ranks), back off after a second.
      ++idle_polls;
      if (idle_polls > 100000) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      } else if (idle_polls > 64) {
        std::this_thread::yield();
      }
    }
    requests_.clear();
    pending_.clear();
  }

  void check_arrival(Collective kind, const Pending& p, const MPI_Status& st, int expected_tag) const {
    if (st.MPI_TAG != expected_tag) {
      ZDP_THROW(CommError, "{}: mismatched collective calls: rank {} called {} while this rank called {}",
                message_prefix(kind), p.peer, describe_tag(st.MPI_TAG), describe_tag(expected_tag));
    }
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got != p.bytes) {
      ZDP_THROW(CommError,
                "{}: mismatched collective calls: rank {} sent {} bytes where this rank expects {} (different "
                "counts on different ranks)",
                message_prefix(kind), p.peer, got, p.bytes);
    }
  }

  [[noreturn]] void throw_timeout(Collective kind) const {
    int peer = -1;
    bool receiving = false;
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) continue;
      if (peer < 0 || (pending_[i].is_recv && !receiving)) {
        peer = pending_[i].peer;
        receiving = pending_[i].is_recv;
      }
    }
    ZDP_THROW(CommTimeoutError, "{}: timed out after {} ms waiting for {} ({})", message_prefix(kind),
              options().timeout.count(), rank_name(peer),
              receiving ? "its data never arrived" : "it never took this rank's data");
  }

  // out = this rank's shard of the ordered reduction of `in` over ranks.
  void reduce_scatter_into(Collective kind, ConstBuffer in, Buffer out, ReduceOp op) {
    start(kind);
    const size_t esize = in.dtype.size();
    const ShardRange own = shard_range(in.count, size(), rank());
    const size_t shard_bytes = own.count * esize;
    const size_t staging_bytes = static_cast<size_t>(size() - 1) * shard_bytes;
    if (staging_.size() < staging_bytes) staging_ = AlignedBuffer<std::byte>(staging_bytes);
    const int tag = make_tag(kind, in.dtype, op, in.count);
    // Peer k's contribution lands in staging slot (k - rank - 1) mod N.
    auto slot = [&](int k) {
      return staging_.data() + static_cast<size_t>((k - rank() - 1 + size()) % size()) * shard_bytes;
    };
    for (int i = 1; i < size(); ++i) {
      const int k = (rank() - i + size()) % size();
      recv(k, slot(k), shard_bytes, kind);
    }
    for (int i = 1; i < size(); ++i) {
      const int k = (rank() + i) % size();
      const ShardRange shard = shard_range(in.count, size(), k);
      send(k, in.byte_data() + shard.offset * esize, shard.count * esize, tag, kind);
    }
    wait_all(kind, tag);
    for (int k = 0; k < size(); ++k) {
      inputs_[k] = k == rank() ? static_cast<const void*>(in.byte_data() + own.offset * esize) : slot(k);
    }
    if (own.count > 0) reduce_ordered(inputs_, out.data, own.count, in.dtype, op);
  }

  // out = the concatenation of every rank's `in` (its shard of out).
  void all_gather_from(Collective kind, ConstBuffer in, Buffer out, ReduceOp op) {
    start(kind);
    const size_t esize = out.dtype.size();
    // all_reduce's second half carries all_reduce's tag (with its op).
    const int tag = make_tag(kind, out.dtype, kind == Collective::kAllGather ? ReduceOp::kSum : op, out.count);
    for (int i = 1; i < size(); ++i) {
      const int k = (rank() - i + size()) % size();
      const ShardRange shard = shard_range(out.count, size(), k);
      recv(k, out.byte_data() + shard.offset * esize, shard.count * esize, kind);
    }
    for (int i = 1; i < size(); ++i) send((rank() + i) % size(), in.data, in.bytes(), tag, kind);
    const ShardRange own = shard_range(out.count, size(), rank());
    std::byte* own_out = out.byte_data() + own.offset * esize;
    if (own.count > 0 && own_out != in.data) copy_bytes(own_out, in.data, in.bytes());
    wait_all(kind, tag);
  }

  MPI_Comm comm_;
  std::vector<int> world_ranks_;  // a split group's ranks in the world (messages); empty in the world
  int count_bits_ = 0;
  Clock::time_point deadline_{};
  std::vector<MPI_Request> requests_;
  std::vector<Pending> pending_;
  std::vector<const void*> inputs_;
  AlignedBuffer<std::byte> staging_;
};

}  // namespace

bool mpi_available() { return true; }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string line(text, static_cast<size_t>(std::max(0, length)));
  line.resize(std::strlen(line.c_str()));  // the length may count the terminating NUL
  if (const size_t end = line.find_first_of("\r\n"); end != std::string::npos) line.resize(end);
  return line;
}

std::string mpiexec_path() {
  const char* env = std::getenv("ZERODP_MPIRUN");
  return env != nullptr ? env : ZERODP_MPIEXEC_PATH;
}

std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options) {
  detail::ensure_mpi();
  int finalized = 0;
  MPI_Finalized(&finalized);
  ZDP_CHECK(!finalized, CommError, "[mpi] MPI is already finalized (communicators must be made before exit)");
  MPI_Comm comm = MPI_COMM_NULL;
  ZDP_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS, CommError, "[mpi] MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::make_unique<MpiCommunicator>(comm, rank, size, options);
}

int mpi_world_size() {
  detail::ensure_mpi();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int mpi_world_rank() {
  detail::ensure_mpi();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void mpi_abort_at_exit() { detail::g_abort_at_exit.store(true); }

}  // namespace zerodp::comm
