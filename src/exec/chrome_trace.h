// A RunObserver that writes a Chrome trace-event JSON (opens in Perfetto / chrome://tracing):
// one lane (tid) per stream, one complete ("X") slice per unit.
//
//   ChromeTrace trace(units, "inception_v3 greedy");
//   model->run(*request, &trace);
//   trace.write("t.json");
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/executor.h"

namespace braid::exec {

class ChromeTrace final : public RunObserver {
 public:
  ChromeTrace(const ir::UnitGraph& units, std::string title, std::vector<std::string> lane_names);
  void on_unit(size_t lane, UnitId unit, Micros begin, Micros end) override;
  // Starts a new run: later slices are shifted to follow the previous run's end.
  void next_run();
  nlohmann::json to_json() const;
  void write(const std::filesystem::path& path) const;

 private:
  const ir::UnitGraph& units_;
  std::string title_;
  std::vector<std::string> lane_names_;
  nlohmann::json events_ = nlohmann::json::array();
  double offset_us_ = 0, last_end_us_ = 0;
};

}  // namespace braid::exec
