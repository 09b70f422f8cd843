#include "llmbench/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/base/fs.h"

namespace llmbench {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Real headers are kilobytes to a few MB; anything larger is corruption.
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

StDtype parse_dtype(const std::string& s, const std::string& where) {
  if (s == "F32") return StDtype::F32;
  if (s == "F16") return StDtype::F16;
  if (s == "BF16") return StDtype::BF16;
  throw Error(cat(where, ": unsupported dtype '", s, "' (supported: F32, F16, BF16)"));
}

}  // namespace

std::size_t element_size(StDtype dtype) { return dtype == StDtype::F32 ? 4 : 2; }

const char* to_string(StDtype dtype) {
  switch (dtype) {
    case StDtype::F32: return "F32";
    case StDtype::F16: return "F16";
    case StDtype::BF16: return "BF16";
  }
  return "?";
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(cat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(cat(path, ": cannot stat: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(cat(path, ": not a regular file (a directory or a device), expected a safetensors file"));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    throw Error(cat(path, ": file of ", size_, " bytes is too short for a safetensors header"));
  }
  map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error(cat(path, ": mmap failed: ", std::strerror(errno)));
  }
  try {
    const auto* bytes = static_cast<const std::uint8_t*>(map_);
    std::uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
    if (header_len > size_ - 8)
      throw Error(cat(path, ": header length ", header_len, " goes beyond the file (", size_, " bytes)"));
    if (header_len > kMaxHeaderBytes) throw Error(cat(path, ": header length ", header_len, " is absurd"));

    const std::string header(reinterpret_cast<const char*>(bytes + 8), header_len);
    json j = json::parse(header, nullptr, false);
    if (j.is_discarded()) throw Error(cat(path, ": malformed JSON header"));
    if (!j.is_object()) throw Error(cat(path, ": JSON header is not an object"));

    const std::uint8_t* data = bytes + 8 + header_len;
    const std::uint64_t data_size = size_ - 8 - header_len;
    std::vector<std::pair<std::uint64_t, std::string>> ranges;  // (begin, name), for the overlap check
    for (const auto& [name, e] : j.items()) {
      if (name == "__metadata__") continue;
      const std::string where = cat(path, ": tensor '", name, "'");
      if (!e.is_object()) throw Error(cat(where, ": entry is not an object"));
      if (!e.contains("dtype") || !e["dtype"].is_string()) throw Error(cat(where, ": missing dtype"));
      if (!e.contains("shape") || !e["shape"].is_array()) throw Error(cat(where, ": missing shape"));
      if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
        throw Error(cat(where, ": data_offsets must be [begin, end]"));

      TensorView v;
      v.name = name;
      v.file = path;
      v.dtype = parse_dtype(e["dtype"].get<std::string>(), where);
      std::uint64_t numel = 1;
      for (const auto& d : e["shape"]) {
        if (!d.is_number_unsigned()) throw Error(cat(where, ": shape ", e["shape"].dump(), " is not a list of sizes"));
        const auto x = d.get<std::uint64_t>();
        if (x != 0 && numel > std::numeric_limits<std::uint64_t>::max() / 16 / x)
          throw Error(cat(where, ": shape ", e["shape"].dump(), " overflows"));
        numel *= x;
        v.shape.push_back(static_cast<std::int64_t>(x));
      }
      const auto& off = e["data_offsets"];
      if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
        throw Error(cat(where, ": data_offsets ", off.dump(), " are not non-negative integers"));
      const auto begin = off[0].get<std::uint64_t>();
      const auto end = off[1].get<std::uint64_t>();
      if (begin > end || end > data_size)
        throw Error(cat(where, ": data_offsets [", begin, ", ", end, "] out of range (data buffer is ", data_size,
                        " bytes)"));
      const std::uint64_t expected = numel * element_size(v.dtype);
      if (end - begin != expected)
        throw Error(cat(where, ": data_offsets span ", end - begin, " bytes but shape ", e["shape"].dump(), " × ",
                        to_string(v.dtype), " needs ", expected));
      v.data = data + begin;
      v.nbytes = static_cast<std::size_t>(expected);
      ranges.emplace_back(begin, name);
      tensors_.emplace(name, std::move(v));
    }
    // As the reference library (MetadataIncompleteBuffer): the data section ends where the last tensor ends.
    std::uint64_t tensors_end = 0;
    for (const auto& [begin, name] : ranges) tensors_end = std::max<std::uint64_t>(tensors_end, begin + tensors_.at(name).nbytes);
    if (tensors_end != data_size)
      throw Error(cat(path, ": data section is ", data_size, " bytes but its tensors end at byte ", tensors_end, " (",
                      data_size - tensors_end, " trailing bytes: a damaged or concatenated file)"));
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      const TensorView& prev = tensors_.at(ranges[i - 1].second);
      const std::uint64_t prev_end = ranges[i - 1].first + prev.nbytes;
      if (ranges[i].first < prev_end && prev.nbytes > 0)
        throw Error(cat(path, ": tensors '", ranges[i - 1].second, "' and '", ranges[i].second, "' overlap"));
    }
  } catch (...) {
    ::munmap(map_, size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

namespace {
// The directory entry, a dangling link included (a partial download in the HF cache): loading it then names
// the missing file, instead of the model falling back to random weights.
bool entry_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}
}  // namespace

bool has_safetensors(const std::string& dir) {
  return entry_exists(fs::path(dir) / "model.safetensors") || entry_exists(fs::path(dir) / "model.safetensors.index.json");
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& dir) {
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single = fs::path(dir) / "model.safetensors";
  // Both: model.safetensors first, as transformers loads it.
  if (entry_exists(index_path) && entry_exists(single))
    log::info(cat(dir, ": has model.safetensors and model.safetensors.index.json: loading model.safetensors (as transformers does)"));
  if (entry_exists(index_path) && !entry_exists(single)) {
    json j = json::parse(read_file(index_path.string()), nullptr, false);
    if (j.is_discarded()) throw Error(cat(index_path.string(), ": malformed JSON"));
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(cat(index_path.string(), ": missing weight_map"));
    std::map<std::string, std::string> wanted;  // tensor → shard file name
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) throw Error(cat(index_path.string(), ": weight_map entry '", name, "' is not a file name"));
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f == ".." )
        throw Error(cat(index_path.string(), ": shard name '", f, "' must be a plain file name"));
      wanted[name] = f;
    }
    std::map<std::string, std::size_t> opened;  // shard name → index into files_
    for (const auto& [name, f] : wanted) {
      if (!opened.count(f)) {
        const fs::path p = fs::path(dir) / f;
        if (!fs::exists(p)) throw Error(cat(index_path.string(), ": shard '", f, "' (for tensor '", name, "') is missing"));
        files_.push_back(std::make_unique<SafetensorsFile>(p.string()));
        file_names_.push_back(p.string());
        opened[f] = files_.size() - 1;
      }
    }
    for (const auto& file : files_)
      for (const auto& [name, view] : file->tensors()) {
        if (index_.count(name))
          throw Error(cat("tensor '", name, "' is in two shards: ", index_[name]->file, " and ", file->path()));
        index_[name] = &view;
      }
    for (const auto& [name, f] : wanted)
      if (!index_.count(name) || fs::path(index_.at(name)->file).filename() != f)
        throw Error(cat(index_path.string(), ": tensor '", name, "' is not in its shard '", f, "'"));
  } else if (entry_exists(single)) {
    files_.push_back(std::make_unique<SafetensorsFile>(single.string()));
    file_names_.push_back(single.string());
    for (const auto& [name, view] : files_.back()->tensors()) index_[name] = &view;
  } else {
    throw Error(cat(dir, ": no model.safetensors or model.safetensors.index.json"));
  }
}

const TensorView* SafetensorsCheckpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::size_t SafetensorsCheckpoint::total_bytes() const {
  std::size_t n = 0;
  for (const auto& [name, v] : index_) n += v->nbytes;
  return n;
}

}  // namespace llmbench
