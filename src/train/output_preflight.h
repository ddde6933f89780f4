// SPDX-License-Identifier: Apache-2.0
// Every output a command will write, checked before its long work starts:
// `zerodp train`'s --save folder and --metrics file before step 1 (and
// before any rank allocates), the --out of the other commands before they
// read their inputs. A refusal is one ConfigError line (exit code 2) naming
// the output, the problem and the fix, e.g.
//   [train] --save /proc/x: cannot create the folder (No such file or directory); give a folder this process can write
//
// Writable means proved by writing: a small probe file is created in the
// folder, written, closed and removed (permission bits do not stop root, a
// read-only mount or a full disk does). Nothing is left behind except the
// folders the check created for an output that did not exist yet: the run
// would create them anyway, so they stay. An existing file is opened for
// appending, never truncated.
// Thread-safety: call from the main thread, before any rank starts; the
// probe's name holds the process id, so the processes of an MPI job may
// check one shared folder at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "model/presets.h"
#include "train/train_config.h"

namespace zerodp::train {

// The bytes the filesystem holding `dir` has for this process (statvfs:
// f_bavail * f_frsize); IoError when it cannot be read. Tests substitute it.
using FreeBytes = std::function<uint64_t(const std::filesystem::path& dir)>;
uint64_t filesystem_free_bytes(const std::filesystem::path& dir);

// `dir` is created with its parents when missing, then proved writable.
// `what` names the output as the message starts: "[train] --save".
void check_writable_folder(const std::filesystem::path& dir, std::string_view what);

// The file's folder is created or found and proved writable; an existing
// `path` must be a regular file that opens for appending (not truncated).
void check_writable_file(const std::filesystem::path& path, std::string_view what);

// check_writable_folder, then: its filesystem must have room for two
// checkpoints of `checkpoint_bytes` (a save writes the next one before
// rotating out the last).
void check_save_folder(const std::filesystem::path& dir, uint64_t checkpoint_bytes, std::string_view what,
                       const FreeBytes& free_bytes = filesystem_free_bytes);

// `zerodp train`'s outputs, in this process: --save (every process: each
// writes its ranks' shards there, and under MPI on another host it is that
// host's path) with room for two of plan::checkpoint_bytes; --metrics where
// this process runs rank 0 (the only writer), resolved from `config` after
// mpirun detection. `model` is the run's resolved model.
void check_train_outputs(const TrainConfig& config, const model::ModelConfig& model,
                         const FreeBytes& free_bytes = filesystem_free_bytes);

}  // namespace zerodp::train
