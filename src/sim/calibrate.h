// sim::calibrate — the calibration hook: fits a device's overhead constants (host launch
// cost, graph launch cost, device-side launch latency, event costs) from micro-measurements
// taken on the real GPU, so the simulator's launch-bound regime matches it. The CUDA executor
// (issue 6) writes the measurements where a GPU exists; `braid calibrate` applies them:
//
//   braid calibrate v100 measured.json -o devices/v100_calibrated.json
//
// Measurements (docs/simulator.md), format "braid.calibration/1": a list of series, each n
// values of a count and the total microseconds it took; every constant is the slope of a
// least-squares line through its series (the intercept absorbs fixed costs):
//   eager_independent_kernels  n empty kernels on 8 streams, eager, timed from the first
//                               launch to the last end               slope = launch_us
//   graph_chain                n empty kernels in one stream, replayed as a graph
//                                                                    slope = graph_launch_us + B
//   queued_chain               n empty kernels queued on one stream behind a long kernel,
//                               timed from its end to the last end  slope = kernel_latency_us + B
//   event_records              n event records, host time            slope = event_record_us
//   event_waits                n stream waits on a recorded event    slope = event_wait_us
// where B = an empty kernel's own duration in the model (idle_kernel_us): 0, since a block
// without work has no block latency, so the chains measure the launch latencies themselves.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/device_spec.h"

namespace braid::sim {

struct CalibrationSeries {
  std::vector<double> counts;
  std::vector<double> total_us;
};

// Keyed by series kind (the names above). Unknown kinds are an error.
using Calibration = std::map<std::string, CalibrationSeries>;

// Parses "braid.calibration/1" JSON; kInvalidArgument naming the series and field.
Calibration parse_calibration(const nlohmann::json& json);

// One series' least-squares line and the constant it gives.
struct SeriesFit {
  double slope = 0, intercept = 0;  // microseconds per count, microseconds
  double rms = 0;                   // RMS residual of the line, microseconds
  std::string constant;             // the HostCosts field it fits, e.g. "graph_launch_us"
  double value = 0;                 // the slope, less B for graph_chain and queued_chain
  std::string problem;              // empty when the constant is usable; else why not
};

struct CalibrationFit {
  // The fitted constants (the spec's where a series is absent or refused).
  HostCosts host;
  std::map<std::string, double> residual;  // per series: RMS error of the line, microseconds
  std::map<std::string, SeriesFit> series;
  // One line per refused series ("graph_chain: slope 1.6 us per kernel is below ..."); empty
  // when every constant is positive.
  std::string refusal() const;
};

// Fits `spec`'s host constants from `measured`; series absent keep the spec's values. A fit
// that gives a zero or negative constant is refused, never clamped: a 0 would silently model a
// free launch. The refused series say why in `series[kind].problem`.
CalibrationFit calibrate(const DeviceSpec& spec, const Calibration& measured);
// Throws braid::Error(kInvalidArgument) with fit.refusal() when any series was refused.
void require_usable(const CalibrationFit& fit);

// What the engine itself gives for each series on `spec` (for n = counts): the measurement a
// perfectly modelled GPU would produce. Tests fit these back; users compare against their own.
Calibration simulate_calibration(const DeviceSpec& spec, const std::vector<double>& counts);

}  // namespace braid::sim
