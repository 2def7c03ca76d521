// The CLI's names for the measuring, which lives in the library (tune/measure.h).
#pragma once

#include "tune/measure.h"

namespace braid::cli {

using tune::launched_by_mpi;
using tune::measure_interleaved;
using tune::measure_schedule;
using tune::Measured;
using tune::MeasureOptions;
using tune::process_rank;
using tune::trace_lane_names;

}  // namespace braid::cli
