#include <filesystem>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/tokenizer/tokenizer.h"
#include "sp_tokenizer.h"

namespace llmbench {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  if (path == "tiny" && !fs::exists(path)) {
    return tokenizer_from_json(tiny_tokenizer_json(), tiny_tokenizer_config_json(), "tiny (built in)");
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(cat("tokenizer not found: ", path));
  fs::path dir, file;
  if (fs::is_directory(path, ec)) {
    dir = path;
    if (fs::exists(dir / "tokenizer.json")) file = dir / "tokenizer.json";
    else if (fs::exists(dir / "tokenizer.model")) file = dir / "tokenizer.model";
    else throw Error(cat("no tokenizer.json or tokenizer.model in ", path));
  } else {
    file = path;
    dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  }
  std::string config;
  if (fs::exists(dir / "tokenizer_config.json")) config = read_file((dir / "tokenizer_config.json").string());
  log::debug("loading tokenizer " + file.string());
  std::string content = read_file(file.string());
  if (file.extension() == ".model") return sentencepiece_tokenizer(content, config, file.string());
  return tokenizer_from_json(content, config, file.string());
}

}  // namespace llmbench
