// SPDX-License-Identifier: Apache-2.0
// What `zerodp` says about a flag it does not know. CLI11's own message
// ("The following arguments were not expected: fp16 --dtype") names neither
// the subcommand nor what the user meant; this finds the subcommand the flag
// was given to and suggests the nearest of that subcommand's own flags:
//
//   zerodp: unknown option --dtype for 'train'; did you mean --precision?
//
// The suggestion comes from a small table of names that users of DeepSpeed,
// torchrun and llm.c type (--dtype, --zero-stage, --batch-size, --max-steps,
// ...; unknown_option.cc), then from the edit distance to each of the
// subcommand's long option names ('_' counts as '-', case is ignored).
// Thread-safety: pure functions of their arguments.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::cli {

// The long name among `known` (e.g. "--precision") that `given` (e.g.
// "--dtype", "--Precison", "--micro_batch=4") most likely meant, or "" when
// none is close enough.
std::string suggest_option(std::string_view given, const std::vector<std::string>& known);

// For a command line CLI11 refused with an ExtrasError: the one-line message
// for its first unknown flag, e.g. "unknown option --dtype for 'train'; did
// you mean --precision?", or nullopt when the extras hold no flag (a stray
// positional argument: CLI11's message stands).
std::optional<std::string> unknown_option_message(const CLI::App& app, int argc, const char* const* argv);

}  // namespace zerodp::cli
