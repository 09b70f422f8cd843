#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

// Our own safetensors reader. Torch-free (so it can be fuzzed alone): it mmaps each file, validates the
// header against the file and hands out views into the mapping. Format: 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
// then the data buffer that the offsets index.
namespace llmbench {

enum class StDtype { F32, F16, BF16 };

std::size_t element_size(StDtype dtype);
const char* to_string(StDtype dtype);

// A tensor inside a mapped file; valid while its SafetensorsFile/Checkpoint lives.
struct TensorView {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<std::int64_t> shape;
  const std::uint8_t* data = nullptr;
  std::size_t nbytes = 0;
  std::string file;  // the file it lives in, for error messages

  std::int64_t numel() const;
};

// One mmapped .safetensors file. Throws Error naming the file and the culprit (tensor, field) for:
// a file shorter than 8 bytes, a header length beyond the file, malformed JSON, an entry without
// dtype/shape/data_offsets, an unsupported dtype, offsets out of the data buffer, overlapping
// tensors, and a byte range that disagrees with shape × dtype.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::string& path() const { return path_; }
  std::size_t size() const { return size_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

// A checkpoint directory: model.safetensors, or the shards named by model.safetensors.index.json.
class SafetensorsCheckpoint {
 public:
  // Throws Error when the directory has neither, when the index is malformed or names a missing shard,
  // or when a tensor listed in the index is absent from its shard or present in two shards.
  explicit SafetensorsCheckpoint(const std::string& dir);

  // nullptr when absent.
  const TensorView* find(const std::string& name) const;
  const std::map<std::string, const TensorView*>& tensors() const { return index_; }
  const std::vector<std::string>& files() const { return file_names_; }
  std::size_t total_bytes() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> file_names_;
  std::map<std::string, const TensorView*> index_;
};

// True when `dir` holds model.safetensors or model.safetensors.index.json.
bool has_safetensors(const std::string& dir);

}  // namespace llmbench
