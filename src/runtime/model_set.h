// The models a runtime serves (top.txt §IV): each loaded once — one graph, one weight set, one
// schedule and its lowered plan — and cut into TOP's blocks, the unit of pipelining.
//
//   runtime::ModelSet set;
//   set.add("resnet50", {.zoo = {.image_size = 224}, .blocks = BlockGrouping::kStages});
//   const RuntimeModel& m = set.model(0);
//   m.blocks.size();             // 5: ResNet's stages, the stem and head joined to them
//   m.blocks[b].units;           // what block b runs; its IR blocks [ir_first, ir_last)
//
// TOP's blocks are runs of consecutive IR blocks (ir::block_partition: an Inception module, a
// Fire module, a residual block, each stem and head chain alone), so an executor runs one with
// run_blocks(request, ir_first, ir_last).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/analysis.h"
#include "models/loader.h"
#include "sched/lower.h"
#include "sched/schedule.h"

namespace braid::runtime {

enum class BlockGrouping : uint8_t {
  kIr,      // one TOP block per IR block (Inception V3: 13, SqueezeNet: 12, ResNet-50: 18)
  kStages,  // consecutive IR blocks whose outputs have one shape form one block (ResNet's
            // stages), chains compared like any block, so a stem stays alone; a trailing
            // chain (the head) joins the block before it. ResNet-50 gives 5: conv1, layer1,
            // layer2, layer3, layer4 + head (He et al. Table 1's stages)
};
std::string_view to_string(BlockGrouping);

struct TopBlock {
  size_t ir_first = 0, ir_last = 0;  // IR blocks [ir_first, ir_last)
  std::vector<UnitId> units;         // topological order
};

struct RuntimeModel {
  std::string name;
  models::LoadedModel loaded;  // graph, weights and units
  std::vector<TopBlock> blocks;
  std::vector<uint32_t> block_of_unit;  // TOP block of every unit
  sched::Schedule schedule;             // the model's own schedule (static policy, executors)
  sched::ExecutionPlan plan;            // lowered from `schedule`; plan.num_blocks IR blocks

  const ir::UnitGraph& units() const { return loaded.units; }
};

struct AddOptions {
  models::LoadOptions load;
  BlockGrouping blocks = BlockGrouping::kIr;
};

class ModelSet {
 public:
  // Loads `spec` (a zoo name or an .onnx file) and cuts it into blocks. The schedule is set
  // later (set_schedule), once the runtime's cost model exists. Throws what load_model throws;
  // kInvalidArgument for a weighted DAG (no values to serve) or a duplicate name.
  RuntimeModel& add(std::string_view spec, const AddOptions& options = {});
  // Sets (validates and lowers) model `m`'s own schedule.
  void set_schedule(size_t m, sched::Schedule schedule);

  size_t size() const { return models_.size(); }
  const RuntimeModel& model(size_t m) const { return *models_[m]; }
  RuntimeModel& model(size_t m) { return *models_[m]; }
  // kNotFound listing the loaded names.
  size_t index(std::string_view name) const;

 private:
  std::vector<std::unique_ptr<RuntimeModel>> models_;  // stable addresses: cost models bind
};

// TOP's blocks of a unit graph under a grouping (exposed for tests and reports).
std::vector<TopBlock> top_blocks(const ir::UnitGraph& units, BlockGrouping grouping);

}  // namespace braid::runtime
