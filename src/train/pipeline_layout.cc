// SPDX-License-Identifier: Apache-2.0
#include "train/pipeline_layout.h"

#include "core/error.h"
#include "kernels/compute.h"
#include "model/gpt_family.h"
#include "plan/model_shape.h"

namespace zerodp::train {

plan::PipelinePlan run_pipeline_plan(const TrainConfig& config, const model::ModelConfig& model_config, int ranks) {
  const auto* gpt = model_config.as<model::GptSpec>();
  ZDP_CHECK(gpt != nullptr, ConfigError,
            "[train] --pipeline-stages cuts GPT models only so far; this is a \"{}\" model: train it without "
            "--pipeline-stages",
            model_config.kind());
  plan::PipelineConfig p;
  p.shape = plan::gpt_shape(gpt->config());
  p.ranks = ranks;
  p.stages = config.pipeline_stages;
  p.schedule = config.pipeline_schedule;
  p.micro_batches = config.engine.grad_accum;
  p.micro_batch = config.micro_batch;
  p.seq_len = config.seq_len;
  p.checkpointing = config.activation_checkpointing;
  p.bf16_compute = config.engine.compute == kernels::Compute::kBf16;
  p.precision = config.engine.dtype;
  p.optimizer = config.engine.optimizer;
  p.layers_per_stage = config.pipeline_cut;
  p.balance = plan::parse_pipeline_balance(config.pipeline_balance);
  return plan::plan_pipeline(p);
}

zero::PipelineLayout engine_pipeline_layout(const plan::PipelinePlan& plan, const model::Model& model) {
  zero::PipelineLayout layout;
  layout.stages = static_cast<int>(plan.stages.size());
  layout.schedule = plan.config.schedule;
  const auto& ops = model.ops();
  for (size_t s = 1; s < plan.stages.size(); ++s) {
    const int block = plan.stages[s].first_layer;
    int cut = -1;
    for (int i = 1; i < static_cast<int>(ops.size()) && cut < 0; ++i) {
      if (model.can_cut_before(i) && ops[static_cast<size_t>(i)].layer == block) cut = i;
    }
    ZDP_CHECK(cut > 0, ConfigError, "[train] the model cannot be cut before block {} (stage {})", block, s);
    layout.cuts.push_back(cut);
  }
  return layout;
}

plan::EngineRun pipeline_engine_run(const TrainConfig& config, bool consolidated_copy) {
  return plan::EngineRun{.stage = config.engine.stage,
                         .dtype = config.engine.dtype,
                         .optimizer = config.engine.optimizer,
                         .bucket_elements = config.engine.bucket_elements,
                         .consolidated_copy = consolidated_copy};
}

uint64_t pipeline_local_bytes(const plan::PipelinePlan& plan, const plan::EngineRun& run, plan::LocalRanks local) {
  uint64_t bytes = 0;
  for (int r = local.first; r < local.first + local.count; ++r) bytes += predict_pipeline_rank(plan, run, r).resident();
  return bytes;
}

void check_pipeline_memory(const plan::PipelinePlan& plan, const plan::EngineRun& run, plan::LocalRanks local,
                           uint64_t baseline, uint64_t limit, const std::string& limit_source) {
  const uint64_t need = baseline + pipeline_local_bytes(plan, run, local);
  ZDP_CHECK(need <= limit, ConfigError,
            "[train] the pipeline's plan needs {:.2f} GiB for this process ({} rank{} at ZeRO stage {}, baseline "
            "{:.2f} GiB) but {} allows {:.2f} GiB: use more pipeline stages, a smaller micro-batch or "
            "--activation-checkpointing",
            static_cast<double>(need) / (1 << 30), local.count, local.count == 1 ? "" : "s", stage_number(run.stage),
            static_cast<double>(baseline) / (1 << 30), limit_source, static_cast<double>(limit) / (1 << 30));
}

}  // namespace zerodp::train
