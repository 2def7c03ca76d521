// The simulator's calibration measurements taken on a real GPU (docs/simulator.md,
// sim/calibrate.h): the five micro-benchmark series of "braid.calibration/1", each the median of
// `repeats` timings per count. `braid calibrate DEVICE --measure cuda:N` writes and fits them.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace braid::exec {

// Throws braid::Error(kNotFound) "no CUDA device" without one.
nlohmann::json measure_cuda_calibration(int device,
                                        const std::vector<int>& counts = {8, 16, 32, 64, 128},
                                        int repeats = 5);

}  // namespace braid::exec
