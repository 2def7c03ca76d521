#include "exec/chrome_trace.h"

#include <fstream>

#include "base/error.h"

namespace braid::exec {

ChromeTrace::ChromeTrace(const ir::UnitGraph& units, std::string title,
                         std::vector<std::string> lane_names)
    : units_(units), title_(std::move(title)), lane_names_(std::move(lane_names)) {}

void ChromeTrace::on_unit(size_t lane, UnitId unit, Micros begin, Micros end) {
  const double ts = offset_us_ + begin.count();
  const double dur = (end - begin).count();
  events_.push_back({{"ph", "X"},
                     {"name", units_.unit(unit).name},
                     {"cat", units_.signature(unit)},
                     {"pid", 1},
                     {"tid", lane},
                     {"ts", ts},
                     {"dur", dur},
                     {"args", {{"unit", index(unit)}, {"flops", units_.unit(unit).flops}}}});
  last_end_us_ = std::max(last_end_us_, ts + dur);
}

void ChromeTrace::next_run() {
  offset_us_ = last_end_us_;
}

nlohmann::json ChromeTrace::to_json() const {
  nlohmann::json trace_events = nlohmann::json::array();
  trace_events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", title_}}}});
  for (size_t i = 0; i < lane_names_.size(); ++i) {
    trace_events.push_back({{"ph", "M"},
                            {"name", "thread_name"},
                            {"pid", 1},
                            {"tid", i},
                            {"args", {{"name", lane_names_[i]}}}});
    trace_events.push_back({{"ph", "M"},
                            {"name", "thread_sort_index"},
                            {"pid", 1},
                            {"tid", i},
                            {"args", {{"sort_index", i}}}});
  }
  for (const auto& e : events_) trace_events.push_back(e);
  return {{"displayTimeUnit", "ms"},
          {"otherData", {{"model", units_.name()}}},
          {"traceEvents", trace_events}};
}

void ChromeTrace::write(const std::filesystem::path& path) const {
  std::ofstream out(path);
  BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write trace file '", path.string(),
              "'");
  out << to_json().dump() << "\n";
}

}  // namespace braid::exec
