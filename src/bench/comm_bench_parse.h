// SPDX-License-Identifier: Apache-2.0
// The strings `zerodp bench comm` accepts for sizes and collectives; errors
// are ConfigErrors that name the flag.
#pragma once

#include <cstddef>
#include <string>

#include "comm/types.h"

namespace zerodp::bench {

// "1K", "64M", "1G" (KiB, MiB, GiB; "KiB" and a trailing "B" too) or plain
// bytes; positive. `flag` names the option in the error.
size_t parse_byte_size(const std::string& text, const char* flag);

// all_reduce, reduce_scatter, all_gather or broadcast.
comm::Collective parse_bench_collective(const std::string& name);

}  // namespace zerodp::bench
