#include "sim/calibrate.h"

#include <cmath>

#include <fmt/core.h>

#include "base/error.h"
#include "sim/engine.h"
#include "sim/kernels.h"

namespace braid::sim {
namespace {

constexpr const char* kKinds[] = {"eager_independent_kernels", "graph_chain", "queued_chain",
                                  "event_records", "event_waits"};

struct Line {
  double slope = 0, intercept = 0, rms = 0;
};

Line fit_line(const CalibrationSeries& s) {
  const double n = double(s.counts.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < s.counts.size(); ++i) {
    sx += s.counts[i];
    sy += s.total_us[i];
    sxx += s.counts[i] * s.counts[i];
    sxy += s.counts[i] * s.total_us[i];
  }
  Line l;
  const double den = n * sxx - sx * sx;
  l.slope = (n * sxy - sx * sy) / den;
  l.intercept = (sy - l.slope * sx) / n;
  double e = 0;
  for (size_t i = 0; i < s.counts.size(); ++i) {
    const double r = s.total_us[i] - (l.intercept + l.slope * s.counts[i]);
    e += r * r;
  }
  l.rms = std::sqrt(e / n);
  return l;
}

Kernel empty_kernel() {
  Kernel k{.name = "empty"};
  k.blocks = 1;
  k.threads = 32;
  k.registers = 16;
  k.flops = 0;
  return k;
}

}  // namespace

Calibration parse_calibration(const nlohmann::json& j) {
  BRAID_CHECK(j.is_object() && j.contains("format") && j.at("format") == "braid.calibration/1",
              ErrorCode::kInvalidArgument,
              "calibration: expected an object with \"format\": \"braid.calibration/1\"");
  BRAID_CHECK(j.contains("series") && j["series"].is_object(), ErrorCode::kInvalidArgument,
              "calibration: missing object 'series'");
  Calibration c;
  for (const auto& [kind, series] : j["series"].items()) {
    BRAID_CHECK(std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds),
                ErrorCode::kInvalidArgument, "calibration: unknown series '", kind,
                "' (known: eager_independent_kernels, graph_chain, queued_chain, "
                "event_records, event_waits)");
    CalibrationSeries s;
    try {
      s.counts = series.at("counts").get<std::vector<double>>();
      s.total_us = series.at("total_us").get<std::vector<double>>();
    } catch (const nlohmann::json::exception& e) {
      BRAID_THROW(ErrorCode::kInvalidArgument, "calibration: series '", kind,
                  "' needs number arrays 'counts' and 'total_us' (", e.what(), ")");
    }
    BRAID_CHECK(s.counts.size() == s.total_us.size() && s.counts.size() >= 2,
                ErrorCode::kInvalidArgument, "calibration: series '", kind,
                "' needs as many total_us as counts, at least two");
    BRAID_CHECK(s.counts.front() != s.counts.back(), ErrorCode::kInvalidArgument,
                "calibration: series '", kind, "' needs at least two different counts");
    c[kind] = std::move(s);
  }
  return c;
}

CalibrationFit calibrate(const DeviceSpec& spec, const Calibration& measured) {
  CalibrationFit fit{.host = spec.host};
  // An empty kernel's own duration in the model: the chain series time it besides the launch.
  const double block = idle_kernel_us(empty_kernel(), spec);
  struct Target {
    const char* kind;
    const char* constant;
    double HostCosts::*field;
    bool less_block;
  };
  constexpr Target kTargets[] = {
      {"eager_independent_kernels", "launch_us", &HostCosts::launch_us, false},
      {"graph_chain", "graph_launch_us", &HostCosts::graph_launch_us, true},
      {"queued_chain", "kernel_latency_us", &HostCosts::kernel_latency_us, true},
      {"event_records", "event_record_us", &HostCosts::event_record_us, false},
      {"event_waits", "event_wait_us", &HostCosts::event_wait_us, false}};
  for (const Target& t : kTargets) {
    const auto it = measured.find(t.kind);
    if (it == measured.end()) continue;
    const Line l = fit_line(it->second);
    SeriesFit& s = fit.series[t.kind];
    s = {.slope = l.slope,
         .intercept = l.intercept,
         .rms = l.rms,
         .constant = t.constant,
         .value = t.less_block ? l.slope - block : l.slope};
    fit.residual[t.kind] = l.rms;
    if (s.value > 0) {
      fit.host.*t.field = s.value;
      continue;
    }
    s.problem = t.less_block ? fmt::format(
                                   "slope {:.3g} us per kernel is not above the model's {:.3g} us "
                                   "empty-kernel duration, so {} would be {:.3g} us",
                                   l.slope, block, t.constant, s.value)
                             : fmt::format("slope {:.3g} us per count would make {} {:.3g} us",
                                           l.slope, t.constant, s.value);
    s.problem += fmt::format(" (line fit RMS {:.3f} us)", l.rms);
  }
  return fit;
}

std::string CalibrationFit::refusal() const {
  std::string why;
  for (const auto& [kind, s] : series)
    if (!s.problem.empty()) why += (why.empty() ? "" : "\n") + kind + ": " + s.problem;
  return why;
}

void require_usable(const CalibrationFit& fit) {
  const std::string why = fit.refusal();
  BRAID_CHECK(why.empty(), ErrorCode::kInvalidArgument,
              "calibration refused: a constant must be positive\n", why);
}

Calibration simulate_calibration(const DeviceSpec& spec, const std::vector<double>& counts) {
  Calibration c;
  const std::span<const DeviceSpec> device(&spec, 1);
  for (double count : counts) {
    const uint32_t n = uint32_t(count);
    {  // eager, 8 streams
      Program p;
      for (int s = 0; s < 8; ++s) p.streams.push_back({.device = 0, .id = s});
      for (uint32_t i = 0; i < n; ++i) {
        p.kernels.push_back(empty_kernel());
        p.ops.push_back(Op::kernel(i % 8, i));
      }
      c["eager_independent_kernels"].counts.push_back(count);
      c["eager_independent_kernels"].total_us.push_back(simulate(p, device).makespan_us);
    }
    Program chain;
    chain.streams = {{.device = 0, .id = 0}};
    for (uint32_t i = 0; i < n; ++i) {
      chain.kernels.push_back(empty_kernel());
      chain.ops.push_back(Op::kernel(0, i));
    }
    c["graph_chain"].counts.push_back(count);
    c["graph_chain"].total_us.push_back(
        simulate(chain, device, {.graph_replay = true}).makespan_us);
    {  // behind a long kernel: every launch is issued before the chain starts
      Program q;
      q.streams = {{.device = 0, .id = 0}};
      Kernel blocker = empty_kernel();
      blocker.flops = spec.sustained_fp32_flops() * 1e-6 * (n + 1) * (spec.host.launch_us + 1);
      blocker.efficiency = 1;
      q.kernels.push_back(blocker);
      q.ops.push_back(Op::kernel(0, 0));
      for (uint32_t i = 0; i < n; ++i) {
        q.kernels.push_back(empty_kernel());
        q.ops.push_back(Op::kernel(0, i + 1));
      }
      const Result r = simulate(q, device, {.record_timeline = true});
      c["queued_chain"].counts.push_back(count);
      c["queued_chain"].total_us.push_back(r.makespan_us - r.kernels[0].end_us);
    }
    {
      Program e;
      e.streams = {{.device = 0, .id = 0}, {.device = 0, .id = 1}};
      e.num_events = n;
      for (uint32_t i = 0; i < n; ++i) e.ops.push_back(Op::record(0, i));
      c["event_records"].counts.push_back(count);
      c["event_records"].total_us.push_back(simulate(e, device).makespan_us);
      for (uint32_t i = 0; i < n; ++i) e.ops.push_back(Op::wait(1, i));
      c["event_waits"].counts.push_back(count);
      c["event_waits"].total_us.push_back(simulate(e, device).makespan_us -
                                          n * spec.host.event_record_us);
    }
  }
  return c;
}

}  // namespace braid::sim
