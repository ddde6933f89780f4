// SPDX-License-Identifier: Apache-2.0
// The points of a checkpoint save, in order: what tests interrupt (the
// SaveOptions::on_point hook) and what ZERODP_FAULT's "point=" names
// (comm/fault_injection.h, which treats the names as opaque). Each save
// reaches each point at most once per rank, so ZERODP_FAULT's "save=K"
// counts saves.
// Thread-safety: pure functions, except check_fault_save_point (reads the
// process-wide fault).
#pragma once

#include <optional>
#include <string_view>

namespace zerodp::ckpt {

enum class SavePoint {
  kBegin,            // nothing written yet
  kShardPartial,     // this rank's temporary shard file has its first record
  kShardWritten,     // this rank's shard file is complete and renamed
  kManifestWritten,  // rank 0: manifest written inside the .tmp directory
  kDirRenamed,       // rank 0: the checkpoint is visible as step-*
  kLatestWritten,    // rank 0: `latest` names it
  kDone,             // every rank, after rotation (not a fault point)
};

// "begin", "shard-partial", "shard-written", "manifest-written",
// "dir-renamed", "latest-written"; "done" for kDone.
std::string_view save_point_name(SavePoint point);
// The fault point named `name` (kBegin..kLatestWritten), or nullopt.
std::optional<SavePoint> find_save_point(std::string_view name);

// ConfigError when the active fault (comm::active_fault) is a save fault
// whose point is not one of the names above ("[fault] unknown save point
// 'P': use begin, ..."). A save calls it as it begins.
void check_fault_save_point();

}  // namespace zerodp::ckpt
