// Triton's repository layout: the highest version of each model; bad layouts named.
#include "serve/repository.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "test_env.h"

namespace braid::serve {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& p, const std::string& text = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Repository, HighestVersionOfEachModelSortedByName) {
  const fs::path dir = testing::scratch_dir() / "repo";
  touch(dir / "resnet" / "1" / "model.onnx");
  touch(dir / "resnet" / "12" / "model.onnx");
  touch(dir / "resnet" / "3" / "model.onnx");
  touch(dir / "resnet" / "20" / "other.onnx");   // no model.onnx: not a version
  touch(dir / "resnet" / "abc" / "model.onnx");  // not a number
  touch(dir / "resnet" / "config.pbtxt", "name: \"resnet\"\nmax_batch_size: 4\n");
  touch(dir / "alpha" / "2" / "model.onnx");
  touch(dir / "README");  // not a directory: ignored
  const std::vector<RepositoryModel> models = scan_repository(dir);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "alpha");
  EXPECT_EQ(models[0].version, "2");
  EXPECT_EQ(models[1].name, "resnet");
  EXPECT_EQ(models[1].version, "12");
  EXPECT_EQ(models[1].path, dir / "resnet" / "12" / "model.onnx");
  EXPECT_EQ(models[0].config.max_batch_size, 0);  // no config.pbtxt: the defaults
  EXPECT_EQ(models[1].config.max_batch_size, 4);
}

TEST(Repository, ABadConfigIsNamed) {
  const fs::path dir = testing::scratch_dir() / "bad_config_repo";
  touch(dir / "m" / "1" / "model.onnx");
  touch(dir / "m" / "config.pbtxt", "max_batch_size: -3\n");
  try {
    scan_repository(dir);
    ADD_FAILURE() << "a negative max_batch_size was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("config.pbtxt: max_batch_size -3"), std::string::npos)
        << e.what();
  }
}

TEST(Repository, BadLayoutsAreNamed) {
  try {
    scan_repository(testing::scratch_dir() / "nowhere");
    ADD_FAILURE() << "a missing directory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  const fs::path dir = testing::scratch_dir() / "bad_repo";
  touch(dir / "empty_model" / "0" / "model.onnx");  // version 0 is not a version
  try {
    scan_repository(dir);
    ADD_FAILURE() << "a model without versions was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("'empty_model'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::serve
