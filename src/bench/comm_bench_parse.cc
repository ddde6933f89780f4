// SPDX-License-Identifier: Apache-2.0
#include "bench/comm_bench_parse.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"

namespace zerodp::bench {

size_t parse_byte_size(const std::string& text, const char* flag) {
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::toupper(ch); });
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit = unit.substr(0, unit.size() - 2);
  if (unit == "B") unit.clear();
  const std::map<std::string, size_t> scale{
      {"", 1}, {"K", size_t{1} << 10}, {"M", size_t{1} << 20}, {"G", size_t{1} << 30}};
  const auto it = scale.find(unit);
  ZDP_CHECK(pos > 0 && it != scale.end() && value > 0, ConfigError,
            "[bench comm] {} '{}' is not a size: use bytes or K/M/G (KiB/MiB/GiB), e.g. 1K or 256M", flag, text);
  return static_cast<size_t>(value) * it->second;
}

comm::Collective parse_bench_collective(const std::string& name) {
  using comm::Collective;
  for (Collective c :
       {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather, Collective::kBroadcast}) {
    if (name == comm::collective_name(c)) return c;
  }
  ZDP_THROW(ConfigError,
            "[bench comm] unknown collective '{}': use all_reduce, reduce_scatter, all_gather, broadcast or all", name);
}

}  // namespace zerodp::bench
