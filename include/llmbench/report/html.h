#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/report/results.h"

namespace llmbench {

// One results file as the report shows it; the first input is the baseline of side-by-side views.
struct ReportInput {
  std::string name;  // display name (the path as given)
  Results results;
};

// The three browser bundles inlined into the page (vega, vega-lite, vega-embed; UMD builds).
struct WebAssets {
  std::string dir;
  std::string vega;
  std::string vega_lite;
  std::string vega_embed;
};

struct ReportOptions {
  std::optional<WebAssets> assets;      // none: tables only, with a "charts missing" notice
  std::optional<nlohmann::json> gate;   // a gate verdict JSON, shown generically
};

// &, <, >, " and ' as entities: safe in element text and in quoted attribute values.
std::string html_escape(std::string_view text);

// The bundles: from the node_modules folder $LLMBENCH_WEB_ASSETS when set (even if it lacks them), else
// those compiled into the binary (web_assets.h). Returns nullopt with `why` filled when they are absent.
std::optional<WebAssets> find_web_assets(std::string* why = nullptr);
// Reads the bundles from `node_modules`; nullopt with `why` filled when one is missing.
std::optional<WebAssets> load_web_assets(const std::string& node_modules, std::string* why = nullptr);

// One self-contained HTML page: tables always; Vega-Lite charts when options.assets is set.
std::string render_html(const std::vector<ReportInput>& inputs, const ReportOptions& options);

// The tables of the report as GitHub-flavoured Markdown (for terminals and pull requests).
std::string render_markdown(const std::vector<ReportInput>& inputs, const std::optional<nlohmann::json>& gate);

// An ECDF of up to kEcdfExactMax values embeds them all (the browser computes the fractions and marks every
// value); above, it embeds the points of ecdf_quantiles(values, kEcdfQuantileSteps) (stats.h) and says so in
// its subtitle: a page of a million ITLs stays small and opens.
constexpr std::size_t kEcdfExactMax = 2000;
constexpr std::size_t kEcdfQuantileSteps = 1000;

// The Vega-Lite specs of the page, each {"id", "title", "spec"}: exposed for tests.
nlohmann::json chart_specs(const std::vector<ReportInput>& inputs);

}  // namespace llmbench
