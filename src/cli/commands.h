// SPDX-License-Identifier: Apache-2.0
// The subcommands of the zerodp executable. Each lives in its own file and
// adds itself to its parent with add_*_command; main.cc wires them together.
// A command's callback turns strings into typed configs once, then calls the
// lower layers. Errors propagate as zerodp::Error (ConfigError -> exit 2).
#pragma once

#include <CLI/CLI.hpp>

namespace zerodp::cli {

void add_plan_command(CLI::App& app);            // zerodp plan (plan_command.cc)
void add_report_command(CLI::App& app);          // zerodp report (report_command.cc)
void add_train_command(CLI::App& app);           // zerodp train (train_command.cc)
void add_bench_engine_command(CLI::App& bench);  // zerodp bench engine (bench_engine_command.cc)
void add_bench_model_command(CLI::App& bench);   // zerodp bench model (bench_model_command.cc)
void add_model_command(CLI::App& app);           // zerodp model info|list (model_command.cc)
void add_bench_comm_command(CLI::App& bench);    // zerodp bench comm (bench_comm_command.cc)
void add_bench_disk_command(CLI::App& bench);    // zerodp bench disk (bench_disk_command.cc)
void add_ckpt_command(CLI::App& app);            // zerodp ckpt inspect|consolidate|reshard (ckpt_command.cc)
void add_tokenize_command(CLI::App& app);        // zerodp tokenize (tokenize_command.cc)

}  // namespace zerodp::cli
