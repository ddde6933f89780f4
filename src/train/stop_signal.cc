// SPDX-License-Identifier: Apache-2.0
#include "train/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace zerodp::train {
namespace {

std::atomic<int> g_requested{0};
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

void on_signal(int sig) {
  int expected = 0;
  if (g_requested.compare_exchange_strong(expected, sig)) return;
  // The second signal: leave now. Only async-signal-safe calls here.
  static const char kMessage[] =
      "\nzerodp: second signal: exiting now without saving; the last complete checkpoint is intact\n";
  const ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  _exit(128 + sig);
}

}  // namespace

StopOnSignals::StopOnSignals() {
  g_requested.store(0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking calls resume; the loop checks between steps
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopOnSignals::~StopOnSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int StopOnSignals::requested() { return g_requested.load(std::memory_order_relaxed); }

const char* signal_name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "a signal";
  }
}

}  // namespace zerodp::train
