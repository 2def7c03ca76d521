#include "profile/cpu_profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "base/error.h"
#include "cost/stage_key.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/layout.h"
#include "profile/stage_runner.h"

namespace braid::profile {
namespace {

using Clock = std::chrono::steady_clock;

// The makespan of one inference: first unit start to last unit end, as the executor saw them.
class MakespanObserver final : public exec::RunObserver {
 public:
  void on_unit(size_t, UnitId, Micros begin, Micros end) override {
    first_ = std::min(first_, begin);
    last_ = std::max(last_, end);
  }
  Micros take() {
    Micros span = last_ - first_;
    first_ = Micros::max();
    last_ = Micros::zero();
    return span;
  }

 private:
  Micros first_ = Micros::max();
  Micros last_ = Micros::zero();
};

// A stage as people read it: "Conv-Relu ; Conv || MaxPool" (groups sorted, like the key).
std::string describe(const ir::UnitGraph& units, std::span<const std::vector<UnitId>> groups) {
  std::vector<std::string> parts;
  for (const auto& group : groups) {
    std::string g;
    for (UnitId u : group) g += (g.empty() ? "" : " ; ") + units.signature(u);
    parts.push_back(std::move(g));
  }
  std::sort(parts.begin(), parts.end());
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : " || ") + p;
  return s;
}

constexpr std::chrono::milliseconds kRetryPause{200};

// Mean of the samples taken; nullopt when none could be taken.
class LoadSampler {
 public:
  void sample() {
    if (auto n = cost::other_runnable_threads()) {
      sum_ += *n;
      ++count_;
    }
  }
  std::optional<double> mean() const {
    return count_ > 0 ? std::optional<double>(sum_ / count_) : std::nullopt;
  }

 private:
  double sum_ = 0;
  int count_ = 0;
};

}  // namespace

CpuProfiler::CpuProfiler(const ir::UnitGraph& units, std::shared_ptr<const ir::Weights> weights,
                         CpuProfilerOptions options)
    : cost::CostModel(units),
      weights_(std::move(weights)),
      options_(std::move(options)),
      machine_(cost::this_machine()) {
  machine_.executor = "cpu layout " + std::string(exec::cpu::layout_name(options_.layout));
  BRAID_CHECK(units.graph() != nullptr, ErrorCode::kInvalidArgument, "'", units.name(),
              "' is a weighted DAG: it has no operators to profile");
  BRAID_CHECK(weights_ != nullptr, ErrorCode::kInvalidArgument,
              "the CPU profiler needs the model's weights");
  weights_->check_complete(*units.graph());
  model_layouts_ = exec::cpu::choose_layouts(*units.graph(), {.blocked = options_.layout});
  BRAID_CHECK(options_.threads_per_stream >= 1 && options_.runs >= 1 && options_.number >= 1 &&
                  options_.warmup >= 0 && options_.suspect_retries >= 0,
              ErrorCode::kInvalidArgument,
              "profiler options: threads per stream, runs and number must be >= 1");
  if (options_.use_cache)
    cache_ = std::make_unique<cost::ProfileCache>(
        options_.cache_dir.empty() ? cost::ProfileCache::default_dir() : options_.cache_dir,
        machine_);
  unit_memo_.resize(units.num_units());
}

CpuProfiler::~CpuProfiler() = default;  // the cache flushes itself

void CpuProfiler::flush() const {
  if (cache_) cache_->flush();
}

int64_t CpuProfiler::suspect_measurements() const {
  std::lock_guard lock(measure_mutex_);
  return suspect_;
}

Micros CpuProfiler::unit_latency(UnitId unit) const {
  count_unit_query();
  return profile_unit(unit).median;
}

Micros CpuProfiler::stage_latency(std::span<const std::vector<UnitId>> groups) const {
  count_stage_query();
  const Micros measured = profile_stage(groups).median;
  return groups.size() == 1 && groups[0].size() == 1
             ? measured
             : std::max(measured, stage_lower_bound(groups));
}

Micros CpuProfiler::stage_lower_bound(std::span<const std::vector<UnitId>> groups) const {
  const size_t cpus = static_cast<size_t>(std::max(1, machine_.num_cpus));
  const size_t width = static_cast<size_t>(options_.threads_per_stream);
  std::vector<double> busy(cpus, 0.0);  // per CPU (index into the allowed set)
  for (size_t i = 0; i < groups.size(); ++i) {
    double sum = 0;
    for (UnitId u : groups[i]) sum += unit_latency(u).count();
    for (size_t k = 0; k < std::min(width, cpus); ++k) busy[(i * width + k) % cpus] += sum;
  }
  return Micros{*std::max_element(busy.begin(), busy.end())};
}

Micros CpuProfiler::merge_latency(std::span<const UnitId> units) const {
  count_stage_query();
  std::vector<std::vector<UnitId>> groups;
  for (UnitId u : units) groups.push_back({u});
  const Micros measured = lookup_or_measure(groups, {}, true).median;
  return std::max(measured, merge_lower_bound(units));
}

Micros CpuProfiler::merge_lower_bound(std::span<const UnitId> units) const {
  return slowest_unit(units);
}

int CpuProfiler::max_threads() const {
  return std::max(1, machine_.num_cpus);
}

Micros CpuProfiler::unit_latency_at(UnitId unit, int threads) const {
  BRAID_CHECK(threads >= 1 && threads <= max_threads(), ErrorCode::kInvalidArgument, "unit #",
              index(unit), ": ", threads, " threads, this process may use ", max_threads(),
              " CPUs");
  if (threads == options_.threads_per_stream) return unit_latency(unit);
  count_unit_query();
  // Like profile_unit's memo: the allotment schedulers ask every unit at every thread count
  // many times, and cache_key builds the stage's key text on each lookup.
  const std::pair<size_t, int> key(index(unit), threads);
  {
    std::lock_guard lock(memo_mutex_);
    if (auto it = unit_at_memo_.find(key); it != unit_at_memo_.end()) return it->second;
  }
  const std::vector<std::vector<UnitId>> stage = {{unit}};
  const int allotment[] = {threads};
  const Micros latency = lookup_or_measure(stage, allotment).median;
  std::lock_guard lock(memo_mutex_);
  unit_at_memo_.emplace(key, latency);
  return latency;
}

Micros CpuProfiler::stage_latency_at(std::span<const std::vector<UnitId>> groups,
                                     std::span<const int> threads) const {
  BRAID_CHECK(threads.size() == groups.size(), ErrorCode::kInvalidArgument, "an allotment of ",
              threads.size(), " thread counts for ", groups.size(), " groups");
  count_stage_query();
  return lookup_or_measure(groups, threads).median;
}

double CpuProfiler::parallelism() const {
  return std::max(1.0, static_cast<double>(machine_.num_cpus) / options_.threads_per_stream);
}

cost::Measurement CpuProfiler::profile_unit(UnitId unit) const {
  BRAID_CHECK(index(unit) < units().num_units(), ErrorCode::kInvalidArgument, "unit #", index(unit),
              " out of range (", units().num_units(), " units)");
  {
    std::lock_guard lock(memo_mutex_);
    if (const auto& m = unit_memo_[index(unit)]) return *m;
  }
  const std::vector<std::vector<UnitId>> stage = {{unit}};
  cost::Measurement m = profile_stage(stage);
  std::lock_guard lock(memo_mutex_);
  unit_memo_[index(unit)] = m;
  return m;
}

cost::Measurement CpuProfiler::profile_stage(std::span<const std::vector<UnitId>> groups) const {
  return lookup_or_measure(groups);
}

std::vector<exec::TensorLayout> CpuProfiler::stage_layouts(const ir::Graph& stage) const {
  const ir::Graph& model = *units().graph();
  std::vector<exec::TensorLayout> layouts;
  for (const ir::Value& v : stage.values()) {
    // extract() keeps value names, and names are unique in a graph.
    const std::optional<ValueId> original = model.find_value(v.name);
    BRAID_ASSERT(original.has_value(), "stage value '", v.name, "' is not in the model");
    layouts.push_back(model_layouts_[index(*original)]);
  }
  return layouts;
}

std::string CpuProfiler::cache_key(std::span<const std::vector<UnitId>> groups,
                                   std::span<const int> threads, bool merge) const {
  // The batch size is in every shape of the stage key. Structurally equal stages can sit at
  // different layout boundaries (one reads a graph input, plain; another a conv's output), so
  // the layouts of the values of the extracted stage are part of the key.
  const ir::Graph& model = *units().graph();
  std::string layouts;
  for (const auto& group : groups)
    for (UnitId u : group)
      for (NodeId op : units().unit(u).ops)
        for (const auto& values : {model.node(op).inputs, model.node(op).outputs})
          for (ValueId v : values)
            if (model.value(v).kind != ir::ValueKind::kParameter)
              layouts += std::string(layouts.empty() ? "" : ",") +
                         std::string(exec::cpu::layout_name(model_layouts_[index(v)]));
  std::string executor = "threads_per_stream=" + std::to_string(options_.threads_per_stream);
  if (!threads.empty()) {
    executor = "allotment=";
    for (size_t g = 0; g < threads.size(); ++g)
      executor += (g ? "," : "") + std::to_string(threads[g]);
  }
  // A merge stage runs as one merged kernel: a key of its own.
  if (merge) executor += " merge=one_conv";
  return cost::stage_key(units(), groups) + "\nexecutor=cpu " + executor + "\nlayouts=" + layouts;
}

cost::Measurement CpuProfiler::lookup_or_measure(std::span<const std::vector<UnitId>> groups,
                                                 std::span<const int> threads, bool merge) const {
  BRAID_CHECK(!groups.empty(), ErrorCode::kInvalidArgument, "a stage needs at least one group");
  for (const auto& group : groups) {
    BRAID_CHECK(!group.empty(), ErrorCode::kInvalidArgument, "a stage's group is empty");
    for (UnitId u : group)
      BRAID_CHECK(index(u) < units().num_units(), ErrorCode::kInvalidArgument, "unit #", index(u),
                  " out of range (", units().num_units(), " units)");
  }
  const std::string key = cache_key(groups, threads, merge);
  {
    std::lock_guard lock(memo_mutex_);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  // A stage of several units under a budget (units alone are always measured), priced before
  // taking measure_mutex_: from_units measures units, which takes it.
  const bool budgeted = (groups.size() > 1 || groups[0].size() > 1) && options_.stage_budget_s > 0;
  // A merge's units price is their sum, one after another (as an executor without a merged
  // kernel runs them); its measured ratios are not mixed into the stages'.
  Micros units_price{0};
  if (budgeted && merge) {
    for (const auto& group : groups)
      for (UnitId u : group) units_price += unit_latency(u);
  } else if (budgeted) {
    units_price = from_units(groups, threads);
  }
  std::lock_guard measuring(measure_mutex_);
  {
    // Another thread may have measured it while this one waited.
    std::lock_guard lock(memo_mutex_);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  cost::Measurement m;
  std::optional<cost::Measurement> cached = cache_ ? cache_->find(key) : std::nullopt;
  const bool spent = stage_seconds_ >= options_.stage_budget_s;
  if (cached && !(cached->suspect && options_.remeasure_suspect)) {
    m = *cached;
    count_cache_hit();
  } else if (budgeted && spent) {
    m = estimate(units_price);
    count_estimate();
    std::lock_guard lock(memo_mutex_);
    memo_.emplace(key, m);  // never on disk: it was not measured
    return m;
  } else {
    const auto begin = Clock::now();
    m = measure(groups, threads, merge);
    if (budgeted) stage_seconds_ += std::chrono::duration<double>(Clock::now() - begin).count();
    count_measurement();
    if (m.suspect) ++suspect_;
    if (cache_) cache_->insert(key, m, describe(units(), groups));
  }
  if (budgeted && !merge && units_price > Micros{0})
    stage_ratios_.push_back(m.median / units_price);
  std::lock_guard lock(memo_mutex_);
  memo_.emplace(key, m);
  return m;
}

Micros CpuProfiler::from_units(std::span<const std::vector<UnitId>> groups,
                               std::span<const int> threads) const {
  if (threads.empty()) return stage_lower_bound(groups);  // CPUs shared as the executor pins
  Micros slowest{0};
  for (size_t g = 0; g < groups.size(); ++g) {
    Micros sum{0};
    for (UnitId u : groups[g]) sum += unit_latency_at(u, threads[g]);
    slowest = std::max(slowest, sum);
  }
  return slowest;
}

cost::Measurement CpuProfiler::estimate(Micros units_price) const {
  double ratio = 1;
  if (!stage_ratios_.empty()) {
    std::vector<double> r = stage_ratios_;
    std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
    ratio = r[r.size() / 2];
  }
  if (!budget_noted_) {
    budget_noted_ = true;
    std::fprintf(stderr,
                 "braid: note: the CPU profiler spent its %g s budget measuring stages of '%s'; "
                 "stages not measured yet are priced from their units (x%.2f, the median over "
                 "%zu measured stages); --profile-budget changes it\n",
                 options_.stage_budget_s, units().name().c_str(), ratio, stage_ratios_.size());
  }
  cost::Measurement m;
  m.median = m.p10 = m.p90 = units_price * ratio;
  return m;
}

cost::Measurement CpuProfiler::measure(std::span<const std::vector<UnitId>> groups,
                                       std::span<const int> threads, bool merge) const {
  const auto runner =
      make_stage_runner(units(), weights_.get(), groups, options_.input_seed, threads, merge);
  auto model = exec::make_cpu_executor({.threads_per_stream = options_.threads_per_stream,
                                        .layout = options_.layout,
                                        .value_layouts = stage_layouts(*runner->stage.graph)})
                   ->prepare(runner->bundle());
  auto request = model->new_request();
  runner->set_inputs(*model, *request);

  cost::Measurement m;
  MakespanObserver observer;
  for (int attempt = 0;; ++attempt) {
    // Sampled between runs, never inside one, so reading /proc costs the timings nothing.
    LoadSampler load;
    for (int i = 0; i < options_.warmup; ++i) model->run(*request);
    load.sample();
    std::vector<double> means;
    for (int r = 0; r < options_.runs; ++r) {
      Micros total{0};
      for (int k = 0; k < options_.number; ++k) {
        model->run(*request, &observer);
        total += observer.take();
      }
      means.push_back(total.count() / options_.number);
      load.sample();
    }
    m.median = percentile(means, 0.5);
    m.p10 = percentile(means, 0.1);
    m.p90 = percentile(means, 0.9);
    m.runs = options_.runs;
    m.number = options_.number;
    m.other_load = load.mean();
    m.suspect = m.other_load && *m.other_load > options_.busy_load_threshold;
    // Once a retry has failed the machine is busy for a while: stop paying for retries until a
    // measurement comes out clean again.
    if (!m.suspect || attempt >= (busy_streak_ ? 0 : options_.suspect_retries)) break;
    std::this_thread::sleep_for(kRetryPause);
  }
  busy_streak_ = m.suspect;
  return m;
}

}  // namespace braid::profile
