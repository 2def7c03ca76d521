#include "runtime/model_set.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace braid::runtime {
namespace {

// The shapes of what `unit` hands to other units (or returns): the outputs of its ops that a
// later unit reads or that are graph outputs. A fused unit's inner tensors (Conv before its
// Relu) are not among them.
std::vector<ir::Shape> output_shapes(const ir::UnitGraph& units, UnitId unit) {
  const ir::Graph& g = *units.graph();
  std::vector<ir::Shape> shapes;
  for (NodeId op : units.unit(unit).ops)
    for (ValueId v : g.node(op).outputs) {
      const ir::Value& value = g.value(v);
      const bool leaves =
          g.is_output(v) ||
          std::any_of(value.consumers.begin(), value.consumers.end(),
                      [&](NodeId consumer) { return units.unit_of(consumer) != unit; });
      if (leaves) shapes.push_back(value.type.shape);
    }
  return shapes;
}

TopBlock make_block(const std::vector<ir::Block>& ir_blocks, size_t first, size_t last) {
  TopBlock block{.ir_first = first, .ir_last = last, .units = {}};
  for (size_t b = first; b < last; ++b)
    block.units.insert(block.units.end(), ir_blocks[b].units.begin(), ir_blocks[b].units.end());
  return block;
}

// kStages: runs of consecutive IR blocks whose outputs have equal shapes, chains compared like
// any block (so a stem, whose output differs from the first module's, stays a block of its
// own: ResNet's conv1 stage, He et al. Table 1); a trailing chain (the head: pooling and
// classifier, microseconds of work) then joins the run before it.
std::vector<TopBlock> stage_blocks(const ir::UnitGraph& units,
                                   const std::vector<ir::Block>& ir_blocks) {
  std::vector<std::pair<size_t, size_t>> runs;  // IR blocks [first, last)
  std::vector<ir::Shape> previous_shapes;
  for (size_t b = 0; b < ir_blocks.size(); ++b) {
    std::vector<ir::Shape> shapes = output_shapes(units, ir_blocks[b].units.back());
    if (!runs.empty() && shapes == previous_shapes)
      runs.back().second = b + 1;
    else
      runs.emplace_back(b, b + 1);
    previous_shapes = std::move(shapes);
  }
  const bool trailing_chain =
      ir_blocks.back().is_chain && runs.size() > 1 && runs.back().second - runs.back().first == 1;
  if (trailing_chain) {
    runs[runs.size() - 2].second = runs.back().second;
    runs.pop_back();
  }
  std::vector<TopBlock> blocks;
  for (auto [first, last] : runs) blocks.push_back(make_block(ir_blocks, first, last));
  return blocks;
}

}  // namespace

std::string_view to_string(BlockGrouping grouping) {
  switch (grouping) {
    case BlockGrouping::kIr:
      return "ir";
    case BlockGrouping::kStages:
      return "stages";
  }
  return "?";
}

std::vector<TopBlock> top_blocks(const ir::UnitGraph& units, BlockGrouping grouping) {
  const std::vector<ir::Block> ir_blocks = ir::block_partition(units);
  if (ir_blocks.empty()) return {};
  if (grouping == BlockGrouping::kStages) {
    BRAID_CHECK(units.graph() != nullptr, ErrorCode::kInvalidArgument, "model '", units.name(),
                "': grouping blocks by stage needs tensor shapes (a weighted DAG has none)");
    return stage_blocks(units, ir_blocks);
  }
  std::vector<TopBlock> blocks;
  for (size_t b = 0; b < ir_blocks.size(); ++b) blocks.push_back(make_block(ir_blocks, b, b + 1));
  return blocks;
}

RuntimeModel& ModelSet::add(std::string_view spec, const AddOptions& options) {
  models::LoadedModel loaded = models::load_model(spec, options.load);
  BRAID_CHECK(loaded.graph != nullptr, ErrorCode::kInvalidArgument, "model '", spec,
              "' is a weighted DAG: it has no values to serve");
  const std::string& name = loaded.units.name();
  for (const auto& m : models_)
    BRAID_CHECK(m->name != name, ErrorCode::kInvalidArgument, "model '", name,
                "' is already loaded (give the second one another name)");
  auto model = std::make_unique<RuntimeModel>();
  model->name = name;
  model->blocks = top_blocks(loaded.units, options.blocks);
  BRAID_CHECK(!model->blocks.empty(), ErrorCode::kInvalidModel, "model '", name,
              "' has no units to run");
  model->block_of_unit.assign(loaded.units.num_units(), 0);
  for (size_t b = 0; b < model->blocks.size(); ++b)
    for (UnitId u : model->blocks[b].units)
      model->block_of_unit[braid::index(u)] = static_cast<uint32_t>(b);
  model->loaded = std::move(loaded);
  models_.push_back(std::move(model));
  return *models_.back();
}

void ModelSet::set_schedule(size_t m, sched::Schedule schedule) {
  BRAID_CHECK(m < models_.size(), ErrorCode::kInvalidArgument, "model #", m,
              " does not exist: ", models_.size(), " loaded");
  RuntimeModel& model = *models_[m];
  sched::ExecutionPlan plan = sched::lower(model.units(), schedule);  // validates
  // Both cut the same unit graph with ir::block_partition.
  BRAID_ASSERT(plan.num_blocks == model.blocks.back().ir_last, "plan of '", model.name, "' has ",
               plan.num_blocks, " blocks, its TOP blocks cover ", model.blocks.back().ir_last);
  model.schedule = std::move(schedule);
  model.plan = std::move(plan);
}

size_t ModelSet::index(std::string_view name) const {
  std::string loaded;
  for (size_t m = 0; m < models_.size(); ++m) {
    if (models_[m]->name == name) return m;
    loaded += (m ? ", " : "") + models_[m]->name;
  }
  BRAID_THROW(ErrorCode::kNotFound, "model '", name,
              "' is not loaded (loaded: ", loaded.empty() ? "none" : loaded, ")");
}

}  // namespace braid::runtime
