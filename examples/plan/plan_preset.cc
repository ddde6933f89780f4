// SPDX-License-Identifier: Apache-2.0
// The planner called from code: what `zerodp plan --model gpt2-124m --ranks 8
// --device-memory 8GiB` computes, as values. For every ZeRO stage it prints a
// rank's bytes by category (the same model the engine's memory ledger
// measures), the communication per step and the stage the planner recommends.
#include <cstdio>

#include "plan/planner.h"
#include "plan/quantity.h"

using namespace zerodp;

int main(int argc, char** argv) {
  const char* preset = argc > 1 ? argv[1] : "gpt2-124m";  // any GPT preset of `zerodp model list`
  plan::PlanConfig config;
  config.shape = plan::find_preset(preset);
  if (!config.shape) {
    std::fprintf(stderr, "no GPT preset named %s\n", preset);
    return 2;
  }
  config.model_name = preset;
  config.ranks = {8};
  config.precision = Dtype::bf16();                               // mixed precision, AdamW (the default)
  config.device_memory = uint64_t(8) << 30;                       // 8 GiB per rank
  config.activations = plan::ActivationConfig{.micro_batch = 4};  // sequence: the model's context

  const plan::PlanResult result = plan::make_plan(config);
  const plan::RankPlan& n8 = result.per_ranks.front();
  std::printf("%s (%s parameters) on %d ranks, bf16 + AdamW, per rank:\n", preset,
              plan::format_count(double(result.config.num_params)).c_str(), n8.ranks);
  std::printf(
      "stage  params       grads        optimizer    buffers      activations  peak         fits  sends/step\n");
  for (const plan::StagePlan& s : n8.stages) {
    auto gib = [](uint64_t bytes) { return plan::format_gib(double(bytes)); };
    std::printf("%-6d %-12s %-12s %-12s %-12s %-12s %-12s %-5s %s\n", stage_number(s.stage),
                gib(s.states.params).c_str(), gib(s.states.grads).c_str(), gib(s.states.optimizer()).c_str(),
                gib(s.buffers()).c_str(), gib(s.activations).c_str(), gib(s.peak).c_str(),
                s.fits.value_or(false) ? "yes" : "no", gib(s.comm.sent_bytes).c_str());
  }
  if (n8.recommended)
    std::printf("recommended: stage %d. %s\n", stage_number(*n8.recommended), n8.recommendation.c_str());
  return 0;
}
