// SPDX-License-Identifier: Apache-2.0
#include "core/build_info.h"

#include "core/build_info_values.h"  // generated: src/core/CMakeLists.txt

#include <fstream>
#include <string>

namespace zerodp {
namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::string cpuinfo_value(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trimmed(line.substr(0, colon)) == key) return trimmed(line.substr(colon + 1));
  }
  return "";
}

}  // namespace

const BuildInfo& build_info() {
  static const BuildInfo info{ZERODP_BUILD_VERSION, ZERODP_BUILD_COMMIT, ZERODP_BUILD_COMPILER, ZERODP_BUILD_KIND};
  return info;
}

std::string cpu_model_name() {
  if (std::string name = cpuinfo_value("model name"); !name.empty()) return name;
  const std::string implementer = cpuinfo_value("CPU implementer");
  if (!implementer.empty()) return "ARM implementer " + implementer + ", part " + cpuinfo_value("CPU part");
  return "unknown";
}

}  // namespace zerodp
