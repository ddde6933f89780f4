#include "model/model.h"

#include "core/error.h"

namespace zerodp::model {

std::span<const float> Model::unit_span(std::span<const float> all, int unit) const {
  const auto& us = units();
  ZDP_CHECK(unit >= 0 && size_t(unit) < us.size(), ShapeError, "[model] unit {} out of range [0, {})",
            unit, us.size());
  ZDP_CHECK_EQ(all.size(), num_params(), ShapeError, "[model] parameter buffer size");
  return all.subspan(us[unit].offset, us[unit].count);
}

std::span<float> Model::unit_span(std::span<float> all, int unit) const {
  const auto& us = units();
  ZDP_CHECK(unit >= 0 && size_t(unit) < us.size(), ShapeError, "[model] unit {} out of range [0, {})",
            unit, us.size());
  ZDP_CHECK_EQ(all.size(), num_params(), ShapeError, "[model] parameter buffer size");
  return all.subspan(us[unit].offset, us[unit].count);
}

std::vector<TensorInfo> Model::tensors() const {
  std::vector<TensorInfo> t;
  for (const auto& u : units()) t.push_back({u.name, u.offset, u.count, {static_cast<int>(u.count)}, true});
  return t;
}

std::vector<int> Model::last_backward_op() const {
  std::vector<int> last(units().size(), -1);
  const auto& o = ops();
  for (int i = static_cast<int>(o.size()) - 1; i >= 0; --i) last[o[i].unit] = i;
  return last;
}

float forward_all(const Model& model, std::span<const float> params, Workspace& ws) {
  const auto& ops = model.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    model.forward(static_cast<int>(i), model.unit_span(params, ops[i].unit), ws);
  }
  return ws.loss();
}

void backward_all(const Model& model, std::span<const float> params, std::span<float> grads,
                  Workspace& ws) {
  const auto& ops = model.ops();
  for (int i = static_cast<int>(ops.size()) - 1; i >= 0; --i) {
    model.backward(i, model.unit_span(params, ops[i].unit), model.unit_span(grads, ops[i].unit), ws);
  }
}

}  // namespace zerodp::model
