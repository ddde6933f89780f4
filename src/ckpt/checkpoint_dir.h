// SPDX-License-Identifier: Apache-2.0
// The checkpoint root directory that training saves into:
//
//   ROOT/step-00000100/      complete checkpoints (each has manifest.json)
//   ROOT/step-00000200/
//   ROOT/latest              "step-00000200\n", replaced atomically
//   ROOT/step-00000300.tmp/  a save in progress (or interrupted)
//   ROOT/step-00000200.prev/ a checkpoint being replaced by a save of the same step
//
// A step-* directory only ever appears by renaming a complete .tmp
// directory, so a visible checkpoint is always complete; `latest` is written
// after that rename. resolve_checkpoint() turns what a user passes (a
// checkpoint directory or a root) into one complete checkpoint directory.
// Thread-safety: functions on the file system; callers must not save into
// the same root from two jobs at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zerodp::ckpt {

// "step-00000100"
std::string step_dir_name(int64_t step);
// true when dir/manifest.json exists.
bool is_complete_checkpoint(const std::string& dir);

struct CheckpointEntry {
  int64_t step = 0;
  std::string path;
};
// The complete step-* checkpoints under root, by increasing step.
std::vector<CheckpointEntry> list_checkpoints(const std::string& root);

// `path` itself when it holds a manifest; else the checkpoint root's latest
// (falling back to the one being replaced, then to the highest complete
// step-*). ConfigError when there is no checkpoint there, IoError when
// `latest` is corrupt or points at nothing.
std::string resolve_checkpoint(const std::string& path);

// Writes ROOT/latest atomically.
void write_latest(const std::string& root, const std::string& name);
// The name in ROOT/latest, or "" when there is none.
std::string read_latest(const std::string& root);

// Deletes all but the keep_last highest-step complete checkpoints (never the
// one `latest` names), and leftovers of interrupted saves (*.tmp, *.prev
// whose checkpoint is complete). keep_last <= 0 only removes leftovers.
// Returns the paths removed.
std::vector<std::string> rotate_checkpoints(const std::string& root, int keep_last);

}  // namespace zerodp::ckpt
