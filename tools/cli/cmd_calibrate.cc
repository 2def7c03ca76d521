// braid calibrate: fits a simulated device's overhead constants from measurements taken on the
// real GPU (sim/calibrate.h) and writes the device file with them.
#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/device.h"
#include "base/error.h"
#include "commands.h"
#include "exec/cuda/cuda_calibration.h"
#include "measure.h"
#include "sim/calibrate.h"

namespace braid::cli {

void add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate", "Fit a simulated GPU's launch and event costs from real measurements");
  static std::string device, measurements, output, emit, measure_on;
  cmd->add_option("DEVICE", device, "A devices/ name or a device .json file")->required();
  cmd->add_option("MEASUREMENTS", measurements,
                  "braid.calibration/1 JSON measured on the GPU (docs/simulator.md)");
  cmd->add_option("-o,--output", output, "Write the calibrated device file here");
  cmd->add_option("--measure", measure_on,
                  "Take the measurements on this GPU now (cuda:N) and write them to "
                  "MEASUREMENTS (default: calibration.json)");
  cmd->add_option("--emit-simulated", emit,
                  "Write the measurements the simulator itself predicts for DEVICE (the format "
                  "to fill in on a real GPU)");
  cmd->callback([] {
    const sim::DeviceSpec spec = sim::load_device(device);
    if (!emit.empty()) {
      nlohmann::json series = nlohmann::json::object();
      for (const auto& [kind, s] : sim::simulate_calibration(spec, {1, 2, 4, 8, 16, 32, 64}))
        series[kind] = {{"counts", s.counts}, {"total_us", s.total_us}};
      std::ofstream out(emit);
      BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", emit, "'");
      out << nlohmann::json{{"format", "braid.calibration/1"},
                            {"device", spec.name},
                            {"series", series}}
                 .dump(2)
          << "\n";
      if (measurements.empty()) return;
    }
    if (!measure_on.empty()) {
      const Device gpu = parse_device(measure_on);
      BRAID_CHECK(gpu.is_cuda(), ErrorCode::kInvalidArgument, "--measure ", measure_on,
                  ": expected cuda:N");
      if (measurements.empty()) measurements = "calibration.json";
      std::ofstream out(measurements);
      BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", measurements, "'");
      out << exec::measure_cuda_calibration(gpu.index).dump(2) << "\n";
    }
    BRAID_CHECK(!measurements.empty(), ErrorCode::kInvalidArgument,
                "give MEASUREMENTS (or --measure cuda:N, or --emit-simulated FILE)");
    std::ifstream in(measurements);
    BRAID_CHECK(in.good(), ErrorCode::kNotFound, "cannot open '", measurements, "'");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      BRAID_THROW(ErrorCode::kInvalidArgument, measurements, ": not valid JSON (", e.what(), ")");
    }
    const sim::CalibrationFit fit = sim::calibrate(spec, sim::parse_calibration(j));
    // The per-series report first, refused or not: it is what tells a bad series apart.
    for (const auto& [kind, s] : fit.series)
      fmt::print(
          "  {}: {} {:.3f} us (slope {:.3f} us per count, intercept {:.3f} us, line fit "
          "RMS {:.3f} us){}\n",
          kind, s.constant, s.value, s.slope, s.intercept, s.rms,
          s.problem.empty() ? "" : " REFUSED");
    sim::require_usable(fit);  // kInvalidArgument (exit 2) naming each refused series and why
    const sim::HostCosts& h = fit.host;
    fmt::print(
        "{}: launch_us {:.3f} (was {:.3f}), graph_launch_us {:.3f} ({:.3f}), "
        "kernel_latency_us {:.3f} ({:.3f}), event_record_us {:.3f} ({:.3f}), "
        "event_wait_us {:.3f} ({:.3f})\n",
        spec.name, h.launch_us, spec.host.launch_us, h.graph_launch_us, spec.host.graph_launch_us,
        h.kernel_latency_us, spec.host.kernel_latency_us, h.event_record_us,
        spec.host.event_record_us, h.event_wait_us, spec.host.event_wait_us);
    if (output.empty()) return;
    std::ifstream original(sim::device_path(device));
    nlohmann::json file = nlohmann::json::parse(original);
    file["host"]["launch_us"] = h.launch_us;
    file["host"]["graph_launch_us"] = h.graph_launch_us;
    file["host"]["kernel_latency_us"] = h.kernel_latency_us;
    file["host"]["event_record_us"] = h.event_record_us;
    file["host"]["event_wait_us"] = h.event_wait_us;
    file["host"]["note"] = "fitted by braid calibrate from " + measurements;
    std::ofstream out(output);
    BRAID_CHECK(out.good(), ErrorCode::kInvalidArgument, "cannot write '", output, "'");
    out << file.dump(2) << "\n";
    sim::load_device(output);  // the written file must load
  });
}

}  // namespace braid::cli
