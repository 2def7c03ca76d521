#include "cost/transfer_cost.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace braid::cost {

LinkCost read_link_cost(const std::filesystem::path& path) {
  std::ifstream in(path);
  BRAID_CHECK(in.good(), ErrorCode::kNotFound, "cannot open transfer costs '", path.string(), "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, path.string(), ": not valid JSON (", e.what(), ")");
  }
  BRAID_CHECK(j.is_object() && j.contains("format") && j.at("format") == "braid.transfers/1",
              ErrorCode::kInvalidArgument, path.string(),
              ": expected \"format\": \"braid.transfers/1\"");
  LinkCost link;
  for (auto [key, field] : {std::pair{"latency_us", &link.latency_us}, {"gbps", &link.gbps}}) {
    BRAID_CHECK(j.contains(key) && j[key].is_number(), ErrorCode::kInvalidArgument, path.string(),
                ": missing number '", key, "'");
    *field = j[key].get<double>();
  }
  BRAID_CHECK(link.latency_us >= 0 && link.gbps > 0, ErrorCode::kInvalidArgument, path.string(),
              ": need latency_us >= 0 and gbps > 0");
  return link;
}

WithTransfers::WithTransfers(std::unique_ptr<CostModel> base, LinkCost link)
    : CostModel(base->units()), base_(std::move(base)), link_(link) {}

}  // namespace braid::cost
