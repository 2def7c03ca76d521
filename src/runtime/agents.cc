#include "runtime/agents.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace braid::runtime {
namespace {

double unit(double v) {
  return std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : 0.0;
}

void check_mapping(const ActionMapping& mapping) {
  BRAID_CHECK(mapping.min_interval_us > 0 && mapping.max_interval_us >= mapping.min_interval_us,
              ErrorCode::kInvalidArgument, "the launcher's intervals need 0 < min <= max, got ",
              mapping.min_interval_us, " and ", mapping.max_interval_us, " us");
}

}  // namespace

PartitionEncoding parse_partition_encoding(std::string_view name) {
  if (name == "bins") return PartitionEncoding::kBins;
  if (name == "offsets") return PartitionEncoding::kOffsets;
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown partition encoding '", name,
              "' (known: bins, offsets)");
}

std::string_view partition_encoding_name(PartitionEncoding encoding) {
  return encoding == PartitionEncoding::kOffsets ? "offsets" : "bins";
}

std::vector<double> intervals_from_action(std::span<const double> a0,
                                          const ActionMapping& mapping) {
  check_mapping(mapping);
  const double lo = std::log(mapping.min_interval_us), hi = std::log(mapping.max_interval_us);
  std::vector<double> out;
  for (double a : a0) out.push_back(std::exp(lo + unit(a) * (hi - lo)));
  return out;
}

double action_from_interval(double interval_us, const ActionMapping& mapping) {
  const double lo = std::log(mapping.min_interval_us), hi = std::log(mapping.max_interval_us);
  if (hi <= lo) return 0;
  return unit((std::log(std::max(interval_us, 1e-9)) - lo) / (hi - lo));
}

std::vector<std::vector<SubBlock>> partition_from_actions(
    const ModelSet& models, std::span<const std::vector<double>> per_model,
    PartitionEncoding encoding) {
  BRAID_CHECK(per_model.size() == models.size(), ErrorCode::kInvalidArgument, "block actions for ",
              per_model.size(), " models, the runtime has ", models.size());
  size_t total = 0;
  for (size_t m = 0; m < models.size(); ++m) {
    BRAID_CHECK(per_model[m].size() == models.model(m).blocks.size(), ErrorCode::kInvalidArgument,
                "model ", models.model(m).name, " has ", models.model(m).blocks.size(),
                " blocks, its agent gave ", per_model[m].size(), " values");
    total += per_model[m].size();
  }
  std::vector<std::vector<SubBlock>> bins(total);
  if (encoding == PartitionEncoding::kBins) {
    for (size_t m = 0; m < models.size(); ++m)
      for (size_t b = 0; b < per_model[m].size(); ++b) {
        const size_t bin =
            std::min(total - 1, static_cast<size_t>(unit(per_model[m][b]) * double(total)));
        bins[bin].push_back({uint32_t(m), uint32_t(b)});
      }
  } else {
    // Home bins: every block by relative depth, ties by model (stable).
    std::vector<SubBlock> home;
    for (size_t m = 0; m < models.size(); ++m)
      for (size_t b = 0; b < per_model[m].size(); ++b) home.push_back({uint32_t(m), uint32_t(b)});
    auto depth = [&](const SubBlock& s) {
      return (double(s.block) + 0.5) / double(per_model[s.model].size());
    };
    std::stable_sort(home.begin(), home.end(),
                     [&](const SubBlock& a, const SubBlock& b) { return depth(a) < depth(b); });
    for (size_t k = 0; k < home.size(); ++k) {
      const double v = unit(per_model[home[k].model][home[k].block]);
      const long moved = long(k) + std::lround((2 * v - 1) * kOffsetReach);
      bins[size_t(std::clamp(moved, 0L, long(total) - 1))].push_back(home[k]);
    }
    // Inside a bin by model then block, as with kBins.
    for (auto& bin : bins) std::sort(bin.begin(), bin.end());
  }
  std::vector<std::vector<SubBlock>> out;
  for (auto& bin : bins)
    if (!bin.empty()) out.push_back(std::move(bin));  // an empty bin is no combined block
  return out;
}

ActionPolicy::ActionPolicy(const PolicyOptions& options, const ActionMapping& mapping)
    : options_(options), mapping_(mapping) {
  BRAID_CHECK(options.max_in_flight >= 1, ErrorCode::kInvalidArgument,
              "max in-flight instances must be >= 1");
  check_mapping(mapping);
}

void ActionPolicy::set_actions(const ModelSet& models, std::span<const double> launcher,
                               std::span<const std::vector<double>> per_model) {
  BRAID_CHECK(launcher.size() == models.size(), ErrorCode::kInvalidArgument,
              "the launcher's action has ", launcher.size(), " values, the runtime has ",
              models.size(), " models");
  decision_ = {.interval_us = intervals_from_action(launcher, mapping_),
               .partition = partition_from_actions(models, per_model, mapping_.partition)};
}

size_t ActionPolicy::largest_combined_block() const {
  size_t most = 0;
  for (const auto& c : decision_.partition) most = std::max(most, c.size());
  return most;
}

Decision ActionPolicy::decide(const RuntimeState& state) {
  if (decision_.interval_us.empty()) {
    decision_.interval_us.assign(state.model.size(), mapping_.min_interval_us);
    decision_.partition = singleton_partition(*state.models);
  }
  partition_ = decision_.partition;
  return decision_;
}

std::vector<bool> ActionPolicy::admit(const RuntimeState& state, const std::vector<bool>& due) {
  std::vector<bool> out(due.size(), false);
  for (size_t m = 0; m < due.size(); ++m)
    out[m] = due[m] && state.model[m].in_flight < options_.max_in_flight;
  return out;
}

std::optional<Step> ActionPolicy::next_step(const RuntimeState& state) {
  return combined_graph_step(state, partition_);
}

size_t observation_size(const ModelSet& models) {
  size_t n = models.size();
  for (size_t m = 0; m < models.size(); ++m) n += models.model(m).blocks.size();
  return n;
}

std::vector<float> observe(const RuntimeState& state) {
  const ModelSet& models = *state.models;
  std::vector<float> out;
  out.reserve(observation_size(models));
  double mean = 0;
  for (const ModelState& m : state.model) mean += double(m.queued + m.in_flight);
  mean /= double(std::max<size_t>(1, state.model.size()));
  for (const ModelState& m : state.model)
    out.push_back(float((double(m.queued + m.in_flight) - mean) / (1 + mean)));
  for (size_t m = 0; m < models.size(); ++m) {
    const size_t first = out.size();
    out.resize(first + models.model(m).blocks.size(), 0.0f);
    const double in_flight = double(state.model[m].in_flight);
    for (const InstanceState& inst : state.instances)
      if (inst.model == m && inst.next_block < models.model(m).blocks.size())
        out[first + inst.next_block] += float(1 / in_flight);
  }
  return out;
}

}  // namespace braid::runtime
