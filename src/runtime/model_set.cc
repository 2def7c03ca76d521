// Minimal ModelSet (kIr grouping only), so that combined blocks and the sim backend can be
// tested before the full one lands; to be replaced by B's.
#include "runtime/model_set.h"

#include <string>

#include "base/error.h"

namespace braid::runtime {

std::string_view to_string(BlockGrouping grouping) {
  switch (grouping) {
    case BlockGrouping::kIr:
      return "ir";
    case BlockGrouping::kStages:
      return "stages";
  }
  return "ir";
}

std::vector<TopBlock> top_blocks(const ir::UnitGraph& units, BlockGrouping grouping) {
  BRAID_CHECK(grouping == BlockGrouping::kIr, ErrorCode::kUnsupported, "runtime: block grouping '",
              to_string(grouping), "' is not implemented yet");
  std::vector<TopBlock> blocks;
  const std::vector<ir::Block> ir_blocks = ir::block_partition(units);
  for (size_t b = 0; b < ir_blocks.size(); ++b)
    blocks.push_back({.ir_first = b, .ir_last = b + 1, .units = ir_blocks[b].units});
  return blocks;
}

RuntimeModel& ModelSet::add(std::string_view spec, const AddOptions& options) {
  auto model = std::make_unique<RuntimeModel>();
  model->loaded = models::load_model(spec, options.load);
  model->name = model->loaded.units.name();
  BRAID_CHECK(model->loaded.graph != nullptr, ErrorCode::kInvalidArgument, "runtime: '", spec,
              "' is a weighted DAG: it has no values to serve");
  for (const auto& m : models_)
    BRAID_CHECK(m->name != model->name, ErrorCode::kInvalidArgument, "runtime: model '",
                model->name, "' is loaded twice");
  model->blocks = top_blocks(model->units(), options.blocks);
  model->block_of_unit.assign(model->units().num_units(), 0);
  for (size_t b = 0; b < model->blocks.size(); ++b)
    for (UnitId u : model->blocks[b].units) model->block_of_unit[braid::index(u)] = uint32_t(b);
  models_.push_back(std::move(model));
  return *models_.back();
}

void ModelSet::set_schedule(size_t m, sched::Schedule schedule) {
  RuntimeModel& model = *models_.at(m);
  model.plan = sched::lower(model.units(), schedule);
  model.schedule = std::move(schedule);
}

size_t ModelSet::index(std::string_view name) const {
  std::string names;
  for (size_t m = 0; m < models_.size(); ++m) {
    if (models_[m]->name == name) return m;
    names += (names.empty() ? "" : ", ") + models_[m]->name;
  }
  throw Error(ErrorCode::kNotFound,
              "runtime: no model '" + std::string(name) + "' is loaded (loaded: " + names + ")");
}

}  // namespace braid::runtime
