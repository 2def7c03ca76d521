#include "progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace braid::cli {

bool quiet = false;

namespace {
bool line_on_screen = false;
}  // namespace

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)), total_(total), shown_(!quiet && isatty(STDERR_FILENO) == 1) {
  draw();
}

Progress::~Progress() {
  if (shown_) clear_line();
}

void Progress::step() {
  ++done_;
  draw();
}

void Progress::draw() const {
  if (!shown_) return;
  if (total_ == 0)
    fmt::print(stderr, "\r\033[K{}...", label_);
  else
    fmt::print(stderr, "\r\033[K{}: {}/{}", label_, done_, total_);
  std::fflush(stderr);
  line_on_screen = true;
}

void Progress::clear_line() {
  if (!line_on_screen) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  line_on_screen = false;
}

}  // namespace braid::cli
