// SPDX-License-Identifier: Apache-2.0
// Starting this executable again under mpirun, for commands that compare the
// MPI backend in the same run (bench engine; the child prints result lines
// that the parent reads back).
// Thread-safety: call from the main thread.
#pragma once

#include <string>
#include <vector>

namespace zerodp::cli {

// 'text' quoted for /bin/sh.
std::string shell_quote(const std::string& text);
// The running executable's path (/proc/self/exe).
std::string self_path();
// "mpirun -np N [--oversubscribe] [--allow-run-as-root] <this exe> args...";
// ConfigError naming `who` when this build has no mpirun.
std::string mpirun_command(int ranks, const std::vector<std::string>& args, const std::string& who);
// Runs a shell command and returns its standard output lines; Error naming
// `who` when it cannot start or exits non-zero.
std::vector<std::string> run_and_read_lines(const std::string& command, const std::string& who);

}  // namespace zerodp::cli
