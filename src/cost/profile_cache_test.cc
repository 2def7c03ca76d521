#include "cost/profile_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "test_env.h"

namespace braid::cost {
namespace {

Machine test_machine() {
  return {"Test CPU", 2, "2.6.3", "0.1.0", "default"};
}

Measurement measurement(double median) {
  Measurement m;
  m.median = Micros{median};
  m.p10 = Micros{median * 0.9};
  m.p90 = Micros{median * 1.1};
  m.runs = 5;
  m.number = 3;
  m.other_load = 0.1;
  return m;
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = testing::scratch_dir() / name;
  std::filesystem::remove_all(dir);
  return dir;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(ProfileCache, RoundTripsThroughTheFile) {
  auto dir = fresh_dir("round_trip");
  std::filesystem::path path;
  {
    ProfileCache cache(dir, test_machine());
    EXPECT_FALSE(cache.find("stage a").has_value());
    cache.insert("stage a", measurement(42), "Conv");
    Measurement suspect = measurement(7);
    suspect.suspect = true;
    suspect.other_load.reset();
    cache.insert("stage b", suspect, "Conv || Relu");
    path = cache.path();
  }  // the destructor flushes
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp." + std::to_string(getpid())));
  ProfileCache again(dir, test_machine());
  EXPECT_EQ(again.size(), 2u);
  auto a = again.find("stage a");
  ASSERT_TRUE(a.has_value());
  EXPECT_DOUBLE_EQ(a->median.count(), 42);
  EXPECT_DOUBLE_EQ(a->p90.count(), 42 * 1.1);
  EXPECT_EQ(a->runs, 5);
  EXPECT_FALSE(a->suspect);
  EXPECT_DOUBLE_EQ(a->other_load.value_or(-1), 0.1);
  auto b = again.find("stage b");
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->suspect);
  EXPECT_FALSE(b->other_load.has_value());
  EXPECT_TRUE(again.warnings().empty());
}

// Another machine's numbers would mislead every schedule: a different fingerprint is a
// different file.
TEST(ProfileCache, MachinesDoNotShare) {
  auto dir = fresh_dir("machines");
  {
    ProfileCache cache(dir, test_machine());
    cache.insert("stage", measurement(1), "");
  }
  Machine other = test_machine();
  other.num_cpus = 4;
  ProfileCache cache(dir, other);
  EXPECT_FALSE(cache.find("stage").has_value());
}

TEST(ProfileCache, TwoWritersMerge) {
  auto dir = fresh_dir("merge");
  ProfileCache first(dir, test_machine());
  ProfileCache second(dir, test_machine());
  first.insert("one", measurement(1), "");
  second.insert("two", measurement(2), "");
  first.flush();
  second.flush();  // must keep "one"
  ProfileCache third(dir, test_machine());
  EXPECT_TRUE(third.find("one").has_value());
  EXPECT_TRUE(third.find("two").has_value());
}

// A corrupt cache (a crash in an old version, a full disk, a hand edit) only costs time: it is
// ignored with a warning and replaced on the next write, never an error.
TEST(ProfileCache, CorruptFileIsIgnoredWithAWarning) {
  auto dir = fresh_dir("corrupt");
  std::filesystem::path path;
  {
    ProfileCache probe(dir, test_machine());
    path = probe.path();
  }
  for (const std::string& text : {std::string("{\"format\": \"braid.profile_cache/1\", \"entr"),
                                  std::string("[1, 2, 3]"), std::string("\x01\x02garbage"),
                                  std::string("{\"format\": \"something/9\", \"entries\": {}}")}) {
    write_text(path, text);
    ProfileCache cache(dir, test_machine());
    EXPECT_EQ(cache.size(), 0u);
    ASSERT_EQ(cache.warnings().size(), 1u) << text;
    EXPECT_NE(cache.warnings()[0].find("ignoring"), std::string::npos);
    cache.insert("fresh", measurement(3), "");
    cache.flush();
    ProfileCache repaired(dir, test_machine());
    EXPECT_TRUE(repaired.find("fresh").has_value());
    EXPECT_TRUE(repaired.warnings().empty());
  }
}

TEST(ProfileCache, MalformedEntriesAreSkipped) {
  auto dir = fresh_dir("entries");
  std::filesystem::path path;
  {
    ProfileCache cache(dir, test_machine());
    cache.insert("good", measurement(5), "");
    path = cache.path();
  }
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  j["entries"]["bad1"] = {{"median_us", "fast"}};
  j["entries"]["bad2"] = {
      {"median_us", -1.0}, {"p10_us", 1.0}, {"p90_us", 1.0}, {"runs", 1}, {"number", 1}};
  j["entries"]["bad3"] = 17;
  j["entries"]["bad4"] = {
      {"median_us", 1.0}, {"p10_us", 1.0}, {"p90_us", 1.0}, {"runs", 1e30}, {"number", 1}};
  write_text(path, j.dump());
  ProfileCache cache(dir, test_machine());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.find("good").has_value());
  ASSERT_EQ(cache.warnings().size(), 1u);
  EXPECT_NE(cache.warnings()[0].find("4 malformed"), std::string::npos) << cache.warnings()[0];
}

TEST(ProfileCache, DefaultDirFollowsTheEnvironment) {
  // Restored at the end: other tests of this process may read them.
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      ::setenv(name, v->c_str(), 1);
    else
      ::unsetenv(name);
  };
  const auto cache_dir = saved("BRAID_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"),
             home = saved("HOME");
  ::setenv("BRAID_CACHE_DIR", "/tmp/braid-x", 1);
  EXPECT_EQ(ProfileCache::default_dir(), "/tmp/braid-x");
  ::unsetenv("BRAID_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(ProfileCache::default_dir(), "/tmp/xdg/braid");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(ProfileCache::default_dir(), "/home/someone/.cache/braid");
  restore("BRAID_CACHE_DIR", cache_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST(Machine, FingerprintNamesEveryField) {
  Machine m = this_machine();
  EXPECT_GT(m.num_cpus, 0);
  EXPECT_FALSE(m.cpu_model.empty());
  std::string f = fingerprint(m);
  EXPECT_NE(f.find(m.cpu_model), std::string::npos);
  EXPECT_NE(f.find("oneDNN " + m.onednn_version), std::string::npos);
  EXPECT_EQ(fingerprint_digest(m).size(), 16u);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Machine, CountsOtherRunnableThreads) {
  auto n = other_runnable_threads();
  ASSERT_TRUE(n.has_value());  // Linux always has /proc
  EXPECT_GE(*n, 0);
}

}  // namespace
}  // namespace braid::cost
