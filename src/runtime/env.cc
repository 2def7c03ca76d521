#include "runtime/env.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace braid::runtime {
namespace {

// Running mean and variance (Welford): the Z-scores of the paper's reward, over the episode.
struct Running {
  double n = 0, mean = 0, m2 = 0;
  double z(double x) const {
    const double sd = n > 1 ? std::sqrt(m2 / n) : 0;
    return sd > 0 ? (x - mean) / sd : 0;
  }
  void add(double x) {
    n += 1;
    const double d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
};

}  // namespace

RewardKind parse_reward_kind(std::string_view name) {
  if (name == "scale-free") return RewardKind::kScaleFree;
  if (name == "paper") return RewardKind::kPaper;
  BRAID_THROW(ErrorCode::kInvalidArgument, "unknown reward '", name,
              "' (known: scale-free, paper)");
}

struct TopEnv::Impl {
  ScenarioRunner& runner;
  EnvOptions options;
  ActionPolicy policy;
  std::unique_ptr<Episode> episode;
  std::vector<double> ref_us;  // per model: its latency alone
  bool done = true;
  // The paper's reward: the quantities' running statistics over the episode.
  Running utilization, variance;
  std::vector<Running> latency;

  Impl(ScenarioRunner& r, const EnvOptions& o)
      : runner(r), options(o), policy(r.policy_options(), o.mapping) {}

  const ModelSet& models() const { return runner.models(); }

  std::vector<float> rows(const std::vector<float>& row) const {
    std::vector<float> out;
    for (int k = 0; k < options.samples; ++k) out.insert(out.end(), row.begin(), row.end());
    return out;
  }
};

TopEnv::TopEnv(ScenarioRunner& runner, EnvOptions options) {
  BRAID_CHECK(options.step_s > 0 && std::isfinite(options.step_s), ErrorCode::kInvalidArgument,
              "an environment step must last > 0 s, got ", options.step_s);
  BRAID_CHECK(options.samples >= 1 && options.samples <= 1000, ErrorCode::kInvalidArgument,
              "samples per step must be in [1, 1000], got ", options.samples);
  impl_ = std::make_unique<Impl>(runner, options);
  const ModelSet& models = runner.models();
  for (size_t m = 0; m < models.size(); ++m) {
    const auto& predicted = models.model(m).schedule.predicted_latency;
    impl_->ref_us.push_back(predicted && predicted->count() > 0 ? double(predicted->count()) : 1.0);
  }
}

TopEnv::~TopEnv() = default;

size_t TopEnv::num_agents() const {
  return impl_->models().size() + 1;
}

size_t TopEnv::observation_size() const {
  return size_t(impl_->options.samples) * runtime::observation_size(impl_->models());
}

std::vector<size_t> TopEnv::action_sizes() const {
  std::vector<size_t> out{impl_->models().size()};
  for (size_t m = 0; m < impl_->models().size(); ++m)
    out.push_back(impl_->models().model(m).blocks.size());
  return out;
}

std::vector<float> TopEnv::reset(uint64_t seed) {
  Impl& im = *impl_;
  im.episode.reset();  // gives the backend the last episode's instances back
  im.policy = ActionPolicy(im.runner.policy_options(), im.options.mapping);
  RuntimeOptions options = im.runner.runtime_options();
  // The agents decide at every step (Algorithm 1's offline loop), not when σ_t exceeds T.
  options.variance_threshold = std::numeric_limits<double>::infinity();
  options.drain = false;
  im.episode = std::make_unique<Episode>(im.models(), im.runner.backend(), im.policy,
                                         &im.runner.combiner(), options, im.runner.arrivals(seed));
  im.done = false;
  im.utilization = {};
  im.variance = {};
  im.latency.assign(im.models().size(), {});
  return im.rows(observe(im.episode->state()));
}

EnvStep TopEnv::step(std::span<const std::vector<double>> actions) {
  Impl& im = *impl_;
  BRAID_CHECK(im.episode != nullptr && !im.done, ErrorCode::kInvalidArgument,
              im.episode == nullptr ? "step before reset" : "step after the episode is done");
  const ModelSet& models = im.models();
  const size_t w = models.size();
  BRAID_CHECK(actions.size() == w + 1, ErrorCode::kInvalidArgument, "actions for ", actions.size(),
              " agents, the environment has ", w + 1, " (the launcher, then one per model)");
  im.policy.set_actions(models, actions[0], actions.subspan(1));
  Episode& ep = *im.episode;
  ep.decide();

  EnvStep r;
  const double t0 = ep.now_us(), step_us = im.options.step_s * 1e6;
  std::vector<float> last;
  bool running = true;
  for (int k = 1; k <= im.options.samples; ++k) {
    if (running) running = ep.advance(t0 + step_us * k / im.options.samples);
    last = observe(ep.state());
    r.observation.insert(r.observation.end(), last.begin(), last.end());
  }
  r.done = !running;
  im.done = r.done;
  const double t1 = ep.now_us();

  // ξ: the samples taken in the step (each covers the period before it).
  double sum = 0;
  int n = 0;
  for (auto it = ep.samples().rbegin(); it != ep.samples().rend() && it->at_us > t0; ++it) {
    sum += it->utilization;
    ++n;
  }
  r.utilization = n > 0 ? sum / n : 0;
  r.variance = ep.state().queue_variance();

  // l_w: tasks finished in the step, and the age of those still waiting at its end.
  std::vector<double> total(w, 0.0);
  std::vector<uint64_t> counted(w, 0);
  r.completed.assign(w, 0);
  for (const TaskRecord& t : ep.tasks()) {
    if (t.rejected || t.arrival_us > t1) continue;
    if (t.done_us >= 0) {
      if (t.done_us <= t0) continue;
      total[t.model] += t.done_us - t.arrival_us;
      ++r.completed[t.model];
    } else {
      total[t.model] += t1 - t.arrival_us;
    }
    ++counted[t.model];
  }
  r.latency_ms.assign(w, 0.0);
  std::vector<double> lat_term(w, 0.0);
  for (size_t m = 0; m < w; ++m) {
    if (counted[m] == 0) continue;
    const double mean_us = total[m] / double(counted[m]);
    r.latency_ms[m] = mean_us / 1e3;
    lat_term[m] = im.options.reward == RewardKind::kPaper
                      ? im.latency[m].z(mean_us)
                      : std::log(std::max(mean_us, 1.0) / im.ref_us[m]);
  }

  r.superblock =
      int(im.policy.largest_combined_block()) > im.runner.policy_options().max_sub_blocks;
  r.rewards.assign(w + 1, 0.0);
  if (!r.superblock || im.options.reward == RewardKind::kScaleFree) {
    const double a = im.options.a, b = im.options.b, c = im.options.c;
    double xi = r.utilization, sigma = r.variance / (1 + r.variance);
    if (im.options.reward == RewardKind::kPaper) {
      xi = im.utilization.z(r.utilization);
      sigma = im.variance.z(r.variance);
    }
    double mean_lat = 0;
    for (double l : lat_term) mean_lat += l;
    mean_lat /= double(std::max<size_t>(1, w));
    auto shape = [&](double x) {
      return im.options.reward == RewardKind::kPaper ? std::exp(x) : x;
    };
    // A superblock: the paper's 0 is the floor of Eq. 2's (0, 1]; the scale-free reward has no
    // floor (0 would beat every backlogged step, and agents learn to make superblocks), so it
    // costs one unit below what the step earned.
    const double penalty = r.superblock ? kSuperblockPenalty : 0.0;
    r.rewards[0] = shape(a * xi - b * mean_lat - c * sigma) - penalty;
    for (size_t m = 0; m < w; ++m)
      r.rewards[m + 1] = shape(a * xi - b * lat_term[m] - c * sigma) - penalty;
  }
  im.utilization.add(r.utilization);
  im.variance.add(r.variance);
  for (size_t m = 0; m < w; ++m)
    if (counted[m] > 0) im.latency[m].add(total[m] / double(counted[m]));
  return r;
}

Report TopEnv::finish() {
  Impl& im = *impl_;
  BRAID_CHECK(im.episode != nullptr, ErrorCode::kInvalidArgument, "finish before reset");
  Report r = im.episode->finish();
  im.episode.reset();
  im.done = true;
  return r;
}

}  // namespace braid::runtime
