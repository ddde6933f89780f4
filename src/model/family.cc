// SPDX-License-Identifier: Apache-2.0
#include "model/family.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include "core/error.h"

namespace zerodp::model {
namespace {

bool valid_kind(std::string_view kind) {
  if (kind.empty() || kind.size() > 64) return false;
  return std::all_of(kind.begin(), kind.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
  });
}

// The registry. A deque, so that the Family pointers handed out stay valid
// as families are added.
struct Registry {
  std::mutex mutex;
  std::deque<Family> families;

  const Family* find(std::string_view kind) const {
    for (const Family& f : families) {
      if (f.kind == kind) return &f;
    }
    return nullptr;
  }

  void add(Family family) {
    ZDP_CHECK(valid_kind(family.kind), ConfigError,
              "[model family] kind \"{}\" must be 1-64 lower-case letters, digits, '-', '_' or '.'", family.kind);
    ZDP_CHECK(find(family.kind) == nullptr, ConfigError, "[model family] \"{}\" is registered already", family.kind);
    ZDP_CHECK(static_cast<bool>(family.from_json), ConfigError, "[model family] \"{}\" has no from_json", family.kind);
    for (const Preset& p : family.presets) {
      ZDP_CHECK(p.spec != nullptr && p.spec->kind() == family.kind, ConfigError,
                "[model family] preset \"{}\" of \"{}\" has no spec of that family", p.name, family.kind);
      for (const Family& f : families) {
        for (const Preset& q : f.presets) {
          ZDP_CHECK(q.name != p.name, ConfigError, "[model family] preset \"{}\" of \"{}\" is taken by \"{}\"", p.name,
                    family.kind, f.kind);
        }
      }
    }
    families.push_back(std::move(family));
  }
};

// The built-in families are registered on first use, in their order: the
// order of `zerodp model list`.
Registry& registry() {
  static Registry r;
  static const bool builtins = [] {
    for (Family& f : builtin_families()) r.add(std::move(f));
    return true;
  }();
  (void)builtins;
  return r;
}

}  // namespace

std::optional<ActivationEstimate> ModelSpec::estimate_activations(const ActivationConfig&) const {
  return std::nullopt;
}

void register_family(Family family) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.add(std::move(family));
}

const Family* find_family(std::string_view kind) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.find(kind);
}

std::vector<const Family*> families() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  std::vector<const Family*> out;
  for (const Family& f : r.families) out.push_back(&f);
  return out;
}

std::string ModelConfig::kind() const { return spec ? spec->kind() : std::string(); }

}  // namespace zerodp::model
