// SPDX-License-Identifier: Apache-2.0
// The files of --data and --val-data: a path, or a glob(3) pattern as llm.c
// users give shards ('fineweb_train_*.bin'), whose matches are taken in
// sorted order; and where validation data is found beside training data.
// Thread-safety: reads the file system only.
#pragma once

#include <string>
#include <vector>

namespace zerodp::train {

// True when `path` has a glob character (* ? [).
bool is_glob(const std::string& path);

// The files `pattern` names: itself when it is no glob (or a file of that
// literal name exists), else its glob(3) matches, sorted. Throws
// ConfigError naming the pattern and `flag` when a glob matches nothing.
std::vector<std::string> data_files(const std::string& pattern, const char* flag = "--data");

// Where the validation data of training `pattern` would be: for a glob,
// its last "_train_" replaced by "_val_" ('x_train_*.bin' ->
// 'x_val_*.bin'); for a path, its last "train" by "val" ('x_train.bin' ->
// 'x_val.bin'). "" when there is no such name or it names nothing.
std::string validation_pattern(const std::string& pattern);

}  // namespace zerodp::train
