// braid train: TOP's learned policies (python/braid/train.py), trained with PyTorch against
// braid's runtime. A thin front: it runs `PYTHON -m braid.train ARGS...` with this build's
// module on PYTHONPATH, PYTHON being $BRAID_PYTHON or else Debian's /usr/bin/python3 (where
// python3-torch installs PyTorch; `make deps` installs it). What it writes runs without PyTorch:
// `braid top|serve --policy learned:DIR`.
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "commands.h"

namespace braid::cli {
namespace {

// BUILD/python beside the braid executable (BUILD/braid), where the module is built.
std::filesystem::path module_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path dir = exe.parent_path() / "python";
  return std::filesystem::exists(dir / "braid" / "train.py") ? dir : std::filesystem::path{};
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train",
      "Train TOP's learned policies with PyTorch: braid train maddpg|gpg|toy --scenario FILE "
      "--steps N --seed S -o DIR (braid train maddpg --help lists the flags)");
  cmd->prefix_command();  // every argument goes to python -m braid.train
  cmd->allow_extras();
  cmd->fallthrough(false);
  cmd->set_help_flag();  // so does --help
  cmd->callback([cmd] {
    const char* env = std::getenv("BRAID_PYTHON");
    const std::string python = env != nullptr && *env != '\0' ? env : "/usr/bin/python3";
    if (const std::filesystem::path dir = module_dir(); !dir.empty()) {
      const char* old = std::getenv("PYTHONPATH");
      const std::string path =
          dir.string() + (old != nullptr && *old != '\0' ? std::string(":") + old : "");
      setenv("PYTHONPATH", path.c_str(), 1);
    }
    std::vector<std::string> args = {python, "-m", "braid.train"};
    for (const std::string& a : cmd->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    execvp(argv[0], argv.data());
    BRAID_THROW(ErrorCode::kNotFound, "braid train: cannot run ", python, ": ",
                std::strerror(errno), " (set BRAID_PYTHON to a Python with PyTorch)");
  });
}

}  // namespace braid::cli
