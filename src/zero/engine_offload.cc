// SPDX-License-Identifier: Apache-2.0
// The Engine with --offload-optimizer (zero/offload_store.h): each unit's
// master weights and optimizer states live in an extent of the rank's
// offload file, and every use of them is a pass over the units that
// attaches each optimizer to its extent while it is in RAM. Split from
// engine.cc, which drives training.
#include <cstring>
#include <span>
#include <vector>

#include "core/error.h"
#include "zero/engine.h"
#include "zero/grad_accumulate.h"

namespace zerodp::zero {
namespace {

// Detaches an optimizer's states however the visit ends.
class Attached {
 public:
  Attached(optim::Optimizer& opt, std::span<std::byte> states) : opt_(opt) { opt_.attach_states(states); }
  ~Attached() { opt_.detach_states(); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
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
  constexpr size_t kChunkElements = size_t{1} << 16;  // fill_params' chunk
  LedgerBuffer<float> chunk(ledger_, MemoryCategory::kScratch, std::min(kChunkElements, plan_.largest_unit()));
  const bool mixed = config_.dtype.is_low_precision();
  visit_states(OffloadStore::Pass::kFill, [&](size_t u, std::span<float> master) {
    fill_unit(u, source, chunk.span(), mixed ? master : std::span<float>());
    optimizers_[u]->reset_states();
  });
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

std::vector<std::span<float>> Engine::read_offloaded_states() {
  std::vector<size_t> at{0};
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    // Extents are whole multiples of kStateAlign: each copy stays aligned.
    at.push_back(at.back() + optim::offload_extent_bytes(*optimizers_[u], config_.dtype.is_low_precision()));
  }
  offload_views_ = LedgerBuffer<std::byte>(ledger_, MemoryCategory::kScratch, at.back());
  offload_->stream(OffloadStore::Pass::kRead, [&](size_t u, std::span<std::byte> extent) {
    std::memcpy(offload_views_.data() + at[u], extent.data(), extent.size());
  });
  std::vector<std::span<float>> masters;
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const std::span<std::byte> extent(offload_views_.data() + at[u], at[u + 1] - at[u]);
    const size_t master_bytes = offload_master_bytes(u);
    optimizers_[u]->attach_states(extent.subspan(master_bytes));
    masters.push_back(master_bytes > 0
                          ? std::span<float>(reinterpret_cast<float*>(extent.data()), update_range(u).count)
                          : master_weights().floats(u, update_range(u)));
  }
  return masters;
}

void Engine::release_offloaded_states(bool write_back) {
  if (offload_views_.size() == 0) return;
  for (auto& opt : optimizers_) opt->detach_states();
  if (write_back) {
    size_t at = 0;
    offload_->stream(OffloadStore::Pass::kFill, [&](size_t u, std::span<std::byte> extent) {
      std::memcpy(extent.data(), offload_views_.data() + at, extent.size());
      at += extent.size();
      if (offload_master_bytes(u) > 0) {
        const comm::ShardRange upd = update_range(u);
        convert_into(params_.slice(u, upd), comm::ConstBuffer(extent.data(), upd.count, Dtype::fp32()));
      }
    });
  }
  offload_views_.reset();
}

}  // namespace zerodp::zero
