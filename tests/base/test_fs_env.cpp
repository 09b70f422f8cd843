#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "llmbench/base/env.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"

using namespace llmbench;

TEST(Error, FirstLineDropsBacktrace) {
  EXPECT_EQ(first_line("bad thing\nframe 1\nframe 2"), "bad thing");
  EXPECT_EQ(first_line("single"), "single");
  EXPECT_EQ(one_line("unknown model 'foo\nbar'"), "unknown model 'foo\\nbar'");
  EXPECT_EQ(one_line("not found: tiny\n"), "not found: tiny\\n");  // a quoted value's own trailing break
  EXPECT_EQ(one_line("a\rb\x01" "c\td"), "a\\rb\\x01c\td");
  // Well-formed UTF-8 passes; a byte outside it (Latin-1, a cut sequence, an overlong form, a surrogate) is \xNN.
  EXPECT_EQ(one_line("caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD"), "caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD");
  EXPECT_EQ(one_line("caf\xE9!"), "caf\\xe9!");
  EXPECT_EQ(one_line("\xE4\xB8"), "\\xe4\\xb8");
  EXPECT_EQ(one_line("\xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80"), "\\xc0\\xaf \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80");
  EXPECT_EQ(cat("a", 1, "b", 2.5), "a1b2.5");
}

TEST(Fs, AtomicWriteReplacesAndLeavesNoTemp) {
  auto dir = std::filesystem::temp_directory_path() / "llmbench_fs_test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "out.json").string();
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  EXPECT_EQ(read_file(path), "second");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(Fs, UnwritablePathIsAnErrorAndOldFileSurvives) {
  EXPECT_THROW(write_file_atomic("/nonexistent-dir/x.json", "x"), Error);
  EXPECT_THROW(check_writable("/nonexistent-dir/x.json"), UsageError);
  EXPECT_THROW(read_file("/nonexistent-dir/x.json"), Error);
}

// A symbolic link as the output path: its target is written and the link stays, also when the target does
// not exist yet (a dangling link) or is reached through a chain of relative links; a link into a missing
// directory is refused before any work.
TEST(Fs, LinksAreFollowedEvenWhenDangling) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "llmbench_fs_links";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  fs::create_symlink("sub/target.json", dir / "dangling.json");
  check_writable((dir / "dangling.json").string());
  write_file_atomic((dir / "dangling.json").string(), "through the link");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "dangling.json")));
  EXPECT_EQ(read_file((dir / "sub" / "target.json").string()), "through the link");
  fs::create_symlink("dangling.json", dir / "chain.json");
  write_file_atomic((dir / "chain.json").string(), "twice");
  EXPECT_EQ(read_file((dir / "sub" / "target.json").string()), "twice");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "chain.json")));
  fs::create_symlink((dir / "missing" / "t.json").string(), dir / "nowhere.json");
  EXPECT_THROW(check_writable((dir / "nowhere.json").string()), UsageError);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "nowhere.json")));
  fs::remove_all(dir);
}

TEST(Env, HostFactsAreFilledAndRoundTripThroughJson) {
  EnvInfo e = collect_host_env();
  EXPECT_GT(e.cpu_cores, 0);
  EXPECT_GT(e.ram_bytes, 0u);
  EXPECT_FALSE(e.tool_version.empty());
  e.gpus.push_back({0, "Fake GPU", 9, 0, 1ULL << 37, 132});
  e.ceilings = Ceilings{"cuda:0", 4250.0, 796.0, "bfloat16", 8192, 10};
  EnvInfo back = env_from_json(to_json(e));
  EXPECT_EQ(back.cpu_cores, e.cpu_cores);
  EXPECT_EQ(back.ram_bytes, e.ram_bytes);
  ASSERT_EQ(back.gpus.size(), 1u);
  EXPECT_EQ(back.gpus[0].cc_major, 9);
  EXPECT_EQ(back.gpus[0].sm_count, 132);
  ASSERT_TRUE(back.ceilings.has_value());
  EXPECT_DOUBLE_EQ(back.ceilings->copy_gb_s, 4250.0);
  EXPECT_NE(format_env(e).find("Fake GPU"), std::string::npos);
}
