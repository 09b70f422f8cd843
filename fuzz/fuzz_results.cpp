// libFuzzer: the results-JSON reader, then what gate and report do with an accepted file (tables,
// gate verdicts, Markdown report). Error is a clean refusal; anything else is a bug.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/gate/gate.h"
#include "llmbench/report/format.h"
#include "llmbench/report/html.h"
#include "llmbench/report/results.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;  // load_results reports that itself; nlohmann's parser is not ours
  try {
    llmbench::Results r = llmbench::results_from_json(j);
    llmbench::to_json(r).dump();
    llmbench::format_results(r, llmbench::Format::table);
    llmbench::format_results(r, llmbench::Format::csv);
    llmbench::run_gate(r, r, llmbench::GateConfig{}, "a.json", "b.json");
    llmbench::render_markdown({{"a.json", r}}, std::nullopt);
  } catch (const llmbench::Error&) {
  }
  return 0;
}
