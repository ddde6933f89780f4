// SPDX-License-Identifier: Apache-2.0
#include "ckpt/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/crc32c.h"
#include "ckpt/file_io.h"
#include "ckpt/manifest.h"
#include "ckpt/shard_reader.h"
#include "ckpt/shard_writer.h"
#include "comm/shard.h"
#include "core/build_info.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Runs fn on every rank and agrees on the outcome: when any rank failed,
// that rank breaks the communicator with its error and rethrows it, and the
// others throw the PeerFailedError that follows (so the thread backend
// reports the real cause, and nothing after this point runs anywhere).
// `survivable` (SaveOptions::survive_write_errors): when every failure was
// a write error (IoError), the communicator stays whole and every rank
// throws one, its own or SaveFailedError naming the peers' failure.
enum : uint64_t { kNoFailure = 0, kWriteError = 1, kOtherFailure = 2 };
template <typename Fn>
void on_every_rank(comm::Communicator& comm, Fn&& fn, bool survivable = false) {
  std::exception_ptr error;
  std::string reason;
  uint64_t mine = kNoFailure;
  try {
    fn();
  } catch (const IoError& e) {
    error = std::current_exception();
    reason = e.what();
    mine = survivable ? kWriteError : kOtherFailure;
  } catch (const std::exception& e) {
    error = std::current_exception();
    reason = e.what();
    mine = kOtherFailure;
  }
  const uint64_t failed = comm.all_reduce_uint64(mine, comm::ReduceOp::kMax);
  if (failed == kWriteError) {
    if (error) std::rethrow_exception(error);
    ZDP_THROW(SaveFailedError, "[ckpt save] rank {}: another rank could not write its part of the save", comm.rank());
  }
  if (error) {
    comm.abort(reason);
    std::rethrow_exception(error);
  }
  if (failed != 0) {
    comm.barrier();  // throws PeerFailedError once the failing rank has aborted
    ZDP_THROW(comm::PeerFailedError, "[ckpt] rank {}: another rank failed", comm.rank());
  }
}

void reach(const SaveOptions& options, SavePoint point, comm::Communicator& comm) {
  if (point == SavePoint::kBegin) check_fault_save_point();
  if (point != SavePoint::kDone) comm.fault_point(save_point_name(point));
  if (options.on_point) options.on_point(point, comm.rank());
}

// The state tensors of the views: every tensor name in order of first
// appearance, and which of them each unit holds (empty lists when every
// unit holds all of them; format.h unit_holds). The views come unit-major,
// each unit's "master" first, and each unit's names in the order of `names`.
struct TensorNames {
  std::vector<std::string> names;
  std::vector<std::vector<uint32_t>> unit_tensors;  // per unit: indices into names
  std::vector<std::vector<size_t>> views;           // per unit, per tensor: the view's index, or SIZE_MAX
  bool per_unit() const {
    return std::any_of(unit_tensors.begin(), unit_tensors.end(), [](const auto& t) { return !t.empty(); });
  }
};

// The tensor names of each unit of `part` in the views' order (empty lists
// for the units outside it).
std::vector<std::vector<std::string>> unit_tensor_names(const std::vector<StateTensorView>& views, size_t units,
                                                        const FilePart& part) {
  std::vector<std::vector<std::string>> of(units);
  for (size_t i = 0; i < views.size(); ++i) {
    const StateTensorView& v = views[i];
    ZDP_CHECK(v.unit >= part.unit_begin && v.unit < part.unit_end && (i == 0 || views[i - 1].unit <= v.unit),
              ShapeError,
              "[ckpt] state view {} ({}) is of unit {} after unit {}: the views are not unit-major over units [{}, {})",
              i, v.name, v.unit, i == 0 ? 0 : views[i - 1].unit, part.unit_begin, part.unit_end);
    of[v.unit].push_back(v.name);
  }
  for (size_t u = part.unit_begin; u < part.unit_end; ++u) {
    ZDP_CHECK(!of[u].empty() && of[u][0] == "master", ShapeError,
              "[ckpt] the engine's state views of unit {} do not start with master", u);
  }
  return of;
}

// Where ranks share shard files, each knows only its units' tensors, and
// every rank needs all of them for its file's layout (and rank 0 for the
// manifest): one all-gather of each rank's lists as text, padded to the
// longest. Replicas of a stage describe the same units alike.
std::vector<std::vector<std::string>> agree_unit_tensor_names(comm::Communicator& comm,
                                                              const std::vector<std::vector<std::string>>& mine) {
  std::string text;
  for (size_t u = 0; u < mine.size(); ++u) {
    if (mine[u].empty()) continue;
    text += std::to_string(u);
    for (const auto& name : mine[u]) text += " " + name;
    text += "\n";
  }
  const uint64_t longest = comm.all_reduce_uint64(text.size(), comm::ReduceOp::kMax);
  text.resize(longest, '\n');
  std::vector<std::byte> all(longest * static_cast<size_t>(comm.size()));
  comm.all_gather_value_bytes(std::as_bytes(std::span(text)), all);
  std::vector<std::vector<std::string>> of(mine.size());
  for (int r = 0; r < comm.size(); ++r) {
    std::istringstream lines(std::string(reinterpret_cast<const char*>(all.data()) + longest * r, longest));
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      std::istringstream words(line);
      size_t u = 0;
      words >> u;
      std::vector<std::string> names;
      for (std::string name; words >> name;) names.push_back(name);
      ZDP_CHECK(u < of.size() && (of[u].empty() || of[u] == names), ShapeError,
                "[ckpt save] rank {} holds unit {} with tensors [{}], another rank with [{}]", r, u,
                fmt::join(names, ", "), u < of.size() ? fmt::join(of[u], ", ") : fmt::join(names, ", "));
      of[u] = std::move(names);
    }
  }
  for (size_t u = 0; u < of.size(); ++u) {
    ZDP_CHECK(!of[u].empty(), ShapeError, "[ckpt save] no rank holds unit {}", u);
  }
  return of;
}

// The table of `of` (every unit's names, or those of some units) and where
// the views are in it.
TensorNames tensor_table(const std::vector<std::vector<std::string>>& of, const std::vector<StateTensorView>& views) {
  TensorNames out;
  for (const auto& unit : of) {
    for (const auto& name : unit) {
      if (std::find(out.names.begin(), out.names.end(), name) == out.names.end()) out.names.push_back(name);
    }
  }
  auto index = [&](const std::string& name) {
    return static_cast<uint32_t>(std::find(out.names.begin(), out.names.end(), name) - out.names.begin());
  };
  out.unit_tensors.resize(of.size());
  for (size_t u = 0; u < of.size(); ++u) {
    for (size_t k = 0; k < of[u].size(); ++k) {
      const uint32_t t = index(of[u][k]);
      ZDP_CHECK(k == 0 || t > out.unit_tensors[u].back(), ShapeError,
                "[ckpt save] unit {}'s state views ({}) are not in the order of the others' ({})", u,
                fmt::join(of[u], ", "), fmt::join(out.names, ", "));
      out.unit_tensors[u].push_back(t);
    }
  }
  out.views.assign(of.size(), std::vector<size_t>(out.names.size(), SIZE_MAX));
  for (size_t i = 0; i < views.size(); ++i) out.views[views[i].unit][index(views[i].name)] = i;
  // A unit holding all of them needs no list.
  for (auto& t : out.unit_tensors) {
    if (t.size() == out.names.size()) t.clear();
  }
  return out;
}

// The saved units (names and element counts) against this run's: the layout
// the records follow. Whether the model is the same beyond that is the
// training state's to say (TrainingState::check_saved_model).
void check_same_units(const Manifest& manifest, const std::vector<UnitEntry>& units, const std::string& description,
                      const std::string& path) {
  uint64_t num_params = 0;
  for (const auto& u : units) num_params += u.count;
  ZDP_CHECK(manifest.num_params == num_params && manifest.units.size() == units.size(), ConfigError,
            "[ckpt] {}: saved from a different model ({}, {} parameters in {} units); this run trains {} ({} "
            "parameters in {} units): use the same --model as the saved run",
            path, manifest.model_description, manifest.num_params, manifest.units.size(), description, num_params,
            units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    ZDP_CHECK(manifest.units[u].count == units[u].count && manifest.units[u].name == units[u].name, ConfigError,
              "[ckpt] {}: saved from a different model: unit {} is \"{}\" with {} parameters there, \"{}\" with {} "
              "here ({} vs {}): use the same --model as the saved run",
              path, u, manifest.units[u].name, manifest.units[u].count, units[u].name, units[u].count,
              manifest.model_description, description);
  }
}

// A view's values as bytes: its codes for a one-byte tensor, else its floats.
std::span<std::byte> view_bytes(const StateTensorView& v, const TensorLayout& layout) {
  const std::span<std::byte> bytes =
      layout.value_bytes == 1 ? std::as_writable_bytes(v.codes) : std::as_writable_bytes(v.data);
  ZDP_CHECK(bytes.size() == v.range.count * layout.value_bytes, ShapeError,
            "[ckpt] state view {} of unit {} holds {} bytes for {} values of {} bytes", v.name, v.unit, bytes.size(),
            v.range.count, layout.value_bytes);
  return bytes;
}

Manifest base_manifest(const RunRecord& record, const StepCounters& counters, int ranks, const TensorNames& tensors,
                       const SaveOptions& options, uint64_t save_id) {
  Manifest m;
  m.format_version = format_version_for(tensors.names, tensors.per_unit());
  m.save_id = save_id;
  m.created_by = "zerodp " + build_info().version + " (" + build_info().commit + ")";
  m.model_kind = record.model_kind;
  m.model_json = record.model_json;
  m.model_description = record.model_description;
  for (const auto& u : record.units) m.num_params += u.count;
  m.units = record.units;
  for (size_t u = 0; u < m.units.size(); ++u) m.units[u].tensors = tensors.unit_tensors[u];
  m.ranks = ranks;
  m.stage = record.stage;
  m.dtype = record.dtype;
  m.tensors = tensors.names;
  m.optimizer = record.optimizer;
  m.engine_json = record.engine_json;
  m.chunk_bytes = options.chunk_bytes;
  m.steps = counters.steps;
  m.optimizer_steps = counters.optimizer_steps;
  m.scaler = counters.scaler;
  m.seed = options.seed;
  m.data_step = options.data_step >= 0 ? options.data_step : counters.steps;
  m.metadata = options.metadata;
  return m;
}

void remove_dir(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  ZDP_CHECK(!ec, IoError, "[ckpt save] cannot remove {} ({})", path, ec.message());
}

// save() without the clean-up of a failed save.
SaveResult save_steps(TrainingState& state, const std::string& root, const SaveOptions& options) {
  const auto start = Clock::now();
  comm::Communicator& comm = state.communicator();
  const int rank = comm.rank();
  const RunRecord record = state.record();
  const StepCounters counters = state.counters();
  // The files this rank writes to: its own, or its part of a shared one.
  const FilePart part = state.file_part();
  const int ranks = part.files, file = part.file;
  const bool shared = ranks != comm.size();
  const int64_t step = options.data_step >= 0 ? options.data_step : counters.steps;
  const std::string name = step_dir_name(step);
  const std::string final_dir = join_path(root, name);
  const std::string tmp_dir = final_dir + ".tmp";
  ZDP_CHECK(valid_chunk_bytes(options.chunk_bytes), ConfigError,
            "[ckpt save] chunk size {} must be a positive multiple of 4 up to {}", options.chunk_bytes, kMaxChunkBytes);
  const bool survivable = options.survive_write_errors;
  on_every_rank(
      comm,
      [&] {
        reach(options, SavePoint::kBegin, comm);
        if (rank != 0) return;
        std::error_code ec;
        fs::create_directories(root, ec);
        ZDP_CHECK(!ec, IoError, "[ckpt save] cannot create {} ({})", root, ec.message());
        remove_dir(tmp_dir);  // a leftover of an interrupted save of this step
        fs::create_directory(tmp_dir, ec);
        ZDP_CHECK(!ec, IoError, "[ckpt save] cannot create {} ({})", tmp_dir, ec.message());
        sync_directory(root);
      },
      survivable);
  // One id for all files of this save: rank 0's 48 random bits (the format's
  // save id, docs/checkpoint-format.md), everyone else's 0, so the max is it.
  uint64_t my_id = 0;
  if (rank == 0) my_id = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}() & 0xFFFFu) << 32);
  const uint64_t save_id = comm.all_reduce_uint64(my_id, comm::ReduceOp::kMax);

  const std::vector<StateTensorView> views = state.state_tensors();
  std::vector<std::vector<std::string>> unit_names = unit_tensor_names(views, record.units.size(), part);
  if (shared) unit_names = agree_unit_tensor_names(comm, unit_names);
  const TensorNames names = tensor_table(unit_names, views);
  const std::vector<std::string>& tensors = names.names;
  std::vector<TensorLayout> layouts(tensors.size());
  std::transform(tensors.begin(), tensors.end(), layouts.begin(),
                 [](const std::string& t) { return tensor_layout(t); });
  std::vector<size_t> unit_counts;
  for (const auto& u : record.units) unit_counts.push_back(u.count);

  ShardFileInfo mine;
  uint64_t part_start = 0;
  on_every_rank(
      comm,
      [&] {
        const ShardLayout layout(unit_counts, ranks, file, layouts, options.chunk_bytes, names.unit_tensors);
        const FileHeader header{.version = format_version_for(tensors, names.per_unit()),
                                .rank = static_cast<uint32_t>(file),
                                .ranks = static_cast<uint32_t>(ranks),
                                .num_units = static_cast<uint32_t>(unit_counts.size()),
                                .num_tensors = static_cast<uint32_t>(tensors.size()),
                                .chunk_bytes = options.chunk_bytes,
                                .save_id = save_id};
        // A file of its own goes by a temporary name until it is whole; a
        // shared file's parts write in place (the directory is the step's
        // temporary one, and the manifest's CRC checks the whole).
        const std::string path = join_path(tmp_dir, shard_file_name(file, ranks));
        ShardWriter writer(shared ? path : path + ".tmp", header, layout, {part.unit_begin, part.unit_end});
        for (size_t u = part.unit_begin; u < part.unit_end; ++u) {
          state.open_unit(u, /*loading=*/false);
          for (size_t t = 0; t < tensors.size(); ++t) {
            if (names.views[u][t] == SIZE_MAX) {
              writer.write_record_bytes(u, t, {});  // a tensor this unit does not hold: an empty record
              continue;
            }
            const auto& v = views[names.views[u][t]];
            // The plan shard, also at stage 0 where the view is the whole unit.
            const TensorLayout& l = layouts[t];
            const comm::ShardRange own = record_range(unit_counts[v.unit], ranks, file, l);
            ZDP_CHECK(own.offset >= v.range.offset && own.offset + own.count <= v.range.offset + v.range.count,
                      ShapeError, "[ckpt save] rank {} unit {}: the view does not cover the rank's shard", rank,
                      v.unit);
            writer.write_record_bytes(
                u, t,
                view_bytes(v, l).subspan((own.offset - v.range.offset) * l.value_bytes, own.count * l.value_bytes));
            if (u == part.unit_begin && t == 0) reach(options, SavePoint::kShardPartial, comm);
          }
          state.close_unit(u, /*loaded=*/false);
        }
        mine = writer.finish();
        part_start = writer.start();
        if (!shared) rename_path(path + ".tmp", path);
        sync_directory(tmp_dir);
        mine.file = shard_file_name(file, ranks);
        reach(options, SavePoint::kShardWritten, comm);
      },
      survivable);

  // Rank 0 needs every file's CRC for the manifest: each part's, joined in
  // file order.
  struct WrittenPart {
    uint64_t start = 0, bytes = 0;
    uint32_t crc32c = 0;
    int32_t file = 0;
  };
  const std::vector<WrittenPart> parts =
      comm.all_gather_value(WrittenPart{.start = part_start, .bytes = mine.bytes, .crc32c = mine.crc32c, .file = file});

  std::vector<uint64_t> file_bytes;
  uint64_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    file_bytes.push_back(
        ShardLayout(unit_counts, ranks, r, layouts, options.chunk_bytes, names.unit_tensors).file_size());
    total += file_bytes.back();
  }
  on_every_rank(
      comm,
      [&] {
        if (rank != 0) return;
        Manifest m = base_manifest(record, counters, ranks, names, options, save_id);
        for (int r = 0; r < ranks; ++r) {
          std::vector<WrittenPart> of_file;
          std::copy_if(parts.begin(), parts.end(), std::back_inserter(of_file),
                       [r](const WrittenPart& p) { return p.file == r; });
          std::sort(of_file.begin(), of_file.end(),
                    [](const WrittenPart& a, const WrittenPart& b) { return a.start < b.start; });
          uint64_t at = 0;
          uint32_t crc = 0;
          for (const WrittenPart& p : of_file) {
            ZDP_CHECK(p.start == at, ShapeError, "[ckpt save] shard file {}: a part starts at byte {}, not {}", r,
                      p.start, at);
            crc = crc32c_combine(crc, p.crc32c, p.bytes);
            at += p.bytes;
          }
          ZDP_CHECK(at == file_bytes[static_cast<size_t>(r)], ShapeError,
                    "[ckpt save] shard file {}: its parts hold {} of its {} bytes", r, at,
                    file_bytes[static_cast<size_t>(r)]);
          m.shards.push_back({.file = shard_file_name(r, ranks), .bytes = at, .crc32c = crc});
        }
        write_manifest(tmp_dir, m);
        reach(options, SavePoint::kManifestWritten, comm);
        // Replacing a checkpoint of the same step: keep the old one reachable
        // (as .prev, which resolve_checkpoint falls back to) until the new one is
        // in place.
        const std::string prev = final_dir + ".prev";
        std::error_code ec;
        if (fs::exists(final_dir, ec)) {
          remove_dir(prev);
          rename_path(final_dir, prev);
        }
        rename_path(tmp_dir, final_dir);
        sync_directory(root);
        reach(options, SavePoint::kDirRenamed, comm);
        write_latest(root, name);
        reach(options, SavePoint::kLatestWritten, comm);
        remove_dir(prev);
        rotate_checkpoints(root, options.keep_last);
      },
      survivable);
  reach(options, SavePoint::kDone, comm);

  SaveResult result;
  result.path = final_dir;
  result.step = step;
  result.bytes_this_rank = mine.bytes;
  result.bytes_total = total;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace

FilePart TrainingState::file_part() {
  return {.file = communicator().rank(),
          .files = communicator().size(),
          .unit_begin = 0,
          .unit_end = record().units.size()};
}

SaveResult save(TrainingState& state, const std::string& root, const SaveOptions& options) {
  try {
    return save_steps(state, root, options);
  } catch (const std::exception&) {
    // Every rank has stopped writing once it knows of the failure (its own
    // error, or its peers' flag or failure): rank 0 removes the partial step
    // directory, so a failed save leaves nothing behind. After the rename
    // (dir-renamed, latest-written) there is no .tmp: the new checkpoint is
    // complete, and `latest` names it or the one before.
    if (state.communicator().rank() == 0) {
      const int64_t step = options.data_step >= 0 ? options.data_step : state.counters().steps;
      std::error_code ec;
      fs::remove_all(join_path(root, step_dir_name(step)) + ".tmp", ec);  // best effort: the error is the save's
    }
    throw;
  }
}

LoadResult load(TrainingState& state, const std::string& path) {
  const auto start = Clock::now();
  comm::Communicator& comm = state.communicator();
  const RunRecord record = state.record();
  LoadResult result;
  Manifest m;
  on_every_rank(comm, [&] {
    result.path = resolve_checkpoint(path);
    m = read_manifest(result.path);
    const std::string manifest_path = join_path(result.path, kManifestName);
    check_same_units(m, record.units, record.model_description, manifest_path);
    state.check_saved_model(m.model_json, manifest_path);
    const auto& opt = record.optimizer;
    ZDP_CHECK(m.optimizer.kind == opt.kind, ConfigError,
              "[ckpt load] {}: saved with optimizer {}, this run uses {}: use --optimizer {} to resume it",
              manifest_path, optim::optimizer_kind_name(m.optimizer.kind), optim::optimizer_kind_name(opt.kind),
              optim::optimizer_kind_name(m.optimizer.kind));
    const std::vector<StateTensorView> views = state.state_tensors();
    const FilePart part = state.file_part();
    const TensorNames names = tensor_table(unit_tensor_names(views, record.units.size(), part), views);
    for (size_t u = part.unit_begin; u < part.unit_end; ++u) {
      std::vector<std::string> mine;
      for (size_t t = 0; t < names.names.size(); ++t) {
        if (names.views[u][t] != SIZE_MAX) mine.push_back(names.names[t]);
      }
      const std::vector<std::string> saved = m.tensors_of(u);
      if (mine == saved) continue;
      // 8-bit Adam: the units that keep fp32 moments differ.
      ZDP_CHECK(m.optimizer.kind != optim::OptimizerKind::kAdam8bit, ConfigError,
                "[ckpt load] {}: unit {} (\"{}\") was saved with 8-bit Adam state [{}], this run keeps [{}]: the "
                "units that keep fp32 moments differ; resume with the saved run's --adam8bit-fp32-embedding {} "
                "--adam8bit-min-8bit-size {}",
                manifest_path, u, record.units[u].name, fmt::join(saved, ", "), fmt::join(mine, ", "),
                m.optimizer.adam.fp32_embedding, m.optimizer.adam.min_8bit_size);
      ZDP_THROW(ConfigError,
                "[ckpt load] {}: saved state tensors [{}], this run's optimizer keeps [{}] (e.g. SGD momentum on/off): "
                "use the saved optimizer settings",
                manifest_path, fmt::join(saved, ", "), fmt::join(mine, ", "));
    }
    CheckpointReader reader(result.path, m);
    std::optional<size_t> open;  // the views come unit by unit
    for (const StateTensorView& v : views) {
      if (open != v.unit) {
        if (open) state.close_unit(*open, /*loaded=*/true);
        state.open_unit(v.unit, /*loading=*/true);
        open = v.unit;
      }
      const int t = m.tensor_index(v.name);
      reader.read_bytes(v.unit, static_cast<size_t>(t), v.range, view_bytes(v, tensor_layout(v.name)));
    }
    if (open) state.close_unit(*open, /*loaded=*/true);
  });
  StepCounters counters = state.counters();
  counters.steps = m.steps;
  counters.optimizer_steps = m.optimizer_steps;
  // The scaler resumes only between fp16 runs; otherwise this run's own
  // initial scaler state stands.
  if (m.dtype == Dtype::fp16() && record.dtype == Dtype::fp16()) counters.scaler = m.scaler;
  state.state_loaded(counters);

  result.step = m.data_step;
  result.engine_steps = m.steps;
  result.optimizer_steps = m.optimizer_steps;
  result.seed = m.seed;
  result.saved_ranks = m.ranks;
  result.saved_stage = m.stage;
  result.saved_dtype = std::string(m.dtype.name());
  result.metadata = m.metadata;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace zerodp::ckpt
