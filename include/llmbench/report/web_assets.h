#pragma once
#include <optional>

#include "llmbench/report/html.h"

namespace llmbench {

// The chart bundles compiled into this binary from web/node_modules when it was built (cmake/
// EmbedWebAssets.cmake), so an installed or moved llmbench needs no source tree; nullopt when the build
// had none (scripts/fetch-web-assets.sh, then rebuild).
std::optional<WebAssets> embedded_web_assets();

}  // namespace llmbench
