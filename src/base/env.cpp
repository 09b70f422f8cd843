#include "llmbench/base/env.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <sstream>

#include "llmbench/base/version.h"

namespace llmbench {
namespace {

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\"");
  auto e = s.find_last_not_of(" \t\"\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Value of the first "key: value" / "KEY=value" line in a /proc or /etc file.
std::string field_of(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto pos = line.find(sep);
    if (pos != std::string::npos && trim(line.substr(0, pos)) == key) return trim(line.substr(pos + 1));
  }
  return "";
}

std::string gib(std::uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << bytes / (1024.0 * 1024 * 1024) << " GiB";
  return os.str();
}

}  // namespace

EnvInfo collect_host_env() {
  EnvInfo env;
  env.tool_version = version();
  env.git_commit = git_commit();
  env.compiler = compiler();
  env.os = field_of("/etc/os-release", "PRETTY_NAME", '=');
  utsname u{};
  if (::uname(&u) == 0) {
    env.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
    env.hostname = u.nodename;
  }
  env.cpu_model = field_of("/proc/cpuinfo", "model name", ':');
  env.cpu_cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::string mem = field_of("/proc/meminfo", "MemTotal", ':');  // "24576000 kB"
  if (!mem.empty()) env.ram_bytes = std::stoull(mem) * 1024ULL;
  return env;
}

nlohmann::json to_json(const Ceilings& c) {
  return {{"device", c.device},           {"copy_gb_s", c.copy_gb_s},
          {"matmul_tflop_s", c.matmul_tflop_s}, {"matmul_dtype", c.matmul_dtype},
          {"matmul_size", c.matmul_size}, {"repetitions", c.repetitions}};
}

nlohmann::json to_json(const EnvInfo& e) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : e.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                    {"memory_bytes", g.memory_bytes},
                    {"sm_count", g.sm_count}});
  }
  nlohmann::json j = {{"tool", {{"name", "llmbench"}, {"version", e.tool_version}, {"git_commit", e.git_commit}}},
                      {"os", e.os},
                      {"kernel", e.kernel},
                      {"hostname", e.hostname},
                      {"cpu", {{"model", e.cpu_model}, {"cores", e.cpu_cores}}},
                      {"ram_bytes", e.ram_bytes},
                      {"compiler", e.compiler},
                      {"torch_version", e.torch_version},
                      {"cuda_available", e.cuda_available},
                      {"cuda_runtime", e.cuda_runtime},
                      {"cuda_driver", e.cuda_driver},
                      {"gpus", gpus}};
  j["ceilings"] = e.ceilings ? to_json(*e.ceilings) : nlohmann::json(nullptr);
  return j;
}

EnvInfo env_from_json(const nlohmann::json& j) {
  EnvInfo e;
  auto str = [&](const nlohmann::json& o, const char* k) {
    return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  if (j.contains("tool") && j["tool"].is_object()) {
    e.tool_version = str(j["tool"], "version");
    e.git_commit = str(j["tool"], "git_commit");
  }
  e.os = str(j, "os");
  e.kernel = str(j, "kernel");
  e.hostname = str(j, "hostname");
  if (j.contains("cpu") && j["cpu"].is_object()) {
    e.cpu_model = str(j["cpu"], "model");
    e.cpu_cores = j["cpu"].value("cores", 0);
  }
  e.ram_bytes = j.value("ram_bytes", std::uint64_t{0});
  e.compiler = str(j, "compiler");
  e.torch_version = str(j, "torch_version");
  e.cuda_available = j.value("cuda_available", false);
  e.cuda_runtime = str(j, "cuda_runtime");
  e.cuda_driver = str(j, "cuda_driver");
  if (j.contains("gpus") && j["gpus"].is_array()) {
    for (const auto& g : j["gpus"]) {
      if (!g.is_object()) continue;
      GpuInfo gi;
      gi.index = g.value("index", 0);
      gi.name = str(g, "name");
      std::string cc = str(g, "compute_capability");
      auto dot = cc.find('.');
      if (dot != std::string::npos) {
        gi.cc_major = std::atoi(cc.substr(0, dot).c_str());
        gi.cc_minor = std::atoi(cc.substr(dot + 1).c_str());
      }
      gi.memory_bytes = g.value("memory_bytes", std::uint64_t{0});
      gi.sm_count = g.value("sm_count", 0);
      e.gpus.push_back(gi);
    }
  }
  if (j.contains("ceilings") && j["ceilings"].is_object()) {
    const auto& c = j["ceilings"];
    Ceilings ce;
    ce.device = str(c, "device");
    ce.copy_gb_s = c.value("copy_gb_s", 0.0);
    ce.matmul_tflop_s = c.value("matmul_tflop_s", 0.0);
    ce.matmul_dtype = str(c, "matmul_dtype");
    ce.matmul_size = c.value("matmul_size", 0);
    ce.repetitions = c.value("repetitions", 0);
    e.ceilings = ce;
  }
  return e;
}

std::string format_env(const EnvInfo& e) {
  std::ostringstream os;
  os << "llmbench " << e.tool_version << " (commit " << e.git_commit << ")\n";
  os << "os:        " << e.os << " (" << e.kernel << ")\n";
  os << "host:      " << e.hostname << "\n";
  os << "cpu:       " << e.cpu_model << ", " << e.cpu_cores << " cores\n";
  os << "ram:       " << gib(e.ram_bytes) << "\n";
  os << "compiler:  " << e.compiler << "\n";
  os << "libtorch:  " << e.torch_version << "\n";
  os << "cuda:      " << (e.cuda_available ? "available" : "not available");
  if (e.cuda_available) os << " (runtime " << e.cuda_runtime << ", driver supports " << e.cuda_driver << ")";
  os << "\n";
  for (const auto& g : e.gpus) {
    os << "gpu " << g.index << ":     " << g.name << ", compute " << g.cc_major << "." << g.cc_minor << ", "
       << gib(g.memory_bytes) << ", " << g.sm_count << " SMs\n";
  }
  if (e.ceilings) {
    const auto& c = *e.ceilings;
    os << std::fixed << std::setprecision(1);
    os << "ceilings (" << c.device << ", median of " << c.repetitions << "):\n";
    os << "  copy bandwidth:  " << c.copy_gb_s << " GB/s (bytes read + written)\n";
    os << "  matmul " << c.matmul_dtype << " " << c.matmul_size << "^3: "
       << (c.device == "cpu" ? c.matmul_tflop_s * 1000.0 : c.matmul_tflop_s)
       << (c.device == "cpu" ? " GFLOP/s" : " TFLOP/s") << "\n";
  }
  return os.str();
}

}  // namespace llmbench
