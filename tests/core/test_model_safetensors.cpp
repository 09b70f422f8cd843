// Our safetensors reader on hand-made files: good ones read back exactly; every corruption is a clear
// Error naming the culprit, never a crash.
#include <gtest/gtest.h>

#include "remove_tree.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/model/safetensors.h"

namespace llmbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("llmbench_st_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    testing_util::remove_tree(dir_.string());
    fs::create_directories(dir_);
  }
  void TearDown() override { testing_util::remove_tree(dir_.string()); }

  // Writes 8-byte little-endian length + header + data; `declared_len` overrides the length field.
  std::string write(const std::string& name, const std::string& header, const std::string& data,
                    std::int64_t declared_len = -1) {
    std::string bytes(8, '\0');
    std::uint64_t n = declared_len < 0 ? header.size() : static_cast<std::uint64_t>(declared_len);
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    bytes += header + data;
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static std::string floats(std::initializer_list<float> xs) {
    std::string s(xs.size() * 4, '\0');
    std::memcpy(s.data(), xs.begin(), s.size());
    return s;
  }

  // Opening `path` must throw an Error containing every needle.
  static void expect_error(const std::string& path, std::initializer_list<const char*> needles) {
    try {
      SafetensorsFile f(path);
      FAIL() << "no error for " << path;
    } catch (const Error& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
};

TEST_F(Safetensors, ReadsTensorsBackExactly) {
  const json h = {{"__metadata__", {{"format", "pt"}}},
                  {"a", {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}}},
                  {"b", {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {16, 20}}}}};
  std::string data = floats({1.f, 2.f, 3.f, -4.5f});
  data += std::string("\x80\x3f\x00\xc0", 4);  // bf16 1.0, -2.0
  SafetensorsFile f(write("ok.safetensors", h.dump(), data));
  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorView& a = f.tensors().at("a");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(a.dtype, StDtype::F32);
  float got[4];
  std::memcpy(got, a.data, 16);
  EXPECT_EQ(got[3], -4.5f);
  const TensorView& b = f.tensors().at("b");
  EXPECT_EQ(b.dtype, StDtype::BF16);
  EXPECT_EQ(b.nbytes, 4u);
  EXPECT_EQ(b.data[1], 0x3f);
}


TEST_F(Safetensors, HeaderLengthBeyondFile) {
  expect_error(write("len.safetensors", "{}", "", 1000), {"header length 1000", "beyond"});
  expect_error(write("huge.safetensors", "{}", "", std::int64_t{1} << 62), {"header length"});
}

TEST_F(Safetensors, FileShorterThanEightBytes) {
  const std::string path = (dir_ / "tiny").string();
  std::ofstream(path, std::ios::binary) << "abc";
  expect_error(path, {"too short"});
}

TEST_F(Safetensors, MalformedJson) {
  expect_error(write("bad.safetensors", "{\"a\": {\"dtype\": ", ""), {"malformed JSON"});
  expect_error(write("arr.safetensors", "[1, 2]", ""), {"not an object"});
}

TEST_F(Safetensors, MissingFields) {
  expect_error(write("m1", json{{"a", {{"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({1})), {"'a'", "dtype"});
  expect_error(write("m2", json{{"a", {{"dtype", "F32"}, {"data_offsets", {0, 4}}}}}.dump(), floats({1})), {"'a'", "shape"});
  expect_error(write("m3", json{{"a", {{"dtype", "F32"}, {"shape", {1}}}}}.dump(), floats({1})), {"'a'", "data_offsets"});
  expect_error(write("m4", json{{"a", {{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({1})),
               {"'a'", "shape"});
  expect_error(write("m5", json{{"a", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {-4, 4}}}}}.dump(), floats({1})),
               {"'a'", "data_offsets"});
}

TEST_F(Safetensors, UnsupportedAndUnknownDtypes) {
  expect_error(write("i64", json{{"w", {{"dtype", "I64"}, {"shape", {1}}, {"data_offsets", {0, 8}}}}}.dump(), floats({1, 2})),
               {"'w'", "unsupported dtype 'I64'", "F32, F16, BF16"});
  expect_error(write("zz", json{{"w", {{"dtype", "Q4_K"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({1})),
               {"'w'", "Q4_K"});
}

TEST_F(Safetensors, OffsetsOutOfRange) {
  expect_error(write("oor", json{{"w", {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {0, 16}}}}}.dump(), floats({1, 2})),
               {"'w'", "out of range", "8 bytes"});
  expect_error(write("rev", json{{"w", {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {8, 4}}}}}.dump(), floats({1, 2})),
               {"'w'", "out of range"});
}

TEST_F(Safetensors, OffsetsDisagreeWithShapeTimesDtype) {
  expect_error(write("dis", json{{"w", {{"dtype", "F16"}, {"shape", {3}}, {"data_offsets", {0, 8}}}}}.dump(), floats({1, 2})),
               {"'w'", "8 bytes", "needs 6"});
}

TEST_F(Safetensors, OverlappingTensors) {
  const json h = {{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
                  {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}}};
  expect_error(write("ovl", h.dump(), floats({1, 2, 3})), {"'a'", "'b'", "overlap"});
}

// As the reference library (MetadataIncompleteBuffer): bytes after the last tensor's end are refused.
TEST_F(Safetensors, TrailingBytesAfterTheLastTensor) {
  const json h = {{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}};
  expect_error(write("trail", h.dump(), floats({1, 2}) + "garbage"), {"trail", "data section is 15 bytes", "end at byte 8"});
}

TEST_F(Safetensors, ShapeOverflow) {
  const json h = {{"a", {{"dtype", "F32"}, {"shape", {std::uint64_t{1} << 40, std::uint64_t{1} << 40}}, {"data_offsets", {0, 4}}}}};
  expect_error(write("ovf", h.dump(), floats({1})), {"'a'", "overflows"});
}

TEST_F(Safetensors, ShardedCheckpoint) {
  write("s1.safetensors", json{{"a", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({7}));
  write("s2.safetensors", json{{"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}}.dump(), floats({8, 9}));
  const json index = {{"metadata", {{"total_size", 12}}}, {"weight_map", {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}}};
  std::ofstream(dir_ / "model.safetensors.index.json") << index.dump();
  SafetensorsCheckpoint ckpt(dir_.string());
  EXPECT_EQ(ckpt.files().size(), 2u);
  ASSERT_NE(ckpt.find("b"), nullptr);
  float b1;
  std::memcpy(&b1, ckpt.find("b")->data + 4, 4);
  EXPECT_EQ(b1, 9.f);
  EXPECT_EQ(ckpt.find("c"), nullptr);
  EXPECT_EQ(ckpt.total_bytes(), 12u);
}

// Both model.safetensors and an index: model.safetensors is loaded, as transformers does.
TEST_F(Safetensors, SingleFileBeforeAnIndex) {
  write("model.safetensors", json{{"a", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({7}));
  write("s1.safetensors", json{{"b", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({8}));
  std::ofstream(dir_ / "model.safetensors.index.json") << json{{"weight_map", {{"b", "s1.safetensors"}}}}.dump();
  SafetensorsCheckpoint ckpt(dir_.string());
  ASSERT_EQ(ckpt.files().size(), 1u);
  EXPECT_EQ(fs::path(ckpt.files()[0]).filename(), "model.safetensors");
  EXPECT_NE(ckpt.find("a"), nullptr);
  EXPECT_EQ(ckpt.find("b"), nullptr);
}

TEST_F(Safetensors, ShardedErrors) {
  auto index = [&](const json& map) { std::ofstream(dir_ / "model.safetensors.index.json") << json{{"weight_map", map}}.dump(); };
  auto expect_ckpt_error = [&](std::initializer_list<const char*> needles) {
    try {
      SafetensorsCheckpoint c(dir_.string());
      FAIL() << "no error";
    } catch (const Error& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  expect_ckpt_error({"no model.safetensors"});
  write("s1.safetensors", json{{"a", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(), floats({7}));
  index({{"a", "s1.safetensors"}, {"b", "s9.safetensors"}});
  expect_ckpt_error({"s9.safetensors", "missing"});
  index({{"a", "s1.safetensors"}, {"b", "s1.safetensors"}});
  expect_ckpt_error({"'b'", "not in its shard"});
  index({{"a", "../s1.safetensors"}});
  expect_ckpt_error({"plain file name"});
  std::ofstream(dir_ / "model.safetensors.index.json") << "{\"weight_map\": ";
  expect_ckpt_error({"malformed JSON"});
}

}  // namespace
}  // namespace llmbench
