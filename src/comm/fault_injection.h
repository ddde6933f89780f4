// SPDX-License-Identifier: Apache-2.0
// Fault injection for reliability tests: make one rank fail on purpose at its
// k-th collective call, so tests can show that the other ranks end promptly
// with a CommError naming it instead of hanging.
//
// The fault comes from the environment variable ZERODP_FAULT, read once per
// process at the first collective, e.g.
//   ZERODP_FAULT="rank=1,collective=7,action=throw"
// rank: the rank that fails; collective: the 1-based number of that rank's
// collective call (every Communicator method counts, all_reduce_scalar,
// all_reduce_uint64, all_gather_value and barrier included); action:
//   throw  the call throws CommError (the rank fails like any failed body);
//   exit   the process ends at once with exit code kFaultExitCode (no
//          cleanup, like a crash; for MPI runs, never for thread ranks);
//   hang   the call sleeps "forever": until the backend reports that a peer
//          failed (thread backend, so tests can join the thread), or until
//          the process is killed (MPI: the peers' timeouts and MPI_Abort).
// Or at a named point of a step that is not a collective:
//   ZERODP_FAULT="rank=1,save=2,point=shard-written,action=exit"
// fails rank 1 the 2nd time (1-based, per rank and point, in this process)
// it reaches point "shard-written" (Communicator::fault_point). comm treats
// point names as opaque: the layer that reaches them names and validates
// them (ckpt::SavePoint: each save reaches each of its points at most once,
// so K counts saves; ckpt refuses an unknown point when a save begins). A
// hang there ends when a peer is known to have failed.
// A malformed value (syntax: keys, numbers, action, a point name of
// lowercase letters, digits and '-') is a ConfigError at the first collective.
// Tests in one process set the fault directly with set_fault(), which
// overrides the environment.
// Thread-safety: all functions may be called from any thread; the fault is a
// process-wide setting, so tests that set it must not run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "comm/types.h"

namespace zerodp::comm {

enum class FaultAction { kThrow, kExit, kHang };

struct FaultSpec {
  int rank = 0;
  uint64_t collective = 0;  // 1-based call number on that rank; 0 for a save fault
  uint64_t save = 0;        // 1-based visit of `point` on that rank; 0 for a collective fault
  std::string point;        // with save: an opaque point name (ckpt::SavePoint's names)
  FaultAction action = FaultAction::kThrow;
};

// The process exit code of action=exit.
inline constexpr int kFaultExitCode = 86;

// Parses "rank=R,collective=K,action=A" or "rank=R,save=K,point=P,action=A"
// (keys in any order). ConfigError naming the bad part otherwise.
FaultSpec parse_fault_spec(std::string_view text);

// Replaces the process's fault (std::nullopt: no fault, the environment is
// ignored from then on).
void set_fault(const std::optional<FaultSpec>& fault);

// The active fault: set_fault's, else ZERODP_FAULT's, else none.
std::optional<FaultSpec> active_fault();

// Called by Communicator before collective number `call` (1-based) of
// `rank`. Does nothing unless the active fault is due here; then throws
// CommError, exits the process, or sleeps until peer_failed() is true and
// then throws CommError. Cheap when no fault is set (one atomic load).
void inject_fault_if_due(int rank, uint64_t call, Collective kind, const std::function<bool()>& peer_failed);
// The same at point `point` of `rank`: counts this rank's visits of `point`
// and fails when the active fault names the point and this visit.
void inject_save_fault_if_due(int rank, std::string_view point, const std::function<bool()>& peer_failed);

}  // namespace zerodp::comm
