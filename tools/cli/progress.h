// Progress of long work (schedule search, profiling) on stderr, one line rewritten in place,
// only when stderr is a terminal and --quiet is not given: pipes and logs stay clean.
//
//   Progress p("profiling squeezenet", m.units.num_units());
//   for (...) { ...; p.step(); }        // "profiling squeezenet: 12/50"
//   // the destructor erases the line
#pragma once

#include <cstddef>
#include <string>

namespace braid::cli {

extern bool quiet;  // --quiet

class Progress {
 public:
  // total 0: no count, only the label ("scheduling squeezenet with ios...").
  explicit Progress(std::string label, size_t total = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void step();
  // Erases a progress line still on the terminal (before an error message).
  static void clear_line();

 private:
  void draw() const;
  std::string label_;
  size_t total_, done_ = 0;
  bool shown_;
};

}  // namespace braid::cli
