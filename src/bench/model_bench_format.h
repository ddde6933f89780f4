// SPDX-License-Identifier: Apache-2.0
// How `zerodp bench model` shows a result: a text report, or JSON. The
// headline rates come from the fastest step (the least disturbed one on a
// shared machine), the means alongside.
#pragma once

#include <string>

#include "bench/model_bench.h"

namespace zerodp::bench {

// The text report: model, batch, OpenBLAS, sgemm rate, model FLOPs, the
// train / fwd+bwd / sgemm-bound rates, loss, the per-kernel profile and the
// workspace. Ends with a newline.
std::string format_model_bench_text(const ModelBenchResult& result);

// The same numbers as a JSON object, indented by 2, without a final newline.
std::string format_model_bench_json(const ModelBenchResult& result);

}  // namespace zerodp::bench
