// SPDX-License-Identifier: Apache-2.0
// zerodp's command-line entry point: builds the command tree, parses once,
// and maps errors to exit codes (0 ok, 1 runtime failure, 2 bad input).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/unknown_option.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/simd.h"
#include "train/run_facts.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{
      "zerodp: data-parallel training with ZeRO (stages 0-3), on CPU ranks as threads or MPI processes.\n"
      "Every run measures what each rank holds and sends next to the ZeRO paper's formulas."};
  app.set_version_flag("--version", [] {
    // The first and the SIMD line keep their form: scripts read them.
    std::string levels;
    for (zerodp::SimdLevel l : zerodp::supported_simd_levels())
      levels += fmt::format(" {}", zerodp::simd_level_name(l));
    std::string text =
        fmt::format("zerodp {}\nSIMD levels this CPU runs:{} (best {}; ZERODP_SIMD forces a lower one)\n",
                    zerodp::build_info().version, levels, zerodp::simd_level_name(zerodp::best_simd_level()));
    for (const auto& [name, value] : zerodp::train::run_facts()) {
      if (name != "version") text += fmt::format("{:<9} {}\n", name + ":", value);
    }
    text.pop_back();
    return text;
  });
  app.require_subcommand(1);
  app.fallthrough();

  // Subcommands register here, one line each, in the order --help lists them.
  zerodp::cli::add_train_command(app);
  zerodp::cli::add_tokenize_command(app);
  zerodp::cli::add_plan_command(app);
  zerodp::cli::add_model_command(app);
  zerodp::cli::add_ckpt_command(app);
  zerodp::cli::add_report_command(app);
  auto* bench = app.add_subcommand("bench", "Measure performance against baselines run in the same process");
  bench->require_subcommand(1);
  zerodp::cli::add_bench_comm_command(*bench);
  zerodp::cli::add_bench_model_command(*bench);
  zerodp::cli::add_bench_disk_command(*bench);
  zerodp::cli::add_bench_engine_command(*bench);

  try {
    zerodp::active_simd_level();  // a bad ZERODP_SIMD is a one-line error before anything runs
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown flag: name the subcommand and the flag that was meant.
    const auto unknown = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr
                             ? zerodp::cli::unknown_option_message(app, argc, argv)
                             : std::nullopt;
    fmt::print(stderr, "zerodp: {}\n", unknown.value_or(e.what()));
    fmt::print(stderr, "Run with --help for the options.\n");
    return 2;
  } catch (const zerodp::ConfigError& e) {
    fmt::print(stderr, "zerodp: {}\n", e.message());
    return 2;
  } catch (const zerodp::InputFileError& e) {
    fmt::print(stderr, "zerodp: {}\n", e.message());
    return 2;
  } catch (const zerodp::Error& e) {
    fmt::print(stderr, "zerodp: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "zerodp: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (...) {
    // Building the commands failed, or printing an error did (stderr closed):
    // nothing is left to say it with but the exit code.
    return 1;
  }
}
