#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmbench {

// One GPU as the runtime sees it.
struct GpuInfo {
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t memory_bytes = 0;
  int sm_count = 0;
};

// Ceilings measured on the spot (`info --measure`, and by `run` for MBU/MFU).
struct Ceilings {
  std::string device;            // "cuda:0" or "cpu"
  double copy_gb_s = 0;          // bytes read + written per second / 1e9
  double matmul_tflop_s = 0;     // bf16 on GPU, fp32 on CPU
  std::string matmul_dtype;
  int matmul_size = 0;           // n of the n×n×n product
  int repetitions = 0;
};

// The environment block written into `info --json` and into every results file.
struct EnvInfo {
  std::string tool_version;
  std::string git_commit;
  std::string os;
  std::string kernel;
  std::string hostname;
  std::string cpu_model;
  int cpu_cores = 0;
  std::uint64_t ram_bytes = 0;
  std::string compiler;
  std::string torch_version;
  bool cuda_available = false;
  std::string cuda_runtime;     // "13.0"
  std::string cuda_driver;      // "13.0" (CUDA version the driver supports)
  std::vector<GpuInfo> gpus;
  std::optional<Ceilings> ceilings;
};

// Fills the torch-free part (tool, OS, CPU, RAM, compiler) from /proc and uname.
EnvInfo collect_host_env();

nlohmann::json to_json(const EnvInfo& env);
nlohmann::json to_json(const Ceilings& c);
EnvInfo env_from_json(const nlohmann::json& j);
// Human-readable, one fact per line.
std::string format_env(const EnvInfo& env);

}  // namespace llmbench
