// SPDX-License-Identifier: Apache-2.0
// The metrics record (report/metrics_record.h), both directions: a record
// written with to_json and parsed back is the same record, with every field
// and with the optional ones absent; the written line is the trainer's
// layout (keys in name order, null where a value is absent, val_loss and
// held_out_accuracy left out when absent).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "report/metrics_record.h"

namespace zerodp::report {
namespace {

constexpr RecordPlace kAt{"m.jsonl", 7};

// Through the text, as the file carries it.
nlohmann::json through_text(const nlohmann::json& j) { return nlohmann::json::parse(j.dump()); }

StepRecord full_step() {
  StepRecord s;
  s.step = 12;
  s.loss = 5.520655393600464;
  s.val_loss = 4.773347914218903;
  s.lr = 7.500000000000001e-05;
  s.grad_norm = 8.44911553391505;
  s.loss_scale = 65536.0;
  s.skipped = false;
  s.clipped = true;
  s.trained_tokens = 412;
  s.masked_tokens = 100;
  s.tokens_per_s = 3302.7069821629593;
  s.step_seconds = 0.314893209;
  for (uint64_t r = 0; r < 2; ++r) {
    RankMemoryRecord m;
    m.categories["params"] = {842496 + r, 842496 + r};
    m.categories["buckets"] = {0, 1386240};
    m.categories["activations"] = {22539008, 22539009};
    m.model_states = 6739968 - r;
    m.disk = DiskBytes{5066752, 25333760 + r, 30400512};  // --offload-optimizer
    s.memory.push_back(m);
    RankCommRecord c;
    c["all_gather"] = {14, 1783296, 1783296 + r, 0.015625};
    c["all_reduce_scalar"] = {3, 24, 24, std::nullopt};  // a file from before the seconds were written
    s.comm.push_back(c);
    s.cpu_seconds.push_back(0.3125 + 0.0625 * static_cast<double>(r));
    s.comm_cpu_seconds.push_back(0.125 + 0.0625 * static_cast<double>(r));
    s.comm_wait_seconds.push_back(0.25 - 0.0625 * static_cast<double>(r));
    s.runqueue_seconds.push_back(0.5 + 0.125 * static_cast<double>(r));
  }
  return s;
}

TEST(MetricsRecord, StepRoundTripsWithEveryField) {
  const StepRecord s = full_step();
  const StepRecord back = parse_step_record(through_text(to_json(s)), kAt);
  EXPECT_EQ(back, s);
  ASSERT_EQ(back.memory.size(), 2u);
  EXPECT_EQ(back.memory[1].categories.at("params").current, 842497u);
  EXPECT_EQ(back.comm[1].at("all_gather").bytes_received, 1783297u);
  EXPECT_EQ(back.memory[1].disk->read, 25333761u);
}

TEST(MetricsRecord, StepRoundTripsWithOptionalFieldsAbsent) {
  StepRecord s;
  s.step = 3;
  s.skipped = true;  // a skipped fp16 step: no gradient norm
  s.memory.push_back(RankMemoryRecord{});
  s.comm.push_back(RankCommRecord{});
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j.dump(),
            R"({"clipped":false,"comm":[{}],"grad_norm":null,"loss":null,"loss_scale":null,"lr":null,"memory":[{}],)"
            R"("skipped":true,"step":3,"step_seconds":null,"tokens_per_s":null})");
  EXPECT_EQ(parse_step_record(through_text(j), kAt), s);

  StepRecord bare;
  bare.step = 1;
  EXPECT_EQ(parse_step_record(through_text(to_json(bare)), kAt), bare);
}

TEST(MetricsRecord, TokenCountsMustBeCounts) {
  for (const char* bad : {R"({"step":1,"loss":1,"masked_tokens":-1})", R"({"step":1,"loss":1,"trained_tokens":2.5})",
                          R"({"step":1,"loss":1,"masked_tokens":"many"})"}) {
    EXPECT_THROW((void)parse_step_record(nlohmann::json::parse(bad), kAt), ConfigError) << bad;
  }
}

TEST(MetricsRecord, ThreadSecondsAreNumbersPerRank) {
  for (const char* bad :
       {R"({"step":1,"loss":1,"cpu_seconds":0.5})", R"({"step":1,"loss":1,"cpu_seconds":["x"]})",
        R"({"step":1,"loss":1,"comm_cpu_seconds":{"a":1}})", R"({"step":1,"loss":1,"comm_wait_seconds":[1,"x"]})",
        R"({"step":1,"loss":1,"runqueue_seconds":true})"}) {
    EXPECT_THROW((void)parse_step_record(nlohmann::json::parse(bad), kAt), ConfigError) << bad;
  }
}

TEST(MetricsRecord, StepLineIsTheTrainersLayout) {
  StepRecord s;
  s.step = 2;
  s.loss = 1.5;
  s.val_loss = 1.25;
  s.lr = 0.001;
  s.grad_norm = 0.5;
  s.loss_scale = 1.0;
  s.tokens_per_s = 100.0;
  s.step_seconds = 0.25;
  RankMemoryRecord m;
  m.categories["grads"] = {1, 2};
  m.categories["adam_m"] = {3, 4};
  m.model_states = 5;
  s.memory = {m};
  s.comm = {RankCommRecord{{"reduce_scatter", {6, 7, 8, 0.5}}}};
  EXPECT_EQ(
      to_json(s).dump(),
      R"({"clipped":false,"comm":[{"reduce_scatter":{"bytes_received":8,"bytes_sent":7,"calls":6,"seconds":0.5}}],)"
      R"("grad_norm":0.5,"loss":1.5,"loss_scale":1.0,"lr":0.001,)"
      R"("memory":[{"adam_m":{"current":3,"peak":4},"grads":{"current":1,"peak":2},"model_states":5}],)"
      R"("skipped":false,"step":2,"step_seconds":0.25,"tokens_per_s":100.0,"val_loss":1.25})");
}

TEST(MetricsRecord, NonFiniteNumbersAreWrittenAsNullAndReadAsAbsent) {
  StepRecord s = full_step();
  s.loss = std::numeric_limits<double>::quiet_NaN();
  s.tokens_per_s = std::numeric_limits<double>::infinity();
  const nlohmann::json j = through_text(to_json(s));
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_TRUE(j["tokens_per_s"].is_null());
  const StepRecord back = parse_step_record(j, kAt);
  EXPECT_FALSE(back.loss.has_value());
  EXPECT_FALSE(back.tokens_per_s.has_value());
}

TEST(MetricsRecord, FinalRoundTrips) {
  const FinalRecord full{.step = 12, .val_loss = 3.598881483078003, .held_out_accuracy = 0.01};
  const nlohmann::json j = to_json(full);
  EXPECT_EQ(j.dump(), R"({"final":{"held_out_accuracy":0.01,"step":12,"val_loss":3.598881483078003}})");
  EXPECT_EQ(record_kind(j), RecordKind::final);
  EXPECT_EQ(parse_final_record(through_text(j), kAt), full);

  FinalRecord bare;
  bare.step = 6;
  EXPECT_EQ(to_json(bare).dump(), R"({"final":{"step":6,"val_loss":null}})");
  EXPECT_EQ(parse_final_record(through_text(to_json(bare)), kAt), bare);
}

TEST(MetricsRecord, KindsAndPrecision) {
  EXPECT_EQ(record_kind(to_json(full_step())), RecordKind::step);
  const nlohmann::json config = nlohmann::json::parse(R"({"config":{"precision":{"value":"BF16","source":"flag"}}})");
  EXPECT_EQ(record_kind(config), RecordKind::config);
  EXPECT_EQ(parse_config_precision(config, kAt), "bf16");
  EXPECT_EQ(parse_config_precision(nlohmann::json::parse(R"({"config":{"precision":"fp16"}})"), kAt), "fp16");
  EXPECT_FALSE(parse_config_precision(nlohmann::json::parse(R"({"config":{}})"), kAt).has_value());
}

TEST(MetricsRecord, ErrorsNameTheFileAndLine) {
  try {
    parse_step_record(nlohmann::json::parse(R"({"step":1,"loss":1,"lr":"fast"})"), kAt);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("m.jsonl line 7: \"lr\" must be a number or null"), std::string::npos)
        << e.what();
  }
  try {
    parse_final_record(nlohmann::json::parse(R"({"final":{"step":1,"held_out_accuracy":"all"}})"), kAt);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"final.held_out_accuracy\" must be a number or null"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace zerodp::report
