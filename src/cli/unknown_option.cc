// SPDX-License-Identifier: Apache-2.0
#include "cli/unknown_option.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>
#include <vector>

namespace zerodp::cli {
namespace {

// Flags other tools use for what a zerodp flag does. A suggestion is made
// only when the subcommand has the target flag.
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"dtype", "--precision"},
    {"data-type", "--precision"},
    {"precision", "--dtype"},  // bench comm calls it --dtype
    {"zero-stage", "--stage"},
    {"zero", "--stage"},
    {"batch-size", "--micro-batch"},
    {"micro-batch-size", "--micro-batch"},
    {"train-micro-batch-size-per-gpu", "--micro-batch"},
    {"gradient-accumulation-steps", "--grad-accum"},
    {"grad-accumulation", "--grad-accum"},
    {"accum", "--grad-accum"},
    {"nproc-per-node", "--ranks"},
    {"nproc", "--ranks"},
    {"world-size", "--ranks"},
    {"np", "--ranks"},
    {"num-steps", "--steps"},
    {"max-steps", "--steps"},
    {"train-iters", "--steps"},
    {"iters", "--steps"},
    {"num-iterations", "--steps"},
    {"learning-rate", "--lr"},
    {"gradient-clipping", "--clip"},
    {"grad-clip", "--clip"},
    {"max-grad-norm", "--clip"},
    {"deepspeed-config", "--config"},
    {"ds-config", "--config"},
    {"warmup-steps", "--warmup"},
    {"sequence-length", "--seq-len"},
    {"seq-length", "--seq-len"},
    {"block-size", "--seq-len"},
    {"max-seq-len", "--seq-len"},
    {"output-dir", "--save"},
    {"checkpoint-dir", "--save"},
};

// "--Seq_Len=4" -> "seq-len": no leading dashes, no value, lower
// case, '_' as '-'.
std::string normalize(std::string_view flag) {
  flag.remove_prefix(std::min(flag.find_first_not_of('-'), flag.size()));
  flag = flag.substr(0, flag.find('='));
  std::string out(flag);
  for (char& c : out) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions
// and swaps of neighbours ("--stpes") each cost 1.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

bool is_number(std::string_view token) {
  if (token.empty()) return false;
  double value = 0;
  const char* begin = token.data() + (token.front() == '+' ? 1 : 0);  // from_chars takes no '+'
  const auto [end, error] = std::from_chars(begin, token.data() + token.size(), value);
  return error == std::errc() && end == token.data() + token.size();
}

// A flag this app or, through fallthrough, a parent knows.
bool known_flag(const CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_parent()) {
    if (app->get_option_no_throw(name) != nullptr) return true;
    if (!app->get_fallthrough()) break;
  }
  return false;
}

const CLI::App* subcommand_named(const CLI::App* app, const std::string& name) {
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

}  // namespace

std::string suggest_option(std::string_view given, const std::vector<std::string>& known) {
  const std::string g = normalize(given);
  if (g.empty()) return "";
  auto has = [&](std::string_view flag) { return std::find(known.begin(), known.end(), flag) != known.end(); };
  for (const auto& [alias, target] : kAliases) {
    if (g == alias && has(target)) return std::string(target);
  }
  // A unique option that starts or ends with what was typed: --micro, --accum.
  std::string part;
  int parts = 0;
  for (const std::string& k : known) {
    const std::string n = normalize(k);
    if (g.size() >= 3 && n.size() > g.size() && (n.starts_with(g) || n.ends_with("-" + g))) {
      part = k;
      ++parts;
    }
  }
  // The nearest name, if a third of it or less (at least one edit) differs.
  std::string best;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const std::string n = normalize(k);
    const size_t d = edit_distance(g, n);
    const size_t limit = std::max<size_t>(1, std::min(g.size(), n.size()) / 3);
    if (d <= limit && (best.empty() || d < best_distance)) {
      best = k;
      best_distance = d;
    }
  }
  if (!best.empty()) return best;
  return parts == 1 ? part : "";
}

std::optional<std::string> unknown_option_message(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* current = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    if (token.size() > 1 && token[0] == '-' && !is_number(token)) {
      const std::string name = token.substr(0, token.find('='));
      if (known_flag(current, name)) continue;
      std::vector<std::string> flags;
      for (const CLI::Option* opt : current->get_options()) {
        for (const std::string& l : opt->get_lnames()) flags.push_back("--" + l);
      }
      const std::string where = path.empty() ? "zerodp" : path;
      const std::string suggestion = name.starts_with("--") ? suggest_option(name, flags) : "";
      if (suggestion.empty()) return fmt::format("unknown option {} for '{}'", name, where);
      return fmt::format("unknown option {} for '{}'; did you mean {}?", name, where, suggestion);
    }
    if (const CLI::App* sub = subcommand_named(current, token)) {
      current = sub;
      path += (path.empty() ? "" : " ") + sub->get_name();
    }
  }
  return std::nullopt;
}

}  // namespace zerodp::cli
