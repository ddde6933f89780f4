// SPDX-License-Identifier: Apache-2.0
// The Engine with --offload-optimizer (zero/offload_store.h): each unit's
// master weights and optimizer states live in an extent of the rank's
// offload file, and every use of them is a pass over the units that
// attaches each optimizer to its extent while it is in RAM. Split from
// engine.cc, which drives training.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "core/error.h"
#include "zero/engine.h"

namespace zerodp::zero {
namespace {

// Detaches an optimizer's states however the visit ends.
class Attached {
 public:
  Attached(optim::Optimizer& opt, std::span<std::byte> states) : opt_(opt) { opt_.attach_states(states); }
  // For states attached already (open_unit_views): only the detaching.
  static Attached adopt(optim::Optimizer& opt) { return Attached(opt); }
  ~Attached() { opt_.detach_states(); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  explicit Attached(optim::Optimizer& opt) : opt_(opt) {}
  optim::Optimizer& opt_;
};

}  // namespace

size_t Engine::offload_master_bytes(size_t u) const {
  return optim::offload_master_bytes(update_range(u).count, config_.dtype.is_low_precision());
}

void Engine::make_offload_store(const std::vector<std::vector<optim::TensorShape>>& shapes, const ParamSource& source) {
  make_optimizers(shapes, /*external_states=*/true);
  std::vector<size_t> extents;
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    extents.push_back(optim::offload_extent_bytes(*optimizers_[u], config_.dtype.is_low_precision()));
  }
  offload_ = std::make_unique<OffloadStore>(config_.offload_optimizer_dir, comm_.rank(), std::move(extents), ledger_);
  fill_params(source, /*fresh_states=*/true);
}

void Engine::visit_states(OffloadStore::Pass pass, const StateVisit& fn) {
  if (!offload_) {
    for (size_t u = 0; u < plan_.num_units(); ++u) fn(u, master_weights().floats(u, update_range(u)));
    return;
  }
  offload_->stream(pass, [&](size_t u, std::span<std::byte> extent) {
    const size_t master_bytes = offload_master_bytes(u);
    const std::span<float> master =
        master_bytes > 0 ? std::span<float>(reinterpret_cast<float*>(extent.data()), update_range(u).count)
                         : master_weights().floats(u, update_range(u));
    const Attached attached(*optimizers_[u], extent.subspan(master_bytes));
    fn(u, master);
  });
}

std::vector<Engine::StateView> Engine::offloaded_state_views() {
  std::vector<StateView> views;
  packed_views_.clear();
  const std::span<std::byte> window = offload_->window();
  const bool mixed = config_.dtype.is_low_precision();
  // The converted views of one unit at a time: the most any unit needs,
  // counted by a first round whose views are dropped (their spans empty).
  size_t most = 0;
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const Attached attached(*optimizers_[u], window.subspan(offload_master_bytes(u)));
    size_t needed = 0;
    std::vector<StateView> dropped;
    add_unit_views(
        u, {},
        [&](size_t count) {
          needed += count;
          return std::span<float>();
        },
        dropped);
    most = std::max(most, needed);
  }
  packed_views_.clear();
  if (most > 0) offload_converted_ = LedgerBuffer<float>(ledger_, MemoryCategory::kScratch, most);
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const Attached attached(*optimizers_[u], window.subspan(offload_master_bytes(u)));
    size_t used = 0;
    const auto converted = [&](size_t count) {
      const std::span<float> out = offload_converted_.span().subspan(used, count);
      used += count;
      return out;
    };
    const std::span<float> master =
        mixed ? std::span<float>(reinterpret_cast<float*>(window.data()), update_range(u).count)
              : master_weights().floats(u, update_range(u));
    add_unit_views(u, master, converted, views);
  }
  return views;
}

void Engine::open_unit_views(size_t unit, bool loading) {
  if (!offload_) return;
  const std::span<std::byte> extent = offload_->read_one(unit);
  optimizers_[unit]->attach_states(extent.subspan(offload_master_bytes(unit)));
  if (loading) return;
  for (ConvertedView& v : packed_views_) {
    if (v.unit == unit) fill_converted(v);
  }
}

void Engine::close_unit_views(size_t unit, bool loaded) {
  if (!offload_) return;
  const Attached attached = Attached::adopt(*optimizers_[unit]);  // detached however this ends
  if (!loaded) return;
  for (const ConvertedView& v : packed_views_) {
    if (v.unit == unit) take_converted(v);
  }
  // The loaded master weights are in RAM only now: refresh_params' rounding, here.
  if (offload_master_bytes(unit) > 0) {
    round_params(unit, {reinterpret_cast<const float*>(offload_->window().data()), update_range(unit).count});
  }
  offload_->write_one(unit);
}

}  // namespace zerodp::zero
