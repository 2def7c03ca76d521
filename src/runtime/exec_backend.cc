#include "runtime/exec_backend.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <thread>
#include <unordered_map>

#include "base/error.h"
#include "base/stats.h"
#include "runtime/combined.h"

namespace braid::runtime {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct ExecBackend::Impl {
  struct Model {
    std::unique_ptr<exec::PreparedModel> prepared;
    std::vector<std::unique_ptr<exec::Request>> free_requests;  // the pool
  };
  struct Instance {
    uint32_t model = 0;
    std::unique_ptr<exec::Request> request;
    uint32_t next_block = 0;  // the TOP block its next piece must start at
  };

  // Runs `pieces` one after another, each by its model's plan; stops at the first failure.
  // Returns their device time (RunStats).
  double run_pieces(const std::vector<const Piece*>& pieces) {
    double device_us = 0;
    for (const Piece* piece : pieces) {
      check_order(*piece);
      Instance& instance = instances.at(piece->instance);
      const std::vector<TopBlock>& blocks = set->model(piece->model).blocks;
      const exec::RunStats stats = models[piece->model].prepared->run_blocks(
          *instance.request, blocks[piece->first_block].ir_first,
          blocks[piece->last_block - 1].ir_last);
      device_us += double(stats.device_time.count());
      instance.next_block = piece->last_block;
    }
    return device_us;
  }

  // Runs one combined block of a step, stage by stage: each group of a stage on its own lane,
  // the groups side by side (Executor::run_side_by_side), the units of every instance in its
  // own request. `pieces` are the schedule's, one block each. Returns the summed stage times.
  double run_combined(const CombinedSchedule& schedule, std::span<const Piece> pieces) {
    for (const Piece& piece : pieces) check_order(piece);
    std::vector<std::vector<exec::UnitCall>> lanes;
    double device_us = 0;
    for (const std::vector<std::vector<UnitRef>>& stage : schedule.stages) {
      lanes.assign(stage.size(), {});
      for (size_t g = 0; g < stage.size(); ++g)
        for (const UnitRef& u : stage[g]) {
          // The instance whose sub-block holds the unit: one per (model, block).
          const uint32_t block = set->model(u.model).block_of_unit[index(u.unit)];
          const Piece* piece = nullptr;
          for (const Piece& p : pieces)
            if (p.model == u.model && p.first_block == block) piece = &p;
          BRAID_ASSERT(piece != nullptr, "combined block: unit of model #", u.model, " block ",
                       block, " has no piece");
          lanes[g].push_back({models[u.model].prepared.get(),
                              instances.at(piece->instance).request.get(), u.unit});
        }
      device_us += double(executor->run_side_by_side(lanes).device_time.count());
    }
    for (const Piece& piece : pieces) instances.at(piece.instance).next_block = piece.last_block;
    return device_us;
  }

  void check_order(const Piece& piece) {
    const Instance& instance = instances.at(piece.instance);
    BRAID_CHECK(piece.first_block == instance.next_block, ErrorCode::kInvalidArgument, "instance ",
                piece.instance, " of '", set->model(piece.model).name,
                "': blocks run out of order: piece starts at block ", piece.first_block,
                ", the instance is at block ", instance.next_block);
  }

  void prepare(const ModelSet& models);

  const ModelSet* set = nullptr;
  std::unique_ptr<exec::Executor> executor;  // what prepared the models, which it may outlive
  std::string name = "cpu";
  bool cpu = true;  // utilization from the process's CPU time, else from device times
  // Combined blocks run as the combined schedule says (units of several instances side by
  // side); else each of their pieces by its model's own plan.
  bool unit_runs = false;
  std::vector<Model> models;
  std::unordered_map<InstanceId, Instance> instances;  // in flight
  size_t cpus = 1;
};

ExecBackend::ExecBackend(const ModelSet& models, exec::CpuExecutorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->set = &models;
  impl_->cpus = allowed_cpu_count();
  size_t lane_cpus = 0;  // every model's lanes at once
  for (size_t m = 0; m < models.size(); ++m)
    lane_cpus += models.model(m).plan.lanes.size() *
                 static_cast<size_t>(std::max(1, options.threads_per_stream));
  // Each prepared model decides alone whether its lanes may spin (they fit the CPUs); here the
  // models' lanes share the CPUs, and a lane spinning for its next job would take a core from
  // another model's working lane.
  if (lane_cpus > impl_->cpus) options.spin_us = 0;
  // Combined blocks run units of an instance in orders no plan has: buffers are reused by the
  // units' dependences only.
  options.memory.order = exec::ReuseOrder::kDependences;
  impl_->executor = exec::make_cpu_executor(options);
  impl_->unit_runs = true;
  impl_->prepare(models);
}

ExecBackend::ExecBackend(const ModelSet& models, std::unique_ptr<exec::Executor> executor,
                         std::string name)
    : impl_(std::make_unique<Impl>()) {
  BRAID_CHECK(executor != nullptr, ErrorCode::kInvalidArgument, "no executor for the backend");
  impl_->set = &models;
  impl_->cpus = allowed_cpu_count();
  impl_->name = std::move(name);
  impl_->cpu = false;
  impl_->executor = std::move(executor);
  impl_->prepare(models);
}

void ExecBackend::Impl::prepare(const ModelSet& models) {
  for (size_t m = 0; m < models.size(); ++m) {
    const RuntimeModel& model = models.model(m);
    BRAID_CHECK(!model.plan.lanes.empty(), ErrorCode::kInvalidArgument, "model '", model.name,
                "' has no schedule (ModelSet::set_schedule) to prepare");
    // The set outlives the backend, so its weights are lent, not copied (an alias that owns
    // nothing): one weight set per model however many backends run it.
    std::shared_ptr<const ir::Weights> weights(std::shared_ptr<const void>{},
                                               &model.loaded.weights);
    auto prepared =
        executor->prepare({model.loaded.graph, std::move(weights), &model.units(), &model.plan});
    BRAID_ASSERT(prepared->num_blocks() == model.blocks.back().ir_last, "model '", model.name,
                 "': ", prepared->num_blocks(), " plan blocks, TOP blocks cover ",
                 model.blocks.back().ir_last);
    this->models.push_back({std::move(prepared), {}});
  }
}

std::string_view ExecBackend::name() const {
  return impl_->name;
}

ExecBackend::~ExecBackend() = default;

void ExecBackend::begin_instance(InstanceId instance, uint32_t model,
                                 std::span<const std::vector<float>> inputs) {
  const ModelSet& set = *impl_->set;
  BRAID_CHECK(model < set.size(), ErrorCode::kInvalidArgument, "instance ", instance, ": model #",
              model, " does not exist: ", set.size(), " loaded");
  BRAID_CHECK(!impl_->instances.contains(instance), ErrorCode::kInvalidArgument, "instance ",
              instance, " is already in flight");
  const ir::Graph& graph = *set.model(model).loaded.graph;
  BRAID_CHECK(inputs.empty() || inputs.size() == graph.inputs().size(), ErrorCode::kInvalidArgument,
              "instance ", instance, " of '", set.model(model).name, "': ", inputs.size(),
              " inputs given, the model takes ", graph.inputs().size());
  Impl::Model& m = impl_->models[model];
  Impl::Instance started{.model = model, .request = nullptr, .next_block = 0};
  if (m.free_requests.empty()) {
    started.request = m.prepared->new_request();
  } else {
    started.request = std::move(m.free_requests.back());
    m.free_requests.pop_back();
  }
  try {
    m.prepared->start_inference(*started.request);
    for (size_t i = 0; i < inputs.size(); ++i)
      m.prepared->set_input(*started.request, i, inputs[i]);
  } catch (...) {
    m.free_requests.push_back(std::move(started.request));
    throw;
  }
  impl_->instances.emplace(instance, std::move(started));
}

StepResult ExecBackend::run(const Step& step) {
  const ModelSet& set = *impl_->set;
  // Checked before anything runs, so a malformed step runs nothing: every piece names an
  // instance in flight, its model, and a block range of that model. Block order is checked as
  // the pieces run (two pieces may advance one instance in turn).
  for (const Piece& piece : step.pieces) {
    auto it = impl_->instances.find(piece.instance);
    BRAID_CHECK(it != impl_->instances.end(), ErrorCode::kInvalidArgument, "step '", describe(step),
                "': instance ", piece.instance, " is not in flight");
    BRAID_CHECK(it->second.model == piece.model, ErrorCode::kInvalidArgument, "step '",
                describe(step), "': instance ", piece.instance, " is of model #", it->second.model,
                ", not #", piece.model);
    const size_t num_blocks = set.model(piece.model).blocks.size();
    BRAID_CHECK(piece.first_block < piece.last_block && piece.last_block <= num_blocks,
                ErrorCode::kInvalidArgument, "step '", describe(step), "': blocks [",
                piece.first_block, ", ", piece.last_block, ") of '", set.model(piece.model).name,
                "', which has ", num_blocks);
  }
  const bool combined = step.kind == StepKind::kCombined && impl_->unit_runs;
  BRAID_CHECK(!combined || schedules_cover_pieces(step), ErrorCode::kInvalidArgument, "step '",
              describe(step), "': its combined blocks do not cover its pieces");

  // What runs side by side, each on a thread of its own (the caller's thread takes the last):
  // the combined blocks of a combined step, each with its own stage barriers; else the pieces
  // grouped by instance (by model where the executor runs one request of a model at a time),
  // a group's pieces in step order. Threads start per step: a few tens of microseconds against
  // blocks of milliseconds.
  std::vector<std::function<double()>> jobs;
  // Keyed (by instance, id) or (by model, id): ids of the two kinds never share a group.
  enum class Key : uint8_t { kInstance, kModel };
  std::map<std::pair<Key, uint32_t>, std::vector<const Piece*>> groups;
  if (combined) {
    size_t at = 0;
    for (const CombinedSchedule* schedule : step.schedules) {
      std::span<const Piece> pieces(step.pieces.data() + at, schedule->sub_blocks.size());
      at += pieces.size();
      jobs.push_back([this, schedule, pieces] { return impl_->run_combined(*schedule, pieces); });
    }
  } else {
    for (const Piece& piece : step.pieces) {
      const bool side_by_side = impl_->models[piece.model].prepared->concurrent_requests();
      groups[side_by_side ? std::pair(Key::kInstance, piece.instance)
                          : std::pair(Key::kModel, piece.model)]
          .push_back(&piece);
    }
    for (auto& [key, pieces] : groups)
      jobs.push_back([this, &pieces = pieces] { return impl_->run_pieces(pieces); });
  }
  std::vector<std::exception_ptr> failures(jobs.size());
  std::vector<double> device_us(jobs.size(), 0.0);
  const double cpu_before = process_cpu_seconds();
  const Clock::time_point begin = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (size_t g = 0; g < jobs.size(); ++g) {
      auto work = [&, g] {
        try {
          device_us[g] = jobs[g]();
        } catch (...) {
          failures[g] = std::current_exception();
        }
      };
      if (g + 1 < jobs.size())
        threads.emplace_back(work);
      else
        work();
    }
  }  // joined
  const Micros wall = Clock::now() - begin;
  const double cpu = process_cpu_seconds() - cpu_before;
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);  // the first group's

  StepResult result;
  result.device_time = wall;
  const double capacity =
      std::chrono::duration<double>(wall).count() * static_cast<double>(impl_->cpus);
  if (impl_->cpu) {
    result.utilization = capacity > 0 ? std::clamp(cpu / capacity, 0.0, 1.0) : 0.0;
  } else {
    const double busiest = *std::max_element(device_us.begin(), device_us.end());
    const double wall_us = double(wall.count());
    result.utilization = wall_us > 0 ? std::clamp(busiest / wall_us, 0.0, 1.0) : 0.0;
  }
  return result;
}

std::vector<std::vector<float>> ExecBackend::end_instance(InstanceId instance) {
  auto it = impl_->instances.find(instance);
  BRAID_CHECK(it != impl_->instances.end(), ErrorCode::kInvalidArgument, "instance ", instance,
              " is not in flight");
  Impl::Instance ended = std::move(it->second);
  impl_->instances.erase(it);
  const RuntimeModel& model = impl_->set->model(ended.model);
  Impl::Model& m = impl_->models[ended.model];
  // An instance ended before its last block (a run cut short) has no outputs yet.
  std::vector<std::vector<float>> outputs;
  if (ended.next_block == model.blocks.size())
    for (size_t i = 0; i < model.loaded.graph->outputs().size(); ++i) {
      std::span<const float> out = m.prepared->output(*ended.request, i);
      outputs.emplace_back(out.begin(), out.end());
    }
  m.free_requests.push_back(std::move(ended.request));
  return outputs;
}

}  // namespace braid::runtime
