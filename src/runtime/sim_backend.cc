#include "runtime/sim_backend.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace braid::runtime {
namespace {

void append_bytes(std::string& key, uint32_t v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Appends `kernels` on `stream` to `p`.
void launch(sim::Program& p, uint32_t stream, std::span<const sim::Kernel> kernels) {
  for (const sim::Kernel& k : kernels) {
    p.ops.push_back(sim::Op::kernel(stream, uint32_t(p.kernels.size())));
    p.kernels.push_back(k);
  }
}

// Appends `src` to `dst` on streams, events and kernels of its own (renumbered past dst's).
void append_program(sim::Program& dst, const sim::Program& src) {
  const uint32_t streams = uint32_t(dst.streams.size());
  const uint32_t kernels = uint32_t(dst.kernels.size());
  const uint32_t events = dst.num_events;
  for (const sim::StreamInfo& s : src.streams)
    dst.streams.push_back({.device = s.device, .id = int(dst.streams.size())});
  dst.kernels.insert(dst.kernels.end(), src.kernels.begin(), src.kernels.end());
  for (sim::Op op : src.ops) {
    op.stream += streams;
    if (op.type == sim::OpType::kKernel) op.index += kernels;
    if (op.type == sim::OpType::kRecord || op.type == sim::OpType::kWait) op.index += events;
    dst.ops.push_back(op);
  }
  dst.num_events += src.num_events;
}

}  // namespace

SimStageCost::SimStageCost(std::vector<const sim::UnitKernels*> kernels,
                           const sim::DeviceSpec& spec, bool graph_replay)
    : kernels_(std::move(kernels)), spec_(&spec), graph_replay_(graph_replay) {
  for (const sim::UnitKernels* k : kernels_)
    BRAID_CHECK(k != nullptr, ErrorCode::kInvalidArgument, "SimStageCost: null unit kernels");
}

Micros SimStageCost::simulate(std::span<const std::vector<UnitRef>> groups) const {
  sim::Program p;
  for (size_t g = 0; g < groups.size(); ++g) {
    p.streams.push_back({.device = 0, .id = int(g)});
    for (const UnitRef& u : groups[g]) {
      BRAID_CHECK(u.model < kernels_.size(), ErrorCode::kInvalidArgument,
                  "SimStageCost: no kernels for model ", u.model);
      launch(p, uint32_t(g), kernels_[u.model]->of(u.unit));
    }
  }
  return Micros(sim::simulate(p, std::span(spec_, 1), {.graph_replay = graph_replay_}).makespan_us);
}

Micros SimStageCost::unit(UnitRef u) const {
  const std::vector<UnitRef> group{u};
  return stage(std::span(&group, 1));
}

Micros SimStageCost::stage(std::span<const std::vector<UnitRef>> groups) const {
  if (groups.empty()) return Micros{0};
  std::string key;
  for (const auto& group : groups) {
    for (const UnitRef& u : group) {
      append_bytes(key, u.model);
      append_bytes(key, uint32_t(index(u.unit)));
    }
    key.push_back('|');
  }
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  Micros t = simulate(groups);
  // Never below the slowest group's units alone (as sim::SimCostModel): a group is not faster
  // beside others, and IOS's searches prune with that bound.
  if (groups.size() > 1 || groups[0].size() > 1)
    for (const auto& group : groups) {
      Micros sum{0};
      for (const UnitRef& u : group) sum += unit(u);
      t = std::max(t, sum);
    }
  std::lock_guard lock(mutex_);
  cache_.emplace(std::move(key), t);
  return t;
}

SimBackend::SimBackend(const ModelSet& models, sim::DeviceSpec spec, SimBackendOptions options)
    : models_(&models), spec_(std::move(spec)), options_(options), name_("sim:" + spec_.name) {
  std::vector<const sim::UnitKernels*> kernels;
  for (size_t m = 0; m < models.size(); ++m) {
    kernels_.push_back(std::make_unique<sim::UnitKernels>(models.model(m).units(), spec_));
    kernels.push_back(kernels_.back().get());
  }
  stage_cost_ = std::make_unique<SimStageCost>(std::move(kernels), spec_, options_.graph_replay);
}

SimBackend::~SimBackend() = default;

void SimBackend::check(const Step& step) const {
  BRAID_CHECK(!step.pieces.empty(), ErrorCode::kInvalidArgument, "sim backend: an empty step");
  for (const Piece& piece : step.pieces) {
    BRAID_CHECK(piece.model < models_->size() && piece.model < kernels_.size(),
                ErrorCode::kInvalidArgument, "sim backend: no model ", piece.model);
    const size_t blocks = models_->model(piece.model).blocks.size();
    BRAID_CHECK(piece.first_block < blocks &&
                    (step.kind == StepKind::kCombined ||
                     (piece.first_block < piece.last_block && piece.last_block <= blocks)),
                ErrorCode::kInvalidArgument, "sim backend: blocks [", piece.first_block, ", ",
                piece.last_block, ") of model ", piece.model, " (it has ", blocks, ")");
  }
  BRAID_CHECK(step.kind != StepKind::kCombined || schedules_cover_pieces(step),
              ErrorCode::kInvalidArgument,
              "sim backend: the step's pieces are not its schedules' sub-blocks");
}

sim::Program SimBackend::program(const Step& step) const {
  check(step);
  sim::Program p;
  if (step.kind == StepKind::kIndependent) {
    // Each piece: its blocks of its model's own plan, on streams of its own.
    for (const Piece& piece : step.pieces) {
      const RuntimeModel& model = models_->model(piece.model);
      BRAID_CHECK(!model.plan.lanes.empty(), ErrorCode::kInvalidArgument, "sim backend: model '",
                  model.name, "' has no schedule yet");
      const sim::UnitKernels* kernels = kernels_[piece.model].get();
      const sim::PlanProgram pp = sim::plan_program(
          model.units(), model.plan, std::span(&kernels, 1),
          model.blocks[piece.first_block].ir_first, model.blocks[piece.last_block - 1].ir_last);
      append_program(p, pp.program);
    }
    return p;
  }

  // Combined: each combined block on streams of its own, issued in step order (the highest
  // Ratio_in first: its kernels reach the device first); within one, the stages one after
  // another, a barrier between two stages being an event per stream of the earlier one, waited
  // by every other stream of the later one.
  for (const CombinedSchedule* s : step.schedules) {
    const auto first = uint32_t(p.streams.size());
    size_t width = 1;
    for (const auto& stage : s->stages) width = std::max(width, stage.size());
    for (size_t g = 0; g < width; ++g)
      p.streams.push_back({.device = 0, .id = int(p.streams.size())});
    std::vector<uint32_t> previous;  // events recorded at the end of the previous stage
    for (const auto& stage : s->stages) {
      for (size_t g = 0; g < stage.size(); ++g)
        for (size_t e = 0; e < previous.size(); ++e)
          if (e != g) p.ops.push_back(sim::Op::wait(first + uint32_t(g), previous[e]));
      std::vector<uint32_t> recorded;
      for (size_t g = 0; g < stage.size(); ++g) {
        for (const UnitRef& u : stage[g])
          launch(p, first + uint32_t(g), kernels_[u.model]->of(u.unit));
        recorded.push_back(p.num_events++);
        p.ops.push_back(sim::Op::record(first + uint32_t(g), recorded.back()));
      }
      previous = std::move(recorded);
    }
  }
  return p;
}

StepResult SimBackend::run(const Step& step) {
  // What decides the simulated time: the kind, and the pieces' blocks (independent: in piece
  // order, which is the issue order) or the stages (combined). Instances do not matter.
  check(step);
  std::string key = step.kind == StepKind::kCombined ? "c" : "i";
  if (step.kind == StepKind::kIndependent) {
    key += describe(step);
  } else {
    for (const CombinedSchedule* c : step.schedules) {
      for (const auto& stage : c->stages) {
        for (const auto& group : stage) {
          for (const UnitRef& u : group) {
            append_bytes(key, u.model);
            append_bytes(key, uint32_t(index(u.unit)));
          }
          key.push_back('|');
        }
        key.push_back('/');
      }
      key.push_back('#');
    }
  }
  if (auto it = steps_.find(key); it != steps_.end()) return it->second;
  const sim::Program p = program(step);
  const sim::Result r = sim::simulate(
      p, std::span(&spec_, 1), {.graph_replay = options_.graph_replay, .record_timeline = true});
  ++simulations_;
  const StepResult result{.device_time = Micros(r.makespan_us),
                          .utilization = sim::mean_occupancy(r)};
  steps_.emplace(std::move(key), result);
  return result;
}

}  // namespace braid::runtime
