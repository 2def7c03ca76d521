#include "cost/json_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "base/error.h"

namespace braid::cost {

FileLock::FileLock(const std::filesystem::path& path)
    : fd_(::open(path.c_str(), O_CREAT | O_RDWR, 0644)) {
  if (fd_ >= 0) ::flock(fd_, LOCK_EX);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& json) {
  const std::filesystem::path temp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << json.dump(1) << '\n';
    out.close();
    if (!out.good()) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      BRAID_THROW(ErrorCode::kInternal, "cannot write ", temp.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) std::filesystem::remove(temp, ec);
  BRAID_CHECK(!ec, ErrorCode::kInternal, "cannot rename ", temp.string(), " to ", path.string(),
              ": ", ec.message());
}

}  // namespace braid::cost
