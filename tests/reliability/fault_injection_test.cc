// SPDX-License-Identifier: Apache-2.0
// The ZERODP_FAULT format and the plain-collective behaviour of each action
// on thread ranks (the engine-level tests are in engine_fault_test.cc).
#include "comm/fault_injection.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/save_point.h"
#include "comm/world.h"
#include "core/error.h"
#include "support/scoped_fault.h"

namespace zerodp::comm {
namespace {

TEST(FaultSpec, ParsesAllKeysInAnyOrder) {
  const FaultSpec a = parse_fault_spec("rank=1,collective=7,action=throw");
  EXPECT_EQ(a.rank, 1);
  EXPECT_EQ(a.collective, 7u);
  EXPECT_EQ(a.action, FaultAction::kThrow);
  const FaultSpec b = parse_fault_spec("action=hang,rank=0,collective=1");
  EXPECT_EQ(b.action, FaultAction::kHang);
  EXPECT_EQ(parse_fault_spec("rank=2,collective=3,action=exit").action, FaultAction::kExit);
}

TEST(FaultSpec, ParsesSaveFaults) {
  const FaultSpec s = parse_fault_spec("point=shard-written,rank=1,action=exit,save=2");
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.save, 2u);
  EXPECT_EQ(s.point, "shard-written");
  EXPECT_EQ(s.collective, 0u);
  EXPECT_EQ(s.action, FaultAction::kExit);
  for (const char* bad : {"rank=1,save=2,action=exit",                              // no point
                          "rank=1,point=begin,action=exit",                         // no save
                          "rank=1,save=0,point=begin,action=exit",                  // saves count from 1
                          "rank=1,save=1,point=Half way,action=exit",               // not a point name
                          "rank=1,collective=3,save=1,point=begin,action=exit"}) {  // both kinds
    EXPECT_THROW(parse_fault_spec(bad), ConfigError) << bad;
  }
}

// comm parses any point name; the save points are ckpt's, and ckpt refuses
// an unknown one as a save begins, with the message the parser used to give.
TEST(FaultSpec, UnknownSavePointIsRefusedByCkpt) {
  zerodp::testing::ScopedFault guard(parse_fault_spec("rank=1,save=1,point=halfway,action=exit"));  // unknown point
  try {
    ckpt::check_fault_save_point();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("unknown save point 'halfway': use begin, shard-partial"), std::string::npos)
        << e.message();
  }
  set_fault(parse_fault_spec("rank=1,save=1,point=dir-renamed,action=exit"));
  ckpt::check_fault_save_point();
}

// The save counter is per rank and counts at "begin"; only the named save
// and point of the named rank fail, as the write error (IoError) it stands
// for.
TEST(FaultInjection, SaveFaultFiresAtItsSaveAndPointOnly) {
  zerodp::testing::ScopedFault guard(
      FaultSpec{.rank = 1, .collective = 0, .save = 2, .point = "shard-written", .action = FaultAction::kThrow});
  const auto never = [] { return false; };
  for (const char* point : {"begin", "shard-partial", "shard-written"}) {
    inject_save_fault_if_due(0, point, never);  // rank 0: never
    inject_save_fault_if_due(1, point, never);  // rank 1's first save: not yet
  }
  inject_save_fault_if_due(1, "begin", never);
  inject_save_fault_if_due(1, "shard-partial", never);
  try {
    inject_save_fault_if_due(1, "shard-written", never);
    FAIL() << "the fault did not fire";
  } catch (const IoError& e) {
    EXPECT_NE(e.message().find("rank 1: injected failure at save 2 (shard-written)"), std::string::npos) << e.message();
  }
}

TEST(FaultSpec, RefusesMalformedValues) {
  for (const char* bad :
       {"", "rank=1", "rank=1,collective=2", "rank=x,collective=2,action=throw", "rank=1,collective=0,action=throw",
        "rank=1,collective=2,action=explode", "rank=1,collective=2,action=throw,speed=3",
        "rank1,collective=2,action=throw", "rank=-1,collective=2,action=throw"}) {
    EXPECT_THROW(parse_fault_spec(bad), ConfigError) << bad;
  }
  try {
    parse_fault_spec("rank=1,collective=2,action=explode");
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("use throw, exit or hang"), std::string::npos) << e.message();
  }
}

// Rank 1 throws at its 3rd collective; the others get a PeerFailedError that
// names rank 1, and the run rethrows rank 1's own error.
TEST(FaultInjection, ThrowAtKthCollectiveFailsEveryRank) {
  zerodp::testing::ScopedFault guard(
      FaultSpec{.rank = 1, .collective = 3, .save = 0, .point = {}, .action = FaultAction::kThrow});
  std::vector<std::string> errors(3);
  std::vector<int> completed(3, 0);
  try {
    run_thread_ranks(3, {.timeout = std::chrono::seconds(2)}, [&](Communicator& c) {
      std::vector<float> v(10, 1.0f);
      try {
        for (int i = 0; i < 5; ++i) {
          c.all_reduce(std::span<float>(v), std::span<float>(v), ReduceOp::kSum);
          completed[c.rank()] = i + 1;
        }
      } catch (const CommError& e) {
        errors[c.rank()] = e.message();
        throw;
      }
    });
    FAIL() << "the injected fault did not fail the run";
  } catch (const CommError& e) {
    EXPECT_NE(e.message().find("[fault] rank 1: injected failure at collective 3 (all_reduce)"), std::string::npos)
        << e.message();
  }
  for (int r : {0, 2}) {
    EXPECT_EQ(completed[r], 2);
    EXPECT_NE(errors[r].find("peer rank 1 failed"), std::string::npos) << errors[r];
  }
}

// The small typed collectives count like every other call: a fault at the
// 2nd call hits the all_gather_value, at the 3rd the all_reduce_uint64.
TEST(FaultInjection, SmallTypedCollectivesCountAsCalls) {
  for (const auto& [k, name] : {std::pair<uint64_t, std::string>{2, "all_gather_value"}, {3, "all_reduce_uint64"}}) {
    zerodp::testing::ScopedFault guard(
        FaultSpec{.rank = 1, .collective = k, .save = 0, .point = {}, .action = FaultAction::kThrow});
    std::vector<std::string> errors(3);
    try {
      run_thread_ranks(3, {.timeout = std::chrono::seconds(2)}, [&](Communicator& c) {
        try {
          c.barrier();
          c.all_gather_value(uint64_t{7});
          c.all_reduce_uint64(7, ReduceOp::kMax);
          c.barrier();
        } catch (const CommError& e) {
          errors[c.rank()] = e.message();
          throw;
        }
      });
      FAIL() << "the injected fault did not fail the run";
    } catch (const CommError& e) {
      EXPECT_NE(
          e.message().find("[fault] rank 1: injected failure at collective " + std::to_string(k) + " (" + name + ")"),
          std::string::npos)
          << e.message();
    }
    for (int r : {0, 2}) EXPECT_NE(errors[r].find("peer rank 1 failed"), std::string::npos) << errors[r];
  }
}

// Without a fault (and after set_fault(nullopt)), nothing happens.
TEST(FaultInjection, NoFaultNoEffect) {
  zerodp::testing::ScopedFault guard(std::nullopt);
  run_thread_ranks(2, {.timeout = std::chrono::seconds(2)}, [&](Communicator& c) {
    for (int i = 0; i < 4; ++i) c.barrier();
  });
  EXPECT_FALSE(active_fault().has_value());
}

}  // namespace
}  // namespace zerodp::comm
