// SPDX-License-Identifier: Apache-2.0
#include "cli/mpi_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "comm/mpi.h"
#include "core/error.h"

namespace zerodp::cli {

std::string shell_quote(const std::string& text) {
  std::string out(1, '\'');
  for (char ch : text) {
    if (ch == '\'') {
      out.append("'\\''");  // close, escaped quote, reopen
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('\'');
  return out;
}

std::string self_path() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  ZDP_CHECK(n > 0, ConfigError, "[mpirun] cannot find this executable's path (/proc/self/exe)");
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::string mpirun_command(int ranks, const std::vector<std::string>& args, const std::string& who) {
  const std::string mpirun = comm::mpiexec_path();
  ZDP_CHECK(!mpirun.empty(), ConfigError, "[{}] mpirun was not found at build time: use --backend thread", who);
  std::string cmd = shell_quote(mpirun) + " -np " + std::to_string(ranks);
  // Oversubscription makes OpenMPI yield while polling: only when needed.
  if (ranks > static_cast<int>(std::thread::hardware_concurrency())) cmd += " --oversubscribe";
  if (geteuid() == 0) cmd += " --allow-run-as-root";
  // (Appended piecewise: GCC 12 warns falsely on " " + std::string&&.)
  cmd.push_back(' ');
  cmd += shell_quote(self_path());
  for (const auto& a : args) {
    cmd.push_back(' ');
    cmd += shell_quote(a);
  }
  return cmd;
}

std::vector<std::string> run_and_read_lines(const std::string& command, const std::string& who) {
  // The command is built by shell_command, every argument shell-quoted.
  std::FILE* pipe = popen(command.c_str(), "r");  // NOLINT(cert-env33-c)
  ZDP_CHECK(pipe != nullptr, Error, "[{}] cannot start: {}", who, command);
  std::vector<std::string> lines;
  std::string current;
  for (int ch; (ch = std::fgetc(pipe)) != EOF;) {
    if (ch == '\n') {
      lines.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(ch);
    }
  }
  if (!current.empty()) lines.push_back(current);
  const int status = pclose(pipe);
  ZDP_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, Error,
            "[{}] the mpirun run failed (status {}): {}", who, status, command);
  return lines;
}

}  // namespace zerodp::cli
